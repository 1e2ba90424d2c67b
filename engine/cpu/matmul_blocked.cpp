// gemm_blocked — the engine's own matrix product, for builds without a BLAS
// (the WebAssembly engine in the explore page: -DTINYFORMER_OWN_GEMM makes
// gemm() call it). Same contract as gemm: C = alpha op(A) op(B) + beta C on
// strided views, beta == 0 ignores C (NaN there included), as BLAS does.
// The plain reference beside it is gemm_naive (engine/matmul.cpp); the
// doctests compare the two on many shapes, transposes and strides.
//
// Accumulation is in float (gemm_naive sums in double): each output is a sum
// of K products, so its rounding error is at most about K * 2^-24 times
// sum_k |a_ik b_kj| (tests/test_matmul_blocked.cpp uses that bound).
//
// The blocking scheme, in words (the GotoBLAS / BLIS layout, one level):
//
//   1. op(B) is cut into panels of kKc rows (of K) by kNc columns (of N).
//      Each panel is copied ("packed") into a buffer as slivers kNr columns
//      wide: for every k of the panel, kNr consecutive floats. Whether B is
//      [K,N] or [N,K] (transposed) is settled by the copy; the kernel then
//      always reads one contiguous stream. Columns past N are zeros.
//   2. For that panel, op(A) is cut into blocks of kMc rows by the same kKc,
//      packed the same way into slivers kMr rows tall (for every k, kMr
//      consecutive floats; rows past M are zeros).
//   3. The micro-kernel multiplies one A sliver by one B sliver: a kMr x kNr
//      tile of C kept in registers (4 x 8 floats = 8 SIMD registers of 4),
//      updated by one outer product per k. A B sliver (kKc x 8 floats, 8 KiB)
//      stays in the L1 cache while every A sliver of the block (64 KiB, in L2)
//      passes by it.
//   4. The tile goes to C: on the first K panel C = alpha tile + beta C (or
//      alpha tile when beta == 0), on the later ones C += alpha tile. Only the
//      part of the tile inside C is written.
//
// One row (M == 1, a decoding step: x W^T with W [N,K]) or one column
// (N == 1) is a matrix-vector product instead, with no packing: it reads each
// weight once. With the vector's matrix stored so that every output is a
// contiguous row (linear's W [N,K]) it is N dot products of length K,
// vectorised over K; otherwise ([K,N]) it adds x_k times row k of the matrix
// to N accumulators, vectorised over N.
//
// Inner loops: WebAssembly SIMD (f32x4 mul/add) when compiled with
// -msimd128, else plain C++ loops over small fixed-size arrays that g++ -O3
// turns into SSE/AVX code by itself.
#include "engine/matmul.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

#include <algorithm>
#include <vector>

namespace tinyformer {

namespace {

constexpr int64_t kMr = 4;    // micro-tile rows (of op(A) and C)
constexpr int64_t kNr = 8;    // micro-tile columns (of op(B) and C)
constexpr int64_t kKc = 256;  // K panel
constexpr int64_t kMc = 64;   // rows of op(A) per packed block
constexpr int64_t kNc = 512;  // columns of op(B) per packed panel

// ---- the matrix-vector product (M == 1 or N == 1) ----

// sum_k x[k] w[k] over k < n, with 8 partial sums (the same order every time).
float dot(const float* x, const float* w, int64_t n) {
    int64_t k = 0;
#ifdef __wasm_simd128__
    v128_t s0 = wasm_f32x4_splat(0.0f), s1 = wasm_f32x4_splat(0.0f);
    for (; k + 8 <= n; k += 8) {
        s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(x + k), wasm_v128_load(w + k)));
        s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(wasm_v128_load(x + k + 4), wasm_v128_load(w + k + 4)));
    }
    const v128_t s = wasm_f32x4_add(s0, s1);
    float sum = (wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1)) +
                (wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3));
#else
    float partial[8] = {};
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; ++l) partial[l] += x[k + l] * w[k + l];
    float sum = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
                ((partial[2] + partial[6]) + (partial[3] + partial[7]));
#endif
    for (; k < n; ++k) sum += x[k] * w[k];
    return sum;
}

// y[j] += s w[j] for j < n.
void axpy(float s, const float* w, float* y, int64_t n) {
    int64_t j = 0;
#ifdef __wasm_simd128__
    const v128_t vs = wasm_f32x4_splat(s);
    for (; j + 4 <= n; j += 4)
        wasm_v128_store(y + j, wasm_f32x4_add(wasm_v128_load(y + j), wasm_f32x4_mul(vs, wasm_v128_load(w + j))));
#endif
    for (; j < n; ++j) y[j] += s * w[j];
}

// y_j = alpha sum_k x_k V(j, k) + beta y_j for j < V's outputs, where x has
// `length` floats and y is n floats `y_step` apart. V is `v` as stored:
//   by_rows: v is [n, length], output j is the dot product of x and row j;
//   else:    v is [length, n], output j is x against column j (axpy per row).
void gemv(const float* x, int64_t length, ConstMatrixView v, bool by_rows, float* y, int64_t y_step, float alpha,
          float beta) {
    const int64_t n = by_rows ? v.rows : v.cols;
    auto store = [&](int64_t j, float sum) {
        float& out = y[j * y_step];
        out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out;
    };
    if (by_rows) {
        for (int64_t j = 0; j < n; ++j) store(j, dot(x, v.row(j), length));
        return;
    }
    std::vector<float> sums(static_cast<size_t>(n), 0.0f);
    for (int64_t k = 0; k < length; ++k) axpy(x[k], v.row(k), sums.data(), n);
    for (int64_t j = 0; j < n; ++j) store(j, sums[static_cast<size_t>(j)]);
}

// ---- packing ----

// op(A) rows [i0, i0 + mc), k in [k0, k0 + kc) into slivers of kMr rows:
// packed[(sliver * kc + k) * kMr + r] = op(A)(i0 + sliver * kMr + r, k0 + k), 0 past the rows.
// A [M,K] is read a row at a time; A stored [K,M] (transposed) a stretch of a row at a time.
void pack_a(ConstMatrixView a, Transpose ta, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float* packed) {
    for (int64_t s = 0; s < mc; s += kMr, packed += kc * kMr) {
        const int64_t rows = std::min(kMr, mc - s);
        if (rows < kMr) std::fill_n(packed, kc * kMr, 0.0f);
        if (ta == Transpose::No)
            for (int64_t r = 0; r < rows; ++r) {
                const float* source = a.row(i0 + s + r) + k0;
                for (int64_t k = 0; k < kc; ++k) packed[k * kMr + r] = source[k];
            }
        else
            for (int64_t k = 0; k < kc; ++k) std::copy_n(a.row(k0 + k) + i0 + s, rows, packed + k * kMr);
    }
}

// op(B) rows k in [k0, k0 + kc), columns [j0, j0 + nc) into slivers of kNr columns:
// packed[(sliver * kc + k) * kNr + c] = op(B)(k0 + k, j0 + sliver * kNr + c), 0 past the columns.
// B [K,N] is read a stretch of a row at a time; B stored [N,K] (linear's W) a row at a time.
void pack_b(ConstMatrixView b, Transpose tb, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* packed) {
    for (int64_t s = 0; s < nc; s += kNr, packed += kc * kNr) {
        const int64_t cols = std::min(kNr, nc - s);
        if (cols < kNr) std::fill_n(packed, kc * kNr, 0.0f);
        if (tb == Transpose::No)
            for (int64_t k = 0; k < kc; ++k) std::copy_n(b.row(k0 + k) + j0 + s, cols, packed + k * kNr);
        else
            for (int64_t c = 0; c < cols; ++c) {
                const float* source = b.row(j0 + s + c) + k0;
                for (int64_t k = 0; k < kc; ++k) packed[k * kNr + c] = source[k];
            }
    }
}

// ---- the micro-kernel: tile[r][c] = sum_k a[k][r] b[k][c] over kc packed steps ----

void micro_kernel(int64_t kc, const float* a, const float* b, float tile[kMr][kNr]) {
#ifdef __wasm_simd128__
    static_assert(kMr == 4 && kNr == 8, "the SIMD kernel is written for 4 x 8 tiles");
    v128_t t00 = wasm_f32x4_splat(0.0f), t01 = t00, t10 = t00, t11 = t00, t20 = t00, t21 = t00, t30 = t00,
           t31 = t00;
    for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
        const v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
        v128_t ar = wasm_f32x4_splat(a[0]);
        t00 = wasm_f32x4_add(t00, wasm_f32x4_mul(ar, b0));
        t01 = wasm_f32x4_add(t01, wasm_f32x4_mul(ar, b1));
        ar = wasm_f32x4_splat(a[1]);
        t10 = wasm_f32x4_add(t10, wasm_f32x4_mul(ar, b0));
        t11 = wasm_f32x4_add(t11, wasm_f32x4_mul(ar, b1));
        ar = wasm_f32x4_splat(a[2]);
        t20 = wasm_f32x4_add(t20, wasm_f32x4_mul(ar, b0));
        t21 = wasm_f32x4_add(t21, wasm_f32x4_mul(ar, b1));
        ar = wasm_f32x4_splat(a[3]);
        t30 = wasm_f32x4_add(t30, wasm_f32x4_mul(ar, b0));
        t31 = wasm_f32x4_add(t31, wasm_f32x4_mul(ar, b1));
    }
    wasm_v128_store(tile[0], t00);
    wasm_v128_store(tile[0] + 4, t01);
    wasm_v128_store(tile[1], t10);
    wasm_v128_store(tile[1] + 4, t11);
    wasm_v128_store(tile[2], t20);
    wasm_v128_store(tile[2] + 4, t21);
    wasm_v128_store(tile[3], t30);
    wasm_v128_store(tile[3] + 4, t31);
#else
    float t[kMr][kNr] = {};  // fixed sizes: the compiler keeps it in vector registers
    for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr)
        for (int64_t r = 0; r < kMr; ++r)
            for (int64_t c = 0; c < kNr; ++c) t[r][c] += a[r] * b[c];
    for (int64_t r = 0; r < kMr; ++r)
        for (int64_t c = 0; c < kNr; ++c) tile[r][c] = t[r][c];
#endif
}

// The rows x cols corner of the tile into C at (i0, j0): step 4 of the scheme.
void store_tile(const float tile[kMr][kNr], MatrixView c, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                float alpha, float beta, bool first_panel) {
    for (int64_t r = 0; r < rows; ++r) {
        float* out = c.row(i0 + r) + j0;
        for (int64_t j = 0; j < cols; ++j) {
            const float product = alpha * tile[r][j];
            if (!first_panel) out[j] += product;
            else out[j] = beta == 0.0f ? product : product + beta * out[j];
        }
    }
}

}  // namespace

void gemm_blocked(ConstMatrixView a, Transpose ta, ConstMatrixView b, Transpose tb, MatrixView c, float alpha,
                  float beta) {
    check_gemm_shapes("gemm_blocked", a, ta, b, tb, c);
    const int64_t m = c.rows, n = c.cols, k = ta == Transpose::Yes ? a.rows : a.cols;
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: C = beta C
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c(i, j) = beta == 0.0f ? 0.0f : beta * c(i, j);
        return;
    }
    if (m == 1 || n == 1) {
        // The vector x: row 0 of op(A) (M == 1) or column 0 of op(B) (N == 1),
        // copied when its floats are not contiguous.
        const bool one_row = m == 1;
        const ConstMatrixView source = one_row ? a : b;
        const bool contiguous = one_row ? ta == Transpose::No : tb == Transpose::Yes;
        std::vector<float> gathered;
        const float* x = source.data;
        if (!contiguous) {
            gathered.resize(static_cast<size_t>(k));
            for (int64_t l = 0; l < k; ++l) gathered[static_cast<size_t>(l)] = source(l, 0);
            x = gathered.data();
        }
        if (one_row)  // c [1,N] = x^T op(B): by rows when B is [N,K]
            gemv(x, k, b, tb == Transpose::Yes, c.data, 1, alpha, beta);
        else  // c [M,1] = op(A) x: by rows when A is [M,K]
            gemv(x, k, a, ta == Transpose::No, c.data, c.stride, alpha, beta);
        return;
    }
    // The packed panels, sized for the largest panel of this product (the packing writes every float).
    const int64_t panel_k = std::min(k, kKc);
    std::vector<float> packed_b(static_cast<size_t>(panel_k * ((std::min(n, kNc) + kNr - 1) / kNr * kNr)));
    std::vector<float> packed_a(static_cast<size_t>(panel_k * ((std::min(m, kMc) + kMr - 1) / kMr * kMr)));
    float tile[kMr][kNr];
    for (int64_t j0 = 0; j0 < n; j0 += kNc) {
        const int64_t nc = std::min(kNc, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += kKc) {
            const int64_t kc = std::min(kKc, k - k0);
            pack_b(b, tb, k0, kc, j0, nc, packed_b.data());
            for (int64_t i0 = 0; i0 < m; i0 += kMc) {
                const int64_t mc = std::min(kMc, m - i0);
                pack_a(a, ta, i0, mc, k0, kc, packed_a.data());
                for (int64_t js = 0; js < nc; js += kNr)
                    for (int64_t is = 0; is < mc; is += kMr) {
                        micro_kernel(kc, packed_a.data() + is * kc, packed_b.data() + js * kc, tile);
                        store_tile(tile, c, i0 + is, j0 + js, std::min(kMr, mc - is), std::min(kNr, nc - js),
                                   alpha, beta, k0 == 0);
                    }
            }
        }
    }
}

}  // namespace tinyformer
