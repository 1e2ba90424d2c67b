#include "engine/ops.h"

#include "engine/cpu/kernels.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tinyformer {

// The loops run in engine/cpu/kernels.*, in the variant this CPU runs best
// (baseline x86-64, AVX2+FMA or AVX-512).
float exp_shifted_sum(float* row, int64_t n, float shift) { return kernels::table().exp_shifted_sum(row, n, shift); }

float row_max(const float* row, int64_t n) { return kernels::table().row_max(row, n); }

bool softmax_row(float* row, int64_t n) {
    // Subtracting the row maximum keeps exp() from overflowing; it cancels in
    // the ratio. exp(-inf - max) is exactly 0, so blocked keys get weight 0.
    const float max_score = row_max(row, n);
    if (max_score == -std::numeric_limits<float>::infinity()) return false;
    const float inverse = 1.0f / exp_shifted_sum(row, n, max_score);
    kernels::table().scale(row, n, inverse);
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

Tensor layer_norm(Tensor x, const Tensor& gamma, const Tensor& beta, float eps) {
    if (x.empty()) fail("layer_norm: x is empty");
    const int64_t n = x.dim(-1);
    if (gamma.shape() != Shape{n} || beta.shape() != Shape{n})
        fail("layer_norm: gamma and beta must be [", n, "] for x ", shape_string(x.shape()), ", got gamma ",
             shape_string(gamma.shape()), ", beta ", shape_string(beta.shape()));
    if (!(eps > 0.0f)) fail("layer_norm: eps must be > 0, got ", eps);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    const kernels::Table& kernel = kernels::table();
    for (int64_t r = 0; r < rows; ++r) kernel.layer_norm_row(x.data() + r * n, n, gamma.data(), beta.data(), eps);
    return x;
}

Tensor relu(Tensor x) {
    kernels::table().relu(x.data(), x.numel());
    return x;
}

Tensor gelu(Tensor x) {
    kernels::table().gelu(x.data(), x.numel());  // x (1 + erf(x / sqrt 2)) / 2, engine/cpu/kernels.inc
    return x;
}

Tensor add(Tensor a, const Tensor& b) {
    if (a.shape() != b.shape())
        fail("add: shapes differ: a ", shape_string(a.shape()), ", b ", shape_string(b.shape()));
    kernels::table().add(a.data(), b.data(), a.numel());
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
