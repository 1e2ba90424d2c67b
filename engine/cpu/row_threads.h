// Splitting a loop over rows between threads — how the engine's one-row
// products (engine/cpu/gemv.h) use the engine's threads, as llama2.c's
// run.c splits its matmul's rows between OpenMP threads.
//
// for_row_chunks(rows, threads, work, context) cuts [0, rows) into chunks
// (row_chunks below) and calls work(context, first, last) once per chunk:
// the calling thread and up to threads - 1 workers each take the next chunk
// nobody has taken, until none is left; it returns when all are done. Which
// thread computes a row never changes what the row gets: work must compute
// each row on its own (the gemv kernels do: engine/cpu/kernels.inc), and
// chunks start at multiples of kRowAlign rows.
//
// Why chunks taken in turn rather than one fixed part per thread: on a
// loaded machine a worker may not run for milliseconds, and a fixed split
// waits for it (llama2.c's run.c, whose OpenMP loops split rows that way, ran
// at a fifth of its one-thread speed on 2 threads with other programs busy:
// docs/PERFORMANCE.md). Here the calling thread takes the chunks a late
// worker has not, so the worst case is about one thread's speed.
//
// The pool: threads - 1 workers, started when a call first asks for them and
// kept until the program ends (starting a thread allocates; a decoding step
// must not). Between calls a worker spins for a while (kSpinMicroseconds in
// the .cpp) and then sleeps on a condition variable: a decoding step makes
// about 25 calls a few microseconds apart, and waking a sleeping thread costs
// tens of microseconds. No OpenMP: the engine runs threads for this one loop
// only, and their count is the one set_blas_threads sets (engine/matmul.h, passed to gemv).
// One call at a time uses the workers; a call made while another runs (from
// another thread) runs all its chunks on its own thread: the same results.
#pragma once

#include <cstdint>

namespace tinyformer {

using RowWork = void (*)(void* context, int64_t first, int64_t last);

// Chunks start at multiples of kRowAlign rows (so that a kernel that takes
// rows in blocks of up to 16 sees the same blocks, whatever the threads).
constexpr int64_t kRowAlign = 16;

// The chunks for `rows` rows on `threads` threads: about four per thread (so
// that a thread that starts late leaves work to the others), each a multiple
// of kRowAlign rows but the last; one chunk of every row when threads <= 1.
// Chunk c is [c * chunk_rows, min((c + 1) * chunk_rows, rows)), c < count.
struct RowChunks {
    int64_t rows = 0, chunk_rows = 0, count = 0;
};
RowChunks row_chunks(int64_t rows, int threads);

void for_row_chunks(int64_t rows, int threads, RowWork work, void* context);

// How many workers the pool has started (0 until a call asks for threads).
int row_pool_workers();

}  // namespace tinyformer
