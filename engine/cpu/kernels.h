// Row kernels — softmax's exponential and maximum, the two LayerNorms and
// RMSNorm, residual add, ReLU, the two GELUs, SiLU and SwiGLU's product, and
// the one-row matrix product (gemv) — in one plain variant and three fast ones, chosen at run time:
//
//   reference        the formulas as written, one element at a time (std::exp,
//                    std::erf, std::tanh, two-pass mean and variance): engine/ops.cpp
//   baseline x86-64  SSE2, the eight-lane loops of engine/cpu/kernels.inc
//   avx2+fma         the same loops compiled for AVX2 and FMA
//   avx512           for AVX-512 F/BW/DQ/VL (its LayerNorm is the AVX2 one,
//                    which measured faster: docs/PERFORMANCE.md)
//
// One binary for every x86-64 CPU. The variant is chosen when a kernel first
// runs: TINYFORMER_KERNELS = reference | baseline | avx2 | avx512 names one,
// auto (or unset) takes the best this CPU runs (engine/cpu/features.h);
// another value, or a variant this CPU cannot run, is an Error. set_variant
// changes it for measuring and testing. engine/ops.* calls these; ops'
// contracts (formulas, -inf handling) hold for every variant, and
// tests/test_kernels.cpp compares each fast variant with the reference.
#pragma once

#include <cstdint>
#include <string>

namespace tinyformer::kernels {

enum class Variant { Reference, Baseline, Avx2, Avx512 };

struct Table {
    // row[j] = exp(row[j] - shift), returns the sum (engine/ops.h exp_shifted_sum)
    float (*exp_shifted_sum)(float* row, int64_t n, float shift);
    float (*row_max)(const float* row, int64_t n);
    void (*scale)(float* row, int64_t n, float factor);  // row *= factor
    // y = (x - mean) / sqrt(var + eps) * gamma + beta over one row, in place;
    // beta == nullptr: no shift
    void (*layer_norm_row)(float* row, int64_t n, const float* gamma, const float* beta, float eps);
    // y = gamma (x - mean) / (std + eps) + beta, std unbiased (N - 1), n >= 2
    void (*layer_norm_std_row)(float* row, int64_t n, const float* gamma, const float* beta, float eps);
    void (*add)(float* a, const float* b, int64_t n);  // a += b
    void (*relu)(float* x, int64_t n);                 // x = max(0, x)
    void (*gelu)(float* x, int64_t n);                 // x = x (1 + erf(x / sqrt 2)) / 2
    void (*gelu_tanh)(float* x, int64_t n);            // x = x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2
    // y = x / sqrt(mean(x^2) + eps) * weight over one row, in place; the sum of squares in double
    void (*rms_norm_row)(float* row, int64_t n, const float* weight, float eps);
    void (*silu)(float* x, int64_t n);                        // x = x / (1 + exp(-x)); 0 below x = -87.3
    void (*swiglu)(float* gate, const float* up, int64_t n);  // gate = silu(gate) * up
    // y[r] = sum_j w[r * stride + j] x[j] for r < rows, j < k: the one-row
    // matrix product y = W x of decoding (engine/cpu/gemv.h)
    void (*gemv)(const float* w, int64_t stride, const float* x, float* y, int64_t rows, int64_t k);
};

// The reference variant's table: the plain formulas, defined in engine/ops.cpp
// beside the operations they serve.
extern const Table kReferenceTable;

const Table& table();                 // the variant in use
Variant best_variant();               // the best fast variant this CPU runs
Variant active_variant();
bool variant_supported(Variant variant);  // reference and baseline: always
void set_variant(Variant variant);    // Error when the CPU cannot run it
// "reference", "baseline x86-64", "avx2+fma", "avx512"
const char* variant_name(Variant variant);

// The variant TINYFORMER_KERNELS asks for: best_variant() when it is unset,
// empty or "auto"; Error "TINYFORMER_KERNELS=<value>: ..." for an unknown
// value or a variant this CPU cannot run. The first kernel call uses it.
Variant variant_from_environment();
// How the start-up variant was chosen, for `tinyformer version`: "chosen by
// TINYFORMER_KERNELS=reference", or "the best this CPU runs (...)" when unset.
std::string variant_choice();

}  // namespace tinyformer::kernels
