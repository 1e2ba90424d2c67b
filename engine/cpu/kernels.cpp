#include "engine/cpu/kernels.h"

#include "engine/cpu/features.h"
#include "engine/error.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

// The fast variants: three compilations of engine/cpu/kernels.inc (the baseline,
// AVX2+FMA, AVX-512). The reference variant, the plain formulas, is engine/ops.cpp's.
// KERNEL_VECTOR_FLOATS: floats in one vector register of the variant.
// KERNEL_GEMV_ROWS: how many rows the one-row product takes together (their
// sixteen lane sums each: 2 rows fill 8 SSE registers, 4 rows 8 AVX2
// registers, 8 rows 8 AVX-512 registers).
#define KERNEL_NS baseline
#define KERNEL_TARGET
#define KERNEL_GEMV_ROWS 2
#define KERNEL_VECTOR_FLOATS 4
#include "engine/cpu/kernels.inc"
#undef KERNEL_NS
#undef KERNEL_TARGET
#undef KERNEL_GEMV_ROWS
#undef KERNEL_VECTOR_FLOATS

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TINYFORMER_KERNEL_VARIANTS 1
#define KERNEL_NS avx2
#define KERNEL_TARGET __attribute__((target("avx2,fma")))
#define KERNEL_GEMV_ROWS 4
#define KERNEL_VECTOR_FLOATS 8
#include "engine/cpu/kernels.inc"
#undef KERNEL_NS
#undef KERNEL_TARGET
#undef KERNEL_GEMV_ROWS
#undef KERNEL_VECTOR_FLOATS
#define KERNEL_NS avx512
#define KERNEL_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define KERNEL_GEMV_ROWS 8
#define KERNEL_VECTOR_FLOATS 16
#include "engine/cpu/kernels.inc"
#undef KERNEL_NS
#undef KERNEL_TARGET
#undef KERNEL_GEMV_ROWS
#undef KERNEL_VECTOR_FLOATS
#endif

namespace tinyformer::kernels {

namespace {

#define TINYFORMER_TABLE(NS) \
    Table {                                                                                                  \
        NS::exp_shifted_sum, NS::row_max, NS::scale, NS::layer_norm_row, NS::layer_norm_std_row, NS::add, NS::relu, \
            NS::gelu, NS::gelu_tanh, NS::rms_norm_row, NS::silu, NS::swiglu, NS::gemv                        \
    }

const Table kBaseline = TINYFORMER_TABLE(baseline);
#ifdef TINYFORMER_KERNEL_VARIANTS
const Table kAvx2 = TINYFORMER_TABLE(avx2);
// LayerNorm: GCC 12's AVX-512 code for the eight-lane sums measured slower
// than its AVX2 code (tinyformer-bench kernels; docs/PERFORMANCE.md), so the
// AVX-512 table keeps the AVX2 LayerNorms (the two share those sums).
const Table kAvx512{avx512::exp_shifted_sum, avx512::row_max, avx512::scale, avx2::layer_norm_row,
                    avx2::layer_norm_std_row, avx512::add, avx512::relu, avx512::gelu, avx512::gelu_tanh,
                    avx512::rms_norm_row, avx512::silu, avx512::swiglu, avx512::gemv};
#endif

constexpr Variant kEveryVariant[] = {Variant::Reference, Variant::Baseline, Variant::Avx2, Variant::Avx512};

const Table& table_of(Variant variant) {
    if (variant == Variant::Reference) return kReferenceTable;
#ifdef TINYFORMER_KERNEL_VARIANTS
    if (variant == Variant::Avx512) return kAvx512;
    if (variant == Variant::Avx2) return kAvx2;
#endif
    return kBaseline;
}

// What TINYFORMER_KERNELS says ("" when unset), lower-cased.
std::string kernels_setting() {
    const char* value = std::getenv("TINYFORMER_KERNELS");
    std::string text = value ? value : "";
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// The name TINYFORMER_KERNELS uses for a variant.
const char* setting_name(Variant variant) {
    switch (variant) {
        case Variant::Reference: return "reference";
        case Variant::Baseline: return "baseline";
        case Variant::Avx2: return "avx2";
        case Variant::Avx512: return "avx512";
    }
    return "unknown";
}

std::atomic<const Table*>& active() {
    static std::atomic<const Table*> table{&table_of(variant_from_environment())};
    return table;
}

}  // namespace

bool variant_supported(Variant variant) {
    if (variant == Variant::Reference || variant == Variant::Baseline) return true;
#ifdef TINYFORMER_KERNEL_VARIANTS
    const CpuFeatures f = cpu_features();
    if (variant == Variant::Avx2) return f.avx2 && f.fma;
    if (variant == Variant::Avx512) return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx2 && f.fma;
#endif
    return false;
}

Variant best_variant() {
    if (variant_supported(Variant::Avx512)) return Variant::Avx512;
    if (variant_supported(Variant::Avx2)) return Variant::Avx2;
    return Variant::Baseline;
}

const Table& table() { return *active().load(std::memory_order_relaxed); }

Variant active_variant() {
    const Table* now = active().load(std::memory_order_relaxed);
    for (Variant v : kEveryVariant)
        if (now == &table_of(v)) return v;
    return Variant::Baseline;
}

void set_variant(Variant variant) {
    if (!variant_supported(variant)) fail("kernels: this CPU cannot run the ", variant_name(variant), " variant");
    active().store(&table_of(variant), std::memory_order_relaxed);
}

const char* variant_name(Variant variant) {
    switch (variant) {
        case Variant::Reference: return "reference";
        case Variant::Baseline: return "baseline x86-64";
        case Variant::Avx2: return "avx2+fma";
        case Variant::Avx512: return "avx512";
    }
    return "unknown";
}

Variant variant_from_environment() {
    const std::string setting = kernels_setting();
    if (setting.empty() || setting == "auto") return best_variant();
    for (Variant v : kEveryVariant) {
        if (setting != setting_name(v)) continue;
        if (!variant_supported(v))
            fail("TINYFORMER_KERNELS=", setting, ": this CPU cannot run the ", variant_name(v), " variant");
        return v;
    }
    fail("TINYFORMER_KERNELS=", setting, ": expected reference, auto, baseline, avx2 or avx512");
}

std::string variant_choice() {
    const std::string setting = kernels_setting();
    if (setting.empty())
        return "the best this CPU runs (TINYFORMER_KERNELS=reference|baseline|avx2|avx512 chooses another)";
    if (setting == "auto") return "the best this CPU runs, as TINYFORMER_KERNELS=auto asks";
    return "chosen by TINYFORMER_KERNELS=" + setting;
}

}  // namespace tinyformer::kernels
