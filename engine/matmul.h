// Matrix products — through OpenBLAS: cblas_sgemm, or the engine's gemv or
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
// gemv (engine/cpu/gemv.h) is the engine's own one-row product y = W x of
// decoding, which gemm and linear use for M = 1 where gemv_path says so.
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
