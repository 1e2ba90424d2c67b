// Comparing `forward --attention` outputs with PyTorch's, as FORMAT.md
// defines agreement: |ours - torch| <= 1e-4 + 1e-4 |torch| at non-padding
// positions, exactly 0 at padding positions, no NaN anywhere. Shared by
// tests/test_parity.cpp (data/reference/) and tests/test_export.cpp
// (data/export/).
#pragma once

#include "models/study/forward.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace test_helpers {

// Which padding marks the query rows of an output tensor.
inline std::string padding_name_for(const std::string& output, bool encoder_decoder) {
    if (!encoder_decoder) return "key_padding_mask";
    if (output.starts_with("encoder.")) return "src_key_padding_mask";
    return "tgt_key_padding_mask";  // logits, decoder self and cross attention
}

struct Comparison {
    int64_t compared = 0, padded = 0;
    double worst_ratio = 0;  // max |a-b| / (1e-4 + 1e-4 |b|)
};

// ours/theirs: [B, T, V] logits or [B, H, L, S] weights; rows = (b, query).
inline Comparison compare_output(const std::string& name, const tinyformer::Tensor& ours,
                                 const tinyformer::Tensor& theirs, const tinyformer::BoolTensor* padding) {
    Comparison result;
    REQUIRE(ours.shape() == theirs.shape());
    const int64_t B = ours.dim(0);
    const int64_t heads = ours.rank() == 4 ? ours.dim(1) : 1;
    const int64_t queries = ours.dim(-2), width = ours.dim(-1);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t q = 0; q < queries; ++q) {
                const bool padded = padding && padding->values[static_cast<size_t>(b * queries + q)] != 0;
                const int64_t row = (b * heads + h) * queries + q;
                for (int64_t j = 0; j < width; ++j) {
                    const float a = ours.data()[row * width + j], e = theirs.data()[row * width + j];
                    REQUIRE_MESSAGE(std::isfinite(a), name, " is not finite at row ", row, ", column ", j);
                    if (padded) {
                        CHECK_MESSAGE(a == 0.0f, name, ": padded row ", row, " is not exactly 0");
                        ++result.padded;
                        continue;
                    }
                    const double ratio = std::fabs(a - e) / (1e-4 + 1e-4 * std::fabs(e));
                    result.worst_ratio = std::max(result.worst_ratio, ratio);
                    if (ratio > 1.0)
                        CHECK_MESSAGE(ratio <= 1.0, name, " at (b=", b, ", h=", h, ", row ", q, ", col ", j,
                                      "): ours ", a, ", torch ", e);
                    ++result.compared;
                }
            }
    return result;
}

// Runs `model` on `inputs` as `tinyformer forward --attention` does and
// compares every output with `expected` (same names, same shapes, FORMAT's
// tolerance). Returns the totals over all outputs.
inline Comparison compare_forward_with(const tinyformer::Model& model, const tinyformer::SafetensorsFile& inputs,
                                       const tinyformer::SafetensorsFile& expected) {
    const std::map<std::string, tinyformer::Tensor> outputs = tinyformer::run_forward(model, inputs, /*attention=*/true);
    std::vector<std::string> expected_names;
    for (const auto& [output, stored] : expected.tensors()) expected_names.push_back(output);
    std::vector<std::string> our_names;
    for (const auto& [output, tensor] : outputs) our_names.push_back(output);
    CHECK(our_names == expected_names);

    Comparison total;
    for (const auto& [output, tensor] : outputs) {
        if (!expected.contains(output)) continue;
        const std::string padding_name = padding_name_for(output, model.encoder_decoder != nullptr);
        const bool has_padding = inputs.contains(padding_name);
        const tinyformer::BoolTensor padding = has_padding ? inputs.read_bool(padding_name) : tinyformer::BoolTensor{};
        const Comparison c = compare_output(output, tensor, expected.read_float(output), has_padding ? &padding : nullptr);
        total.compared += c.compared;
        total.padded += c.padded;
        total.worst_ratio = std::max(total.worst_ratio, c.worst_ratio);
    }
    return total;
}

}  // namespace test_helpers
