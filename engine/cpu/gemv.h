// The one-row matrix product y = W x of decoding (M = 1, W [N, K] in
// PyTorch's [out, in] layout): the engine's own kernel (engine/cpu/kernels.h,
// one variant per instruction set beside the plain reference in engine/ops.cpp),
// its rows split between the engine's threads (engine/cpu/row_threads.h), and
// the choice, made once per process as the OpenBLAS core's is (engine/cpu/blas.h),
// between it and OpenBLAS's cblas_sgemv. engine/matmul.cpp's gemm() and
// linear() call it for one row.
#pragma once

#include "engine/tensor.h"

#include <string>

namespace tinyformer {

// y[r] = sum_j W(r, j) x[j] for the rows r of W (any row stride), x W.cols
// floats, y W.rows floats, on at most `threads` threads (engine/matmul.cpp
// passes blas_threads(), the engine's count). Each row's sum is the
// kernel's (its order fixed by the variant: engine/cpu/kernels.inc), the same
// on any number of threads.
void gemv(ConstMatrixView w, const float* x, float* y, int threads);
// y1 = W1 x and y3 = W3 x in one split between the threads (SwiGLU's two
// up-projections of one input, which llama2.c's run.c computes one after the
// other); each row as gemv computes it.
void gemv_pair(ConstMatrixView w1, float* y1, ConstMatrixView w3, float* y3, const float* x, int threads);

// Which one-row product gemm() runs for y = W x, W [n, k] (op(B) = W^T, M = 1):
//   Engine  the engine's gemv above
//   Blas    OpenBLAS's cblas_sgemv
// Chosen, like the OpenBLAS core (engine/cpu/blas.h), from what was measured
// and what the process says: decide_gemv() below.
enum class GemvPath { Engine, Blas };
struct GemvInputs {
    std::string setting;       // TINYFORMER_GEMV, lower-cased: "", "auto", "engine" or "blas"
    bool self_check_passed = true;  // the engine's gemv against the reference (gemv_self_check)
};
// The decision, a pure function (unit-tested as a table): "blas" -> Blas;
// "engine" -> Engine; unset or "auto" -> Engine when the self-check passed, else
// Blas. Another setting is an Error naming it.
// Every shape gets the same answer (n and k are for a choice per shape, not
// made): tinyformer-bench llama measures both on every shape a llama2.c model
// multiplies by, and the engine's was the faster on 9 of the 10 at one thread
// (OpenBLAS's on [864, 288], by 8%) and on all at two (docs/PERFORMANCE.md).
GemvPath decide_gemv(const GemvInputs& inputs, int64_t n, int64_t k);
// The engine's gemv on 67 x 45, 33 x 300 and 1 x 17 matrices (every path of
// the kernel: blocks of rows, rows left over, columns past a multiple of 16)
// against the reference kernel (engine/ops.cpp: sums in double), relative 1e-5 of the row's sum of |w x|; `worst` gets
// the largest such difference.
bool gemv_self_check(double* worst = nullptr);
// This process's choice (its environment and self-check, read once) for W [n, k].
// Builds without a BLAS (TINYFORMER_OWN_GEMM) do not ask: gemm_blocked runs.
GemvPath gemv_path(int64_t n, int64_t k);
// For `tinyformer version` and the benchmarks: what runs M = 1 products and why.
std::string gemv_description();

}  // namespace tinyformer
