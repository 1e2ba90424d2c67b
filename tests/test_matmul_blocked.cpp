// Tests for engine/matmul_blocked.cpp — the engine's own cache-blocked gemm
// against the three-loop gemm_naive (double sums) over shapes that hit every
// edge of the blocking (1, the 4 x 8 micro-tile, the 64-row block, the 256 K
// panel, the 512-column panel, and sizes that are multiples of none), every
// transpose, strided windows, alpha/beta; then against OpenBLAS's gemm on a
// model-sized product.
//
// Tolerance. gemm_blocked sums in float. Each output is a sum of K products;
// summing K terms in float rounds at most K times, each time by at most
// u = 2^-24 of the partial sum, so the error is at most about
// K u sum_k |a_ik b_kj|. alpha, beta and the panels' additions into C add a
// few roundings more, and the reference (a double sum rounded to float, then
// alpha * it + beta * c in float) a few of its own, so each element must be
// within  (K + 8) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|)  of gemm_naive.
// That bound is reached only by adversarial inputs; a wrong index or a lost
// term moves an element by about one |a b| ~ 0.25, hundreds of times more.
#include <doctest/doctest.h>

#include "engine/matmul.h"
#include "engine/random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using tinyformer::ConstMatrixView;
using tinyformer::Error;
using tinyformer::MatrixView;
using tinyformer::Shape;
using tinyformer::Tensor;
using tinyformer::Transpose;

namespace {

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // 2^-24, float's

// Deterministic numbers in [-1, 1) (a 32-bit LCG), so a failing shape reproduces.
struct Numbers {
    uint32_t state;
    float next() {
        state = state * 1664525u + 1013904223u;
        return static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
};

// A rows x cols window into a larger buffer: it starts `offset` floats in and
// each row is followed by `padding` floats that the window must never touch.
struct Strided {
    std::vector<float> buffer;
    int64_t rows, cols, stride, offset;

    Strided(int64_t rows_, int64_t cols_, int64_t padding, int64_t offset_, float fill)
        : buffer(static_cast<size_t>(offset_ + rows_ * (cols_ + padding) + 1), fill),
          rows(rows_), cols(cols_), stride(cols_ + padding), offset(offset_) {}
    MatrixView view() { return {buffer.data() + offset, rows, cols, stride}; }
    void fill_window(Numbers& numbers) {
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) view()(r, c) = numbers.next();
    }
    // The same window with every element replaced by its magnitude.
    Strided magnitudes() const {
        Strided copy = *this;
        for (float& value : copy.buffer) value = std::fabs(value);
        return copy;
    }
    // Elements outside the window that are not `sentinel` any more.
    int64_t touched_outside(float sentinel) const {
        int64_t touched = 0;
        for (size_t i = 0; i < buffer.size(); ++i) {
            const int64_t at = static_cast<int64_t>(i) - offset;
            const bool inside = at >= 0 && at / stride < rows && at % stride < cols;
            if (!inside && buffer[i] != sentinel) ++touched;
        }
        return touched;
    }
};

const char* name(Transpose t) { return t == Transpose::Yes ? "T" : "N"; }

}  // namespace

TEST_CASE("gemm_blocked agrees with gemm_naive over shapes, transposes, strides and alpha/beta") {
    struct Case {
        int64_t m, n, k;
    };
    // Ones; one row (the decoding gemv, both layouts of B) and one column; sizes that
    // are not multiples of the 4 x 8 tile; M past the 64-row block (130), K past
    // one and two 256 panels (257, 600), N past the 512-column panel (600); the
    // toy models' shapes (8 x 64 x 64, 32 x 256 x 256).
    const Case cases[] = {{1, 1, 1},   {1, 64, 64},  {1, 256, 64},  {1, 37, 29},   {1, 1, 9},    {5, 1, 7},
                          {64, 1, 256}, {3, 4, 1},   {2, 3, 5},     {4, 8, 256},   {5, 9, 3},    {7, 7, 7},
                          {8, 64, 64}, {17, 13, 11}, {65, 129, 33}, {130, 20, 20}, {13, 17, 600}, {6, 600, 9},
                          {32, 256, 256}, {300, 70, 257}};
    struct Scale {
        float alpha, beta;
    };
    // beta = 0 with NaN in C: C must be ignored (BLAS's rule), not multiplied by 0.
    const Scale scales[] = {{1.0f, 0.0f}, {0.5f, 2.0f}, {-1.5f, 1.0f}};
    const Transpose both[] = {Transpose::No, Transpose::Yes};
    const int64_t paddings[] = {0, 3};  // 3: windows into a bigger buffer (stride > cols), as a head slice is
    const float sentinel = 12345.0f;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    uint32_t seed = 1;
    for (const Case& shape : cases)
        for (Transpose ta : both)
            for (Transpose tb : both)
                for (const Scale& scale : scales)
                    for (int64_t padding : paddings) {
                        CAPTURE(shape.m);
                        CAPTURE(shape.n);
                        CAPTURE(shape.k);
                        CAPTURE(name(ta));
                        CAPTURE(name(tb));
                        CAPTURE(scale.alpha);
                        CAPTURE(scale.beta);
                        CAPTURE(padding);
                        Numbers numbers{seed++};
                        const int64_t offset = padding == 0 ? 0 : 1;
                        // op(A) is [M, K]: stored [K, M] when transposed. Likewise B.
                        Strided a(ta == Transpose::Yes ? shape.k : shape.m, ta == Transpose::Yes ? shape.m : shape.k,
                                  padding, offset, sentinel);
                        Strided b(tb == Transpose::Yes ? shape.n : shape.k, tb == Transpose::Yes ? shape.k : shape.n,
                                  padding, offset, sentinel);
                        Strided c(shape.m, shape.n, padding, offset, sentinel);
                        a.fill_window(numbers);
                        b.fill_window(numbers);
                        c.fill_window(numbers);
                        if (scale.beta == 0.0f)
                            for (int64_t i = 0; i < shape.m; ++i)
                                for (int64_t j = 0; j < shape.n; ++j) c.view()(i, j) = nan;
                        Strided reference = c, bound = c.magnitudes();

                        tinyformer::gemm_blocked(a.view(), ta, b.view(), tb, c.view(), scale.alpha, scale.beta);
                        tinyformer::gemm_naive(a.view(), ta, b.view(), tb, reference.view(), scale.alpha, scale.beta);
                        // bound = |alpha| |op(A)| |op(B)| + |beta| |C|: sum_k |a_ik b_kj| by the naive loops.
                        Strided a_abs = a.magnitudes(), b_abs = b.magnitudes();
                        tinyformer::gemm_naive(a_abs.view(), ta, b_abs.view(), tb, bound.view(), std::fabs(scale.alpha),
                                               std::fabs(scale.beta));

                        const double factor = static_cast<double>(shape.k + 8) * kUnitRoundoff;
                        int64_t outside = 0;
                        double worst = 0;  // the largest |difference| / allowed
                        for (int64_t i = 0; i < shape.m; ++i)
                            for (int64_t j = 0; j < shape.n; ++j) {
                                const double got = c.view()(i, j), want = reference.view()(i, j);
                                const double allowed = factor * bound.view()(i, j) + 1e-30;
                                const double difference = std::fabs(got - want);
                                if (!(difference <= allowed)) ++outside;  // NaN counts as outside
                                worst = std::max(worst, difference / allowed);
                            }
                        CAPTURE(worst);
                        CHECK(outside == 0);
                        CHECK(c.touched_outside(sentinel) == 0);  // nothing written past the window
                    }
}

TEST_CASE("gemm_blocked multiplies a 2x3 by a 3x2 matrix as worked by hand") {
    // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]
    //   C00 = 1*7 + 2*9  + 3*11 = 58,  C01 = 1*8 + 2*10 + 3*12 = 64
    //   C10 = 4*7 + 5*9  + 6*11 = 139, C11 = 4*8 + 5*10 + 6*12 = 154
    // Small integers: every partial sum is exact in float, so the results are too.
    Tensor a({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b({3, 2}, {7, 8, 9, 10, 11, 12});
    const std::vector<float> expected = {58, 64, 139, 154};
    SUBCASE("plain") {
        Tensor c(Shape{2, 2});
        tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix());
        CHECK(c.values() == expected);
    }
    SUBCASE("both operands stored transposed") {
        Tensor a_t({3, 2}, {1, 4, 2, 5, 3, 6}), b_t({2, 3}, {7, 9, 11, 8, 10, 12});
        Tensor c(Shape{2, 2});
        tinyformer::gemm_blocked(a_t.matrix(), Transpose::Yes, b_t.matrix(), Transpose::Yes, c.matrix());
        CHECK(c.values() == expected);
    }
    SUBCASE("alpha and beta: C = 2 AB + 1 C, C all ones") {
        // 2*58+1 = 117, 2*64+1 = 129, 2*139+1 = 279, 2*154+1 = 309
        Tensor c = Tensor::filled({2, 2}, 1.0f);
        tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix(), 2.0f, 1.0f);
        CHECK(c.values() == std::vector<float>{117, 129, 279, 309});
    }
    SUBCASE("one row (the decoding path): [1,2,3] times B, and B stored as B^T") {
        // row 0 of A times B: [58, 64]
        Tensor row({1, 3}, {1, 2, 3}), b_t({2, 3}, {7, 9, 11, 8, 10, 12});
        Tensor c(Shape{1, 2}), c_t(Shape{1, 2});
        tinyformer::gemm_blocked(row.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix());
        tinyformer::gemm_blocked(row.matrix(), Transpose::No, b_t.matrix(), Transpose::Yes, c_t.matrix());
        CHECK(c.values() == std::vector<float>{58, 64});
        CHECK(c_t.values() == std::vector<float>{58, 64});
    }
}

TEST_CASE("gemm_blocked with K = 0 is C = beta C, and beta = 0 clears even NaN") {
    Tensor a(Shape{3, 0}), b(Shape{0, 2});
    Tensor c({3, 2}, {1, 2, 3, 4, 5, 6});
    tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix(), 1.0f, 2.0f);
    CHECK(c.values() == std::vector<float>{2, 4, 6, 8, 10, 12});
    Tensor garbage = Tensor::filled({3, 2}, std::numeric_limits<float>::quiet_NaN());
    tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, garbage.matrix(), 1.0f, 0.0f);
    CHECK(garbage.values() == std::vector<float>(6, 0.0f));
    Tensor empty(Shape{0, 2});  // M = 0: nothing to do, nothing read
    tinyformer::gemm_blocked(ConstMatrixView{nullptr, 0, 5, 5}, Transpose::No, Tensor(Shape{5, 2}).matrix(),
                             Transpose::No, empty.matrix());
}

TEST_CASE("gemm_blocked refuses operands whose shapes do not chain, with gemm's message under its own name") {
    Tensor a(Shape{2, 3}), b(Shape{2, 2}), c(Shape{2, 2});
    CHECK_THROWS_WITH_AS(tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix()),
                         doctest::Contains("gemm_blocked: op(A) is [2,3], op(B) is [2,2], C is [2,2]"), Error);
    CHECK_THROWS_WITH_AS(tinyformer::gemm_blocked(a.matrix(), Transpose::Yes, b.matrix(), Transpose::No,
                                                  MatrixView{c.data(), 3, 2, 1}),
                         doctest::Contains("stride"), Error);
}

TEST_CASE("gemm_blocked and OpenBLAS's gemm agree on model-sized products") {
    // A base-size encoder's feed-forward: x [128, 512] W^T with W [2048, 512];
    // its decoding step: x [1, 512]; and the output back, x [128, 2048] W2^T.
    // Both sum in float with different orders: each within (K + 8) u sum|a b|
    // of the exact product, so within twice that of each other.
    tinyformer::Random random(3);
    const Tensor w = random.normal_tensor({2048, 512}, 0.05f), w2 = random.normal_tensor({512, 2048}, 0.05f);
    const Tensor x = random.normal_tensor({128, 512}), h = random.normal_tensor({128, 2048});
    struct Product {
        const char* what;
        ConstMatrixView a, b;
    };
    const Product products[] = {{"[128,512] x [2048,512]^T", x.matrix(), w.matrix()},
                                {"[1,512] x [2048,512]^T", ConstMatrixView{x.data(), 1, 512, 512}, w.matrix()},
                                {"[128,2048] x [512,2048]^T", h.matrix(), w2.matrix()}};
    for (const Product& p : products) {
        CAPTURE(p.what);
        Tensor blas(Shape{p.a.rows, p.b.rows}), own(Shape{p.a.rows, p.b.rows}), bound(Shape{p.a.rows, p.b.rows});
        tinyformer::gemm(p.a, Transpose::No, p.b, Transpose::Yes, blas.matrix());
        tinyformer::gemm_blocked(p.a, Transpose::No, p.b, Transpose::Yes, own.matrix());
        Tensor a_abs(Shape{p.a.rows, p.a.cols}), b_abs(Shape{p.b.rows, p.b.cols});
        for (int64_t i = 0; i < p.a.rows; ++i)
            for (int64_t j = 0; j < p.a.cols; ++j) a_abs.matrix()(i, j) = std::fabs(p.a(i, j));
        for (int64_t i = 0; i < p.b.rows; ++i)
            for (int64_t j = 0; j < p.b.cols; ++j) b_abs.matrix()(i, j) = std::fabs(p.b(i, j));
        tinyformer::gemm_naive(a_abs.matrix(), Transpose::No, b_abs.matrix(), Transpose::Yes, bound.matrix());
        const double factor = 2.0 * static_cast<double>(p.a.cols + 8) * kUnitRoundoff;
        int64_t outside = 0;
        for (int64_t i = 0; i < blas.numel(); ++i)
            if (!(std::fabs(static_cast<double>(blas.data()[i]) - own.data()[i]) <= factor * bound.data()[i])) ++outside;
        CHECK(outside == 0);
    }
}
