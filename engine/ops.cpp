#include "engine/ops.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tinyformer {

// Built for the baseline x86-64 and for AVX2+FMA; the loader picks the best
// the CPU has (GCC function multi-versioning).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TINYFORMER_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TINYFORMER_VECTOR_CLONES
#endif

TINYFORMER_VECTOR_CLONES float exp_shifted_sum(float* row, int64_t n, float shift) {
    for (int64_t j = 0; j < n; ++j) {
        const float x = row[j] - shift;
        // exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 with ln 2 split in two parts
        // so that k ln 2 is exact (Cody-Waite); exp(r) on |r| <= ln2/2 by a polynomial.
        const float clamped = x < -87.3f ? -87.3f : x;
        const float k = (clamped * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
        const float r = (clamped - k * 0.693359375f) + k * 2.12194440e-4f;
        float p = 1.9875691500e-4f;
        p = p * r + 1.3981999507e-3f;
        p = p * r + 8.3334519073e-3f;
        p = p * r + 4.1665795894e-2f;
        p = p * r + 1.6666665459e-1f;
        p = p * r + 5.0000001201e-1f;
        p = p * r * r + r + 1.0f;
        const float two_to_k = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
        row[j] = x < -87.3f ? 0.0f : p * two_to_k;
    }
    // Eight running sums side by side: vectorisable without reordering any
    // one sum, and more accurate than one long float sum.
    float lanes[8] = {};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int lane = 0; lane < 8; ++lane) lanes[lane] += row[j + lane];
    for (; j < n; ++j) lanes[0] += row[j];
    double sum = 0.0;
    for (float lane : lanes) sum += lane;
    return static_cast<float>(sum);
}

TINYFORMER_VECTOR_CLONES float row_max(const float* row, int64_t n) {
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    float lanes[8] = {kLowest, kLowest, kLowest, kLowest, kLowest, kLowest, kLowest, kLowest};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int lane = 0; lane < 8; ++lane) lanes[lane] = lanes[lane] < row[j + lane] ? row[j + lane] : lanes[lane];
    for (; j < n; ++j) lanes[0] = lanes[0] < row[j] ? row[j] : lanes[0];
    float best = kLowest;
    for (float lane : lanes) best = best < lane ? lane : best;
    return best;
}

bool softmax_row(float* row, int64_t n) {
    // Subtracting the row maximum keeps exp() from overflowing; it cancels in
    // the ratio. exp(-inf - max) is exactly 0, so blocked keys get weight 0.
    const float max_score = row_max(row, n);
    if (max_score == -std::numeric_limits<float>::infinity()) return false;
    const float inverse = 1.0f / exp_shifted_sum(row, n, max_score);
    for (int64_t j = 0; j < n; ++j) row[j] *= inverse;
    return true;
}

Tensor softmax_rows(const Tensor& x) {
    if (x.empty()) fail("softmax_rows: x is empty");
    Tensor y = x;
    const int64_t n = y.dim(-1);
    const int64_t rows = n > 0 ? y.numel() / n : 0;
    for (int64_t r = 0; r < rows; ++r)
        if (!softmax_row(y.data() + r * n, n))
            fail("softmax_rows: row ", r, " of x ", shape_string(x.shape()),
                 " is entirely -inf: no key is allowed, so there is no distribution");
    return y;
}

namespace {

// Sum of n floats in eight side-by-side running sums (vectorised, and more
// accurate than one long float sum), combined in double.
double lane_sum(const float* values, int64_t n) {
    float lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int lane = 0; lane < 8; ++lane) lanes[lane] += values[i + lane];
    for (; i < n; ++i) lanes[0] += values[i];
    double sum = 0.0;
    for (float lane : lanes) sum += lane;
    return sum;
}

}  // namespace

Tensor layer_norm(Tensor x, const Tensor& gamma, const Tensor& beta, float eps) {
    if (x.empty()) fail("layer_norm: x is empty");
    const int64_t n = x.dim(-1);
    if (gamma.shape() != Shape{n} || beta.shape() != Shape{n})
        fail("layer_norm: gamma and beta must be [", n, "] for x ", shape_string(x.shape()), ", got gamma ",
             shape_string(gamma.shape()), ", beta ", shape_string(beta.shape()));
    if (!(eps > 0.0f)) fail("layer_norm: eps must be > 0, got ", eps);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    std::vector<float> centred(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x.data() + r * n;
        const float mean = static_cast<float>(lane_sum(row, n) / static_cast<double>(n));
        for (int64_t i = 0; i < n; ++i) centred[static_cast<size_t>(i)] = (row[i] - mean) * (row[i] - mean);
        const double variance = lane_sum(centred.data(), n) / static_cast<double>(n);  // biased: divide by N, not N-1
        const float inverse_std = static_cast<float>(1.0 / std::sqrt(variance + eps));
        for (int64_t i = 0; i < n; ++i) row[i] = (row[i] - mean) * inverse_std * gamma.data()[i] + beta.data()[i];
    }
    return x;
}

Tensor relu(Tensor x) {
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::max(0.0f, x.data()[i]);
    return x;
}

Tensor gelu(Tensor x) {
    const float inverse_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
    for (int64_t i = 0; i < x.numel(); ++i) {
        const float v = x.data()[i];
        x.data()[i] = v * 0.5f * (1.0f + std::erf(v * inverse_sqrt2));
    }
    return x;
}

Tensor add(Tensor a, const Tensor& b) {
    if (a.shape() != b.shape())
        fail("add: shapes differ: a ", shape_string(a.shape()), ", b ", shape_string(b.shape()));
    for (int64_t i = 0; i < a.numel(); ++i) a.data()[i] += b.data()[i];
    return a;
}

Tensor gather_batch(const Tensor& x, const std::vector<int64_t>& rows) {
    if (x.empty()) return x;
    const int64_t B = x.dim(0), row_size = B > 0 ? x.numel() / B : 0;
    Shape shape = x.shape();
    shape[0] = static_cast<int64_t>(rows.size());
    Tensor out(shape);
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || rows[i] >= B) fail("gather_batch: row ", rows[i], " outside 0..", B - 1);
        std::copy(x.data() + rows[i] * row_size, x.data() + (rows[i] + 1) * row_size,
                  out.data() + static_cast<int64_t>(i) * row_size);
    }
    return out;
}

}  // namespace tinyformer
