// Parity with PyTorch: every case in data/reference/ (made by
// tools/python/make_reference.py from stock nn.Transformer / nn.TransformerEncoder)
// run through the same code as `tinyformer forward --attention`.
// |ours - torch| <= 1e-4 + 1e-4 |torch| at non-padding positions; exactly 0
// at padding positions; no NaN anywhere (tests/compare_outputs.h).

#include "tests/compare_outputs.h"

#include <doctest/doctest.h>

#include <algorithm>
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
        const test_helpers::Comparison c = test_helpers::compare_forward_with(model, inputs, expected);
        MESSAGE(name, ": ", c.compared, " numbers compared, worst |a-b| / tol = ", c.worst_ratio, "; ", c.padded,
                " padded numbers exactly 0");
        CHECK(c.compared > 0);
    }
}
