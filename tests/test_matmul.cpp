// Tests for engine/matmul.* — the BLAS gemm against its three-loop reference
// over a table of shapes, then matmul and linear on small hand-worked products.
#include <doctest/doctest.h>

#include "engine/matmul.h"
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

TEST_CASE("gemm agrees with gemm_naive over a table of shapes, transposes, alpha/beta and strides") {
    // M, N, K: ones, odd sizes, and sizes up to 70 (past OpenBLAS's small-matrix paths). One-row
    // products of up to 65536 weights are issued in chunks of outputs below 9216 weights each
    // (engine/matmul.cpp): N = 300, K = 64 is 3 chunks (143 + 143 + 14 outputs), N = 1000, K = 60
    // is 7, and N = 2000, K = 64 (128000 weights) one call. Within tests/gemm_check.h's bound.
    test_helpers::check_against_naive(
        tinyformer::gemm,
        {{1, 1, 1},   {1, 7, 3},   {5, 1, 4},   {3, 4, 1},    {2, 3, 5},    {7, 7, 7},
         {17, 13, 11}, {1, 64, 70}, {33, 1, 65}, {64, 70, 3},  {31, 37, 41}, {70, 69, 67},
         {3, 5, 0},    {1, 300, 64}, {1, 1000, 60}, {1, 2000, 64}},
        /*nan_when_beta_is_0=*/false);
}

TEST_CASE("gemm multiplies a 2x3 by a 3x2 matrix as worked by hand") {
    // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]
    //   C00 = 1*7 + 2*9  + 3*11 = 7 + 18 + 33 = 58
    //   C01 = 1*8 + 2*10 + 3*12 = 8 + 20 + 36 = 64
    //   C10 = 4*7 + 5*9  + 6*11 = 28 + 45 + 66 = 139
    //   C11 = 4*8 + 5*10 + 6*12 = 32 + 50 + 72 = 154
    Tensor a({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b({3, 2}, {7, 8, 9, 10, 11, 12});
    const std::vector<float> expected = {58, 64, 139, 154};

    SUBCASE("with BLAS and with the naive loops") {
        Tensor c_blas(Shape{2, 2}), c_naive(Shape{2, 2});
        tinyformer::gemm(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_blas.matrix());
        tinyformer::gemm_naive(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_naive.matrix());
        // Exactly, in any summation order: small integers, whose every partial sum is a float.
        CHECK(c_blas.values() == expected);
        CHECK(c_naive.values() == expected);
    }
    SUBCASE("with both operands stored transposed") {
        Tensor a_t({3, 2}, {1, 4, 2, 5, 3, 6});   // A^T
        Tensor b_t({2, 3}, {7, 9, 11, 8, 10, 12});  // B^T
        Tensor c(Shape{2, 2});
        tinyformer::gemm(a_t.matrix(), Transpose::Yes, b_t.matrix(), Transpose::Yes, c.matrix());
        CHECK(c.values() == expected);
    }
    SUBCASE("alpha scales the product and beta the old C") {
        // C = 2 * AB + 1 * [[1,1],[1,1]] = [[117,129],[279,309]]  (2*58+1, 2*64+1, 2*139+1, 2*154+1)
        Tensor c_blas = Tensor::filled({2, 2}, 1.0f), c_naive = Tensor::filled({2, 2}, 1.0f);
        tinyformer::gemm(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_blas.matrix(), 2.0f, 1.0f);
        tinyformer::gemm_naive(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_naive.matrix(), 2.0f, 1.0f);
        CHECK(c_blas.values() == std::vector<float>{117, 129, 279, 309});
        CHECK(c_naive.values() == std::vector<float>{117, 129, 279, 309});
    }
    SUBCASE("beta = 0 ignores whatever C held, even NaN") {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        Tensor c_blas = Tensor::filled({2, 2}, nan), c_naive = Tensor::filled({2, 2}, nan);
        tinyformer::gemm(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_blas.matrix(), 1.0f, 0.0f);
        tinyformer::gemm_naive(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c_naive.matrix(), 1.0f, 0.0f);
        // Exactly, in any summation order: small integers, whose every partial sum is a float.
        CHECK(c_blas.values() == expected);
        CHECK(c_naive.values() == expected);
    }
}

TEST_CASE("gemm refuses operands whose shapes do not chain, naming all three") {
    Tensor a(Shape{2, 3}), b(Shape{2, 2}), c(Shape{2, 2});
    CHECK_ERROR_CONTAINS(tinyformer::gemm(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix()),
                         "gemm: op(A) is [2,3], op(B) is [2,2], C is [2,2]");
    CHECK_ERROR_CONTAINS(tinyformer::gemm_naive(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix()),
                         "gemm_naive: op(A) is [2,3]");
    // Transposing A makes op(A) [3,2]: K = 2 now matches B, but M = 3 does not match C's 2 rows.
    CHECK_ERROR_CONTAINS(tinyformer::gemm(a.matrix(), Transpose::Yes, b.matrix(), Transpose::No, c.matrix()),
                         "op(A) is [3,2]");
    SUBCASE("a view whose stride is shorter than its rows is refused") {
        MatrixView bad{c.data(), 2, 2, 1};
        CHECK_ERROR_CONTAINS(tinyformer::gemm(a.matrix(), Transpose::Yes, b.matrix(), Transpose::No,
                                              MatrixView{c.data(), 3, 2, 1}),
                             "stride");
        CHECK_THROWS_AS(tinyformer::gemm(ConstMatrixView(bad), Transpose::No, b.matrix(), Transpose::No, c.matrix()),
                        Error);
    }
}

TEST_CASE("matmul multiplies batch by batch, or every batch by one shared b") {
    // a[0] = [[1,2],[3,4]], a[1] = [[0,1],[1,0]] (the row swap)
    Tensor a({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});

    SUBCASE("batched: a[i] @ b[i]") {
        // b[0] = [[5,6],[7,8]], b[1] = [[1,2],[3,4]]
        Tensor b({2, 2, 2}, {5, 6, 7, 8, 1, 2, 3, 4});
        Tensor y = tinyformer::matmul(a, b);
        CHECK(y.shape() == Shape{2, 2, 2});
        // y[0] = [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]] = [[19,22],[43,50]]
        // y[1] = row swap of b[1] = [[3,4],[1,2]]
        CHECK(y.values() == std::vector<float>{19, 22, 43, 50, 3, 4, 1, 2});
    }
    SUBCASE("shared: a[i] @ b for a rank-2 b") {
        Tensor b({2, 2}, {5, 6, 7, 8});
        Tensor y = tinyformer::matmul(a, b);
        CHECK(y.shape() == Shape{2, 2, 2});
        // y[0] = [[19,22],[43,50]] as above; y[1] = row swap of b = [[7,8],[5,6]]
        CHECK(y.values() == std::vector<float>{19, 22, 43, 50, 7, 8, 5, 6});
    }
    SUBCASE("b transposed: a @ b^T") {
        Tensor b_t({2, 2}, {5, 7, 6, 8});  // b^T = [[5,6],[7,8]]
        Tensor y = tinyformer::matmul(a, b_t, Transpose::Yes);
        CHECK(y.values() == std::vector<float>{19, 22, 43, 50, 7, 8, 5, 6});
    }
    SUBCASE("rank 2 with N != K: [2,3] @ [3,2] -> [2,2]") {
        Tensor y = tinyformer::matmul(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor({3, 2}, {7, 8, 9, 10, 11, 12}));
        CHECK(y.shape() == Shape{2, 2});
        CHECK(y.values() == std::vector<float>{58, 64, 139, 154});  // worked in the gemm test above
    }
    SUBCASE("rank 4 [B, H, L, Dh] @ shared [Dh, N]") {
        Tensor x({2, 1, 1, 2}, {1, 2, 3, 4});
        Tensor w({2, 3}, {1, 0, 1, 0, 1, 1});  // columns: e0, e1, e0 + e1
        Tensor y = tinyformer::matmul(x, w);
        CHECK(y.shape() == Shape{2, 1, 1, 3});
        // [1,2] -> [1, 2, 1+2 = 3]; [3,4] -> [3, 4, 3+4 = 7]
        CHECK(y.values() == std::vector<float>{1, 2, 3, 3, 4, 7});
    }
}

TEST_CASE("matmul refuses mismatched shapes and says which") {
    CHECK_ERROR_CONTAINS(tinyformer::matmul(Tensor(Shape{2, 3}), Tensor(Shape{2, 2})),
                         "a has K=3 but b has K=2 (a [2,3], b [2,2])");
    CHECK_ERROR_CONTAINS(tinyformer::matmul(Tensor(Shape{2, 3}), Tensor(Shape{2, 2}), Transpose::Yes),
                         "(a [2,3], b [2,2], b transposed)");
    CHECK_ERROR_CONTAINS(tinyformer::matmul(Tensor(Shape{2, 2, 3}), Tensor(Shape{3, 3, 2})),
                         "batch axes differ: a [2,2,3], b [3,3,2]");
    CHECK_ERROR_CONTAINS(tinyformer::matmul(Tensor(Shape{2, 3}), Tensor(Shape{2, 3, 2})),
                         "a [2,3], b [2,3,2]");
    CHECK_ERROR_CONTAINS(tinyformer::matmul(Tensor(Shape{3}), Tensor(Shape{3, 2})),
                         "rank >= 2, got a [3], b [3,2]");
}

TEST_CASE("linear computes x W^T + b in PyTorch's [out, in] weight layout") {
    // x = [[1,2,3],[4,5,6]], W = [[1,0,-1],[0.5,0.5,0.5]] (out = 2, in = 3), b = [10,-1]
    //   x W^T row 0: [1*1 + 2*0 + 3*(-1), 0.5*(1+2+3)] = [-2, 3]
    //   x W^T row 1: [4*1 + 5*0 + 6*(-1), 0.5*(4+5+6)] = [-2, 7.5]
    Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor weight({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f});
    Tensor bias({2}, {10, -1});

    SUBCASE("with a bias") {
        Tensor y = tinyformer::linear(x, weight, bias);
        CHECK(y.shape() == Shape{2, 2});
        // [-2 + 10, 3 - 1] = [8, 2]; [-2 + 10, 7.5 - 1] = [8, 6.5]
        CHECK(y.values() == std::vector<float>{8, 2, 8, 6.5f});
    }
    SUBCASE("without a bias (an empty Tensor)") {
        Tensor y = tinyformer::linear(x, weight, Tensor());
        CHECK(y.values() == std::vector<float>{-2, 3, -2, 7.5f});
    }
    SUBCASE("every axis but the last is a batch of rows") {
        Tensor y = tinyformer::linear(x.reshaped({2, 1, 3}), weight, bias);
        CHECK(y.shape() == Shape{2, 1, 2});
        CHECK(y.values() == std::vector<float>{8, 2, 8, 6.5f});
        Tensor single = tinyformer::linear(Tensor({3}, {1, 2, 3}), weight, bias);
        CHECK(single.shape() == Shape{2});
        CHECK(single.values() == std::vector<float>{8, 2});
    }
    SUBCASE("wrong shapes are refused with the shapes in the message") {
        CHECK_ERROR_CONTAINS(tinyformer::linear(x, Tensor(Shape{3}), bias),
                             "weight must be [out,in], got [3]");
        CHECK_ERROR_CONTAINS(tinyformer::linear(Tensor(Shape{2, 4}), weight, bias),
                             "x has 4 input features but weight [2,3] expects 3 (x [2,4])");
        CHECK_ERROR_CONTAINS(tinyformer::linear(x, weight, Tensor(Shape{3})),
                             "bias must be [2], got [3]");
        CHECK_ERROR_CONTAINS(tinyformer::linear(x, weight, Tensor(Shape{1, 2})),
                             "bias must be [2], got [1,2]");
        CHECK_THROWS_AS(tinyformer::linear(Tensor(), weight, bias), Error);
    }
}

TEST_CASE("The BLAS describes itself and its thread count can be set") {
    CHECK_FALSE(tinyformer::blas_description().empty());
    const int threads = tinyformer::blas_threads();
    CHECK(threads >= 1);
    tinyformer::set_blas_threads(1);
    CHECK(tinyformer::blas_threads() == 1);
    tinyformer::set_blas_threads(threads);
    CHECK(tinyformer::blas_threads() == threads);
}
