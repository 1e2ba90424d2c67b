// Tests for engine/cpu/kernels.*: every fast variant this CPU runs against the
// engine's reference variant (the plain formulas of engine/ops.cpp, which
// tests/test_ops.cpp holds to hand-worked values), and the choice of variant
// by TINYFORMER_KERNELS.
#include "engine/cpu/kernels.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tests/kernel_variants.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

using namespace tinyformer;
using kernels::Variant;
using test_helpers::fast_variants;
using test_helpers::UseVariant;

namespace {

// Runs `tinyformer args...` with TINYFORMER_KERNELS=value (unset when empty): the
// child reads it at its start, as a user's program would.
test_helpers::CliRun run_with_kernels(const std::vector<std::string>& args, const std::string& value) {
    const char* before = std::getenv("TINYFORMER_KERNELS");
    const std::string saved = before ? before : "";
    if (value.empty()) unsetenv("TINYFORMER_KERNELS");
    else setenv("TINYFORMER_KERNELS", value.c_str(), 1);
    const test_helpers::CliRun run = test_helpers::run_tinyformer(args);
    if (before) setenv("TINYFORMER_KERNELS", saved.c_str(), 1);
    else unsetenv("TINYFORMER_KERNELS");
    return run;
}

std::vector<float> random_row(int64_t n, uint64_t seed, float stddev) {
    const Tensor t = Random(seed).normal_tensor({n}, stddev);
    return {t.data(), t.data() + n};
}

}  // namespace

TEST_CASE("Each fast kernel variant agrees with the reference variant, at lengths around the vector widths") {
    CHECK(kernels::variant_supported(Variant::Reference));
    CHECK(kernels::variant_supported(Variant::Baseline));
    const kernels::Table& reference = kernels::kReferenceTable;
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        const kernels::Table& k = kernels::table();
        CHECK(&k != &reference);
        for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 512, 2049}) {
            CAPTURE(n);
            std::vector<float> x = random_row(n, static_cast<uint64_t>(n), 4.0f);
            if (n > 1) x[0] = -std::numeric_limits<float>::infinity();
            if (n > 1) x[static_cast<size_t>(n - 1)] = 80.0f;
            // row_max: exactly the reference's (by arithmetic: a maximum is one of its inputs, in any order)
            const float largest = reference.row_max(x.data(), n);
            CHECK(k.row_max(x.data(), n) == largest);
            // exp_shifted_sum: each within 2 ulp-ish (relative 3e-7) of the reference's std::exp
            // (absolute 1e-34 near the bottom of float's range, where exp(-87) is 1.6e-38); -inf -> exactly 0
            std::vector<float> e = x, expected = x;
            const float sum = k.exp_shifted_sum(e.data(), n, largest);
            const float expected_sum = reference.exp_shifted_sum(expected.data(), n, largest);
            for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(e[i] - expected[i]) <= 3e-7 * expected[i] + 1e-34);
            if (n > 1) CHECK(e[0] == 0.0f);
            CHECK(std::fabs(sum - expected_sum) <= 1e-6 * expected_sum);
            // layer_norm_row against the reference's two-pass mean and biased variance
            std::vector<float> row = random_row(n, static_cast<uint64_t>(n) + 100, 3.0f);
            const std::vector<float> gamma = random_row(n, 7, 1.0f), beta = random_row(n, 8, 1.0f);
            std::vector<float> normed = row, normed_reference = row;
            k.layer_norm_row(normed.data(), n, gamma.data(), beta.data(), 1e-5f);
            reference.layer_norm_row(normed_reference.data(), n, gamma.data(), beta.data(), 1e-5f);
            for (size_t i = 0; i < row.size(); ++i)
                CHECK(normed[i] == doctest::Approx(normed_reference[i]).epsilon(1e-5).scale(1.0));
            // gelu against the reference's x (1 + std::erf(x / sqrt 2)) / 2: the kernel's rational
            // erf is within 5e-7 of erf, so |error| <= |x| / 2 * 5e-7 plus float rounding
            std::vector<float> g = row, g_reference = row;
            k.gelu(g.data(), n);
            reference.gelu(g_reference.data(), n);
            for (size_t i = 0; i < row.size(); ++i)
                CHECK(std::fabs(g[i] - g_reference[i]) <= 4e-7 * std::fabs(row[i]) + 1e-7);
            // layer_norm_std_row against the reference's unbiased std (n >= 2), and both without beta
            if (n >= 2) {
                std::vector<float> std_normed = row, std_reference = row;
                k.layer_norm_std_row(std_normed.data(), n, gamma.data(), beta.data(), 1e-6f);
                reference.layer_norm_std_row(std_reference.data(), n, gamma.data(), beta.data(), 1e-6f);
                for (size_t i = 0; i < row.size(); ++i)
                    CHECK(std_normed[i] == doctest::Approx(std_reference[i]).epsilon(1e-5).scale(1.0));
            }
            std::vector<float> unshifted = row, unshifted_reference = row;
            k.layer_norm_row(unshifted.data(), n, gamma.data(), nullptr, 1e-5f);
            reference.layer_norm_row(unshifted_reference.data(), n, gamma.data(), nullptr, 1e-5f);
            for (size_t i = 0; i < row.size(); ++i)
                CHECK(unshifted[i] == doctest::Approx(unshifted_reference[i]).epsilon(1e-5).scale(1.0));
            // gelu_tanh against the reference's std::tanh form: within a few ulp of x / (1 + exp(-2z))
            std::vector<float> t = row, t_reference = row;
            k.gelu_tanh(t.data(), n);
            reference.gelu_tanh(t_reference.data(), n);
            for (size_t i = 0; i < row.size(); ++i)
                CHECK(std::fabs(t[i] - t_reference[i]) <= 4e-7 * std::fabs(row[i]) + 1e-7);
            // add, relu, scale: exactly the reference's (by arithmetic: each output is one IEEE operation,
            // a + b, max(0, x) or x * f, on the same operands, correctly rounded in every variant)
            std::vector<float> a = row, r = row, s = row, a_reference = row, r_reference = row, s_reference = row;
            k.add(a.data(), gamma.data(), n);
            k.relu(r.data(), n);
            k.scale(s.data(), n, 0.25f);
            reference.add(a_reference.data(), gamma.data(), n);
            reference.relu(r_reference.data(), n);
            reference.scale(s_reference.data(), n, 0.25f);
            CHECK(a == a_reference);
            CHECK(r == r_reference);
            CHECK(s == s_reference);
        }
    }
}

// Not to the last bit: the AVX2 and AVX-512 variants may contract a * b + c
// into one fused multiply-add (GCC does in C++), which rounds once instead of twice.
TEST_CASE("The softmax exp against the reference's std::exp over the whole range softmax uses, [-87.3, 0]") {
    // softmax calls exp(score - row max): the argument is <= 0. Below -87.3, exp is under
    // float's smallest normal (1.2e-38) and every variant returns 0. Every float in between is
    // not tried, but a grid of 2^20 points is, and each must be within 3e-7 relative (about
    // 2.5 ulp) of the reference variant's std::exp.
    constexpr int kPoints = 1 << 20;
    std::vector<float> x(kPoints);
    for (int i = 0; i < kPoints; ++i) x[static_cast<size_t>(i)] = -87.3f * static_cast<float>(i) / (kPoints - 1);
    std::vector<float> expected = x;
    kernels::kReferenceTable.exp_shifted_sum(expected.data(), kPoints, 0.0f);
    CHECK(expected[0] == 1.0f);
    CHECK(expected.back() > 0.0f);  // exp(-87.3) = 1.3e-38: still a normal float
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> e = x;
        kernels::table().exp_shifted_sum(e.data(), kPoints, 0.0f);
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i)
            worst = std::max(worst, std::fabs(static_cast<double>(e[i]) - expected[i]) / expected[i]);
        MESSAGE(std::string(kernels::variant_name(variant)), ": worst relative error of exp over [-87.3, 0]: ", worst);
        CHECK(worst <= 3e-7);
        CHECK(e[0] == 1.0f);  // exp(0) exactly: softmax's largest entry
    }
}

TEST_CASE("The GELU kernel against the reference's std::erf GELU over [-10, 10] in steps of 1/1024") {
    // The reference variant's formula with std::erf is the yardstick; the kernel's erf is a ratio
    // of two polynomials. Worst case over the grid: the bound of the test above, and the sign and 0 exact.
    std::vector<float> x;
    for (int i = -10 * 1024; i <= 10 * 1024; ++i) x.push_back(static_cast<float>(i) / 1024.0f);
    std::vector<float> expected = x;
    kernels::kReferenceTable.gelu(expected.data(), static_cast<int64_t>(expected.size()));
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> g = x;
        kernels::table().gelu(g.data(), static_cast<int64_t>(g.size()));
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            worst = std::max(worst, std::fabs(g[i] - expected[i]) / (4e-7 * std::fabs(x[i]) + 1e-7));
            if (x[i] == 0.0f) CHECK(g[i] == 0.0f);
            if (x[i] > 0.0f) CHECK(g[i] > 0.0f);
            if (x[i] < -0.0f && x[i] > -5.0f) CHECK(g[i] < 0.0f);  // below -5 gelu(x) > -1.5e-6: may round to 0
        }
        CHECK(worst <= 1.0);  // error / bound
    }
}

TEST_CASE("The tanh GELU kernel against the reference's std::tanh form over [-12, 12] in steps of 1/1024") {
    // The kernel computes 0.5 x (1 + tanh z) as x / (1 + exp(-2z)) with the softmax's
    // exponential; the reference variant's std::tanh form is the yardstick. Below about
    // -10.6 both give 0 (tanh z is -1 in float); the sign and 0 are exact.
    std::vector<float> x;
    for (int i = -12 * 1024; i <= 12 * 1024; ++i) x.push_back(static_cast<float>(i) / 1024.0f);
    std::vector<float> expected = x;
    kernels::kReferenceTable.gelu_tanh(expected.data(), static_cast<int64_t>(expected.size()));
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> g = x;
        kernels::table().gelu_tanh(g.data(), static_cast<int64_t>(g.size()));
        double worst = 0, worst_absolute = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            worst = std::max(worst, std::fabs(g[i] - expected[i]) / (4e-7 * std::fabs(x[i]) + 1e-7));
            worst_absolute = std::max(worst_absolute, static_cast<double>(std::fabs(g[i] - expected[i])));
            if (x[i] == 0.0f) CHECK(g[i] == 0.0f);
            if (x[i] > 0.0f) CHECK(g[i] > 0.0f);
            if (x[i] < -0.0f && x[i] > -5.0f) CHECK(g[i] < 0.0f);
        }
        MESSAGE(std::string(kernels::variant_name(variant)), ": worst absolute error of gelu_tanh over [-12, 12]: ",
                worst_absolute);
        CHECK(worst <= 1.0);  // error / bound
    }
}

TEST_CASE("The fast kernel variants give the reference's softmax and LayerNorm through engine/ops, to a few ulp") {
    const Tensor x = Random(3).normal_tensor({5, 77}, 3.0f);
    const Tensor gamma = Random(4).normal_tensor({77}), beta = Random(5).normal_tensor({77});
    Tensor softmax_reference, norm_reference, std_reference;
    {
        const UseVariant use(Variant::Reference);
        softmax_reference = softmax_rows(x);
        norm_reference = layer_norm(x, gamma, beta, 1e-5f);
        std_reference = layer_norm_std(x, gamma, beta, 1e-6f);
    }
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        const Tensor softmax = softmax_rows(x), norm = layer_norm(x, gamma, beta, 1e-5f);
        const Tensor norm_std = layer_norm_std(x, gamma, beta, 1e-6f);
        for (int64_t i = 0; i < x.numel(); ++i) {
            CHECK(norm_std.data()[i] == doctest::Approx(std_reference.data()[i]).epsilon(1e-6).scale(1.0));
            CHECK(softmax.data()[i] == doctest::Approx(softmax_reference.data()[i]).epsilon(1e-6));
            CHECK(norm.data()[i] == doctest::Approx(norm_reference.data()[i]).epsilon(1e-6).scale(1.0));
        }
    }
}

TEST_CASE("RMSNorm, SiLU and SwiGLU: each fast variant against the reference, at awkward sizes and values") {
    // Sizes D = 1, 3, 7 (under one vector), 64 (whole vectors), 1000 (whole vectors and a tail),
    // and values: N(0, 3), huge (1e30: x^2 above float's range), tiny (1e-30: x^2 under it),
    // all zero (y = 0, not NaN), and one huge entry among small ones.
    // RMSNorm: both sum the exact squares in double, so the mean square agrees to double
    // rounding; the fast kernels then scale in float: within 2 ulp (4e-7 relative here).
    const kernels::Table& reference = kernels::kReferenceTable;
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        const kernels::Table& k = kernels::table();
        for (int64_t n : {1, 3, 7, 8, 9, 64, 1000}) {
            CAPTURE(n);
            const std::vector<float> weight = random_row(n, 11, 1.0f), normal = random_row(n, 12, 3.0f);
            std::vector<std::vector<float>> rows = {normal, std::vector<float>(static_cast<size_t>(n), 0.0f)};
            for (float scale : {1e30f, 1e-30f}) {
                std::vector<float> scaled = normal;
                for (float& v : scaled) v *= scale;
                rows.push_back(scaled);
            }
            std::vector<float> spike = normal;
            spike[static_cast<size_t>(n / 2)] = 3e25f;
            rows.push_back(spike);
            for (size_t which = 0; which < rows.size(); ++which) {
                CAPTURE(which);
                for (float eps : {1e-5f, 1e-6f}) {
                    std::vector<float> fast = rows[which], expected = rows[which];
                    k.rms_norm_row(fast.data(), n, weight.data(), eps);
                    reference.rms_norm_row(expected.data(), n, weight.data(), eps);
                    for (size_t i = 0; i < fast.size(); ++i) {
                        CHECK(std::isfinite(fast[i]));
                        CHECK(std::fabs(fast[i] - expected[i]) <= 4e-7 * std::fabs(expected[i]) + 1e-37);
                        if (which == 1) CHECK(fast[i] == 0.0f);  // the all-zero row
                    }
                }
                // SiLU and SwiGLU (gate = the row, up = the weights): the kernel's exponential is
                // within 2 ulp of std::exp; the quotient and product add a rounding or two.
                std::vector<float> s = rows[which], s_reference = rows[which];
                k.silu(s.data(), n);
                reference.silu(s_reference.data(), n);
                std::vector<float> g = rows[which], g_reference = rows[which];
                k.swiglu(g.data(), weight.data(), n);
                reference.swiglu(g_reference.data(), weight.data(), n);
                for (size_t i = 0; i < s.size(); ++i) {
                    CHECK(std::isfinite(s[i]));
                    CHECK(std::fabs(s[i] - s_reference[i]) <= 5e-7 * std::fabs(s_reference[i]) + 1e-37);
                    CHECK(std::fabs(g[i] - g_reference[i]) <= 6e-7 * std::fabs(g_reference[i]) + 1e-37);
                }
            }
        }
    }
}

TEST_CASE("The SiLU kernel against the reference's std::exp form over [-100, 100] in steps of 1/256, and at +-inf") {
    // Below -87.3 both give 0 (|silu| < 1.1e-36 there; -inf would otherwise be -inf / inf = NaN);
    // the sign and 0 are exact; the relative error is a few ulp everywhere else.
    std::vector<float> x;
    for (int i = -100 * 256; i <= 100 * 256; ++i) x.push_back(static_cast<float>(i) / 256.0f);
    const float inf = std::numeric_limits<float>::infinity();
    x.push_back(inf);
    x.push_back(-inf);
    std::vector<float> expected = x;
    kernels::kReferenceTable.silu(expected.data(), static_cast<int64_t>(expected.size()));
    CHECK(expected[expected.size() - 2] == inf);
    CHECK(expected.back() == 0.0f);
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        std::vector<float> s = x;
        kernels::table().silu(s.data(), static_cast<int64_t>(s.size()));
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            if (expected[i] != 0.0f && std::isfinite(expected[i]))
                worst = std::max(worst, std::fabs(static_cast<double>(s[i]) - expected[i]) / std::fabs(expected[i]));
            else
                CHECK(s[i] == expected[i]);
            if (x[i] == 0.0f) CHECK(s[i] == 0.0f);
            if (x[i] > 0.0f) CHECK(s[i] > 0.0f);
            if (x[i] < 0.0f && x[i] >= -87.0f) CHECK(s[i] < 0.0f);
        }
        MESSAGE(std::string(kernels::variant_name(variant)), ": worst relative error of silu over [-100, 100]: ", worst);
        CHECK(worst <= 5e-7);
    }
}

TEST_CASE("TINYFORMER_KERNELS chooses the variant at start; tinyformer version says which and why") {
    SUBCASE("unset: the best this CPU runs") {
        const test_helpers::CliRun run = run_with_kernels({"version"}, "");
        REQUIRE(run.status == 0);
        CHECK(run.out.find(std::string("  kernels       ") + kernels::variant_name(kernels::best_variant()) +
                           " (softmax/exp") != std::string::npos);
        CHECK(run.out.find("the best this CPU runs") != std::string::npos);
    }
    SUBCASE("each variant this CPU runs, by name (any case), and auto") {
        struct Setting {
            std::string value, shown;  // what the user sets, what version shows
            Variant variant;
        };
        for (const Setting& setting : std::vector<Setting>{{"reference", "reference", Variant::Reference},
                                                           {"Reference", "reference", Variant::Reference},
                                                           {"baseline", "baseline", Variant::Baseline},
                                                           {"avx2", "avx2", Variant::Avx2},
                                                           {"avx512", "avx512", Variant::Avx512},
                                                           {"auto", "", kernels::best_variant()}}) {
            CAPTURE(setting.value);
            const Variant variant = setting.variant;
            if (!kernels::variant_supported(variant)) continue;
            const test_helpers::CliRun run = run_with_kernels({"version"}, setting.value);
            REQUIRE(run.status == 0);
            CHECK(run.out.find(std::string("  kernels       ") + kernels::variant_name(variant) + " (softmax/exp") !=
                  std::string::npos);
            // The line points at where the running kernels' code is.
            CHECK(run.out.find(variant == Variant::Reference ? "the plain formulas, engine/ops.cpp)"
                                                              : "GELU: engine/cpu/kernels.h)") != std::string::npos);
            if (!setting.shown.empty())
                CHECK(run.out.find("chosen by TINYFORMER_KERNELS=" + setting.shown) != std::string::npos);
            else
                CHECK(run.out.find("the best this CPU runs, as TINYFORMER_KERNELS=auto asks") != std::string::npos);
        }
    }
    SUBCASE("an unknown value is refused in one line, before any work") {
        const test_helpers::CliRun run = run_with_kernels({"version"}, "sse9");
        CHECK(run.status == 1);
        CHECK(run.out == "");
        CHECK(run.err ==
              "tinyformer: error: TINYFORMER_KERNELS=sse9: expected reference, auto, baseline, avx2 or avx512\n");
    }
    SUBCASE("a variant this CPU cannot run is refused") {
        for (Variant variant : {Variant::Avx2, Variant::Avx512}) {
            if (kernels::variant_supported(variant)) continue;
            const char* setting = variant == Variant::Avx2 ? "avx2" : "avx512";
            const test_helpers::CliRun run = run_with_kernels({"version"}, setting);
            CHECK(run.status == 1);
            CHECK(run.err.find("this CPU cannot run the") != std::string::npos);
        }
    }
}
