// Tests for models/study/probe.*.
// The probe's numbers are recomputed here without it: the model is run
// through its public API with a head zeroed (a hook of this file's own,
// layers/hooks.h) or a token replaced, and log p is summed by hand.

#include "models/study/probe.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace tinyformer;

namespace {

// The user's tokens of a text, and a target text's tokens, through the model's tokenizer.
std::vector<int64_t> tokens(const Model& model, const std::string& text) { return ModelText(model).encode_input(text); }
std::vector<int64_t> target(const Model& model, const std::string& text) { return ModelText(model).encode_output(text); }

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

// log softmax(logits)[label] in double, written out.
double log_prob_of(const float* logits, int64_t V, int64_t label) {
    double max_logit = logits[0];
    for (int64_t i = 1; i < V; ++i) max_logit = std::max(max_logit, static_cast<double>(logits[i]));
    double sum = 0.0;
    for (int64_t i = 0; i < V; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
    return static_cast<double>(logits[label]) - max_logit - std::log(sum);
}

// Teacher-forced log p(target, <eos> | input), from the models' forward passes.
double log_prob_by_hand(const Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target) {
    std::vector<int64_t> labels = target;
    labels.push_back(model.config.eos_id);
    Tensor logits;
    int64_t first = 0;
    if (model.encoder_decoder) {
        std::vector<int64_t> decoder_input = {model.config.bos_id};
        decoder_input.insert(decoder_input.end(), target.begin(), target.end());
        const Tensor memory = model.encoder_decoder->encode(one_row(input), Padding());
        logits = model.encoder_decoder->decode(one_row(decoder_input), memory, Padding(), Padding());
    } else {
        std::vector<int64_t> sequence = input;
        sequence.insert(sequence.end(), target.begin(), target.end());
        const bool prefix_lm = model.config.attention == SelfAttentionKind::PrefixLm;
        logits = model.single_stack->forward(one_row(sequence), Padding(),
                                             prefix_lm ? std::vector<int64_t>{static_cast<int64_t>(input.size())}
                                                       : std::vector<int64_t>{});
        first = static_cast<int64_t>(input.size()) - 1;
    }
    const int64_t V = logits.dim(2);
    double total = 0.0;
    for (size_t t = 0; t < labels.size(); ++t)
        total += log_prob_of(logits.data() + (first + static_cast<int64_t>(t)) * V, V, labels[t]);
    return total;
}

bool nothing_zeroed(const Model& model) { return model.hooks() == nullptr; }

// Zeroes head `head` of the call `call` (its columns of z), written out here.
class ZeroHead final : public Hooks {
public:
    ZeroHead(std::string call, int64_t head) : call_(std::move(call)), head_(head) {}
    void attention_heads(const AttentionCallInfo& call, Tensor& z) const override {
        if (call.name != call_) return;
        const int64_t Dh = z.dim(2) / call.heads;
        for (int64_t b = 0; b < z.dim(0); ++b)
            for (int64_t l = 0; l < z.dim(1); ++l)
                for (int64_t c = head_ * Dh; c < (head_ + 1) * Dh; ++c) z.at({b, l, c}) = 0.0f;
    }

private:
    std::string call_;
    int64_t head_;
};

// The call of a probe row, built here from its stack, layer and kind (not read from its `attention`).
std::string call_name(const HeadProbe& probe) {
    return probe.stack + "." + std::to_string(probe.layer) + (probe.kind == "cross" ? ".cross_attn" : ".self_attn");
}

struct Case {
    const char* model;
    const char* text;
};

const Case kCases[] = {{"data/models/reverse.safetensors", "hello"},
                       {"data/models/sort.safetensors", "31415926"},
                       {"data/models/reverse-causal.safetensors", "abc="},
                       {"data/models/reverse-prefixlm.safetensors", "abc="}};

}  // namespace

TEST_CASE("Ablating a head changes log p by the reported amount, recomputed with the head zeroed through the public API") {
    for (const Case& each : kCases) {
        CAPTURE(each.model);
        Model model = Model::load(each.model);
        const Tokenizer tokenizer(model.text.vocab);
        const ProbeReport report = probe(model, tokens(model, each.text));
        const std::vector<int64_t> input = model_input(model, tokens(model, each.text));
        const std::vector<int64_t> target = tokenizer.encode(report.target);
        REQUIRE(report.target == tokenizer.decode(greedy_decode(model, {input}).tokens[0]));
        const double base = log_prob_by_hand(model, input, target);
        CHECK(report.log_prob == doctest::Approx(base).epsilon(1e-9));
        for (const HeadProbe& head : report.heads) {
            CAPTURE(head.attention);
            CAPTURE(head.head);
            const ZeroHead zero(call_name(head), head.head);
            model.set_hooks(&zero);
            const double ablated = log_prob_by_hand(model, input, target);
            const std::string greedy = tokenizer.decode(greedy_decode(model, {input}).tokens[0]);
            model.set_hooks(nullptr);
            CHECK(std::fabs(head.delta_log_prob - (ablated - base)) <= 1e-9 + 1e-9 * std::fabs(ablated - base));
            CHECK(head.greedy_output == greedy);
            CHECK(head.output_changed == (greedy != report.greedy_output));
        }
        CHECK(nothing_zeroed(model));  // the probe restored every module
    }
}

TEST_CASE("The head table has one row per attention call and head, with weight statistics inside their bounds") {
    Model model = Model::load("data/models/reverse.safetensors");
    const ProbeReport report = probe(model, tokens(model, "hello"));
    const std::vector<std::string> names = model.attention_names();
    CHECK(names == std::vector<std::string>{"encoder.0.self_attn", "encoder.1.self_attn", "decoder.0.self_attn",
                                            "decoder.0.cross_attn", "decoder.1.self_attn",
                                            "decoder.1.cross_attn"});
    REQUIRE(report.heads.size() == names.size() * 4);
    for (size_t i = 0; i < report.heads.size(); ++i) {
        const HeadProbe& head = report.heads[i];
        CAPTURE(head.attention);
        CHECK(head.attention == names[i / 4]);
        CHECK(head.head == static_cast<int64_t>(i % 4));
        // A row of weights sums to 1 over its S keys: its maximum is in [1/S, 1].
        const double keys = head.stack == "decoder" && head.kind == "self" ? 6.0 : 5.0;
        CHECK(head.mean_max_weight >= 1.0 / keys - 1e-6);
        CHECK(head.mean_max_weight <= 1.0 + 1e-6);
        CHECK(head.top_key_share <= head.mean_max_weight + 1e-6);  // no key gets more than the rows' maxima
    }
    CHECK(report.heads[6].stack == "encoder");
    CHECK(report.heads[12].kind == "cross");
    CHECK(report.heads[12].layer == 0);
}

TEST_CASE("The perturbation table has one row per source token, and its deltas are the replaced input's log p") {
    SUBCASE("encoder-decoder: every source position; cross-attention shares sum to 1") {
        Model model = Model::load("data/models/reverse.safetensors");
        const ProbeReport report = probe(model, tokens(model, "hello"));
        REQUIRE(report.tokens.size() == 5);
        double shares = 0.0;
        for (size_t i = 0; i < 5; ++i) {
            CHECK(report.tokens[i].position == static_cast<int64_t>(i));
            CHECK(report.tokens[i].token == std::string(1, "hello"[i]));
            shares += report.tokens[i].attention_share;
        }
        CHECK(shares == doctest::Approx(1.0).epsilon(1e-5));
        CHECK(report.share_source == "cross-attention");

        const Tokenizer tokenizer(model.text.vocab);
        const std::vector<int64_t> target = tokenizer.encode("olleh");
        const double base = log_prob_by_hand(model, tokenizer.encode("hello"), target);
        const double replaced = log_prob_by_hand(model, tokenizer.encode("heRlo", true), target);  // 'R' -> <unk>
        CHECK(report.tokens[2].delta_log_prob == doctest::Approx(replaced - base).epsilon(1e-9));
        CHECK(report.tokens[2].greedy_output == tokenizer.decode(greedy_decode(model, {tokenizer.encode("heRlo", true)}).tokens[0]));
    }
    SUBCASE("decoder-only: every prompt character after <bos>, '=' included") {
        Model model = Model::load("data/models/reverse-causal.safetensors");
        const ProbeReport report = probe(model, tokens(model, "abc="));
        REQUIRE(report.tokens.size() == 4);
        const char* tokens[] = {"a", "b", "c", "="};
        for (size_t i = 0; i < 4; ++i) {
            CHECK(report.tokens[i].position == static_cast<int64_t>(i) + 1);
            CHECK(report.tokens[i].token == tokens[i]);
            CHECK(report.tokens[i].attention_share > 0.0);
            CHECK(report.tokens[i].attention_share < 1.0);
        }
        CHECK(report.share_source == "self-attention");
    }
    SUBCASE("--with: another replacement token") {
        Model model = Model::load("data/models/reverse.safetensors");
        const ProbeReport report = probe(model, tokens(model, "hello"), ProbeOptions{std::nullopt, "z", std::nullopt});
        REQUIRE(report.tokens.size() == 5);
        CHECK(report.tokens[0].greedy_output == "ollez");  // the model reverses the counterfactual input
        CHECK_ERROR_CONTAINS(probe(model, tokens(model, "hello"), ProbeOptions{std::nullopt, "Z", std::nullopt}), "replacement token 'Z'");
    }
}

TEST_CASE("An ablation of zero heads gives delta exactly 0 and the greedy output unchanged") {
    for (const Case& each : kCases) {
        CAPTURE(each.model);
        Model model = Model::load(each.model);
        const ProbeExample example = probe_example(model, tokens(model, each.text), std::nullopt);
        const AblationResult result = ablate_heads(model, example, {});
        // Exactly: no head zeroed, so both passes are the same calls on the same numbers.
        CHECK(result.delta_log_prob == 0.0);
        CHECK(result.log_prob == target_log_prob(model, example));
        CHECK(result.greedy == example.target);
    }
}

TEST_CASE("An ablation that names an unknown attention or head is an Error and leaves the model unchanged") {
    Model model = Model::load("data/models/reverse.safetensors");
    const ProbeExample example = probe_example(model, tokens(model, "hello"), std::nullopt);
    CHECK_ERROR_CONTAINS(ablate_heads(model, example, {{"encoder.0.self_attn", 1}, {"encoder.9.self_attn", 0}}),
                         "no attention named 'encoder.9.self_attn'", "decoder.1.cross_attn");
    CHECK(nothing_zeroed(model));
    CHECK_ERROR_CONTAINS(ablate_heads(model, example, {{"decoder.0.self_attn", 1}, {"encoder.0.self_attn", 4}}),
                         "cannot zero head 4", "0..3");
    CHECK(nothing_zeroed(model));
    // Zeroing every head of every attention call still gives a finite score.
    std::vector<HeadRef> all;
    for (const std::string& name : model.attention_names())
        for (int64_t h = 0; h < 4; ++h) all.push_back({name, h});
    CHECK(std::isfinite(ablate_heads(model, example, all).log_prob));
    CHECK(nothing_zeroed(model));
}

TEST_CASE("A given target is scored instead of the greedy output; one that does not fit max_len is refused") {
    Model model = Model::load("data/models/reverse.safetensors");
    const ProbeReport greedy = probe(model, tokens(model, "hello"));
    const ProbeReport given = probe(model, tokens(model, "hello"), ProbeOptions{target(model, "olleh"), "<unk>", std::nullopt});
    CHECK(given.log_prob == greedy.log_prob);
    const ProbeReport wrong = probe(model, tokens(model, "hello"), ProbeOptions{target(model, "hello"), "<unk>", std::nullopt});  // not reversed: far less likely
    CHECK(wrong.target == "hello");
    CHECK(wrong.greedy_output == "olleh");
    CHECK(wrong.log_prob < greedy.log_prob - 10.0);
    CHECK_ERROR_CONTAINS(probe_example(model, tokens(model, "hello"), target(model, std::string(40, 'a'))), "max_len is 32");
}

TEST_CASE("The cases of docs/LESSONS.md: peaked weights with no effect, flat weights with a large one") {
    SUBCASE("sort, 31415926: encoder layer 0 heads 0-2 put all weight on one key, yet zeroing them costs nothing") {
        Model model = Model::load("data/models/sort.safetensors");
        const ProbeReport report = probe(model, tokens(model, "31415926"));
        REQUIRE(report.target == "11234569");
        for (int64_t h = 0; h < 4; ++h) {
            const HeadProbe& head = report.heads[static_cast<size_t>(h)];
            REQUIRE(head.attention == "encoder.0.self_attn");
            CHECK(head.mean_max_weight > 0.99);
            CHECK(head.output_changed == (h == 3));
            if (h < 3) CHECK(std::fabs(head.delta_log_prob) < 0.01);
        }
        CHECK(report.heads[3].delta_log_prob < -5.0);
        CHECK(report.heads[3].greedy_output == "111233456699");
        const ProbeExample example = probe_example(model, tokens(model, "31415926"), std::nullopt);
        const AblationResult three = ablate_heads(
            model, example, {{"encoder.0.self_attn", 0}, {"encoder.0.self_attn", 1}, {"encoder.0.self_attn", 2}});
        CHECK(std::fabs(three.delta_log_prob) < 0.01);  // not redundancy between them: none of the three is needed
        CHECK(three.greedy == example.target);
    }
    SUBCASE("reverse, hello: the flattest cross-attention head matters most, the peakiest hardly") {
        Model model = Model::load("data/models/reverse.safetensors");
        const ProbeReport report = probe(model, tokens(model, "hello"));
        const HeadProbe* flattest = &report.heads[0];
        const HeadProbe* strongest = &report.heads[0];
        for (const HeadProbe& head : report.heads) {
            if (head.mean_max_weight < flattest->mean_max_weight) flattest = &head;
            if (head.delta_log_prob < strongest->delta_log_prob) strongest = &head;
        }
        CHECK(flattest == strongest);
        CHECK(flattest->attention == "decoder.0.cross_attn");
        CHECK(flattest->head == 2);
        const HeadProbe& peaky = report.heads[21];  // decoder 1 cross head 1
        REQUIRE(peaky.attention == "decoder.1.cross_attn");
        for (int64_t h = 0; h < 4; ++h) CHECK(peaky.mean_max_weight >= report.heads[20 + static_cast<size_t>(h)].mean_max_weight);
        CHECK(std::fabs(peaky.delta_log_prob) < 0.01);
        CHECK(report.heads[22].delta_log_prob < -5.0);
        CHECK(report.heads[22].output_changed);
        // Heads 0, 1 and 3 of that layer: each alone can go, not together (redundancy).
        for (size_t h : {20, 21, 23}) {
            CHECK(std::fabs(report.heads[h].delta_log_prob) < 0.05);
            CHECK_FALSE(report.heads[h].output_changed);
        }
        const ProbeExample example = probe_example(model, tokens(model, "hello"), std::nullopt);
        const std::string cross = "decoder.1.cross_attn";
        const AblationResult three = ablate_heads(model, example, {{cross, 0}, {cross, 1}, {cross, 3}});
        CHECK(three.delta_log_prob < -10.0);
        CHECK(three.greedy != example.target);
    }
}
