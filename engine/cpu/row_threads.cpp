#include "engine/cpu/row_threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tinyformer {

namespace {

// How long a worker keeps spinning after a job before it sleeps: a decoding
// step's products come a few microseconds apart, and a whole token of a
// small model takes about a millisecond.
constexpr auto kSpinMicroseconds = std::chrono::microseconds(500);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // tells the core this is a spin loop (frees the sibling hyperthread)
#endif
}

class RowPool {
public:
    ~RowPool() {
        stop_.store(true);
        publish();
        for (std::thread& worker : workers_) worker.join();
    }

    void run(const RowChunks& chunks, int threads, RowWork work, void* context) {
        const uint32_t job = generation_.load() + 1;
        // First close the last job to everyone: a worker that loaded next_ during
        // it and was delayed holds the old job's number, and its exchange now
        // fails, before any field of the new job is written.
        next_.store((uint64_t{job} << 32) | 0xffffffffu);
        while (static_cast<int>(workers_.size()) < threads - 1) {
            const uint32_t before = generation_.load();  // the job below is the first it sees
            const int index = static_cast<int>(workers_.size());
            workers_.emplace_back([this, before, index] { work_loop(before, index); });
        }
        allowed_.store(threads - 1);  // workers 0 .. threads - 2 take part: at most `threads` threads
        chunks_ = chunks;
        count_.store(chunks.count);
        work_ = work;
        context_ = context;
        done_.store(0);
        next_.store(uint64_t{job} << 32);  // chunk 0 of job `job` is the next to take
        publish();
        take_chunks(job);
        while (done_.load(std::memory_order_acquire) != chunks.count) cpu_relax();
    }

    int workers() const { return static_cast<int>(workers_.size()); }

private:
    // A new job (or the stop): workers spinning see the generation move, a
    // sleeping one is woken. generation_ and sleepers_ are sequentially
    // consistent, so either this sees a worker about to sleep or that worker
    // sees the new generation before it sleeps.
    void publish() {
        generation_.fetch_add(1);
        if (sleepers_.load() > 0) {
            std::lock_guard<std::mutex> lock(sleep_mutex_);
            wake_.notify_all();
        }
    }

    // Takes chunks of job `job` until none is left. next_ holds the job's
    // number (high 32 bits) and its next chunk: a worker still holding an
    // older job's number takes nothing from a newer job. The job's fields are
    // read only after a chunk is taken (the exchange acquires them).
    void take_chunks(uint32_t job) {
        uint64_t next = next_.load(std::memory_order_acquire);
        for (;;) {
            if (next >> 32 != job || static_cast<int64_t>(next & 0xffffffffu) >= count_.load()) return;
            if (!next_.compare_exchange_weak(next, next + 1, std::memory_order_acquire)) continue;
            const int64_t chunk = static_cast<int64_t>(next & 0xffffffffu);
            const int64_t first = chunk * chunks_.chunk_rows;
            work_(context_, first, std::min(first + chunks_.chunk_rows, chunks_.rows));
            done_.fetch_add(1, std::memory_order_release);  // publishes its rows to run()
            next = next_.load(std::memory_order_acquire);
        }
    }

    void work_loop(uint32_t seen, int index) {
        for (;;) {
            uint32_t now = generation_.load();
            const auto spin_until = std::chrono::steady_clock::now() + kSpinMicroseconds;
            for (int spins = 0; now == seen; ++spins) {
                cpu_relax();
                if (spins % 64 == 63 && std::chrono::steady_clock::now() > spin_until) sleep_while(seen);
                now = generation_.load();
            }
            seen = now;
            if (stop_.load()) return;
            if (index < allowed_.load()) take_chunks(now);
        }
    }

    void sleep_while(uint32_t seen) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
    }

    std::vector<std::thread> workers_;
    std::atomic<uint32_t> generation_{0};  // the job's number: one more for every job (and for the stop)
    std::atomic<uint64_t> next_{0};        // (job << 32) | the next chunk to take
    std::atomic<int64_t> count_{0};        // chunks of the job
    std::atomic<int64_t> done_{0};         // chunks of the job finished
    std::atomic<int> sleepers_{0};         // workers in sleep_while
    std::atomic<int> allowed_{0};          // workers with an index below this take part in the job
    std::atomic<bool> stop_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_;
    RowChunks chunks_;  // the job, written before next_ and generation_ move
    RowWork work_ = nullptr;
    void* context_ = nullptr;
};

std::mutex& pool_mutex() {
    static std::mutex mutex;
    return mutex;
}

RowPool& pool() {
    static RowPool rows;
    return rows;
}

}  // namespace

RowChunks row_chunks(int64_t rows, int threads) {
    RowChunks chunks;
    chunks.rows = std::max<int64_t>(rows, 0);
    if (chunks.rows == 0) return chunks;
    const int64_t wanted = threads <= 1 ? 1 : 4 * static_cast<int64_t>(std::min(threads, 256));
    const int64_t per_chunk = (chunks.rows + wanted - 1) / wanted;
    chunks.chunk_rows = (per_chunk + kRowAlign - 1) / kRowAlign * kRowAlign;
    chunks.count = (chunks.rows + chunks.chunk_rows - 1) / chunks.chunk_rows;
    return chunks;
}

void for_row_chunks(int64_t rows, int threads, RowWork work, void* context) {
    const RowChunks chunks = row_chunks(rows, threads);
    if (chunks.count > 1) {
        std::unique_lock<std::mutex> lock(pool_mutex(), std::try_to_lock);
        if (lock.owns_lock()) {
            pool().run(chunks, threads, work, context);
            return;
        }
    }
    for (int64_t c = 0; c < chunks.count; ++c)
        work(context, c * chunks.chunk_rows, std::min((c + 1) * chunks.chunk_rows, chunks.rows));
}

int row_pool_workers() {
    std::lock_guard<std::mutex> lock(pool_mutex());
    return pool().workers();
}

}  // namespace tinyformer
