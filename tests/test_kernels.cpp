// Tests for engine/cpu/kernels.*: every variant this CPU runs against naive
// references written in double, and the variants against each other.
#include "engine/cpu/kernels.h"
#include "engine/ops.h"
#include "engine/random.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tinyformer;
using kernels::Variant;

namespace {

// Sets a variant for one scope and restores the one before.
class UseVariant {
public:
    explicit UseVariant(Variant variant) : before_(kernels::active_variant()) { kernels::set_variant(variant); }
    ~UseVariant() { kernels::set_variant(before_); }

private:
    Variant before_;
};

std::vector<Variant> supported_variants() {
    std::vector<Variant> variants;
    for (Variant v : {Variant::Baseline, Variant::Avx2, Variant::Avx512})
        if (kernels::variant_supported(v)) variants.push_back(v);
    return variants;
}

std::vector<float> random_row(int64_t n, uint64_t seed, float stddev) {
    const Tensor t = Random(seed).normal_tensor({n}, stddev);
    return {t.data(), t.data() + n};
}

}  // namespace

TEST_CASE("Each kernel variant agrees with the naive double-precision reference, at lengths around the vector widths") {
    CHECK(kernels::variant_supported(Variant::Baseline));
    for (Variant variant : supported_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        const kernels::Table& k = kernels::table();
        for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 512, 2049}) {
            CAPTURE(n);
            std::vector<float> x = random_row(n, static_cast<uint64_t>(n), 4.0f);
            if (n > 1) x[0] = -std::numeric_limits<float>::infinity();
            if (n > 1) x[static_cast<size_t>(n - 1)] = 80.0f;
            // row_max
            double reference_max = -INFINITY;
            for (float v : x) reference_max = std::max(reference_max, static_cast<double>(v));
            CHECK(k.row_max(x.data(), n) == static_cast<float>(reference_max));
            // exp_shifted_sum: each within 2 ulp-ish (relative 3e-7) of exp in double (absolute 1e-34 near
            // the bottom of float's range, where exp(-87) is 1.6e-38); -inf -> exactly 0
            std::vector<float> e = x;
            const float shift = static_cast<float>(reference_max);
            const float sum = k.exp_shifted_sum(e.data(), n, shift);
            double reference_sum = 0;
            for (int64_t j = 0; j < n; ++j) {
                const double expected = std::exp(static_cast<double>(x[static_cast<size_t>(j)]) - shift);
                reference_sum += expected;
                CHECK(std::fabs(e[static_cast<size_t>(j)] - expected) <= 3e-7 * expected + 1e-34);
            }
            if (n > 1) CHECK(e[0] == 0.0f);
            CHECK(std::fabs(sum - reference_sum) <= 1e-6 * reference_sum);
            // layer_norm_row against the formula in double
            std::vector<float> row = random_row(n, static_cast<uint64_t>(n) + 100, 3.0f);
            const std::vector<float> gamma = random_row(n, 7, 1.0f), beta = random_row(n, 8, 1.0f);
            double mean = 0, variance = 0;
            for (float v : row) mean += v;
            mean /= static_cast<double>(n);
            for (float v : row) variance += (v - mean) * (v - mean);
            variance /= static_cast<double>(n);
            std::vector<float> normed = row;
            k.layer_norm_row(normed.data(), n, gamma.data(), beta.data(), 1e-5f);
            for (int64_t j = 0; j < n; ++j) {
                const size_t i = static_cast<size_t>(j);
                const double expected = (row[i] - mean) / std::sqrt(variance + 1e-5) * gamma[i] + beta[i];
                CHECK(normed[i] == doctest::Approx(expected).epsilon(1e-5).scale(1.0));
            }
            // gelu against x (1 + erf(x / sqrt 2)) / 2 in double with std::erf: the kernel's
            // rational erf is within 5e-7 of erf, so |error| <= |x| / 2 * 5e-7 plus float rounding
            std::vector<float> g = row;
            k.gelu(g.data(), n);
            for (size_t i = 0; i < row.size(); ++i) {
                const double v = row[i], expected = v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
                CHECK(std::fabs(g[i] - expected) <= 4e-7 * std::fabs(v) + 1e-7);
            }
            // add, relu, scale: exact
            std::vector<float> a = row, r = row, s = row;
            k.add(a.data(), gamma.data(), n);
            k.relu(r.data(), n);
            k.scale(s.data(), n, 0.25f);
            for (size_t i = 0; i < row.size(); ++i) {
                CHECK(a[i] == row[i] + gamma[i]);
                CHECK(r[i] == (row[i] > 0 ? row[i] : 0.0f));
                CHECK(s[i] == row[i] * 0.25f);
            }
        }
    }
}

// Not to the last bit: the AVX2 and AVX-512 variants may contract a * b + c
// into one fused multiply-add (GCC does in C++), which rounds once instead of twice.
TEST_CASE("The softmax exp against std::exp over the whole range softmax uses, [-87.3, 0], in every variant") {
    // softmax calls exp(score - row max): the argument is <= 0. Below -87.3, exp is under
    // float's smallest normal (1.2e-38) and the kernel returns 0. Every float in between is
    // not tried, but a grid of 2^20 points is, and each must be within 3e-7 relative (about
    // 2.5 ulp) of exp in double.
    constexpr int kPoints = 1 << 20;
    std::vector<float> x(kPoints);
    for (int i = 0; i < kPoints; ++i) x[static_cast<size_t>(i)] = -87.3f * static_cast<float>(i) / (kPoints - 1);
    for (Variant variant : supported_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> e = x;
        kernels::table().exp_shifted_sum(e.data(), kPoints, 0.0f);
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double expected = std::exp(static_cast<double>(x[i]));
            worst = std::max(worst, std::fabs(e[i] - expected) / expected);
        }
        MESSAGE(std::string(kernels::variant_name(variant)), ": worst relative error of exp over [-87.3, 0]: ", worst);
        CHECK(worst <= 3e-7);
        CHECK(e[0] == 1.0f);  // exp(0) exactly: softmax's largest entry
    }
}

TEST_CASE("The GELU kernel against std::erf's GELU over [-10, 10] in steps of 1/1024, in every variant") {
    // The formula in double with std::erf is the reference; the kernel's erf is a ratio of two
    // polynomials. Worst case over the grid: the bound of the test above, and the sign and 0 exact.
    std::vector<float> x;
    for (int i = -10 * 1024; i <= 10 * 1024; ++i) x.push_back(static_cast<float>(i) / 1024.0f);
    for (Variant variant : supported_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> g = x;
        kernels::table().gelu(g.data(), static_cast<int64_t>(g.size()));
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double v = x[i], expected = v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
            worst = std::max(worst, std::fabs(g[i] - expected) / (4e-7 * std::fabs(v) + 1e-7));
            if (x[i] == 0.0f) CHECK(g[i] == 0.0f);
            if (x[i] > 0.0f) CHECK(g[i] > 0.0f);
            if (x[i] < -0.0f && x[i] > -5.0f) CHECK(g[i] < 0.0f);  // below -5 gelu(x) > -1.5e-6: may round to 0
        }
        CHECK(worst <= 1.0);  // error / bound
    }
}

TEST_CASE("The kernel variants give the same softmax and LayerNorm through engine/ops, to a few ulp") {
    const Tensor x = Random(3).normal_tensor({5, 77}, 3.0f);
    const Tensor gamma = Random(4).normal_tensor({77}), beta = Random(5).normal_tensor({77});
    Tensor softmax_baseline, norm_baseline;
    {
        const UseVariant use(Variant::Baseline);
        softmax_baseline = softmax_rows(x);
        norm_baseline = layer_norm(x, gamma, beta, 1e-5f);
    }
    for (Variant variant : supported_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        const Tensor softmax = softmax_rows(x), norm = layer_norm(x, gamma, beta, 1e-5f);
        for (int64_t i = 0; i < x.numel(); ++i) {
            CHECK(softmax.data()[i] == doctest::Approx(softmax_baseline.data()[i]).epsilon(1e-6));
            CHECK(norm.data()[i] == doctest::Approx(norm_baseline.data()[i]).epsilon(1e-6).scale(1.0));
        }
    }
}
