// Tests for engine/ops.* — softmax, LayerNorm, activations and the residual
// add, each on a few numbers worked by hand in the comment beside them, in
// every row-kernel variant: the reference (the plain formulas of
// engine/ops.cpp) first, then each fast one this CPU runs (engine/cpu/kernels.*).
#include <doctest/doctest.h>

#include "engine/ops.h"
#include "tests/helpers.h"
#include "tests/kernel_variants.h"

#include <cmath>
#include <limits>

using tinyformer::Error;
using tinyformer::Shape;
using tinyformer::Tensor;
using tinyformer::kernels::Variant;
using test_helpers::every_variant;
using test_helpers::UseVariant;
namespace kernels = tinyformer::kernels;

namespace {

const float inf = std::numeric_limits<float>::infinity();

// Float results of a few operations on O(1) inputs: good to ~1e-7 relative.
doctest::Approx near(double expected) { return doctest::Approx(expected).epsilon(1e-6); }

}  // namespace

TEST_CASE("softmax_rows of [1,2,3] is e^x / sum e^x") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // e^1 = 2.7182818, e^2 = 7.3890561, e^3 = 20.0855369; sum = 30.1928749
        //   2.7182818 / 30.1928749 = 0.0900306
        //   7.3890561 / 30.1928749 = 0.2447285
        //  20.0855369 / 30.1928749 = 0.6652410
        Tensor y = tinyformer::softmax_rows(Tensor({1, 3}, {1, 2, 3}));
        CHECK(y.shape() == Shape{1, 3});
        CHECK(y.at({0, 0}) == near(0.0900305732));
        CHECK(y.at({0, 1}) == near(0.2447284711));
        CHECK(y.at({0, 2}) == near(0.6652409558));
        CHECK(y.at({0, 0}) + y.at({0, 1}) + y.at({0, 2}) == near(1.0));

        SUBCASE("equal scores give equal weights") {
            Tensor uniform = tinyformer::softmax_rows(Tensor({4}, {5, 5, 5, 5}));
            for (float v : uniform.values()) CHECK(v == near(0.25));  // 1 / 4
        }
        SUBCASE("one score gives weight 1") {
            CHECK(tinyformer::softmax_rows(Tensor({1}, {-7})).at({0}) == 1.0f);  // e^0 / e^0
        }
        SUBCASE("each row is its own distribution") {
            Tensor two = tinyformer::softmax_rows(Tensor({2, 2}, {0, 0, 0, std::log(3.0f)}));
            // row 0: [1/2, 1/2]; row 1: e^0 = 1, e^ln3 = 3 -> [1/4, 3/4]
            CHECK(two.at({0, 0}) == near(0.5));
            CHECK(two.at({0, 1}) == near(0.5));
            CHECK(two.at({1, 0}) == near(0.25));
            CHECK(two.at({1, 1}) == near(0.75));
        }
    }
}

TEST_CASE("softmax_rows gives -inf entries exactly 0 weight and refuses a row that is all -inf") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // [0, -inf, 0, -inf]: e^0 = 1 twice, e^-inf = 0 twice -> [1/2, 0, 1/2, 0]
        Tensor y = tinyformer::softmax_rows(Tensor({4}, {0, -inf, 0, -inf}));
        CHECK(y.at({0}) == near(0.5));
        CHECK(y.at({1}) == 0.0f);  // exactly, not merely small
        CHECK(y.at({2}) == near(0.5));
        CHECK(y.at({3}) == 0.0f);

        SUBCASE("a single allowed entry gets weight exactly 1") {
            Tensor one = tinyformer::softmax_rows(Tensor({3}, {-inf, 4, -inf}));
            CHECK(one.values() == std::vector<float>{0, 1, 0});
        }
        SUBCASE("a row of only -inf has no distribution: Error naming the row and shape") {
            CHECK_ERROR_CONTAINS(tinyformer::softmax_rows(Tensor({2, 3}, {1, 2, 3, -inf, -inf, -inf})),
                                 "row 1 of x [2,3] is entirely -inf");
        }
        SUBCASE("softmax_row reports the all -inf row and leaves it untouched") {
            float row[2] = {-inf, -inf};
            CHECK_FALSE(tinyformer::softmax_row(row, 2));
            CHECK(row[0] == -inf);
            CHECK(row[1] == -inf);
            float fine[2] = {0, 0};
            CHECK(tinyformer::softmax_row(fine, 2));
            CHECK(fine[0] == near(0.5));
        }
        SUBCASE("an empty x is refused") {
            CHECK_THROWS_AS(tinyformer::softmax_rows(Tensor()), Error);
        }
    }
}

TEST_CASE("softmax_rows is unchanged by adding a constant to a row, and large scores do not overflow") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // e^(x+c) / sum e^(x+c) = e^c e^x / (e^c sum e^x): c cancels.
        Tensor base = tinyformer::softmax_rows(Tensor({3}, {1, 2, 3}));
        Tensor shifted = tinyformer::softmax_rows(Tensor({3}, {101, 102, 103}));
        Tensor negative = tinyformer::softmax_rows(Tensor({3}, {-49, -48, -47}));
        for (int64_t i = 0; i < 3; ++i) {
            CHECK(shifted.at({i}) == near(base.at({i})));
            CHECK(negative.at({i}) == near(base.at({i})));
        }

        // [1000, 1001]: e^1000 overflows float, but after subtracting the max 1001
        // the scores are [-1, 0]: e^-1 = 0.3678794, e^0 = 1, sum 1.3678794
        //   0.3678794 / 1.3678794 = 0.2689414,  1 / 1.3678794 = 0.7310586
        Tensor large = tinyformer::softmax_rows(Tensor({2}, {1000, 1001}));
        CHECK(large.all_finite());
        CHECK(large.at({0}) == near(0.2689414214));
        CHECK(large.at({1}) == near(0.7310585786));
    }
}

TEST_CASE("layer_norm of [1,2,3] with gamma = 1, beta = 0 normalizes with the biased variance") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // mean = (1 + 2 + 3) / 3 = 2
        // var  = ((1-2)^2 + (2-2)^2 + (3-2)^2) / 3 = 2/3 = 0.6666667  (divide by N, not N-1)
        // sqrt(var + eps) = sqrt(0.6666667 + 0.00001) = sqrt(0.6666767) = 0.8165027
        // (x - mean) / 0.8165027 = [-1/0.8165027, 0, 1/0.8165027] = [-1.2247357, 0, 1.2247357]
        // (without eps it would be 1/sqrt(2/3) = 1.2247449; eps moves the 6th digit)
        Tensor ones = Tensor::filled({3}, 1.0f), zeros(Shape{3});
        Tensor y = tinyformer::layer_norm(Tensor({1, 3}, {1, 2, 3}), ones, zeros, 1e-5f);
        CHECK(y.shape() == Shape{1, 3});
        CHECK(y.at({0, 0}) == near(-1.2247356859));
        CHECK(y.at({0, 1}) == 0.0f);
        CHECK(y.at({0, 2}) == near(1.2247356859));

        SUBCASE("gamma scales and beta shifts each feature") {
            // gamma = [2, 1, 0.5], beta = [0.5, -1, 1]
            //   -1.2247357 * 2   + 0.5 = -1.9494714
            //    0         * 1   - 1   = -1
            //    1.2247357 * 0.5 + 1   =  1.6123678
            Tensor scaled = tinyformer::layer_norm(Tensor({3}, {1, 2, 3}), Tensor({3}, {2, 1, 0.5f}),
                                                   Tensor({3}, {0.5f, -1, 1}), 1e-5f);
            CHECK(scaled.at({0}) == near(-1.9494713718));
            CHECK(scaled.at({1}) == near(-1.0));
            CHECK(scaled.at({2}) == near(1.6123678430));
        }
        SUBCASE("each row is normalized on its own") {
            // row 1 = [10, 20, 30]: mean 20, var (100 + 0 + 100) / 3 = 66.666667
            //   10 / sqrt(66.666667 + 0.00001) = 10 / 8.1649664 = 1.2247448
            Tensor rows = tinyformer::layer_norm(Tensor({2, 3}, {1, 2, 3, 10, 20, 30}), ones, zeros, 1e-5f);
            CHECK(rows.at({0, 2}) == near(1.2247356859));
            CHECK(rows.at({1, 0}) == near(-1.2247447795));
            CHECK(rows.at({1, 1}) == 0.0f);
            CHECK(rows.at({1, 2}) == near(1.2247447795));
        }
        SUBCASE("a constant row has variance 0: eps keeps it finite and the output is beta") {
            // (4 - 4) / sqrt(0 + 1e-5) = 0, then 0 * gamma + beta = beta
            Tensor flat = tinyformer::layer_norm(Tensor({3}, {4, 4, 4}), ones, Tensor({3}, {7, 8, 9}), 1e-5f);
            CHECK(flat.values() == std::vector<float>{7, 8, 9});
        }
        SUBCASE("gamma/beta of the wrong size and a non-positive eps are refused") {
            CHECK_ERROR_CONTAINS(tinyformer::layer_norm(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor(Shape{2}), zeros,
                                                        1e-5f),
                                 "gamma and beta must be [3] for x [2,3], got gamma [2], beta [3]");
            CHECK_ERROR_CONTAINS(tinyformer::layer_norm(Tensor({3}, {1, 2, 3}), ones, Tensor(Shape{1, 3}), 1e-5f),
                                 "beta [1,3]");
            CHECK_ERROR_CONTAINS(tinyformer::layer_norm(Tensor({3}, {1, 2, 3}), ones, zeros, 0.0f),
                                 "eps must be > 0, got 0");
            CHECK_THROWS_AS(tinyformer::layer_norm(Tensor(), ones, zeros, 1e-5f), Error);
        }
    }
}

TEST_CASE("gelu is the exact erf form x * (1 + erf(x / sqrt 2)) / 2") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // erf(1/sqrt 2) = 0.6826895 (P(|Z| < 1)), erf(sqrt 2) = 0.9544997 (P(|Z| < 2))
        //   gelu(0)  = 0
        //   gelu(1)  =  1 * 0.5 * (1 + 0.6826895) =  0.8413447
        //   gelu(-1) = -1 * 0.5 * (1 - 0.6826895) = -0.1586553
        //   gelu(2)  =  2 * 0.5 * (1 + 0.9544997) =  1.9544997
        //   gelu(-2) = -2 * 0.5 * (1 - 0.9544997) = -0.0455003
        Tensor y = tinyformer::gelu(Tensor({5}, {0, 1, -1, 2, -2}));
        CHECK(y.shape() == Shape{5});
        CHECK(y.at({0}) == 0.0f);
        CHECK(y.at({1}) == near(0.8413447461));
        CHECK(y.at({2}) == near(-0.1586552539));
        CHECK(y.at({3}) == near(1.9544997361));
        CHECK(y.at({4}) == near(-0.0455002639));
        // The tanh approximation gives gelu(1) = 0.8411920: further off than the tolerance.
        CHECK(y.at({1}) != near(0.8411920));
    }
}

TEST_CASE("gelu_tanh is the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // sqrt(2/pi) = 0.7978845608; worked with python3's math module:
        //   x =  1: z = 0.7978845608 * (1 + 0.044715)      =  0.8335620, tanh z =  0.6823840
        //           0.5 * 1 * (1 + 0.6823840)                =  0.8411920
        //   x = -1: tanh z = -0.6823840: 0.5 * -1 * 0.3176160 = -0.1588080
        //   x =  2: z = 0.7978845608 * (2 + 0.044715 * 8)  =  1.8811884, tanh z =  0.9545977
        //           0.5 * 2 * 1.9545977                      =  1.9545977
        //   x = -2: 0.5 * -2 * (1 - 0.9545977)               = -0.0454023
        //   x = -3: z = -3.3569437, tanh z = -0.9975751: 0.5 * -3 * 0.0024249 = -0.0036374
        //   x =  0: 0
        Tensor y = tinyformer::gelu_tanh(Tensor({6}, {0, 1, -1, 2, -2, -3}));
        CHECK(y.shape() == Shape{6});
        CHECK(y.at({0}) == 0.0f);
        CHECK(y.at({1}) == near(0.8411919906));
        CHECK(y.at({2}) == near(-0.1588080094));
        CHECK(y.at({3}) == near(1.9545976941));
        CHECK(y.at({4}) == near(-0.0454023059));
        CHECK(y.at({5}) == doctest::Approx(-0.0036373921).epsilon(1e-4));  // 1 + tanh cancels: fewer digits
        // The exact erf form gives gelu(1) = 0.8413447: further off than the tolerance.
        CHECK(y.at({1}) != near(0.8413447461));
        // Far out: x and 0, never NaN (x^3 overflows to inf for |x| > 7e12).
        Tensor far = tinyformer::gelu_tanh(Tensor({4}, {30, -30, 1e20f, -1e20f}));
        CHECK(far.at({0}) == 30.0f);
        CHECK(far.at({1}) == 0.0f);
        CHECK(far.at({2}) == 1e20f);
        CHECK(far.at({3}) == 0.0f);
    }
}

TEST_CASE("layer_norm_std of [1,2,3] divides by the unbiased std plus eps (the Annotated Transformer's form)") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // mean = 2; sum of squares = 1 + 0 + 1 = 2
        // std = sqrt(2 / (N - 1)) = sqrt(2 / 2) = 1   (unbiased: N - 1; layer_norm's var is 2/3)
        // (x - mean) / (std + eps) = [-1, 0, 1] / (1 + 1e-6) = [-0.999999, 0, 0.999999]
        Tensor ones = Tensor::filled({3}, 1.0f), zeros(Shape{3});
        Tensor y = tinyformer::layer_norm_std(Tensor({1, 3}, {1, 2, 3}), ones, zeros, 1e-6f);
        CHECK(y.shape() == Shape{1, 3});
        CHECK(y.at({0, 0}) == near(-0.999999));
        CHECK(y.at({0, 1}) == 0.0f);
        CHECK(y.at({0, 2}) == near(0.999999));
        SUBCASE("eps is outside the root: a large eps shows it") {
            // eps = 0.5: 1 / (1 + 0.5) = 0.6666667 (inside the root it would be 1 / sqrt(1.5) = 0.8164966)
            Tensor wide = tinyformer::layer_norm_std(Tensor({3}, {1, 2, 3}), ones, zeros, 0.5f);
            CHECK(wide.at({2}) == near(0.6666666667));
        }
        SUBCASE("gamma scales and beta shifts; rows on their own; no beta is no shift") {
            // gamma = [2, 1, 0.5], beta = [0.5, -1, 1]:
            //   -0.999999 * 2 + 0.5 = -1.499998;  0 - 1 = -1;  0.999999 * 0.5 + 1 = 1.4999995
            Tensor scaled = tinyformer::layer_norm_std(Tensor({3}, {1, 2, 3}), Tensor({3}, {2, 1, 0.5f}),
                                                       Tensor({3}, {0.5f, -1, 1}), 1e-6f);
            CHECK(scaled.at({0}) == near(-1.499998));
            CHECK(scaled.at({1}) == near(-1.0));
            CHECK(scaled.at({2}) == near(1.4999995));
            // row [10, 20, 30]: std = sqrt(200 / 2) = 10; 10 / (10 + 1e-6) = 0.9999999
            Tensor rows = tinyformer::layer_norm_std(Tensor({2, 3}, {1, 2, 3, 10, 20, 30}), ones, Tensor(), 1e-6f);
            CHECK(rows.at({0, 0}) == near(-0.999999));
            CHECK(rows.at({1, 0}) == near(-0.9999999));
            CHECK(rows.at({1, 2}) == near(0.9999999));
        }
        SUBCASE("one number has no unbiased std: refused, as are wrong gamma/beta sizes") {
            CHECK_ERROR_CONTAINS(tinyformer::layer_norm_std(Tensor({2, 1}, {1, 2}), Tensor({1}, {1}), Tensor(), 1e-6f),
                                 "must hold at least 2 numbers");
            CHECK_ERROR_CONTAINS(tinyformer::layer_norm_std(Tensor({3}, {1, 2, 3}), ones, Tensor(Shape{2}), 1e-6f),
                                 "beta [2]");
        }
    }
}

TEST_CASE("layer_norm without beta equals layer_norm with a zero beta, number for number") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        const Tensor x({2, 5}, {1, -2, 3, 0.5f, 7, -1, -1, 4, 2, 0});
        const Tensor gamma({5}, {1, 2, -0.5f, 3, 0.25f}), zeros(Shape{5});
        CHECK(tinyformer::layer_norm(x, gamma, Tensor(), 1e-5f).values() ==
              tinyformer::layer_norm(x, gamma, zeros, 1e-5f).values());
        CHECK(tinyformer::layer_norm_std(x, gamma, Tensor(), 1e-6f).values() ==
              tinyformer::layer_norm_std(x, gamma, zeros, 1e-6f).values());
    }
}

TEST_CASE("gather_batch picks, repeats and drops batch rows (beam search reorders its hypotheses with it)") {
    // x [3, 2]: row b holds {10b, 10b + 1}. Rows {2, 0, 2} -> {20, 21}, {0, 1}, {20, 21}.
    const Tensor x({3, 2}, {0, 1, 10, 11, 20, 21});
    const Tensor y = gather_batch(x, {2, 0, 2});
    CHECK(y.shape() == Shape{3, 2});
    CHECK(y.values() == std::vector<float>{20, 21, 0, 1, 20, 21});
    // Every axis after the first moves with its row: [2, 2, 2] -> row 1 only.
    const Tensor z = gather_batch(Tensor({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), {1});
    CHECK(z.shape() == Shape{1, 2, 2});
    CHECK(z.values() == std::vector<float>{4, 5, 6, 7});
    CHECK(gather_batch(x, {}).shape() == Shape{0, 2});
    CHECK_ERROR_CONTAINS(gather_batch(x, {0, 3}), "gather_batch: row 3 outside 0..2");
    CHECK_ERROR_CONTAINS(gather_batch(x, {-1}), "row -1 outside 0..2");
}

TEST_CASE("relu keeps positives and zeroes the rest, keeping the shape") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        Tensor y = tinyformer::relu(Tensor({1, 5}, {-2, -0.5f, 0, 0.5f, 3}));
        CHECK(y.shape() == Shape{1, 5});
        CHECK(y.values() == std::vector<float>{0, 0, 0, 0.5f, 3});
    }
}

TEST_CASE("add sums equal shapes and refuses different ones, naming both") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        Tensor y = tinyformer::add(Tensor({2, 2}, {1, 2, 3, 4}), Tensor({2, 2}, {10, 20, 30, 40}));
        CHECK(y.shape() == Shape{2, 2});
        CHECK(y.values() == std::vector<float>{11, 22, 33, 44});
        CHECK_ERROR_CONTAINS(tinyformer::add(Tensor(Shape{2, 3}), Tensor(Shape{3, 2})),
                             "add: shapes differ: a [2,3], b [3,2]");
        // Same count, different rank: still refused (no silent broadcasting).
        CHECK_ERROR_CONTAINS(tinyformer::add(Tensor(Shape{6}), Tensor(Shape{2, 3})),
                             "a [6], b [2,3]");
    }
}

TEST_CASE("rms_norm divides by the root of the mean square (no mean taken, no shift) and multiplies by weight") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // x = (1, 2, 3, 4), weight 1, eps 1e-10 (its effect, 1e-10 / 7.5, is far below float's rounding):
        //   mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5, sqrt(7.5) = 2.7386128
        //   y = x / 2.7386128 = 0.3651484, 0.7302967, 1.0954451, 1.4605935
        // (a LayerNorm would subtract the mean 2.5 first: y0 would be negative)
        const Tensor y = tinyformer::rms_norm(Tensor({1, 4}, {1, 2, 3, 4}), Tensor::filled({4}, 1.0f), 1e-10f);
        CHECK(y.shape() == Shape{1, 4});
        CHECK(y.at({0, 0}) == near(0.3651483717));
        CHECK(y.at({0, 1}) == near(0.7302967433));
        CHECK(y.at({0, 2}) == near(1.0954451150));
        CHECK(y.at({0, 3}) == near(1.4605934867));

        SUBCASE("eps inside the root, and weight scales each feature") {
            // eps = 0.5: sqrt(7.5 + 0.5) = sqrt(8) = 2.8284271, 1 / 2.8284271 = 0.3535534
            // weight (1, -1, 2, 0.5): y = 0.3535534, -0.7071068, 2 * 1.0606602, 0.5 * 1.4142136
            const Tensor w = tinyformer::rms_norm(Tensor({4}, {1, 2, 3, 4}), Tensor({4}, {1, -1, 2, 0.5f}), 0.5f);
            CHECK(w.at({0}) == near(0.3535533906));
            CHECK(w.at({1}) == near(-0.7071067812));
            CHECK(w.at({2}) == near(2.1213203436));
            CHECK(w.at({3}) == near(0.7071067812));
        }
        SUBCASE("each row on its own; an all-zero row gives 0, not NaN") {
            // row 1 = (0, 0, 0, 0): 0 / sqrt(0 + 1e-5) = 0 exactly
            const Tensor rows = tinyformer::rms_norm(Tensor({2, 4}, {1, 2, 3, 4, 0, 0, 0, 0}), Tensor::filled({4}, 1.0f),
                                                     1e-5f);
            CHECK(rows.at({0, 3}) == doctest::Approx(1.4605935).epsilon(1e-5));  // eps 1e-5 moves the 6th digit
            for (int64_t j = 0; j < 4; ++j) CHECK(rows.at({1, j}) == 0.0f);
        }
        SUBCASE("large values do not overflow: (3e20, 4e20), whose squares are above float's 3.4e38") {
            // mean(x^2) = (9e40 + 16e40) / 2 = 12.5e40, sqrt = 3.5355339e20
            // y = 3e20 / 3.5355339e20 = 0.8485281, 4e20 / 3.5355339e20 = 1.1313708
            // (summed in float, x^2 is inf and y would be 0, 0)
            const Tensor big = tinyformer::rms_norm(Tensor({2}, {3e20f, 4e20f}), Tensor::filled({2}, 1.0f), 1e-5f);
            CHECK(big.at({0}) == near(0.8485281374));
            CHECK(big.at({1}) == near(1.1313708499));
        }
        SUBCASE("tiny values: eps dominates, y = x / sqrt(eps)") {
            // mean(x^2) = 1.25e-49, far below eps = 1e-5: y = x / 0.0031622777
            //   3e-25 -> 9.4868330e-23, 4e-25 -> 1.2649111e-22
            const Tensor tiny = tinyformer::rms_norm(Tensor({2}, {3e-25f, 4e-25f}), Tensor::filled({2}, 1.0f), 1e-5f);
            CHECK(tiny.at({0}) == doctest::Approx(9.486833e-23).epsilon(1e-6));
            CHECK(tiny.at({1}) == doctest::Approx(1.2649111e-22).epsilon(1e-6));
        }
        SUBCASE("D = 1: the sign of x") {
            // -3 / sqrt(9 + 1e-5) = -0.9999994
            const Tensor one = tinyformer::rms_norm(Tensor({3, 1}, {-3, 0, 2}), Tensor::filled({1}, 1.0f), 1e-5f);
            CHECK(one.at({0, 0}) == near(-0.9999994444));
            CHECK(one.at({1, 0}) == 0.0f);
            CHECK(one.at({2, 0}) == doctest::Approx(0.99999875).epsilon(1e-6));  // 2 / sqrt(4 + 1e-5)
        }
        SUBCASE("a weight of the wrong size and a non-positive eps are refused") {
            CHECK_ERROR_CONTAINS(tinyformer::rms_norm(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor(Shape{2}), 1e-5f),
                                 "rms_norm: weight must be [3] for x [2,3], got [2]");
            CHECK_ERROR_CONTAINS(tinyformer::rms_norm(Tensor({3}, {1, 2, 3}), Tensor::filled({3}, 1.0f), 0.0f),
                                 "rms_norm: eps must be > 0, got 0");
            CHECK_THROWS_AS(tinyformer::rms_norm(Tensor(), Tensor::filled({3}, 1.0f), 1e-5f), Error);
        }
    }
}

TEST_CASE("silu is h * sigmoid(h) = h / (1 + exp(-h)), finite for every h") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // silu(1)   = 1 / (1 + e^-1) = 1 / 1.3678794 = 0.7310586
        // silu(-1)  = -1 / (1 + e)   = -1 / 3.7182818 = -0.2689414
        // silu(2)   = 2 / (1 + e^-2) = 2 / 1.1353353 = 1.7615942
        // silu(-5)  = -5 / (1 + e^5) = -5 / 149.41316 = -0.0334643
        // silu(-20) = -20 / (1 + e^20) = -20 / 4.8516520e8 = -4.1223072e-8
        // silu(0)   = 0
        const Tensor y = tinyformer::silu(Tensor({6}, {1, -1, 2, -5, -20, 0}));
        CHECK(y.shape() == Shape{6});
        CHECK(y.at({0}) == near(0.7310585786));
        CHECK(y.at({1}) == near(-0.2689414214));
        CHECK(y.at({2}) == near(1.7615941560));
        CHECK(y.at({3}) == doctest::Approx(-0.0334642546).epsilon(2e-6));
        CHECK(y.at({4}) == doctest::Approx(-4.1223072e-8).epsilon(2e-6));
        CHECK(y.at({5}) == 0.0f);
        // Far out: h for large h; tiny, then 0 for very negative h; never NaN, not even at -inf.
        //   silu(-87) = -87 / (1 + e^87) = -87 / 6.0760303e37 = -1.4318559e-36
        const float inf = std::numeric_limits<float>::infinity();
        const Tensor far = tinyformer::silu(Tensor({7}, {20, 100, 1e30f, -87, -100, -1e30f, -inf}));
        CHECK(far.at({0}) == 20.0f);  // 20 / (1 + 2.1e-9): 20 in float
        CHECK(far.at({1}) == 100.0f);
        CHECK(far.at({2}) == 1e30f);
        CHECK(far.at({3}) == doctest::Approx(-1.4318559e-36).epsilon(2e-6));
        CHECK(far.at({4}) == 0.0f);
        CHECK(far.at({5}) == 0.0f);
        CHECK(far.at({6}) == 0.0f);
        CHECK(tinyformer::silu(Tensor({1}, {inf})).at({0}) == inf);
    }
}

TEST_CASE("swiglu is silu(gate) * up, elementwise, and refuses different shapes") {
    for (Variant variant : every_variant()) SUBCASE(kernels::variant_name(variant)) {
        const UseVariant use(variant);
        // gate (1, -1, 0, 2), up (2, 3, 5, -1):
        //   silu(1) * 2 = 0.7310586 * 2 = 1.4621172;  silu(-1) * 3 = -0.2689414 * 3 = -0.8068243
        //   silu(0) * 5 = 0;                          silu(2) * -1 = -1.7615942
        const Tensor y = tinyformer::swiglu(Tensor({2, 2}, {1, -1, 0, 2}), Tensor({2, 2}, {2, 3, 5, -1}));
        CHECK(y.shape() == Shape{2, 2});
        CHECK(y.at({0, 0}) == near(1.4621171573));
        CHECK(y.at({0, 1}) == near(-0.8068242641));
        CHECK(y.at({1, 0}) == 0.0f);
        CHECK(y.at({1, 1}) == near(-1.7615941560));
        CHECK_ERROR_CONTAINS(tinyformer::swiglu(Tensor({2, 2}), Tensor({4})),
                             "swiglu: gate and up must have the same shape, got gate [2,2], up [4]");
    }
}
