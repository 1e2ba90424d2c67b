#include "engine/ops.h"

#include "engine/cpu/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace tinyformer {

// The plain twins of the row kernels: each formula as written, one element at
// a time. TINYFORMER_KERNELS=reference runs these; the fast variants
// (engine/cpu/kernels.*: baseline x86-64, AVX2+FMA, AVX-512) compute the same
// things in eight-lane loops, and tests/test_kernels.cpp holds them to these.
namespace reference {

float exp_shifted_sum(float* row, int64_t n, float shift) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
        const float x = row[j] - shift;
        // Below -87.3, exp(x) is under float's smallest normal number: 0, as ops.h promises.
        row[j] = x < -87.3f ? 0.0f : std::exp(x);
        sum += row[j];
    }
    return static_cast<float>(sum);
}

float row_max(const float* row, int64_t n) {
    float largest = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) largest = std::max(largest, row[j]);
    return largest;
}

void scale(float* row, int64_t n, float factor) {
    for (int64_t j = 0; j < n; ++j) row[j] *= factor;
}

// Two passes, as PyTorch: the mean first, then the mean squared distance from
// it (the biased variance: divide by N, not N - 1). beta == nullptr: no shift.
void layer_norm_row(float* row, int64_t n, const float* gamma, const float* beta, float eps) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(n);
    double squares = 0;
    for (int64_t j = 0; j < n; ++j) squares += (row[j] - mean) * (row[j] - mean);
    const double variance = squares / static_cast<double>(n);
    const double inverse_std = 1.0 / std::sqrt(variance + eps);
    for (int64_t j = 0; j < n; ++j)
        row[j] = static_cast<float>((row[j] - mean) * inverse_std * gamma[j] + (beta ? beta[j] : 0.0));
}

// The Annotated Transformer's form: the same two passes, but the UNBIASED
// standard deviation (divide by N - 1; n >= 2) with eps added outside the root.
void layer_norm_std_row(float* row, int64_t n, const float* gamma, const float* beta, float eps) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(n);
    double squares = 0;
    for (int64_t j = 0; j < n; ++j) squares += (row[j] - mean) * (row[j] - mean);
    const double std_unbiased = std::sqrt(squares / static_cast<double>(n - 1));
    const double inverse = 1.0 / (std_unbiased + eps);
    for (int64_t j = 0; j < n; ++j)
        row[j] = static_cast<float>(gamma[j] * (row[j] - mean) * inverse + (beta ? beta[j] : 0.0));
}

void add(float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void relu(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::max(0.0f, x[i]);
}

void gelu(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] * 0.5f * (1.0f + std::erf(x[i] / std::sqrt(2.0f)));
}

// sqrt(2 / pi) = 0.7978845608...; x^3 of |x| above 7e12 is inf, and tanh(+-inf) = +-1: no NaN.
void gelu_tanh(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        x[i] = 0.5f * x[i] * (1.0f + std::tanh(0.7978845608f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

// RMSNorm: the mean of the squares (each x^2 exact in double, summed in double),
// then y = (x * inverse) * weight — llama2.c's order, x * rsqrt(...) * weight.
void rms_norm_row(float* row, int64_t n, const float* weight, float eps) {
    double squares = 0;
    for (int64_t j = 0; j < n; ++j) squares += static_cast<double>(row[j]) * row[j];
    const double inverse_rms = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
    for (int64_t j = 0; j < n; ++j) row[j] = static_cast<float>(row[j] * inverse_rms * weight[j]);
}

// silu(h) = h * sigmoid(h) = h / (1 + exp(-h)). For a finite h below -88.7,
// exp(-h) is inf in float and the quotient is -0, the right limit; but h = -inf
// would give -inf / inf = NaN, so below -87.3 (where |silu(h)| < 1.1e-36) the
// result is 0, as in the fast kernels.
float silu_value(float h) { return h < -87.3f ? 0.0f : h / (1.0f + std::exp(-h)); }

void silu(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = silu_value(x[i]);
}

// SwiGLU's product, silu(gate) * up: llama2.c's silu(w1 x) * (w3 x).
void swiglu(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gate[i] = silu_value(gate[i]) * up[i];
}

// The one-row matrix product y = W x: each output a dot product of one row of
// W with x, summed in double from left to right (as gemm_naive, engine/matmul.h).
void gemv(const float* w, int64_t stride, const float* x, float* y, int64_t rows, int64_t k) {
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) sum += static_cast<double>(w[r * stride + j]) * x[j];
        y[r] = static_cast<float>(sum);
    }
}

}  // namespace reference

const kernels::Table kernels::kReferenceTable{reference::exp_shifted_sum, reference::row_max,
                                              reference::scale,           reference::layer_norm_row,
                                              reference::layer_norm_std_row, reference::add,
                                              reference::relu,            reference::gelu,
                                              reference::gelu_tanh,       reference::rms_norm_row,
                                              reference::silu,            reference::swiglu,
                                              reference::gemv};

// Each operation calls the variant in use (engine/cpu/kernels.h: the best this
// CPU runs, or the one TINYFORMER_KERNELS names).
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

namespace {

// The checks and row loop both LayerNorms share; `row_kernel` is one of the table's.
Tensor normalise_rows(const char* who, Tensor x, const Tensor& gamma, const Tensor& beta, float eps,
                      void (*row_kernel)(float*, int64_t, const float*, const float*, float)) {
    if (x.empty()) fail(who, ": x is empty");
    const int64_t n = x.dim(-1);
    if (gamma.shape() != Shape{n} || (!beta.empty() && beta.shape() != Shape{n}))
        fail(who, ": gamma and beta must be [", n, "] for x ", shape_string(x.shape()), ", got gamma ",
             shape_string(gamma.shape()), ", beta ", shape_string(beta.shape()), " (beta may be empty: no shift)");
    if (!(eps > 0.0f)) fail(who, ": eps must be > 0, got ", eps);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    const float* shift = beta.empty() ? nullptr : beta.data();
    for (int64_t r = 0; r < rows; ++r) row_kernel(x.data() + r * n, n, gamma.data(), shift, eps);
    return x;
}

}  // namespace

Tensor layer_norm(Tensor x, const Tensor& gamma, const Tensor& beta, float eps) {
    return normalise_rows("layer_norm", std::move(x), gamma, beta, eps, kernels::table().layer_norm_row);
}

Tensor layer_norm_std(Tensor x, const Tensor& gamma, const Tensor& beta, float eps) {
    if (!x.empty() && x.dim(-1) < 2)
        fail("layer_norm_std: the last axis of x ", shape_string(x.shape()),
             " must hold at least 2 numbers (the unbiased std divides by N - 1)");
    return normalise_rows("layer_norm_std", std::move(x), gamma, beta, eps, kernels::table().layer_norm_std_row);
}

Tensor relu(Tensor x) {
    kernels::table().relu(x.data(), x.numel());
    return x;
}

Tensor gelu(Tensor x) {
    kernels::table().gelu(x.data(), x.numel());
    return x;
}

Tensor gelu_tanh(Tensor x) {
    kernels::table().gelu_tanh(x.data(), x.numel());
    return x;
}

Tensor rms_norm(Tensor x, const Tensor& weight, float eps) {
    if (x.empty()) fail("rms_norm: x is empty");
    const int64_t n = x.dim(-1);
    if (weight.shape() != Shape{n})
        fail("rms_norm: weight must be [", n, "] for x ", shape_string(x.shape()), ", got ",
             shape_string(weight.shape()));
    if (!(eps > 0.0f)) fail("rms_norm: eps must be > 0, got ", eps);
    const int64_t rows = n > 0 ? x.numel() / n : 0;
    const auto row_kernel = kernels::table().rms_norm_row;
    for (int64_t r = 0; r < rows; ++r) row_kernel(x.data() + r * n, n, weight.data(), eps);
    return x;
}

Tensor silu(Tensor h) {
    kernels::table().silu(h.data(), h.numel());
    return h;
}

Tensor swiglu(Tensor gate, const Tensor& up) {
    if (gate.shape() != up.shape())
        fail("swiglu: gate and up must have the same shape, got gate ", shape_string(gate.shape()), ", up ",
             shape_string(up.shape()));
    kernels::table().swiglu(gate.data(), up.data(), gate.numel());
    return gate;
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
