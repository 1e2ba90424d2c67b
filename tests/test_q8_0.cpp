// Tests for engine/quant/q8_0.*: the Q8_0 rule and product on hand-worked
// numbers, the AVX2 kernel held to the plain reference bit for bit, and the
// product held to float32 within a bound derived from the rule.
#include "engine/quant/q8_0.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "layers/feed_forward.h"
#include "tests/helpers.h"
#include "tests/kernel_variants.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tinyformer;
using test_helpers::error_message;

TEST_CASE("q8_0: a row quantized by hand") {
    // Group 1: [127, -3.4, 0.6, -50.5]: max |x| = 127, s = 127 / 127 = 1 (exact),
    //   q = round(x / 1) = [127, -3, 1, -51] (round: halves away from zero, -50.5 -> -51).
    // Group 2: [-254, 127, 0, 0.9]: s = 254 / 127 = 2, x / 2 = [-127, 63.5, 0, 0.45],
    //   q = [-127, 64, 0, 0].
    // Group 3: zeros: s = 0 and q = 0 (no division by zero).
    const std::vector<float> x = {127, -3.4f, 0.6f, -50.5f, -254, 127, 0, 0.9f, 0, 0, 0, 0};
    std::vector<int8_t> q(12);
    std::vector<float> s(3);
    quantize_q8_0_row(x.data(), 12, 4, q.data(), s.data());
    CHECK(s == std::vector<float>{1, 2, 0});
    CHECK(q == std::vector<int8_t>{127, -3, 1, -51, -127, 64, 0, 0, 0, 0, 0, 0});
    CHECK(error_message([&] { quantize_q8_0_row(x.data(), 12, 5, q.data(), s.data()); }) ==
          "quantize_q8_0_row: group size 5 does not divide 12");
}

TEST_CASE("q8_0: a product worked by hand, in every variant") {
    // W [2, 4], groups of 2.
    //   row 0: q = [1, 2 | 3, 4],      scales [0.5, 2]
    //   row 1: q = [-1, 0 | 127, -127], scales [1, 0.25]
    // x quantized: qx = [10, -20 | 5, 1], sx = [0.5, 4].
    // y0 = (1*10 + 2*-20) * 0.5 * 0.5 + (3*5 + 4*1) * 2 * 4 = -30 * 0.25 + 19 * 8 = -7.5 + 152 = 144.5
    // y1 = (-1*10 + 0) * 1 * 0.5 + (127*5 - 127*1) * 0.25 * 4 = -5 + 508 = 503
    const Q8Matrix w = Q8Matrix::from("W", 2, 4, 2, {1, 2, 3, 4, -1, 0, 127, -127}, {0.5f, 2, 1, 0.25f});
    const std::vector<int8_t> qx = {10, -20, 5, 1};
    const std::vector<float> sx = {0.5f, 4};
    for (auto variant : test_helpers::every_variant()) {
        test_helpers::UseVariant use(variant);
        std::vector<float> y(2);
        q8_matvec(w.view(), qx.data(), sx.data(), y.data());
        CHECK(y == std::vector<float>{144.5f, 503});
        q8_matvec_reference(w.view(), qx.data(), sx.data(), y.data());
        CHECK(y == std::vector<float>{144.5f, 503});
    }
    // Row 1 alone, as a fused projection's part is read.
    std::vector<float> y1(1);
    q8_matvec_reference(w.view().rows_range(1, 1), qx.data(), sx.data(), y1.data());
    CHECK(y1[0] == 503);
    // Dequantized: q * s.
    CHECK(dequantize_q8_0(w.view()).values() == std::vector<float>{0.5f, 1, 6, 8, -1, 0, 31.75f, -31.75f});
}

TEST_CASE("q8_0: the AVX2 kernel equals the reference bit for bit") {
    if (!kernels::variant_supported(kernels::Variant::Avx2)) return;  // nothing to compare on this CPU
    test_helpers::UseVariant use(kernels::Variant::Avx2);
    REQUIRE(q8_uses_avx2());
    // Group sizes with and without a tail after the 16-wide steps; one row of
    // extreme values (every q = +-127) for the int32 sums' range.
    for (int64_t group : {8, 16, 24, 32, 64, 100}) {
        const int64_t rows = 7, cols = group * 3;
        Tensor weight = Random(static_cast<uint64_t>(group)).normal_tensor({rows, cols}, 1.0f);
        for (int64_t c = 0; c < cols; ++c) weight.data()[c] = (c % 3 == 0) ? -5.0f : 5.0f;
        const Q8Matrix w = quantize_q8_0(weight.matrix(), group);
        const Tensor x = Random(100 + static_cast<uint64_t>(group)).normal_tensor({cols}, 2.0f);
        std::vector<int8_t> qx(cols);
        std::vector<float> sx(cols / group), fast(rows), plain(rows);
        quantize_q8_0_row(x.data(), cols, group, qx.data(), sx.data());
        q8_matvec(w.view(), qx.data(), sx.data(), fast.data());
        q8_matvec_reference(w.view(), qx.data(), sx.data(), plain.data());
        CHECK_MESSAGE(fast == plain, "group ", group);
    }
}

TEST_CASE("q8_0: the product is within the derived bound of float32") {
    // Bound, for one row w and the input x (both float32), per element i of group g:
    //   w_i = qw_i sw_g + e_i,  x_i = qx_i sx_g + d_i.
    // q = round(v / s) with v / s computed in float32 (relative error <= 2^-24,
    // |v / s| <= 127.0001), so |v - q s| <= s (0.5 + 127.0001 * 2^-24) <= s (0.5 + 2^-16) =: s h.
    //   |w_i x_i - qw_i sw qx_i sx| = |e_i x_i + qw_i sw d_i| <= sw h |x_i| + (|w_i| + sw h) sx h.
    // The group's int32 sum is exact; dot * sw * sx is two float32 roundings and
    // the groups' sum groups - 1 more, so the float32 part is at most
    // (groups + 2) 2^-24 sum_g |dot_g sw_g sx_g| (first order; the terms are
    // taken from the quantized numbers, in double).
    // The exact product sum_i w_i x_i is computed in double.
    const double h = 0.5 + std::ldexp(1.0, -16), eps = std::ldexp(1.0, -24);
    for (auto variant : test_helpers::every_variant()) {
        test_helpers::UseVariant use(variant);
        for (int64_t group : {4, 32, 64}) {
            const int64_t rows = 16, cols = 192;
            const Tensor weight = Random(7 + static_cast<uint64_t>(group)).normal_tensor({rows, cols}, 0.3f);
            const Tensor x = Random(11).normal_tensor({1, cols}, 1.5f);
            const Q8Matrix w = quantize_q8_0(weight.matrix(), group);
            const Tensor y = linear_q8(x, w.view(), nullptr);
            std::vector<int8_t> qx(cols);
            std::vector<float> sx(cols / group);
            quantize_q8_0_row(x.data(), cols, group, qx.data(), sx.data());
            double largest_error = 0;
            for (int64_t r = 0; r < rows; ++r) {
                double exact = 0, bound = 0, terms = 0;
                for (int64_t g = 0; g < cols / group; ++g) {
                    const double sw = w.view().scales[r * (cols / group) + g];
                    double dot = 0;
                    for (int64_t i = g * group; i < (g + 1) * group; ++i) {
                        const double wi = weight.data()[r * cols + i], xi = x.data()[i];
                        exact += wi * xi;
                        bound += sw * h * std::fabs(xi) + (std::fabs(wi) + sw * h) * sx[g] * h;
                        dot += double(w.view().values[r * cols + i]) * qx[i];
                    }
                    terms += std::fabs(dot * sw * sx[g]);
                }
                bound += (cols / group + 2) * eps * terms * 1.0001;
                const double error = std::fabs(y.data()[r] - exact);
                CHECK_MESSAGE(error <= bound, "row ", r, " group ", group, ": error ", error, " bound ", bound);
                largest_error = std::max(largest_error, error);
            }
            // The comparison is not vacuous: quantizing does move the product.
            CHECK(largest_error > 0);
        }
    }
}

TEST_CASE("q8_0: linear_q8 is one product per row of x, plus the bias") {
    const Tensor weight = Random(3).normal_tensor({5, 8}, 1.0f);
    const Q8Matrix w = quantize_q8_0(weight.matrix(), 4);
    const Tensor x = Random(4).normal_tensor({2, 3, 8}, 1.0f);
    const std::vector<float> bias = {1, -2, 0.5f, 0, 3};
    const Tensor y = linear_q8(x, w.view(), bias.data());
    REQUIRE(y.shape() == Shape{2, 3, 5});
    for (int64_t m = 0; m < 6; ++m) {
        std::vector<int8_t> qx(8);
        std::vector<float> sx(2), row(5);
        quantize_q8_0_row(x.data() + m * 8, 8, 4, qx.data(), sx.data());
        q8_matvec_reference(w.view(), qx.data(), sx.data(), row.data());
        for (int64_t r = 0; r < 5; ++r) CHECK(y.data()[m * 5 + r] == row[r] + bias[r]);
    }
    CHECK(error_message([&] { linear_q8(Tensor({2, 7}), w.view(), nullptr); }) ==
          "linear_q8: x has last axis 7 but the Q8_0 weight is [5,8] (x [2,7])");
}

TEST_CASE("q8_0: SwiGLU with Q8_0 gate and up takes their int8 products, one row and many") {
    // The float path fuses the two products (linear_pair); Q8_0 weights must
    // not go through it with their dequantized copies: silu(gate x) * (up x)
    // each from linear_q8, then linear2's own.
    FeedForward ffn;
    ffn.activation = Activation::SwiGlu;
    const auto q8_linear = [](uint64_t seed, int64_t out, int64_t in) {
        Linear layer;
        layer.weight = Random(seed).normal_tensor({out, in}, 1.0f);
        layer.q8 = quantize_q8_0(layer.weight.matrix(), 4);
        layer.weight = dequantize_q8_0(layer.q8.view());  // as the loader keeps it
        return layer;
    };
    ffn.linear1 = q8_linear(11, 12, 8);
    ffn.linear3 = q8_linear(12, 12, 8);
    ffn.linear2 = q8_linear(13, 8, 12);
    for (const Shape& shape : {Shape{1, 1, 8}, Shape{2, 3, 8}}) {
        const Tensor x = Random(14).normal_tensor(shape, 1.0f);
        const Tensor hidden = swiglu(linear_q8(x, ffn.linear1.q8.view(), nullptr), linear_q8(x, ffn.linear3.q8.view(), nullptr));
        const Tensor expected = linear_q8(hidden, ffn.linear2.q8.view(), nullptr);
        CHECK(ffn.forward(x).values() == expected.values());
    }
}

TEST_CASE("q8_0: a matrix's group size and scales are checked") {
    CHECK(error_message([] { Q8Matrix::from("W", 2, 6, 4, std::vector<int8_t>(12), std::vector<float>(2)); }) ==
          "W: the Q8_0 group size 4 does not divide the 6 columns (the input axis K; docs/FORMAT.md)");
    CHECK(error_message([] { Q8Matrix::from("W", 2, 4, 2, std::vector<int8_t>(8), std::vector<float>(3)); }) ==
          "W: a Q8_0 matrix [2,4] in groups of 2 has 8 values and 4 scales; got 8 and 3");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(error_message([&] { Q8Matrix::from("W", 2, 4, 2, std::vector<int8_t>(8), {1, 1, nan, 1}); }) ==
          "W: Q8_0 scale 2 (row 1, group 0) is NaN; a scale is a number >= 0 whose 127 times is finite");
    CHECK(error_message([] { Q8Matrix::from("W", 1, 4, 2, std::vector<int8_t>(4), {1, -1}); }) ==
          "W: Q8_0 scale 1 (row 0, group 1) is -1; a scale is a number >= 0 whose 127 times is finite");
    // 3e38 is finite, but 127 * 3e38 is not: the weight q * s would be inf.
    CHECK(error_message([] { Q8Matrix::from("W", 1, 4, 2, std::vector<int8_t>(4), {1, 3e38f}); }) ==
          "W: Q8_0 scale 1 (row 0, group 1) is 3e+38; a scale is a number >= 0 whose 127 times is finite");
    // -128 is an int8, but not a Q8_0 value (the rule gives -127..127).
    CHECK(error_message([] { Q8Matrix::from("W", 1, 4, 2, {0, 5, -128, 1}, {1, 1}); }) ==
          "W: Q8_0 value 2 (row 0, column 2) is -128; values are in -127..127");
    // G = 131072 > 65536: 131072 * 127 * 127 > 2^31 - 1, the int32 sum could overflow.
    CHECK(error_message([] { Q8Matrix::from("W", 1, 131072, 131072, std::vector<int8_t>(131072), {1}); }) ==
          "W: the Q8_0 group size 131072 is above 65536 (a group's int32 sum of products could overflow)");
}

TEST_CASE("q8_0: a group holding a NaN or an infinity gets a NaN scale and zeros, so its products are NaN") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {1, nan, 2, 3, 4, 5, -inf, 7, 1, 2, 3, 4};
    std::vector<int8_t> q(12, 9);
    std::vector<float> s(3);
    quantize_q8_0_row(x.data(), 12, 4, q.data(), s.data());
    CHECK(std::isnan(s[0]));
    CHECK(std::isnan(s[1]));
    CHECK(s[2] == 4.0f / 127);  // the finite group as usual
    CHECK(std::vector<int8_t>(q.begin(), q.begin() + 8) == std::vector<int8_t>(8, 0));
    // W x with such an x: NaN, where the float product is NaN too.
    const Q8Matrix w = quantize_q8_0(ConstMatrixView{std::vector<float>(12, 1.0f).data(), 1, 12, 12}, 4);
    const Tensor y = linear_q8(Tensor({1, 12}, x), w.view(), nullptr);
    CHECK(std::isnan(y.data()[0]));
}
