// Tests for models/study/lens.* and `tinyformer lens`.
// The model's logits here come from the model's own passes, run by the test
// (not from the lens); the attribution's parts are held against the logit
// those passes give.

#include "models/study/lens.h"
#include "models/study/trace.h"
#include "models/text.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tinyformer;
using test_helpers::run_tinyformer;

namespace {

const std::string kReverseCausal = "data/models/reverse-causal.safetensors";  // decoder-only, pre-LN
const std::string kReverse = "data/models/reverse.safetensors";               // encoder-decoder, pre-LN
const std::string kNanoGpt = "data/families/nanogpt-char.safetensors";        // a family: tied head, no biases
const std::string kAnnotatedCopy = "data/families/annotated-copy.safetensors";  // layer_norm_std, needs a target
const std::string kLlama = "data/families/llama2c-tiny/llama2c-tiny.safetensors"; // rms_norm, grouped-query
const std::string kSort = "data/models/sort.safetensors";                     // encoder-decoder, post-LN
const std::string kNoVocabulary = "data/reference/eo_post_relu_learned_h1.model.safetensors";

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

// The model's logits for the lens's tokens, from a pass of the model's own API.
Tensor model_logits(const Model& model, const LensReport& report, const std::vector<int64_t>& tokens) {
    if (model.encoder_decoder) {
        const Tensor memory = model.encoder_decoder->encode(one_row(model_input(model, tokens)), Padding());
        return model.encoder_decoder->decode(one_row(report.tokens), memory, Padding(), Padding());
    }
    return model.single_stack->forward(one_row(report.tokens), Padding(), {});
}

void check_last_layer_is_the_logits(const std::string& path, const std::string& text) {
    CAPTURE(path);
    Model model = Model::load(path);
    const std::vector<int64_t> tokens = ModelText(model).encode_input(text);
    const LensReport report = logit_lens(model, tokens);
    const Tensor logits = model_logits(model, report, tokens);
    REQUIRE(report.layer_logits.size() == report.layers.size());
    const Tensor& last = report.layer_logits.back();
    REQUIRE(last.shape() == logits.shape());
    // Bit for bit: the same stream through the same code (SingleStackModel::unembed).
    CHECK(std::memcmp(last.data(), logits.data(), sizeof(float) * static_cast<size_t>(logits.numel())) == 0);
    // And not the same as every layer: the lens of layer 0 says something else.
    CHECK(test_helpers::max_abs_difference(report.layer_logits[1], logits) > 1e-3);
    // The last layer's answer is on top with the model's probability.
    for (size_t p = 0; p < report.positions.size(); ++p) CHECK(report.cells.back()[p].answer_rank == 1);
}

void check_attribution_sums(const std::string& path, const std::string& text, const std::string& token,
                            const std::string& target = "") {
    CAPTURE(path);
    Model model = Model::load(path);
    const ModelText model_text(model);
    const std::vector<int64_t> tokens = model_text.encode_input(text);
    LensOptions options;
    options.attribute = model_text.encode_output(token).at(0);
    if (!target.empty()) options.target = model_text.encode_output(target);
    const LensReport report = logit_lens(model, tokens, options);
    REQUIRE(report.attribution);
    const Attribution& a = *report.attribution;
    const Tensor logits = model_logits(model, report, tokens);
    const int64_t V = logits.dim(2);
    const double logit = logits.data()[a.position * V + a.token];  // the model's, from the test's own pass
    double sum = 0.0, magnitude = 0.0;
    for (const AttributionPart& part : a.parts) sum += part.logit, magnitude += std::fabs(part.logit);
    const double bound = kAttributionTolerance * (1.0 + magnitude);
    CAPTURE(sum);
    CAPTURE(logit);
    CAPTURE(bound);
    CHECK(std::fabs(sum - logit) <= bound);
    // Every head of every call of the stack has its part (none left out to make the sum fit).
    const int64_t calls = model.encoder_decoder ? 2 * model.config.num_decoder_layers : model.config.num_layers;
    int64_t heads = 0;
    for (const AttributionPart& part : a.parts) heads += part.name.find(".head") != std::string::npos;
    CHECK(heads == calls * model.config.nhead);
}

}  // namespace

TEST_CASE("lens: the last layer's lens is the model's logits, bit for bit") {
    check_last_layer_is_the_logits(kReverseCausal, "abc=");
    check_last_layer_is_the_logits(kReverse, "hello");
    check_last_layer_is_the_logits(kNanoGpt, "the ");
}

TEST_CASE("lens: the direct logit attribution sums to the model's logit") {
    check_attribution_sums(kReverseCausal, "abc=", "c");
    check_attribution_sums(kReverseCausal, "abc=", "a");
    check_attribution_sums(kReverse, "hello", "o");  // self- and cross-attention heads
    check_attribution_sums(kNanoGpt, "the ", "e");
    // The three final norms: layer_norm above, layer_norm_std (the Annotated Transformer's) and
    // rms_norm (llama2.c's, with grouped-query attention and a tied head without biases).
    check_attribution_sums(kAnnotatedCopy, "2 3 4", "3", "2 3 4");
    check_attribution_sums(kLlama, "a", "a");
}

TEST_CASE("lens: the residual norms are the norms of the stream the pass reads") {
    // The streams read from the model's own trace of the same tokens. A traced pass records the
    // weights and so may take the materialized attention path where the lens's pass streams
    // (engine/attention.h): the same numbers but for float rounding, hence a relative 1e-5.
    Model model = Model::load(kReverseCausal);
    const LensReport report = logit_lens(model, ModelText(model).encode_input("abc="));
    Trace trace(Trace::Detail::Everything);
    model.single_stack->forward(one_row(report.tokens), Padding(), {}, &trace);
    for (size_t l = 0; l < report.layers.size(); ++l) {
        const std::string name = l == 0 ? "embed.output" : report.layers[l] + ".output";
        const Tensor& x = trace.tensor(name);
        const int64_t D = x.dim(2);
        for (size_t p = 0; p < report.positions.size(); ++p) {
            double squares = 0.0;
            for (int64_t d = 0; d < D; ++d) squares += std::pow(x.data()[static_cast<int64_t>(p) * D + d], 2);
            CHECK(report.norms[l][p] == doctest::Approx(std::sqrt(squares)).epsilon(1e-5));
        }
    }
}

TEST_CASE("lens: bad input is refused with one line") {
    Model model = Model::load(kReverseCausal);
    const std::vector<int64_t> tokens = ModelText(model).encode_input("abc=");
    LensOptions options;
    options.top = 0;
    CHECK(test_helpers::error_message([&] { logit_lens(model, tokens, options); }).find("top must be >= 1") !=
          std::string::npos);
    options.top = 5;
    options.attribute = 31;
    CHECK(test_helpers::error_message([&] { logit_lens(model, tokens, options); }).find("output vocabulary 0..30") !=
          std::string::npos);
    Model post_ln = Model::load(kSort);
    options.attribute = 3;
    CHECK(test_helpers::error_message([&] { logit_lens(post_ln, ModelText(post_ln).encode_input("312"), options); })
              .find("post-LN") != std::string::npos);

    const auto refused = [](const std::vector<std::string>& args, int status, const std::string& words) {
        const test_helpers::CliRun run = run_tinyformer(args);
        CAPTURE(run.err);
        CHECK(run.status == status);
        CHECK(run.out.empty());
        CHECK(run.err.find(words) != std::string::npos);
        CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    };
    refused({"lens", kReverseCausal, "abc=", "--attribute", "#"}, 1, "--attribute");
    refused({"lens", kReverseCausal, "abc=", "--attribute", "ab"}, 1, "one token");
    refused({"lens", kReverseCausal, "abc=", "--top", "0"}, 2, "--top");
    refused({"lens", kNoVocabulary, "abc"}, 1, "vocabulary");
    refused({"lens", kSort, "312", "--attribute", "3"}, 1, "post-LN");
    refused({"lens", kReverseCausal, "abc=", "--output", "x.txt"}, 2, ".png or .json");
}

TEST_CASE("lens: --output writes the JSON and the two-panel picture") {
    test_helpers::TempDirectory dir;
    const std::string json_path = dir.file("lens.json"), png_path = dir.file("lens.png");
    const test_helpers::CliRun json_run =
        test_helpers::run_tinyformer_ok({"lens", kReverse, "hello", "--attribute", "o", "--top", "2", "--output", json_path});
    CHECK(json_run.out.find("direct logit attribution of 'o'") != std::string::npos);
    const nlohmann::json lens = nlohmann::json::parse(test_helpers::read_file(json_path));
    CHECK(lens.at("stack") == "decoder");
    CHECK(lens.at("layers").size() == 3);  // embed, decoder.0, decoder.1
    CHECK(lens.at("layers")[0].at("positions")[0].at("top").size() == 2);
    CHECK(lens.at("layers")[1].at("norms").size() == lens.at("positions").size());
    const nlohmann::json& a = lens.at("attribution");
    CHECK(a.at("sum").get<double>() == doctest::Approx(a.at("logit").get<double>()).epsilon(1e-5));
    test_helpers::run_tinyformer_ok({"lens", kReverse, "hello", "--output", png_path});
    CHECK(test_helpers::read_file(png_path).rfind("\x89PNG", 0) == 0);

    // --attribute-id: the same token given by its id (the JSON's "id" of 'o') gives the same parts.
    const std::string by_id_path = dir.file("by-id.json");
    test_helpers::run_tinyformer_ok({"lens", kReverse, "hello", "--attribute-id", std::to_string(a.at("id").get<int64_t>()),
                                     "--top", "2", "--output", by_id_path});
    const nlohmann::json by_id = nlohmann::json::parse(test_helpers::read_file(by_id_path));
    CHECK(by_id.at("attribution") == a);
}
