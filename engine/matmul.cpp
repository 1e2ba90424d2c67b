#include "engine/matmul.h"

#include "engine/cpu/gemv.h"

#ifndef TINYFORMER_OWN_GEMM
#include <cblas.h>
#endif

#include <algorithm>
#include <tuple>

namespace tinyformer {

namespace {

// The shape of op(X): rows and columns after the optional transpose.
int64_t op_rows(ConstMatrixView x, Transpose t) { return t == Transpose::Yes ? x.cols : x.rows; }
int64_t op_cols(ConstMatrixView x, Transpose t) { return t == Transpose::Yes ? x.rows : x.cols; }

}  // namespace

void check_gemm_shapes(const char* op, ConstMatrixView a, Transpose ta, ConstMatrixView b, Transpose tb,
                       MatrixView c) {
    if (op_cols(a, ta) != op_rows(b, tb) || op_rows(a, ta) != c.rows || op_cols(b, tb) != c.cols)
        fail(op, ": op(A) is [", op_rows(a, ta), ",", op_cols(a, ta), "], op(B) is [", op_rows(b, tb), ",",
             op_cols(b, tb), "], C is [", c.rows, ",", c.cols, "]; need [M,K] @ [K,N] -> [M,N]");
    if (a.stride < a.cols || b.stride < b.cols || c.stride < c.cols)
        fail(op, ": a view's row stride is smaller than its column count");
}

#ifdef TINYFORMER_OWN_GEMM

// No BLAS in this build (the WebAssembly engine): the engine's own product,
// gemm_blocked (engine/cpu/matmul_blocked.cpp).
void gemm(ConstMatrixView a, Transpose ta, ConstMatrixView b, Transpose tb, MatrixView c, float alpha, float beta) {
    check_gemm_shapes("gemm", a, ta, b, tb, c);
    gemm_blocked(a, ta, b, tb, c, alpha, beta);
}

#else

void gemm(ConstMatrixView a, Transpose ta, ConstMatrixView b, Transpose tb, MatrixView c, float alpha, float beta) {
    check_gemm_shapes("gemm", a, ta, b, tb, c);
    const int64_t m = c.rows, n = c.cols, k = op_cols(a, ta);
    if (m == 0 || n == 0) return;
    // BLAS requires leading dimensions >= 1 even for empty operands.
    auto ld = [](int64_t stride) { return static_cast<blasint>(stride > 0 ? stride : 1); };
    if (k > 0 && m == 1 && tb == Transpose::Yes && ta == Transpose::No && alpha == 1.0f && beta == 0.0f &&
        gemv_path(n, k) == GemvPath::Engine) {
        // One row times W^T, W [N,K] row-major (linear()'s product at a
        // decoding step): the engine's gemv, c = W a.
        gemv(b, a.data, c.data, blas_threads());
        return;
    }
    if (k > 0 && m == 1) {
        // One row: c = alpha op(B)^T a + beta c, a matrix-vector product. sgemv
        // reads B once; OpenBLAS 0.3.21's sgemm would first copy (pack) it.
        // op(B) = B [K,N] -> c = B^T a;  op(B) = B^T, B [N,K] -> c = B a.
        //
        // OpenBLAS 0.3.21 spreads a gemv over its threads once the matrix has
        // 2304 * 4 = 9216 elements. For a small matrix, waking the other
        // threads costs more than they save (toy decoding at D = 64, B = 1 was
        // slower on two threads than on one: docs/PERFORMANCE.md has the
        // numbers), so up to kSmallGemv elements the outputs are computed in
        // chunks under that threshold, each of which OpenBLAS runs on the
        // calling thread.
        constexpr int64_t kThreadedGemv = 9216, kSmallGemv = 65536;
        const blasint inc_a = static_cast<blasint>(ta == Transpose::Yes ? a.stride : 1);
        const int64_t chunk = b.rows * b.cols <= kSmallGemv ? std::max<int64_t>(1, (kThreadedGemv - 1) / k) : n;
        for (int64_t first = 0; first < n; first += chunk) {
            const blasint count = static_cast<blasint>(std::min(chunk, n - first));
            if (tb == Transpose::Yes)  // B [N,K]: output j is row j of B
                cblas_sgemv(CblasRowMajor, CblasNoTrans, count, static_cast<blasint>(k), alpha,
                            b.data + first * b.stride, ld(b.stride), a.data, inc_a, beta, c.data + first, 1);
            else  // B [K,N]: output j is column j of B
                cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(k), count, alpha, b.data + first,
                            ld(b.stride), a.data, inc_a, beta, c.data + first, 1);
        }
        return;
    }
    if (k > 0 && n == 1) {
        // One column: c = alpha op(A) b + beta c.
        const blasint inc_b = static_cast<blasint>(tb == Transpose::Yes ? 1 : b.stride);
        cblas_sgemv(CblasRowMajor, ta == Transpose::Yes ? CblasTrans : CblasNoTrans, static_cast<blasint>(a.rows),
                    static_cast<blasint>(a.cols), alpha, a.data, ld(a.stride), b.data, inc_b, beta, c.data,
                    static_cast<blasint>(c.stride));
        return;
    }
    cblas_sgemm(CblasRowMajor, ta == Transpose::Yes ? CblasTrans : CblasNoTrans,
                tb == Transpose::Yes ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a.data, ld(a.stride), b.data, ld(b.stride), beta, c.data, ld(c.stride));
}

#endif  // TINYFORMER_OWN_GEMM

void gemm_naive(ConstMatrixView a, Transpose ta, ConstMatrixView b, Transpose tb, MatrixView c, float alpha,
                float beta) {
    check_gemm_shapes("gemm_naive", a, ta, b, tb, c);
    const int64_t k_size = op_cols(a, ta);
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
            double sum = 0.0;
            for (int64_t k = 0; k < k_size; ++k) {
                float a_ik = ta == Transpose::Yes ? a(k, i) : a(i, k);
                float b_kj = tb == Transpose::Yes ? b(j, k) : b(k, j);
                sum += static_cast<double>(a_ik) * b_kj;
            }
            float previous = beta == 0.0f ? 0.0f : beta * c(i, j);  // beta = 0 ignores C, as BLAS does
            c(i, j) = alpha * static_cast<float>(sum) + previous;
        }
}

Tensor matmul(const Tensor& a, const Tensor& b, Transpose tb) {
    if (a.rank() < 2 || b.rank() < 2)
        fail("matmul: a and b need rank >= 2, got a ", shape_string(a.shape()), ", b ", shape_string(b.shape()));
    const bool shared_b = b.rank() == 2;
    if (!shared_b && (b.rank() != a.rank() || a.matrix_count() != b.matrix_count() ||
                      !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin())))
        fail("matmul: batch axes differ: a ", shape_string(a.shape()), ", b ", shape_string(b.shape()));
    const int64_t k_b = tb == Transpose::Yes ? b.dim(-1) : b.dim(-2);
    const int64_t n = tb == Transpose::Yes ? b.dim(-2) : b.dim(-1);
    if (a.dim(-1) != k_b)
        fail("matmul: a has K=", a.dim(-1), " but b has K=", k_b, " (a ", shape_string(a.shape()), ", b ",
             shape_string(b.shape()), tb == Transpose::Yes ? ", b transposed)" : ")");
    Shape out_shape = a.shape();
    out_shape.back() = n;
    Tensor out(out_shape);
    for (int64_t i = 0; i < a.matrix_count(); ++i)
        gemm(a.matrix(i), Transpose::No, b.matrix(shared_b ? 0 : i), tb, out.matrix(i));
    return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    if (weight.rank() != 2)
        fail("linear: weight must be [out,in], got ", shape_string(weight.shape()));
    if (!bias.empty() && (bias.rank() != 1 || bias.dim(0) != weight.dim(0)))
        fail("linear: bias must be [", weight.dim(0), "], got ", shape_string(bias.shape()));
    return linear(x, weight.matrix(), bias.empty() ? nullptr : bias.data());
}

Tensor linear(const Tensor& x, ConstMatrixView weight, const float* bias) {
    if (x.empty() || x.dim(-1) != weight.cols)
        fail("linear: x has ", x.empty() ? 0 : x.dim(-1), " input features but weight [", weight.rows, ",",
             weight.cols, "] expects ", weight.cols, " (x ", shape_string(x.shape()), ")");
    const int64_t in = weight.cols, out_features = weight.rows;
    int64_t rows = 1;  // every axis of x but the last is a batch of rows
    for (int64_t axis = 0; axis + 1 < x.rank(); ++axis) rows *= x.dim(axis);
    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    Tensor y(out_shape);
    MatrixView y_rows{y.data(), rows, out_features, out_features};
#ifndef TINYFORMER_OWN_GEMM
    if (rows == 1 && in > 0 && gemv_path(out_features, in) == GemvPath::Engine) {
        // A decoding step's projection: the engine's gemv, then the bias.
        gemv(weight, x.data(), y.data(), blas_threads());
        if (bias)
            for (int64_t j = 0; j < out_features; ++j) y.data()[j] += bias[j];
        return y;
    }
#endif
    if (bias)  // y starts as the bias in every row, then gemm adds x W^T (beta = 1)
        for (int64_t r = 0; r < y_rows.rows; ++r) std::copy(bias, bias + out_features, y_rows.row(r));
    ConstMatrixView x_rows{x.data(), y_rows.rows, in, in};
    gemm(x_rows, Transpose::No, weight, Transpose::Yes, y_rows, 1.0f, bias ? 1.0f : 0.0f);
    return y;
}

std::pair<Tensor, Tensor> linear_pair(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w3,
                                      const Tensor& b3) {
#ifndef TINYFORMER_OWN_GEMM
    const bool one_row = !x.empty() && x.numel() == x.dim(-1);
    if (one_row && w1.rank() == 2 && w3.rank() == 2 && w1.dim(1) == x.dim(-1) && w3.dim(1) == x.dim(-1) &&
        x.dim(-1) > 0 && gemv_path(w1.dim(0) + w3.dim(0), x.dim(-1)) == GemvPath::Engine) {
        Tensor y1, y3;
        for (auto [y, w, b] : {std::tie(y1, w1, b1), std::tie(y3, w3, b3)}) {
            if (!b.empty() && (b.rank() != 1 || b.dim(0) != w.dim(0)))
                fail("linear: bias must be [", w.dim(0), "], got ", shape_string(b.shape()));
            Shape shape = x.shape();
            shape.back() = w.dim(0);
            y = Tensor(shape);
        }
        gemv_pair(w1.matrix(), y1.data(), w3.matrix(), y3.data(), x.data(), blas_threads());
        for (auto [y, b] : {std::tie(y1, b1), std::tie(y3, b3)})
            if (!b.empty())
                for (int64_t j = 0; j < b.dim(0); ++j) y.data()[j] += b.data()[j];
        return {std::move(y1), std::move(y3)};
    }
#endif
    return {linear(x, w1, b1), linear(x, w3, b3)};
}

#ifdef TINYFORMER_OWN_GEMM
#ifdef __wasm_simd128__
std::string blas_description() { return "tinyformer blocked gemm (wasm simd128)"; }
#else
std::string blas_description() { return "tinyformer blocked gemm (scalar)"; }
#endif
int blas_threads() { return 1; }
void set_blas_threads(int) {}
#else
std::string blas_description() { return openblas_get_config(); }
int blas_threads() { return openblas_get_num_threads(); }
void set_blas_threads(int threads) { openblas_set_num_threads(threads); }
#endif

}  // namespace tinyformer
