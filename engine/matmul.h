// Matrix products — every one goes through OpenBLAS: cblas_sgemm, or
// cblas_sgemv when the product has one row or one column (decoding's M = 1
// projections: sgemv reads the weights once, where OpenBLAS 0.3.21's sgemm
// first copies them into its packed layout).
//
//   gemm:   C = alpha * op(A) op(B) + beta * C   on strided 2-D views, where
//           op(X) is X or X^T. op(A) is [M, K], op(B) is [K, N], C is [M, N].
//   matmul: a [..., M, K] @ b [..., K, N] (or b [K, N] shared by every batch).
//   linear: y = x W^T + b  in PyTorch's layout: x [..., in], W [out, in],
//           b [out] (or an empty Tensor for no bias) -> y [..., out].
//
// gemm_naive is the three-loop reference beside the BLAS kernel (as llm.c's
// matmul_forward_naive); tests check that the two agree.
//
// gemv is the one-row product y = W x of decoding (M = 1, W [N, K] in
// PyTorch's [out, in] layout): the engine's own kernel (engine/cpu/kernels.h,
// one variant per instruction set, rows split between the engine's threads by
// engine/cpu/row_threads.h), which gemm uses for M = 1 where gemv_path says so.
//
// gemm_blocked (engine/cpu/matmul_blocked.cpp) is the engine's own cache-blocked
// product with the same contract, for builds without a BLAS: compiled with
// -DTINYFORMER_OWN_GEMM (the WebAssembly engine), gemm() calls it and no
// cblas/OpenBLAS header or symbol is used.
#pragma once

#include "engine/tensor.h"

#include <string>
#include <utility>

namespace tinyformer {

enum class Transpose { No, Yes };

void gemm(ConstMatrixView a, Transpose transpose_a, ConstMatrixView b, Transpose transpose_b, MatrixView c,
          float alpha = 1.0f, float beta = 0.0f);
void gemm_naive(ConstMatrixView a, Transpose transpose_a, ConstMatrixView b, Transpose transpose_b, MatrixView c,
                float alpha = 1.0f, float beta = 0.0f);
void gemm_blocked(ConstMatrixView a, Transpose transpose_a, ConstMatrixView b, Transpose transpose_b, MatrixView c,
                  float alpha = 1.0f, float beta = 0.0f);
// The shape check every gemm variant makes first: op(A) [M,K], op(B) [K,N],
// C [M,N], each row stride >= its column count; an Error naming `op` otherwise.
void check_gemm_shapes(const char* op, ConstMatrixView a, Transpose transpose_a, ConstMatrixView b,
                       Transpose transpose_b, MatrixView c);

// y[r] = sum_j W(r, j) x[j] for the rows r of W (any row stride), x W.cols
// floats, y W.rows floats, on blas_threads() threads. Each row's sum is the
// kernel's (its order fixed by the variant: engine/cpu/kernels.inc), the same
// on any number of threads.
void gemv(ConstMatrixView w, const float* x, float* y);
// y1 = W1 x and y3 = W3 x in one split between the threads (SwiGLU's two
// up-projections of one input, which llama2.c's run.c computes one after the
// other); each row as gemv computes it.
void gemv_pair(ConstMatrixView w1, float* y1, ConstMatrixView w3, float* y3, const float* x);

// Which one-row product gemm() runs for y = W x, W [n, k] (op(B) = W^T, M = 1):
//   Engine  the engine's gemv above
//   Blas    OpenBLAS's cblas_sgemv
// Chosen, like the OpenBLAS core (engine/cpu/blas.h), from what was measured
// and what the process says: gemv_choice() below.
enum class GemvPath { Engine, Blas };
struct GemvInputs {
    std::string setting;       // TINYFORMER_GEMV, lower-cased: "", "auto", "engine" or "blas"
    bool self_check_passed = true;  // the engine's gemv against gemm_naive (gemv_self_check)
};
// The decision, a pure function (unit-tested as a table): "blas" -> Blas;
// "engine" -> Engine; unset or "auto" -> Engine when the self-check passed, else
// Blas. Another setting is an Error naming it.
// Every shape gets the same answer: tinyformer-bench llama measures both on
// every shape a llama2.c model multiplies by, and the engine's was the faster
// on all of them (docs/PERFORMANCE.md).
GemvPath decide_gemv(const GemvInputs& inputs, int64_t n, int64_t k);
// The engine's gemv on 67 x 45, 33 x 300 and 1 x 17 matrices (every path of
// the kernel: blocks of rows, rows left over, columns past a multiple of 16)
// against gemm_naive, relative 1e-5 of the row's sum of |w x|; `worst` gets
// the largest such difference.
bool gemv_self_check(double* worst = nullptr);
// This process's choice (its environment and self-check, read once) for W [n, k].
// Builds without a BLAS (TINYFORMER_OWN_GEMM) do not ask: gemm_blocked runs.
GemvPath gemv_path(int64_t n, int64_t k);
// For `tinyformer version` and the benchmarks: what runs M = 1 products and why.
std::string gemv_description();

Tensor matmul(const Tensor& a, const Tensor& b, Transpose transpose_b = Transpose::No);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// The same with W a view (e.g. rows of a bigger matrix) and b its out floats, or nullptr for none.
Tensor linear(const Tensor& x, ConstMatrixView weight, const float* bias);

// SwiGLU's two projections of one x: {linear(x, w1, b1), linear(x, w3, b3)},
// for a one-row x through gemv_pair (one split between the threads).
std::pair<Tensor, Tensor> linear_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w3,
                                      const Tensor& b3);

// What the BLAS is, for benchmarks and `tinyformer --version`:
// e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64";
// with TINYFORMER_OWN_GEMM "tinyformer blocked gemm (wasm simd128)" or
// "tinyformer blocked gemm (scalar)", 1 thread, and set_blas_threads does nothing.
std::string blas_description();
int blas_threads();
void set_blas_threads(int threads);

}  // namespace tinyformer
