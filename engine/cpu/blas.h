// What OpenBLAS runs on — which compute core ("kernel set") it chose, whether
// a better one applies to this CPU, and a self-check of sgemm against the
// naive product.
//
// Why: OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels when it
// loads, from the CPU's family and model. A CPU newer than the library gets
// the generic Prescott kernels, far slower than the AVX2/AVX-512 kernels the
// same library ships (measured: docs/PERFORMANCE.md). OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads, so changing the core means starting
// the process again.
//
// The library decides and reports; it never restarts anything. The program's
// entry points (tools/cli/main.cpp, tools/bench/main.cpp, tests/main.cpp) call
// plan_blas_startup() first and, when it says so, re-execute themselves
// (engine/cpu/blas_restart.h) with the environment it gives:
//
//   1. OpenBLAS chose a generic core (the list below) and this CPU's features
//      support a better core OpenBLAS ships (avx2+fma -> Haswell;
//      avx512f/bw/dq/vl -> SkylakeX; plus avx512bf16 -> Cooperlake), and the
//      user set neither OPENBLAS_CORETYPE nor TINYFORMER_BLAS=keep: restart
//      with OPENBLAS_CORETYPE=<better core> and the marker
//      TINYFORMER_BLAS_RESTART=switched:<core OpenBLAS chose>.
//   2. In the restarted process the self-check runs (sgemm 67x45x33 and a
//      transposed case against gemm_naive, relative 1e-4). If it fails:
//      restart once more without OPENBLAS_CORETYPE (OpenBLAS's own choice)
//      and the marker failed:<original>:<rejected core>. The marker prevents
//      loops: a process started with one never switches again.
//
// blas_report() says afterwards what runs and why (`tinyformer version`, the
// benchmark header). Child processes inherit the environment, so they run on
// the same core without restarting.
#pragma once

#include "engine/cpu/features.h"

#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

// The generic x86-64 cores OpenBLAS 0.3.21 falls back to (and the old ones
// it has by name): Katmai, Coppermine, Northwood, Prescott, Banias, Atom,
// Core2, Penryn, Dunnington, Nehalem, Athlon, Opteron, Opteron_SSE3,
// Barcelona, Nano, Bobcat, Unknown. Case-insensitive.
bool is_generic_core(const std::string& core);
// The best core OpenBLAS 0.3.21 ships for these features: "Cooperlake",
// "SkylakeX", "Haswell", or "" when none of them fits.
std::string best_core_for(const CpuFeatures& features);

// Why the core in use is the one it is.
enum class BlasReason {
    AlreadyGood,      // OpenBLAS's own choice is not generic
    NoBetterCore,     // generic, but the CPU has no feature set of a better core
    KeptByUser,       // TINYFORMER_BLAS=keep
    UserCoretype,     // the user set OPENBLAS_CORETYPE
    Switched,         // restarted with a better core, and it passed the self-check
    SelfCheckFailed,  // the better core failed the self-check: back on OpenBLAS's choice
    NotRestarted,     // a better core fits, but the marker says not to restart (a restart failed)
};
const char* blas_reason_name(BlasReason reason);  // "switched", "kept by TINYFORMER_BLAS=keep", ...

// Everything the decision depends on; read from the process by
// read_blas_inputs(), written out by hand in tests.
struct BlasInputs {
    CpuFeatures features;
    std::string core_in_use;                       // openblas_get_corename() in this process
    std::optional<std::string> openblas_coretype;  // the environment's OPENBLAS_CORETYPE
    std::optional<std::string> tinyformer_blas;    // TINYFORMER_BLAS ("keep" disables the switch)
    std::optional<std::string> marker;             // TINYFORMER_BLAS_RESTART (see the top)
    bool self_check_passed = true;                 // blas_self_check() on core_in_use
};

// One environment change for the restart: set `name` to `value`, or unset
// it when value is empty.
struct EnvChange {
    std::string name, value;
};

struct BlasPlan {
    bool restart = false;            // the entry point should re-execute itself with `environment`
    std::vector<EnvChange> environment;
    BlasReason reason = BlasReason::AlreadyGood;
    std::string chosen_core;         // the core OpenBLAS chose by itself
    std::string rejected_core;       // SelfCheckFailed: the core that failed
};

// The decision, a pure function of its inputs (unit-tested as a table).
BlasPlan decide_blas(const BlasInputs& inputs);

// sgemm against gemm_naive: 67x45x33 (A B), 67x45x33 (A^T B^T) and alpha/beta;
// true when every element agrees to 1e-4 relative to the largest.
// `worst` (if given) receives the largest relative difference.
bool blas_self_check(double* worst = nullptr);

BlasInputs read_blas_inputs();  // this process: features, core, environment, self-check
// For entry points: what to do at start-up (read_blas_inputs + decide_blas).
BlasPlan plan_blas_startup();

// What runs and why, for `tinyformer version` and the benchmarks, as
// aligned "name  value" lines.
struct BlasReport {
    std::string config;        // openblas_get_config()
    std::string cpu;           // model name
    std::string features;      // cpu_feature_list
    std::string chosen_core;   // what OpenBLAS chose by itself
    std::string core_in_use;   // openblas_get_corename()
    BlasReason reason = BlasReason::AlreadyGood;
    std::string why;           // a sentence
    bool self_check_passed = false;
    double self_check_worst = 0;
    int threads = 0;
};
BlasReport blas_report();
std::string format_blas_report(const BlasReport& report, const std::string& indent = "  ");

}  // namespace tinyformer
