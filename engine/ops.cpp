#include "engine/ops.h"

#include <cmath>
#include <limits>

namespace tinyformer {

bool softmax_row(float* row, int64_t n) {
    // Subtracting the row maximum keeps exp() from overflowing; it cancels in
    // the ratio. exp(-inf - max) is exactly 0, so blocked keys get weight 0.
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) max_score = std::max(max_score, row[j]);
    if (max_score == -std::numeric_limits<float>::infinity()) return false;
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
        row[j] = std::exp(row[j] - max_score);
        sum += row[j];
    }
    const float inverse = static_cast<float>(1.0 / sum);
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

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
    if (x.empty()) fail("layer_norm: x is empty");
    const int64_t n = x.dim(-1);
    if (gamma.shape() != Shape{n} || beta.shape() != Shape{n})
        fail("layer_norm: gamma and beta must be [", n, "] for x ", shape_string(x.shape()), ", got gamma ",
             shape_string(gamma.shape()), ", beta ", shape_string(beta.shape()));
    if (!(eps > 0.0f)) fail("layer_norm: eps must be > 0, got ", eps);
    Tensor y = x;
    const int64_t rows = n > 0 ? y.numel() / n : 0;
    for (int64_t r = 0; r < rows; ++r) {
        float* row = y.data() + r * n;
        double mean = 0.0, variance = 0.0;
        for (int64_t i = 0; i < n; ++i) mean += row[i];
        mean /= static_cast<double>(n);
        for (int64_t i = 0; i < n; ++i) variance += (row[i] - mean) * (row[i] - mean);
        variance /= static_cast<double>(n);  // biased: divide by N, not N-1
        const double inverse_std = 1.0 / std::sqrt(variance + eps);
        for (int64_t i = 0; i < n; ++i)
            row[i] = static_cast<float>((row[i] - mean) * inverse_std) * gamma.data()[i] + beta.data()[i];
    }
    return y;
}

Tensor relu(const Tensor& x) {
    Tensor y = x;
    for (int64_t i = 0; i < y.numel(); ++i) y.data()[i] = std::max(0.0f, y.data()[i]);
    return y;
}

Tensor gelu(const Tensor& x) {
    Tensor y = x;
    const float inverse_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
    for (int64_t i = 0; i < y.numel(); ++i) {
        const float v = y.data()[i];
        y.data()[i] = v * 0.5f * (1.0f + std::erf(v * inverse_sqrt2));
    }
    return y;
}

Tensor add(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape())
        fail("add: shapes differ: a ", shape_string(a.shape()), ", b ", shape_string(b.shape()));
    Tensor y = a;
    for (int64_t i = 0; i < y.numel(); ++i) y.data()[i] += b.data()[i];
    return y;
}

}  // namespace tinyformer
