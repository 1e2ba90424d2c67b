// Tests of T5's relative position bias (pos_encoding "relative_bias"): the
// buckets of engine/mask.h worked out by hand, Mask::relative_bias and the
// mask policy's use of it (models/mask_policy.h), the config keys and the
// checkpoint's table refused by name, the trace's "bias", and KV-cache
// decoding == recompute on the PyTorch reference cases
// data/reference/do_relbias_pre_gelu_h4_pad and do_window_relbias_post_relu
// (tools/python/make_position_reference.py; their parity with PyTorch is
// tests/test_parity.cpp's, the other decoding properties tests/decoding_cases.h's).

#include "engine/mask.h"
#include "models/config.h"
#include "models/mask_policy.h"
#include "models/stepper.h"
#include "models/study/trace.h"
#include "tests/helpers.h"
#include "tests/safetensors_edit.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

using namespace tinyformer;

namespace {

const char* kCausal = "data/reference/do_relbias_pre_gelu_h4_pad.model.safetensors";   // 8 buckets, max_distance 16, H 4
const char* kWindowed = "data/reference/do_window_relbias_post_relu.model.safetensors";  // 32 / 128, window 4
const char* kTable = "transformer.layers.0.self_attn.relative_attention_bias.weight";

int64_t bucket(int64_t r, int64_t buckets, int64_t max_distance, bool bidirectional) {
    return relative_position_bucket(r, RelativeBuckets{buckets, max_distance, bidirectional});
}

// The largest |cached - recomputed| of the next-token logits over `steps`
// tokens appended to both steppers (the same tokens: teacher forcing, no
// argmax to part them), and the largest KV-cache length seen after a step.
struct StepComparison {
    double worst = 0;
    int64_t longest_cache = 0, first_capacity = 0, last_capacity = 0;
};
StepComparison step_both(const Model& model, const std::vector<std::vector<int64_t>>& prompts, int64_t steps) {
    const auto cached = make_stepper(model, prompts, StepMode::KvCache, steps);
    const auto recomputed = make_stepper(model, prompts, StepMode::Recompute, steps);
    StepComparison result;
    result.first_capacity = cached->cache_size().capacity;
    for (int64_t step = 0; step <= steps; ++step) {
        result.worst = std::max(result.worst, test_helpers::max_abs_difference(cached->next_logits(), recomputed->next_logits()));
        result.longest_cache = std::max(result.longest_cache, cached->cache_size().length);
        if (step == steps) break;
        std::vector<int64_t> tokens;
        for (size_t b = 0; b < prompts.size(); ++b) tokens.push_back(3 + (step * 5 + static_cast<int64_t>(b) * 3) % 9);
        cached->append(tokens);
        recomputed->append(tokens);
    }
    result.last_capacity = cached->cache_size().capacity;
    return result;
}

}  // namespace

TEST_CASE("T5's buckets of a relative distance, worked by hand") {
    // Causal, 8 buckets, max_distance 16: n = 8, exact = 4. r = key - query.
    CHECK(bucket(0, 8, 16, false) == 0);
    CHECK(bucket(-3, 8, 16, false) == 3);   // d = 3 < 4: its own bucket
    CHECK(bucket(2, 8, 16, false) == 0);    // a later key: d = max(-2, 0) = 0 (blocked by the causal mask anyway)
    CHECK(bucket(-4, 8, 16, false) == 4);   // 4 + floor(ln(4/4) / ln(16/4) * 4) = 4 + 0
    CHECK(bucket(-7, 8, 16, false) == 5);   // ln(1.75) / ln 4 * 4 = 0.5596 / 1.3863 * 4 = 1.61 -> 4 + 1
    CHECK(bucket(-8, 8, 16, false) == 6);   // ln 2 / ln 4 * 4 = 2 -> 4 + 2
    CHECK(bucket(-15, 8, 16, false) == 7);  // ln(3.75) / ln 4 * 4 = 3.81 -> 4 + 3
    CHECK(bucket(-16, 8, 16, false) == 7);  // 4 + 4 = 8, at most n - 1 = 7
    CHECK(bucket(-1000, 8, 16, false) == 7);
    // Bidirectional, 8 buckets, max_distance 8: n = 4 per direction, exact = 2; r > 0 adds 4.
    CHECK(bucket(0, 8, 8, true) == 0);
    CHECK(bucket(-1, 8, 8, true) == 1);
    CHECK(bucket(1, 8, 8, true) == 5);      // 4 + 1
    CHECK(bucket(-3, 8, 8, true) == 2);     // 2 + floor(ln 1.5 / ln 4 * 2) = 2 + floor(0.585)
    CHECK(bucket(-4, 8, 8, true) == 3);     // 2 + floor(ln 2 / ln 4 * 2) = 2 + 1
    CHECK(bucket(5, 8, 8, true) == 7);      // 4 + 2 + floor(ln 2.5 / ln 4 * 2) = 4 + 2 + floor(1.32)
    CHECK(bucket(-9, 8, 8, true) == 3);     // 2 + floor(2.17) = 4, at most n - 1 = 3
    // T5's own: 32 buckets, max_distance 128. Bidirectional: n = 16, exact = 8.
    CHECK(bucket(-20, 32, 128, true) == 10);  // 8 + floor(ln 2.5 / ln 16 * 8) = 8 + floor(2.64)
    CHECK(bucket(20, 32, 128, true) == 26);   // 16 + 10
    CHECK(bucket(-200, 32, 128, true) == 15);
    CHECK(bucket(-20, 32, 128, false) == 17);  // causal: n = 32, exact = 16: 16 + floor(ln 1.25 / ln 8 * 16) = 16 + 1
    CHECK_ERROR_CONTAINS(bucket(0, 2, 8, true), "need buckets >= 4", "got buckets 2");
    CHECK_ERROR_CONTAINS(bucket(0, 8, 4, false), "max_distance > the exact buckets (4)", "max_distance 4");
}

TEST_CASE("T5's buckets equal the PyTorch reference's at every distance of 36 settings, whole-number boundaries included") {
    // data/reference/relative_buckets.json: tools/python/make_position_reference.py's table of
    // position_schemes.relative_position_bucket (float32, as PyTorch's T5) at r = -(max_distance
    // + 8) .. max_distance + 8. Among them 9 causal buckets / 128 at r = -8, where the exact
    // value ln(8/4) / ln(128/4) * (9 - 4) = ln 2 / (5 ln 2) * 5 is 1: double computes
    // 0.99999999999999989 and truncates to 0 (bucket 4), float32 to 1 (bucket 5, PyTorch's).
    const char* dir = std::getenv("TINYFORMER_REFERENCE_DIR");  // make parity: freshly generated
    const std::string path = std::string(dir && *dir ? dir : "data/reference") + "/relative_buckets.json";
    std::ifstream file(path);
    REQUIRE_MESSAGE(file.good(), path);
    const nlohmann::json reference = nlohmann::json::parse(file);
    int64_t compared = 0;
    for (const auto& setting : reference.at("settings")) {
        const RelativeBuckets buckets{setting.at("buckets").get<int64_t>(), setting.at("max_distance").get<int64_t>(),
                                      setting.at("bidirectional").get<bool>()};
        const int64_t first = setting.at("first_r").get<int64_t>();
        const auto& expected = setting.at("bucket");
        for (size_t i = 0; i < expected.size(); ++i, ++compared) {
            const int64_t r = first + static_cast<int64_t>(i);
            CAPTURE(buckets.buckets);
            CAPTURE(buckets.max_distance);
            CAPTURE(buckets.bidirectional);
            CAPTURE(r);
            CHECK(relative_position_bucket(r, buckets) == expected[i].get<int64_t>());
        }
    }
    CHECK(reference.at("settings").size() == 36);
    CHECK(compared == 5520);  // 36 settings of 2 * max_distance + 17 distances each
    CHECK(bucket(-8, 9, 128, false) == 5);
}

TEST_CASE("Mask::relative_bias adds table[bucket(j - i), h], each row at its own positions") {
    // 4 causal buckets (exact = 2), max_distance 4, 2 heads; table row k = bucket k: [10k, 10k + 1].
    const Tensor table({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
    const RelativeBuckets buckets{4, 4, false};
    // Query at 3 over keys at 0..3: distances 3, 2, 1, 0 -> buckets 2 + floor(ln 1.5 / ln 2 * 2) = 3, 2 + 0 = 2, 1, 0.
    const Mask mask = Mask::relative_bias(table, buckets, {{3}, {1}}, {{0, 1, 2, 3}, {0, 1, 2, 1}});
    CHECK(mask.shape() == Shape{2, 2, 1, 4});
    CHECK(mask.bias(0, 0, 0, 0) == 30);
    CHECK(mask.bias(0, 1, 0, 0) == 31);
    CHECK(mask.bias(0, 0, 0, 1) == 20);
    CHECK(mask.bias(0, 1, 0, 2) == 11);
    CHECK(mask.bias(0, 0, 0, 3) == 0);
    CHECK(mask.bias(1, 0, 0, 0) == 10);  // row 1's query is at position 1: distance 1
    CHECK(mask.bias(1, 1, 0, 2) == 1);   // a later key (2 > 1): bucket 0 in causal buckets
    CHECK(mask.allows(0, 0, 0, 0));
    CHECK_ERROR_CONTAINS(Mask::relative_bias(Tensor({3, 2}), buckets, {{0}}, {{0}}), "the table must be [buckets, H] = [4, H]",
                         "got [3,2]");
    CHECK_ERROR_CONTAINS(Mask::relative_bias(table, buckets, {{-1}}, {{0}}), "position -1");
}

TEST_CASE("The mask policy adds the relative bias to a Self call: causal or bidirectional buckets, blocked keys keep none") {
    ModelConfig config;
    config.arch = Architecture::DecoderOnly;
    config.nhead = 1;
    config.d_model = 4;
    config.pos_encoding = PositionalEncoding::RelativeBias;
    config.relative_buckets = 4;
    config.relative_max_distance = 4;
    const Tensor table({4, 1}, {0.5f, 1.5f, 2.5f, 3.5f});
    MaskInputs inputs;
    inputs.length = 3;
    CHECK_ERROR_CONTAINS(attention_mask(config, AttentionCall::Self, inputs), "a relative_bias model's masks need its table");
    inputs.relative_bias = &table;
    const Mask causal = attention_mask(config, AttentionCall::Self, inputs);
    CHECK(causal.bias(0, 0, 2, 0) == 2.5f);  // distance 2: bucket 2 + floor(0) = 2
    CHECK(causal.bias(0, 0, 1, 0) == 1.5f);
    CHECK(!causal.allows(0, 0, 0, 1));
    CHECK(causal.bias(0, 0, 0, 1) == 0.0f);  // blocked: no bias
    // Bidirectional (encoder_only): n = 2 per direction, exact = 1; a later key uses the upper half.
    config.arch = Architecture::EncoderOnly;
    config.attention = SelfAttentionKind::Bidirectional;
    const Mask both = attention_mask(config, AttentionCall::Self, inputs);
    CHECK(both.bias(0, 0, 0, 1) == 3.5f);  // r = +1: 2 + (1 + floor(ln 1 / ln 4 * 1)) = 3
    CHECK(both.bias(0, 0, 1, 0) == 1.5f);  // r = -1: 1
    CHECK(both.bias(0, 0, 1, 1) == 0.5f);
    // A one-token KV-cache step still gets its bias (the distances change every step).
    config.arch = Architecture::DecoderOnly;
    config.attention = SelfAttentionKind::Causal;
    MaskInputs step;
    step.first = 2;
    step.relative_bias = &table;
    const Mask one = decoding_step_masks(config, step).self;
    CHECK(one.shape() == Shape{1, 1, 1, 3});
    CHECK(one.bias(0, 0, 0, 0) == 2.5f);
}

TEST_CASE("The relative_bias config keys: T5's defaults, and what they cannot mean refused by key") {
    nlohmann::json base = {{"format", "tinyformer/1"}, {"arch", "decoder_only"}, {"d_model", 16}, {"nhead", 4},
                           {"dim_feedforward", 32}, {"num_layers", 1}, {"activation", "relu"}, {"norm_first", true},
                           {"final_norm", true}, {"vocab_size", 10}, {"max_len", 8}, {"pos_encoding", "relative_bias"},
                           {"embed_scale", false}, {"attention", "causal"}};
    const auto parse = [](const nlohmann::json& config) { return parse_config(config.dump()); };
    const auto with = [](nlohmann::json config, const char* key, const nlohmann::json& value) {
        config[key] = value;
        return config;
    };
    const ModelConfig t5 = parse(base);
    CHECK(t5.pos_encoding == PositionalEncoding::RelativeBias);
    CHECK(t5.relative_buckets == 32);
    CHECK(t5.relative_max_distance == 128);
    CHECK(std::string(pos_encoding_name(t5.pos_encoding)) == "relative_bias");
    const ModelConfig small = parse(with(with(base, "relative_buckets", 8), "relative_max_distance", 16));
    CHECK(small.relative_buckets == 8);
    CHECK(small.relative_max_distance == 16);
    CHECK_ERROR_CONTAINS(parse(with(base, "relative_buckets", 0)), "'relative_buckets' must be in 1..", "got 0");
    CHECK_ERROR_CONTAINS(parse(with(base, "relative_buckets", 3)), "'relative_buckets' must be >= 4", "got 3");
    CHECK_ERROR_CONTAINS(parse(with(base, "relative_max_distance", 16)),
                         "'relative_max_distance' (16) must be >= 'relative_buckets' (32)");
    CHECK_ERROR_CONTAINS(parse(with(base, "relative_buckets", "32")), "'relative_buckets' must be an integer, got \"32\"");
    CHECK_ERROR_CONTAINS(parse(with(with(base, "pos_encoding", "alibi"), "relative_buckets", 8)),
                         "'relative_buckets' belongs to \"pos_encoding\": \"relative_bias\"");
    CHECK_ERROR_CONTAINS(parse(with(with(base, "pos_encoding", "none"), "relative_max_distance", 8)),
                         "'relative_max_distance' belongs to \"pos_encoding\": \"relative_bias\"");
    nlohmann::json seq2seq = base;
    seq2seq.erase("num_layers");
    seq2seq.erase("vocab_size");
    seq2seq.erase("attention");
    seq2seq.erase("final_norm");
    seq2seq.update({{"arch", "encoder_decoder"}, {"num_encoder_layers", 1}, {"num_decoder_layers", 1},
                    {"src_vocab_size", 9}, {"tgt_vocab_size", 9}});
    CHECK_ERROR_CONTAINS(parse(seq2seq), "\"pos_encoding\": \"relative_bias\" is for decoder_only and encoder_only models");
}

TEST_CASE("A relative_bias checkpoint's table: missing or of the wrong shape, refused by its name and [buckets, H]") {
    test_helpers::TempDirectory dir;
    using test_helpers::Contents;
    const std::string wrong = test_helpers::edited(dir, "wrong.safetensors", kCausal, [](Contents& c) {
        c.replace(f32_tensor(kTable, Tensor({4, 8})));
    });
    CHECK_ERROR_CONTAINS(Model::load(wrong), kTable, "has shape [4,8]; expected [8,4]");
    const std::string missing = test_helpers::edited(dir, "missing.safetensors", kCausal, [](Contents& c) { c.remove(kTable); });
    CHECK_ERROR_CONTAINS(Model::load(missing), "missing tensor '", kTable, "' (expected F32 [8,4])");
    // The same file told it has more buckets than its table holds.
    const std::string more = test_helpers::edited(dir, "more.safetensors", kCausal, [](Contents& c) {
        nlohmann::json config = c.config();
        config["relative_buckets"] = 16;
        c.set_config(config);
    });
    CHECK_ERROR_CONTAINS(Model::load(more), kTable, "expected [16,4]");
    // Without relative_bias, the table is an unknown tensor.
    const std::string other = test_helpers::edited(dir, "other.safetensors", kCausal, [](Contents& c) {
        nlohmann::json config = c.config();
        config["pos_encoding"] = "alibi";
        config.erase("relative_buckets");
        config.erase("relative_max_distance");
        c.set_config(config);
    });
    CHECK_ERROR_CONTAINS(Model::load(other), "unknown tensor '", kTable);
}

TEST_CASE("A relative_bias model's trace records its bias [B,H,L,S]: the table's entries at the buckets") {
    const Model model = Model::load(kCausal);
    const Tensor& table = *model.single_stack->relative_bias_table();
    REQUIRE(table.shape() == Shape{8, 4});
    Trace trace(Trace::Detail::Everything);
    const TokenIds ids{1, 10, {1, 3, 4, 5, 6, 7, 8, 9, 3, 4}};
    model.single_stack->forward(ids, Padding(), {}, &trace);
    const Tensor& bias = trace.tensor("layers.1.self_attn.bias");
    CHECK(bias.shape() == Shape{1, 4, 10, 10});
    CHECK(bias.at({0, 2, 9, 9}) == table.at({0, 2}));  // distance 0
    CHECK(bias.at({0, 1, 9, 6}) == table.at({3, 1}));  // distance 3: exact
    CHECK(bias.at({0, 3, 9, 1}) == table.at({6, 3}));  // distance 8: 4 + 2
    CHECK(bias.at({0, 0, 9, 0}) == table.at({6, 0}));  // distance 9: 4 + floor(ln 2.25 / ln 4 * 4) = 4 + 2
    CHECK(bias.at({0, 0, 0, 9}) == 0.0f);               // blocked (causal)
}

TEST_CASE("Relative-bias models decode with the KV cache as the full forward does, token by token, padded or not") {
    for (const std::string path : {kCausal, kWindowed}) {
        CAPTURE(path);
        const Model model = Model::load(path);
        // Prompts of 5, 1 and 3 tokens (the short rows' tokens sit at slots past the padding), 20 steps:
        // past every exact bucket, and past the window of 4.
        const StepComparison batch = step_both(model, {{1, 3, 4, 5, 6}, {1}, {1, 7, 8}}, 20);
        const StepComparison alone = step_both(model, {{1, 7, 8}}, 20);
        // One-row products against whole-sequence gemms: the same within float rounding.
        CHECK(batch.worst <= 1e-5);
        CHECK(alone.worst <= 1e-5);
        MESSAGE(path, ": max |cached - recomputed| over 21 steps: ", batch.worst, " (batch), ", alone.worst, " (one row)");
    }
}
