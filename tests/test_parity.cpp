// Parity with PyTorch: every case in data/reference/ (made by
// tools/make_reference.py from stock nn.Transformer / nn.TransformerEncoder)
// run through the same code as `tinyformer forward --attention`.
// |ours - torch| <= 1e-4 + 1e-4 |torch| at non-padding positions; exactly 0
// at padding positions; no NaN anywhere.

#include "models/forward.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

using namespace tinyformer;

namespace {

// `make parity` points this at freshly generated references instead.
std::string reference_dir() {
    const char* override_dir = std::getenv("TINYFORMER_REFERENCE_DIR");
    return override_dir && *override_dir ? override_dir : "data/reference";
}

std::vector<std::string> reference_cases() {
    std::vector<std::string> cases;
    if (!std::filesystem::is_directory(reference_dir())) return cases;
    const std::string suffix = ".model.safetensors";
    for (const auto& entry : std::filesystem::directory_iterator(reference_dir())) {
        const std::string name = entry.path().filename().string();
        if (name.size() > suffix.size() && name.ends_with(suffix))
            cases.push_back(name.substr(0, name.size() - suffix.size()));
    }
    std::sort(cases.begin(), cases.end());
    return cases;
}

// Which padding marks the query rows of an output tensor.
std::string padding_name_for(const std::string& output, bool encoder_decoder) {
    if (!encoder_decoder) return "key_padding_mask";
    if (output.starts_with("attention.encoder.")) return "src_key_padding_mask";
    return "tgt_key_padding_mask";  // logits, decoder self and cross attention
}

struct Comparison {
    int64_t compared = 0, padded = 0;
    double worst_ratio = 0;  // max |a-b| / (1e-4 + 1e-4 |b|)
};

// ours/theirs: [B, T, V] logits or [B, H, L, S] weights; rows = (b, query).
Comparison compare(const std::string& name, const Tensor& ours, const Tensor& theirs, const BoolTensor* padding) {
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

}  // namespace

TEST_CASE("Every PyTorch reference case matches: logits and per-head weights within 1e-4 + 1e-4|b|") {
    const std::vector<std::string> cases = reference_cases();
    REQUIRE_MESSAGE(cases.size() >= 10, "expected the reference cases in ", reference_dir(),
                    " (run the tests from the repository root)");
    for (const std::string& name : cases) {
        CAPTURE(name);
        const std::string base = reference_dir() + "/" + name;
        const Model model = Model::load(base + ".model.safetensors");
        const SafetensorsFile inputs = SafetensorsFile::read(base + ".inputs.safetensors");
        const SafetensorsFile expected = SafetensorsFile::read(base + ".expected.safetensors");
        const std::map<std::string, Tensor> outputs = run_forward(model, inputs, /*attention=*/true);

        std::vector<std::string> expected_names;
        for (const auto& [output, stored] : expected.tensors()) expected_names.push_back(output);
        std::vector<std::string> our_names;
        for (const auto& [output, tensor] : outputs) our_names.push_back(output);
        CHECK(our_names == expected_names);

        int64_t compared = 0, padded = 0;
        double worst = 0;
        for (const auto& [output, tensor] : outputs) {
            if (!expected.contains(output)) continue;
            const std::string padding_name = padding_name_for(output, model.encoder_decoder != nullptr);
            const BoolTensor padding = inputs.contains(padding_name) ? inputs.read_bool(padding_name) : BoolTensor{};
            const Comparison c =
                compare(output, tensor, expected.read_float(output), inputs.contains(padding_name) ? &padding : nullptr);
            compared += c.compared;
            padded += c.padded;
            worst = std::max(worst, c.worst_ratio);
        }
        MESSAGE(name, ": ", compared, " numbers compared, worst |a-b| / tol = ", worst, "; ", padded,
                " padded numbers exactly 0");
        CHECK(compared > 0);
    }
}
