// Tests for engine/cpu/matmul_blocked.cpp — the engine's own cache-blocked gemm
// against the three-loop gemm_naive (double sums) over shapes that hit every
// edge of the blocking (1, the 4 x 8 micro-tile, the 64-row block, the 256 K
// panel, the 512-column panel, and sizes that are multiples of none), every
// transpose, strided windows, alpha/beta; then against OpenBLAS's gemm on a
// model-sized product.
//
// Tolerance: tests/gemm_check.h (each element within (K + 8) u sum|a b| of
// gemm_naive).
#include <doctest/doctest.h>

#include "engine/matmul.h"
#include "engine/random.h"
#include "tests/helpers.h"
#include "tests/gemm_check.h"

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

using test_helpers::kUnitRoundoff;

TEST_CASE("gemm_blocked agrees with gemm_naive over shapes, transposes, strides and alpha/beta") {
    // Ones; one row (the decoding gemv, both layouts of B) and one column; sizes that
    // are not multiples of the 4 x 8 tile; M past the 64-row block (130), K past
    // one and two 256 panels (257, 600), N past the 512-column panel (600); the
    // toy models' shapes (8 x 64 x 64, 32 x 256 x 256).
    test_helpers::check_against_naive(
        tinyformer::gemm_blocked,
        {{1, 1, 1},   {1, 64, 64},  {1, 256, 64},  {1, 37, 29},   {1, 1, 9},    {5, 1, 7},
         {64, 1, 256}, {3, 4, 1},   {2, 3, 5},     {4, 8, 256},   {5, 9, 3},    {7, 7, 7},
         {8, 64, 64}, {17, 13, 11}, {65, 129, 33}, {130, 20, 20}, {13, 17, 600}, {6, 600, 9},
         {32, 256, 256}, {300, 70, 257}},
        /*nan_when_beta_is_0=*/true);
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
    CHECK_ERROR_CONTAINS(tinyformer::gemm_blocked(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix()),
                         "gemm_blocked: op(A) is [2,3], op(B) is [2,2], C is [2,2]");
    CHECK_ERROR_CONTAINS(tinyformer::gemm_blocked(a.matrix(), Transpose::Yes, b.matrix(), Transpose::No,
                                                  MatrixView{c.data(), 3, 2, 1}),
                         "stride");
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
