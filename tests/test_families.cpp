// The model families that come in through tools/python/tinyformer_export.py --from FAMILY,
// run from their committed files as a user runs them (no Python, no torch here).
//
// data/families/annotated-copy.*: the Annotated Transformer (families/annotated.py, the
// upstream tree) trained on its copy task by tools/python/examples/train_annotated_copy.py.
// The reference outputs are PyTorch's: greedy_decode of the trained module, written to
// annotated-copy.greedy.tsv by that script (data/families/README.md gives the command).
#include <doctest/doctest.h>

#include "tests/greedy_margin.h"
#include "tests/run_cli.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using test_helpers::CliRun;
using test_helpers::run_tinyformer;

namespace {

struct GreedyRow {
    std::string source, output;
};

std::vector<GreedyRow> greedy_rows(const std::string& path) {
    std::ifstream file(path);
    REQUIRE_MESSAGE(file.good(), "missing ", path, " (run the tests from the repository root)");
    std::vector<GreedyRow> rows;
    for (std::string line; std::getline(file, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        rows.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
    return rows;
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

}  // namespace

TEST_CASE("families: the Annotated Transformer copy model gives PyTorch's greedy outputs and copies its sources") {
    const std::string model = "data/families/annotated-copy.safetensors";
    const std::vector<GreedyRow> rows = greedy_rows("data/families/annotated-copy.greedy.tsv");
    REQUIRE(rows.size() == 200);

    // All 200 sources through one `run`, one per line on stdin. The model has no end
    // token (upstream's copy task has none): greedy_decode makes max_len - 1 = 9 tokens
    // after the start symbol, and so must run.
    test_helpers::TempDirectory dir;
    const std::string inputs = dir.file("inputs.txt");
    {
        std::ofstream out(inputs);
        for (const GreedyRow& row : rows) out << row.source << "\n";
    }
    const CliRun run = run_tinyformer({"run", model, "--max-new-tokens", "9"}, 1, 300, inputs);
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    const std::vector<std::string> lines = [&] {
        std::vector<std::string> out;
        std::istringstream in(run.out);
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }();
    REQUIRE(lines.size() == rows.size());

    // PyTorch's logits are within FORMAT's 1e-4 + 1e-4|b| of the engine's, not the same floats:
    // an output must be PyTorch's where the engine's top-2 margin decides every step
    // (tests/greedy_margin.h; the margin is read in this process, whose logits are within
    // float rounding, far below that bound, of the `run` above). Every row is decided.
    std::vector<std::string> sources, expected;
    for (const GreedyRow& row : rows) {
        sources.push_back(row.source);
        expected.push_back(row.output);
    }
    const test_helpers::AgainstPytorch margins =
        test_helpers::greedy_against_pytorch(tinyformer::Model::load(model), sources, expected, 9);
    CHECK(margins.decided == static_cast<int64_t>(rows.size()));
    int same = 0, copied = 0, tokens = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        CAPTURE(rows[i].source);
        if (margins.row_decided[i]) CHECK(lines[i] == rows[i].output);
        same += lines[i] == rows[i].output;
        // The copy task: the output is the source without its start symbol "1".
        const std::vector<std::string> source = words(rows[i].source), output = words(lines[i]);
        REQUIRE(source.size() == 10);
        CHECK(source[0] == "1");
        for (size_t k = 1; k < source.size(); ++k) {
            ++tokens;
            copied += k - 1 < output.size() && output[k - 1] == source[k];
        }
    }
    MESSAGE("annotated-copy: ", same, "/", rows.size(), " outputs identical to PyTorch's greedy_decode; ", copied, "/",
            tokens, " tokens copied");
    // The training log (data/families/annotated-copy.train.log) reports greedy accuracy 1.0000 on these
    // sources; the engine must copy at least 99% of the tokens (it reproduces PyTorch, so in fact all).
    CHECK(copied * 100 >= tokens * 99);
}

TEST_CASE("families: the Annotated copy model's config says what the Annotated Transformer computes") {
    const CliRun run = run_tinyformer({"info", "data/families/annotated-copy.safetensors"});
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    // What tools/python/families/annotated.py writes: four separate projections per attention
    // (q_proj, k_proj, v_proj, out_proj: the Annotated linears.0..3), pre-LN sublayers, the
    // sqrt(d_model) embedding scale, the pe buffer as sinusoidal positions up to 16, the
    // unbiased-std LayerNorm with eps 1e-6 outside the root and the finite -1e9 mask.
    for (const char* piece : {"encoder_decoder", "pre-LN", "embed_scale yes", "positions sinusoidal (max_len 16)",
                              "layer_norm_eps 1e-06", "norm layer_norm_std", "qkv separate", "mask_value -1e+09",
                              "transformer.encoder.layers.0.self_attn.q_proj.weight",
                              "transformer.decoder.layers.1.multihead_attn.v_proj.bias"}) {
        INFO("missing: ", piece);
        CHECK(run.out.find(piece) != std::string::npos);
    }
}
