// Tests for models/study/patching.* and `tinyformer patch`.
// The three identities of activation patching hold exactly (patching.h says
// why); one effect is recomputed here with a hook of this file's own.

#include "models/study/patching.h"
#include "models/study/teacher_forcing.h"
#include "models/text.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

using namespace tinyformer;

namespace {

std::vector<int64_t> tokens(const Model& model, const std::string& text) { return ModelText(model).encode_input(text); }

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// The logits of one teacher-forced pass without any hook.
Tensor plain_logits(Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target) {
    return patched_pass(model, input, target, nullptr, nullptr, nullptr);
}

std::vector<int64_t> every_position(const Tensor& activation) {
    std::vector<int64_t> positions;
    for (int64_t p = 0; p < activation.dim(1); ++p) positions.push_back(p);
    return positions;
}

// This file's own patch: row `position` of `point` taken from `recorded`.
class OneRow final : public Hooks {
public:
    OneRow(std::string point, int64_t position, const Tensor* recorded, Tensor* record)
        : point_(std::move(point)), position_(position), recorded_(recorded), record_(record) {}
    void residual(const ResidualPoint& point, Tensor& x) const override {
        if (point.name != point_) return;
        if (record_) *record_ = x;
        if (recorded_) {
            const int64_t D = x.dim(2);
            for (int64_t d = 0; d < D; ++d) x.data()[position_ * D + d] = recorded_->data()[position_ * D + d];
        }
    }

private:
    std::string point_;
    int64_t position_;
    const Tensor* recorded_;
    Tensor* record_;
};

struct Case {
    const char* path;
    const char* clean;
    const char* corrupted;
    const char* target;  // "" = none given
};
// reverse (encoder-decoder): "olleh" vs "ollah" differ at output 3; reverse-causal
// (decoder-only) with the target given: the answer row lies inside the target,
// so positions after it exist; nanogpt-char (decoder-only): the next character.
const Case kCases[] = {
    {"data/models/reverse.safetensors", "hello", "hallo", ""},
    {"data/models/reverse-causal.safetensors", "hello", "hallo", "olleh"},
    {"data/families/nanogpt-char.safetensors", "one hundred and six, two hundred and s",
     "one hundred and six, two hundred and f", ""},
};

PatchReport report_of(Model& model, const Case& c, PatchWhat what) {
    std::optional<std::vector<int64_t>> target;
    if (*c.target) target = ModelText(model).encode_output(c.target);
    return activation_patching(model, tokens(model, c.clean), tokens(model, c.corrupted), target, what);
}

std::string last_layer_output(const Model& model) {
    if (model.encoder_decoder) return "decoder." + std::to_string(model.config.num_decoder_layers - 1) + ".output";
    return "layers." + std::to_string(model.config.num_layers - 1) + ".output";
}

}  // namespace

TEST_CASE("Patching every position of the last layer's output restores the clean logits bit for bit: effect exactly 1") {
    for (const Case& c : kCases) {
        CAPTURE(c.path);
        Model model = Model::load(c.path);
        const PatchReport report = report_of(model, c, PatchWhat::Resid);
        Activations clean;
        const Tensor clean_logits = patched_pass(model, report.clean.input, report.target, nullptr, nullptr, &clean);
        const std::string point = last_layer_output(model);
        REQUIRE(clean.residual.count(point) == 1);
        const PatchSite site{point, -1, every_position(clean.residual.at(point))};
        const Tensor patched = patched_pass(model, report.corrupted.input, report.target, &clean, &site, nullptr);
        CHECK(same_bits(patched, clean_logits));
        CHECK(patch_effect(report, answer_logit_diff(report, patched)) == 1.0);
        // The last layer's row at the answer alone: the final norm and the unembedding work row by row.
        const size_t last = report.rows.size() - 1;
        REQUIRE(report.rows[last].point == point);
        CHECK(report.effect[last][static_cast<size_t>(report.answer_row)] == 1.0);
        CHECK(report.clean.logit_diff > 0.0);
        CHECK(report.corrupted.logit_diff < 0.0);
    }
}

TEST_CASE("Patching the clean run into itself, at every point and head and every position, changes no bit of the logits") {
    for (const Case& c : kCases) {
        CAPTURE(c.path);
        Model model = Model::load(c.path);
        const PatchReport report = report_of(model, c, PatchWhat::Resid);
        const Tensor plain = plain_logits(model, report.clean.input, report.target);
        Activations clean;
        patched_pass(model, report.clean.input, report.target, nullptr, nullptr, &clean);
        int64_t sites = 0;
        for (PatchWhat what : {PatchWhat::Resid, PatchWhat::AttnOut, PatchWhat::MlpOut, PatchWhat::Head})
            for (const PatchRow& row : patch_rows(model, what)) {
                CAPTURE(row.name);
                const Tensor& activation = row.head < 0 ? clean.residual.at(row.point) : clean.heads.at(row.point);
                const PatchSite site{row.point, row.head, every_position(activation)};
                CHECK(same_bits(patched_pass(model, report.clean.input, report.target, &clean, &site, nullptr), plain));
                ++sites;
            }
        CHECK(sites > 10);
        CHECK(model.hooks() == nullptr);  // every pass's hooks are gone after it
    }
}

TEST_CASE("Patching a position the causal mask hides from the answer row has effect exactly 0, in every row") {
    // reverse: the decoder's positions after the answer row; reverse-causal
    // with a target: the sequence's positions after it. Each patched row
    // reaches the answer row only as a key its query may not attend:
    // weight exp(-inf) = 0, so the answer row's logits keep their bits.
    for (const Case& c : {kCases[0], kCases[1]}) {
        CAPTURE(c.path);
        Model model = Model::load(c.path);
        for (PatchWhat what : {PatchWhat::Resid, PatchWhat::AttnOut, PatchWhat::MlpOut, PatchWhat::Head}) {
            const PatchReport report = report_of(model, c, what);
            const auto after = static_cast<size_t>(report.answer_row) + 1;
            REQUIRE(after < report.positions.size());  // there are hidden positions to patch
            int64_t hidden = 0, moved = 0;
            for (size_t r = 0; r < report.rows.size(); ++r) {
                if (report.rows[r].source) continue;
                CAPTURE(report.rows[r].name);
                for (size_t p = after; p < report.effect[r].size(); ++p, ++hidden) CHECK(report.effect[r][p] == 0.0);
                moved += report.effect[r][static_cast<size_t>(report.answer_row)] != 0.0;
            }
            CHECK(hidden > 0);
            CHECK(moved > 0);  // the answer row itself does move: the zeros are the mask's, not a dead patch
        }
    }
}

TEST_CASE("One effect recomputed with this file's own recording and patching hook") {
    Model model = Model::load("data/models/reverse.safetensors");
    const PatchReport report = report_of(model, kCases[0], PatchWhat::Resid);
    const std::string point = "encoder.0.output";
    const auto row = static_cast<size_t>(
        std::find_if(report.rows.begin(), report.rows.end(), [&](const PatchRow& r) { return r.point == point; }) -
        report.rows.begin());
    REQUIRE(row < report.rows.size());
    Tensor recorded;
    {
        const OneRow record(point, 0, nullptr, &recorded);
        const HookScope scope(model, &record);
        teacher_forced_pass(model, report.clean.input, report.target);
    }
    const Tensor clean = plain_logits(model, report.clean.input, report.target);
    const Tensor corrupted = plain_logits(model, report.corrupted.input, report.target);
    const int64_t V = clean.dim(2), at = report.answer_row;
    const auto logit_diff = [&](const Tensor& logits) {
        const float* values = logits.data() + at * V;
        return static_cast<double>(values[report.clean.answer]) - static_cast<double>(values[report.corrupted.answer]);
    };
    CHECK(logit_diff(clean) == report.clean.logit_diff);
    CHECK(logit_diff(corrupted) == report.corrupted.logit_diff);
    for (int64_t position = 0; position < recorded.dim(1); ++position) {
        CAPTURE(position);
        const OneRow patch(point, position, &recorded, nullptr);
        Tensor patched;
        {
            const HookScope scope(model, &patch);
            patched = teacher_forced_pass(model, report.corrupted.input, report.target).logits;
        }
        const double effect = (logit_diff(patched) - logit_diff(corrupted)) / (logit_diff(clean) - logit_diff(corrupted));
        CHECK(report.effect[row][static_cast<size_t>(position)] == effect);
    }
    // The corrupted character 'e' -> 'a' at source position 1 carries the answer ('e' is the 4th output).
    CHECK(report.effect[row][1] > 0.5);
}

TEST_CASE("BeforePatching sees the answer, rows and positions with every effect still 0, and can stop the passes") {
    Model model = Model::load("data/models/reverse.safetensors");
    std::optional<PatchReport> seen;
    const PatchReport report = activation_patching(model, tokens(model, "hello"), tokens(model, "hallo"), std::nullopt,
                                                   PatchWhat::Resid, [&](const PatchReport& before) { seen = before; });
    REQUIRE(seen);
    CHECK(seen->answer_row == report.answer_row);
    CHECK(seen->clean.answer == report.clean.answer);
    CHECK(seen->positions == report.positions);
    CHECK(seen->source_positions == report.source_positions);
    REQUIRE(seen->effect.size() == report.effect.size());
    bool any_effect = false;
    for (size_t r = 0; r < report.effect.size(); ++r) {
        CHECK(seen->effect[r] == std::vector<double>(report.effect[r].size(), 0.0));  // called before any patched pass
        for (double effect : report.effect[r]) any_effect = any_effect || effect != 0.0;
    }
    CHECK(any_effect);  // ... and the passes ran after it
    // A refusal from the callback is the experiment's: it surfaces, and nothing is patched.
    CHECK(test_helpers::error_message([&] {
              activation_patching(model, tokens(model, "hello"), tokens(model, "hallo"), std::nullopt, PatchWhat::Resid,
                                  [](const PatchReport&) { fail("too large to draw"); });
          }) == "too large to draw");
}

TEST_CASE("patch refuses inputs of different lengths, the same answer, an unknown --what and an encoder_only model") {
    Model reverse = Model::load("data/models/reverse.safetensors");
    CHECK(test_helpers::error_message([&] {
              activation_patching(reverse, tokens(reverse, "hello"), tokens(reverse, "hell"), std::nullopt, PatchWhat::Resid);
          }).find("CLEAN has 5 tokens and CORRUPTED has 4") != std::string::npos);
    CHECK(test_helpers::error_message([&] {
              activation_patching(reverse, tokens(reverse, "hello"), tokens(reverse, "hello"), std::nullopt, PatchWhat::Resid);
          }).find("nothing to restore") != std::string::npos);
    // Equal as given, not as framed: the prompt suffix '=' is added to "abcd" only. Refused
    // before any pass (the answer row would read the shorter run's logits past their end).
    Model causal = Model::load("data/models/reverse-causal.safetensors");
    for (const auto& [clean, corrupted] : {std::pair{"abcd", "abc="}, std::pair{"abc=", "abcd"}})
        CHECK(test_helpers::error_message([&] {
                  activation_patching(causal, tokens(causal, clean), tokens(causal, corrupted), std::nullopt,
                                      PatchWhat::Resid);
              }) == std::string("patch: as the model reads them (<bos> and the prompt suffix added where missing), ") +
                        "CLEAN has " + (clean[3] == '=' ? "5" : "6") + " tokens and CORRUPTED has " +
                        (clean[3] == '=' ? "6" : "5") + "; give both with the prompt suffix or both without");
    CHECK(test_helpers::error_message([] { parse_patch_what("mlp"); }).find("resid, attn_out, mlp_out or head") !=
          std::string::npos);
    Model encoder_only = Model::load("data/reference/eo_post_relu_learned_h1.model.safetensors");
    CHECK(test_helpers::error_message([&] {
              activation_patching(encoder_only, {3, 4}, {3, 7}, std::nullopt, PatchWhat::Resid);
          }).find("encoder_only") != std::string::npos);
}

TEST_CASE("tinyformer patch: JSON of the issue's shape, a diverging PNG, ids for a model without a vocabulary, one-line refusals") {
    using test_helpers::run_tinyformer;
    test_helpers::TempDirectory dir;
    const std::string json_path = dir.file("patch.json"), png_path = dir.file("patch.png");
    test_helpers::run_tinyformer_ok({"patch", "data/models/reverse.safetensors", "hello", "hallo", "--output", json_path});
    const nlohmann::json data = nlohmann::json::parse(test_helpers::read_file(json_path));
    CHECK(data["metric"] == "normalised_logit_diff");
    CHECK(data["what"] == "resid");
    CHECK(data["clean"]["answer"] == "e");
    CHECK(data["corrupted"]["answer"] == "a");
    CHECK(data["clean"]["greedy"] == "olleh");
    CHECK(data["corrupted"]["greedy"] == "ollah");
    CHECK(data["layers"] == nlohmann::json({"src_embed.output", "encoder.0.output", "encoder.1.output", "tgt_embed.output",
                                            "decoder.0.output", "decoder.1.output"}));
    CHECK(data["positions"] == nlohmann::json({"<bos>", "o", "l", "l", "e", "h"}));
    CHECK(data["source_positions"] == nlohmann::json({"h", "e", "l", "l", "o"}));
    REQUIRE(data["effect"].size() == 6);
    CHECK(data["effect"][0].size() == 5);
    CHECK(data["effect"][5].size() == 6);
    CHECK(data["effect"][5][3] == 1.0);  // the last layer at the answer row
    CHECK(data["effect"][0][1] == 1.0);  // the corrupted source token itself: the whole difference

    const auto png = run_tinyformer({"patch", "data/models/reverse.safetensors", "hello", "hallo", "--what", "head",
                                     "--output", png_path});
    CHECK(png.status == 0);
    CHECK(test_helpers::read_file(png_path).substr(0, 8) == "\x89PNG\r\n\x1a\n");

    const char* no_vocab = "data/reference/do_post_gelu_learned_bf16.model.safetensors";
    const auto text = run_tinyformer({"patch", no_vocab, "ab", "ac"});
    CHECK(text.status == 1);
    CHECK(text.err.find("no vocabulary") != std::string::npos);
    const auto ids = run_tinyformer({"patch", no_vocab, "--ids", "3,4", "--corrupted-ids", "3,7"});
    CHECK(ids.status == 0);
    CHECK(ids.out.find("layers.0.output") != std::string::npos);

    const auto lengths = run_tinyformer({"patch", "data/models/reverse.safetensors", "hello", "hell"});
    CHECK(lengths.status == 1);
    CHECK(lengths.err == "tinyformer: error: patch: CLEAN has 5 tokens and CORRUPTED has 4; patching replaces one "
                         "position by the same position, so both need the same length\n");
    const auto what = run_tinyformer({"patch", "data/models/reverse.safetensors", "hello", "hallo", "--what", "mlp"});
    CHECK(what.status == 2);
    CHECK(what.err.find("--what must be resid, attn_out, mlp_out or head, got 'mlp'") != std::string::npos);
    const auto same = run_tinyformer({"patch", "data/models/reverse.safetensors", "hello", "hello"});
    CHECK(same.status == 1);
    CHECK(same.err.find("nothing to restore") != std::string::npos);
    const auto suffix = run_tinyformer({"patch", "data/models/reverse.safetensors", "hello", "hallo", "--output", dir.file("x.txt")});
    CHECK(suffix.status == 2);
}
