// For the tests that run in every row-kernel variant (engine/cpu/kernels.h):
// which variants this CPU runs, and a scope that sets one.
#pragma once

#include "engine/cpu/kernels.h"

#include <vector>

namespace test_helpers {

// Sets a variant for one scope and restores the one before.
class UseVariant {
public:
    explicit UseVariant(tinyformer::kernels::Variant variant) : before_(tinyformer::kernels::active_variant()) {
        tinyformer::kernels::set_variant(variant);
    }
    ~UseVariant() { tinyformer::kernels::set_variant(before_); }
    UseVariant(const UseVariant&) = delete;
    UseVariant& operator=(const UseVariant&) = delete;

private:
    tinyformer::kernels::Variant before_;
};

// The fast variants this CPU runs: baseline x86-64 always, AVX2+FMA and AVX-512 where it can.
inline std::vector<tinyformer::kernels::Variant> fast_variants() {
    using tinyformer::kernels::Variant;
    std::vector<Variant> variants;
    for (Variant v : {Variant::Baseline, Variant::Avx2, Variant::Avx512})
        if (tinyformer::kernels::variant_supported(v)) variants.push_back(v);
    return variants;
}

// The reference (the plain formulas of engine/ops.cpp) first, then the fast ones.
inline std::vector<tinyformer::kernels::Variant> every_variant() {
    std::vector<tinyformer::kernels::Variant> variants = {tinyformer::kernels::Variant::Reference};
    for (auto v : fast_variants()) variants.push_back(v);
    return variants;
}

}  // namespace test_helpers
