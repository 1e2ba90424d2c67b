// Row kernels that use the CPU's vector units — softmax's exponential and
// maximum, LayerNorm, residual add, ReLU, GELU — in variants for the baseline
// x86-64 (SSE2), AVX2+FMA and AVX-512 (F/BW/DQ/VL; its LayerNorm is the AVX2
// one, which measured faster), one binary for every x86-64
// CPU: the variant is chosen at start from the CPU's features (engine/cpu/blas.h's
// cpu_features) and can be set by hand for measuring and testing. engine/ops.*
// calls them; ops' contracts (formulas, -inf handling) hold for every variant,
// and tests compare each variant with the naive references in tests/test_ops.cpp.
#pragma once

#include <cstdint>

namespace tinyformer::kernels {

enum class Variant { Baseline, Avx2, Avx512 };

struct Table {
    // row[j] = exp(row[j] - shift), returns the sum (engine/ops.h exp_shifted_sum)
    float (*exp_shifted_sum)(float* row, int64_t n, float shift);
    float (*row_max)(const float* row, int64_t n);
    void (*scale)(float* row, int64_t n, float factor);  // row *= factor
    // y = (x - mean) / sqrt(var + eps) * gamma + beta over one row, in place
    void (*layer_norm_row)(float* row, int64_t n, const float* gamma, const float* beta, float eps);
    void (*add)(float* a, const float* b, int64_t n);  // a += b
    void (*relu)(float* x, int64_t n);                 // x = max(0, x)
    void (*gelu)(float* x, int64_t n);                 // x = x (1 + erf(x / sqrt 2)) / 2
};

const Table& table();                 // the variant in use
Variant best_variant();               // the best this CPU runs
Variant active_variant();
bool variant_supported(Variant variant);
void set_variant(Variant variant);    // Error when the CPU cannot run it
const char* variant_name(Variant variant);  // "baseline x86-64", "avx2+fma", "avx512"

}  // namespace tinyformer::kernels
