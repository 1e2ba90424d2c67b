// tinyformer-bench — what every benchmark suite shares.
//
// A suite is one function `void run_<name>_suite(const Settings&)` in its own
// file (bench_<name>.cpp), listed in the table in main.cpp. It prints its own
// aligned table; nothing is asserted, targets are printed as information.
//
// Heap counting: heap_counter.cpp replaces the global operator new / delete
// (every form) in this binary only, keeping the bytes currently allocated and
// the peak since heap_reset_peak(). Sizes are malloc_usable_size(), so they
// round up a few bytes per block. Memory that C libraries take with malloc or
// mmap themselves (OpenBLAS's work buffers) is not seen.
#pragma once

#include "engine/tensor.h"
#include "tools/measure/measure.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer::bench {

// Command-line settings every suite receives; 0 means "leave the default".
struct Settings {
    int threads = 0;            // --threads N: set_blas_threads(N)
    int64_t query_block = 0;    // --query-block N: AttentionOptions.query_block
    int64_t key_tile = 0;       // --key-tile N: AttentionOptions.key_tile
    std::vector<std::string> peers;     // --peer PATH (repeatable): llama2.c run.c binaries for the llama suite
    std::vector<std::string> peers_q8;  // --peer-q8 PATH (repeatable): llama2.c runq.c binaries (int8)
};

// `tinyformer-bench live MODEL REQUEST.json`: live_run RUNS times, the median printed (bench_live.cpp).
void run_live_command(const std::string& model_path, const std::string& request_path, int64_t runs);

// --- heap counting (heap_counter.cpp) ---
size_t heap_current_bytes();
size_t heap_peak_bytes();
void heap_reset_peak();  // peak := current
size_t heap_allocation_count();  // operator new calls since the program started

// --- helpers (common.cpp) ---
// Timers, medians, other processes' CPU use, byte counts: tools/measure/measure.h.
using measure::bytes_text;
using measure::Clock;
using measure::format_load;
using measure::kBusyWarning;
using measure::median;
using measure::OtherLoad;
using measure::seconds_since;
// The "model name" line of /proc/cpuinfo, or a note that there is none.
std::string cpu_model();
// One line every suite prints: OpenBLAS (config), the core in use and why,
// and the BLAS thread count (engine/cpu/blas.h).
std::string blas_line();

// --- Python tools (common.cpp) ---
// Debian's interpreter, which has python3-torch (`python3` may be a shim without it).
constexpr const char* kPython = "/usr/bin/python3";
// tools/bench/NAME, found from the binary (build/tinyformer-bench) or else
// from the working directory; nothing when missing.
std::optional<std::string> find_tool_script(const std::string& name);
// Whether `kPython -c 'import torch'` works.
bool torch_importable();
// Runs `kPython script arguments` (stderr merged) to its end and returns its
// output lines; tinyformer is idle meanwhile, so the two never share the cores.
std::vector<std::string> run_python_tool(const std::string& script, const std::string& arguments);

// A text table whose columns have fixed widths, printed a row at a time as
// results arrive (long benchmarks show progress).
class Table {
public:
    enum class Align { Left, Right };
    struct Column {
        std::string title;
        int width;
        Align align;
    };
    explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
    void print_header() const;
    void print_row(const std::vector<std::string>& cells) const;

private:
    std::vector<Column> columns_;
};

// --- suites (one file each) ---
void run_attention_suite(const Settings& settings);  // bench_attention.cpp
void run_encoder_suite(const Settings& settings);    // bench_encoder.cpp
void run_decode_suite(const Settings& settings);     // bench_decode.cpp
void run_decode_gpt_suite(const Settings& settings); // bench_decode.cpp: its nanoGPT-shaped part alone
void run_decode_llama_suite(const Settings& settings);  // bench_llama.cpp
void run_llama_suite(const Settings& settings);         // bench_llama.cpp
void run_kernels_suite(const Settings& settings);    // bench_kernels.cpp
void run_cores_suite(const Settings& settings);      // bench_cores.cpp
void run_gemm_suite(const Settings& settings);       // bench_gemm.cpp
// `tinyformer-bench --probe` (bench_cores.cpp): one line "probe CORE SGEMM_GFLOPS ENCODER_TOKS".
void run_probe();
// The encoder suite's 6-layer forward at B, T on the current threads: tokens/s (median).
double encoder_tokens_per_second(int64_t batch, int64_t length, int repetitions);

}  // namespace tinyformer::bench
