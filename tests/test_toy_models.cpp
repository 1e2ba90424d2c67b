// The shipped toy models of data/models/ (tools/train_toy.py) really work:
// exact-match accuracy on fresh C++-generated examples above each target,
// and tinyformer's greedy outputs equal PyTorch's on the committed held-out
// examples, token for token.

#include "models/attention_maps.h"
#include "models/toy_tasks.h"

#include <doctest/doctest.h>

#include <fstream>

using namespace tinyformer;

namespace {

struct Shipped {
    const char* name;
    const char* task;
    double target;  // exact match, from the issue
};

const Shipped kModels[] = {
    {"reverse", "reverse", 0.99},
    {"sort", "sort", 0.99},
    {"reverse-prefixlm", "reverse", 0.97},
    {"reverse-causal", "reverse", 0.97},
};

std::string model_path(const std::string& name) { return "data/models/" + name + ".safetensors"; }

}  // namespace

TEST_CASE("Every shipped toy model beats its exact-match target on 1000 fresh examples") {
    for (const Shipped& shipped : kModels) {
        CAPTURE(shipped.name);
        const Model model = Model::load(model_path(shipped.name));
        const Evaluation evaluation = evaluate(model, toy_task(shipped.task), 1000, /*seed=*/2026);
        MESSAGE(std::string(shipped.name), ": exact match ", evaluation.correct, "/", evaluation.total);
        CHECK(evaluation.accuracy() >= shipped.target);
    }
}

TEST_CASE("Greedy outputs equal PyTorch's greedy outputs on the committed held-out examples, token for token") {
    for (const Shipped& shipped : kModels) {
        CAPTURE(shipped.name);
        const Model model = Model::load(model_path(shipped.name));
        const Tokenizer tokenizer(model.text.vocab);
        std::ifstream file("data/models/" + std::string(shipped.name) + ".greedy.tsv");
        REQUIRE_MESSAGE(file.good(), "missing data/models/", shipped.name, ".greedy.tsv (run the tests from the repository root)");
        std::vector<std::string> inputs, expected;
        for (std::string line; std::getline(file, line);) {
            if (line.empty() || line[0] == '#') continue;
            const size_t tab = line.find('\t');
            REQUIRE(tab != std::string::npos);
            inputs.push_back(model.encoder_decoder ? line.substr(0, tab) : line.substr(0, tab) + "=");
            expected.push_back(line.substr(tab + 1));
        }
        REQUIRE(inputs.size() == 200);
        const std::vector<std::string> outputs = generate_text(model, inputs, 1, {});
        int64_t same = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
            CAPTURE(inputs[i]);
            CHECK(outputs[i] == expected[i]);
            same += outputs[i] == expected[i];
        }
        MESSAGE(std::string(shipped.name), ": ", same, "/", inputs.size(), " outputs identical to PyTorch's");
    }
}

TEST_CASE("attention_maps of a trained model name every attention call with its tokens and mask") {
    const Model model = Model::load(model_path("reverse"));
    const AttentionRun run = attention_maps(model, ModelText(model).encode_input("abc"), std::nullopt);
    CHECK(run.output == "cba");  // greedy output of the trained model
    // 2 encoder layers (self) + 2 decoder layers (self, cross).
    REQUIRE(run.maps.size() == 6);
    for (const AttentionMap& map : run.maps) {
        CAPTURE(map.stack); CAPTURE(map.layer); CAPTURE(map.kind);
        const int64_t L = map.weights.dim(2), S = map.weights.dim(3);
        CHECK(map.weights.dim(1) == 4);  // per head, never averaged
        CHECK(static_cast<int64_t>(map.query_tokens.size()) == L);
        CHECK(static_cast<int64_t>(map.key_tokens.size()) == S);
        for (int64_t h = 0; h < 4; ++h)
            for (int64_t l = 0; l < L; ++l) {
                double sum = 0;
                for (int64_t s = 0; s < S; ++s) {
                    const float w = map.weights.at({0, h, l, s});
                    if (!map.mask.allows(0, 0, l, s))  // broadcast axes have stride 0
                        CHECK(w == 0.0f);
                    sum += w;
                }
                CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
            }
    }
    // In the order they run: encoder 0, encoder 1, decoder 0 self, decoder 0 cross, decoder 1 self, decoder 1 cross.
    CHECK(run.maps[0].stack == "encoder");
    CHECK(run.maps[2].kind == "self");
    const AttentionMap& cross = run.maps[3];  // decoder layer 0 cross: "<bos> c b a" over "a b c"
    CHECK(cross.stack == "decoder");
    CHECK(cross.kind == "cross");
    CHECK(cross.query_tokens == std::vector<std::string>{"<bos>", "c", "b", "a"});
    CHECK(cross.key_tokens == std::vector<std::string>{"a", "b", "c"});
    CHECK(cross.layer == 0);
    CHECK(run.maps[2].mask_name == "causal");
}
