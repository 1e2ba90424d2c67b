// Tests of sliding-window attention (the config's "sliding_window", Mistral's):
// the window of engine/mask.h worked out by hand, the mask policy's window
// over the tokens' own positions after eviction (models/mask_policy.h),
// KVCache::drop_front, the config key refused by name, and decoding with a
// bounded KV cache == recompute with the full window mask, past the window,
// on the PyTorch reference case data/reference/do_window_rotary_pre_gelu_pad
// (W = 3, rotary positions; tools/python/make_position_reference.py, whose
// parity with PyTorch tests/test_parity.cpp checks), also through `tinyformer run`.

#include "engine/mask.h"
#include "layers/kv_cache.h"
#include "models/config.h"
#include "models/decoding.h"
#include "models/mask_policy.h"
#include "models/stepper.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace tinyformer;

namespace {

const char* kRotaryWindow = "data/reference/do_window_rotary_pre_gelu_pad.model.safetensors";  // W = 3, max_len 32

ModelConfig window_config(int64_t window) {
    ModelConfig config;
    config.arch = Architecture::DecoderOnly;
    config.nhead = 1;
    config.d_model = 4;
    config.pos_encoding = PositionalEncoding::None;
    config.sliding_window = window;
    return config;
}

}  // namespace

TEST_CASE("Mask::sliding_window: query i sees keys i - W < j <= i, W of them, its own included") {
    const Mask mask = Mask::sliding_window(2, {{0, 1, 2, 3, 4}}, {{0, 1, 2, 3, 4}});
    CHECK(mask.shape() == Shape{1, 1, 5, 5});
    CHECK(!mask.has_bias());
    CHECK(mask.to_ascii(5, 5) ==
          "q0: k0\n"
          "q1: k0 k1\n"
          "q2: k1 k2\n"  // 2 - 2 = 0 < j: k0 is out
          "q3: k2 k3\n"
          "q4: k3 k4\n");
    // W = 1: itself only. Positions are the tokens', not the slots': a query at
    // 7 over slots holding positions 4, 5, 6, 7 (the oldest evicted) with W = 3.
    CHECK(Mask::sliding_window(1, {{0, 1, 2}}, {{0, 1, 2}}).to_ascii(3, 3) == "q0: k0\nq1: k1\nq2: k2\n");
    CHECK(Mask::sliding_window(3, {{7}}, {{4, 5, 6, 7}}).to_ascii(1, 4) == "q0: k1 k2 k3\n");
    CHECK_ERROR_CONTAINS(Mask::sliding_window(0, {{0}}, {{0}}), "window must be >= 1, got 0");
    CHECK_ERROR_CONTAINS(Mask::sliding_window(2, {{0}}, {{0}, {1}}), "same B >= 1 rows");
}

TEST_CASE("The mask policy ANDs the window with causal and key padding, at each slot's token position") {
    MaskInputs whole;
    whole.batch = 2;
    whole.length = 4;
    whole.padding = Padding::from_lengths({4, 2}, 4);
    const Mask mask = attention_mask(window_config(2), AttentionCall::Self, whole);
    CHECK(mask.to_ascii(4, 4, 0) == "q0: k0\nq1: k0 k1\nq2: k1 k2\nq3: k2 k3\n");
    CHECK(mask.to_ascii(4, 4, 1) == "q0: k0\nq1: k0 k1\nq2: k1\nq3: (none)\n");  // padded keys 2, 3 blocked
    // A KV-cache step after eviction: the cache holds the tokens at positions 5, 6 and the new one at 7.
    MaskInputs step;
    step.first = 2;
    step.key_positions = {{5, 6, 7}};
    const Mask windowed = decoding_step_masks(window_config(2), step).self;
    CHECK(windowed.to_ascii(1, 3) == "q0: k1 k2\n");
    // A one-token step of a window model is never the blocks-nothing Mask(): it builds its window.
    MaskInputs plain;
    plain.first = 4;
    CHECK(decoding_step_masks(window_config(2), plain).self.to_ascii(1, 5) == "q0: k3 k4\n");
}

TEST_CASE("KVCache::drop_front drops the oldest positions of every row and keeps the room") {
    KVCache cache;
    cache.reserve(2, 6, 2);
    Tensor keys({2, 4, 2}), values({2, 4, 2});
    for (int64_t i = 0; i < keys.numel(); ++i) {
        keys.data()[i] = static_cast<float>(i);
        values.data()[i] = static_cast<float>(100 + i);
    }
    cache.append(keys, values);
    cache.drop_front(3);
    CHECK(cache.length() == 1);
    CHECK(cache.capacity() == 6);
    // Row 0's position 3 is elements 6, 7; row 1's is 14, 15.
    CHECK(cache.key_tensor().values() == std::vector<float>{6, 7, 14, 15});
    CHECK(cache.value_tensor().values() == std::vector<float>{106, 107, 114, 115});
    cache.drop_front(0);
    CHECK(cache.length() == 1);
    CHECK_ERROR_CONTAINS(cache.drop_front(2), "n = 2 outside 0..1");
}

TEST_CASE("The sliding_window config key: W >= 1, for decoder_only causal models only") {
    nlohmann::json base = {{"format", "tinyformer/1"}, {"arch", "decoder_only"}, {"d_model", 16}, {"nhead", 4},
                           {"dim_feedforward", 32}, {"num_layers", 1}, {"activation", "relu"}, {"norm_first", true},
                           {"final_norm", true}, {"vocab_size", 10}, {"max_len", 8}, {"pos_encoding", "rotary"},
                           {"embed_scale", false}, {"attention", "causal"}};
    const auto parse = [](nlohmann::json config, const char* key, const nlohmann::json& value) {
        config[key] = value;
        return parse_config(config.dump());
    };
    CHECK(parse_config(base.dump()).sliding_window == 0);
    CHECK(parse(base, "sliding_window", 4).sliding_window == 4);
    CHECK_ERROR_CONTAINS(parse(base, "sliding_window", 0), "'sliding_window' must be in 1..", "got 0");
    CHECK_ERROR_CONTAINS(parse(base, "sliding_window", 2.5), "'sliding_window' must be an integer, got 2.5");
    base["attention"] = "prefix_lm";
    CHECK_ERROR_CONTAINS(parse(base, "sliding_window", 4), "'sliding_window' is for decoder_only models with \"attention\": \"causal\"");
    base["arch"] = "encoder_only";
    base["attention"] = "bidirectional";
    CHECK_ERROR_CONTAINS(parse(base, "sliding_window", 4), "'sliding_window' is for decoder_only models");
}

TEST_CASE("A sliding-window model decodes past W with a bounded KV cache, as recompute with the full window mask") {
    const Model model = Model::load(kRotaryWindow);
    REQUIRE(model.config.sliding_window == 3);
    const int64_t steps = 24;  // to position 28 of max_len 32: eight windows past the prompt
    SUBCASE("one row: the cache holds W - 1 = 2 positions between steps, its room never grows") {
        const auto cached = make_stepper(model, {{1, 4, 5, 6, 7}}, StepMode::KvCache, steps);
        const auto recomputed = make_stepper(model, {{1, 4, 5, 6, 7}}, StepMode::Recompute, steps);
        const int64_t room = cached->cache_size().capacity;
        CHECK(room <= 5 + 3);  // the prompt's pass, then at most W new positions
        double worst = 0;
        for (int64_t step = 0; step < steps; ++step) {
            worst = std::max(worst, test_helpers::max_abs_difference(cached->next_logits(), recomputed->next_logits()));
            CHECK(cached->cache_size().length == 2);
            CHECK(cached->cache_size().capacity == room);
            const std::vector<int64_t> token{3 + step % 11};
            cached->append(token);
            recomputed->append(token);
        }
        CHECK(cached->length(0) == 5 + steps);
        // One-row products against whole-sequence gemms: equal within float rounding.
        CHECK(worst <= 1e-5);
        MESSAGE("window 3, ", steps, " steps: max |cached - recomputed| = ", worst);
    }
    SUBCASE("a padded batch: each row keeps its own last positions (and the padding between)") {
        const std::vector<std::vector<int64_t>> prompts = {{1, 4, 5, 6, 7, 8}, {1}, {1, 9, 10}};
        const auto cached = make_stepper(model, prompts, StepMode::KvCache, steps);
        const auto recomputed = make_stepper(model, prompts, StepMode::Recompute, steps);
        double worst = 0;
        for (int64_t step = 0; step < steps; ++step) {
            worst = std::max(worst, test_helpers::max_abs_difference(cached->next_logits(), recomputed->next_logits()));
            // Row 1's prompt (1 token) sits 5 padding slots before its generated ones: at most
            // W - 1 + 5 slots while they are in the cache, then W - 1.
            CHECK(cached->cache_size().length <= 2 + 5);
            if (step >= 8) CHECK(cached->cache_size().length == 2);
            std::vector<int64_t> tokens;
            for (size_t b = 0; b < prompts.size(); ++b) tokens.push_back(3 + (step + static_cast<int64_t>(b)) % 11);
            cached->append(tokens);
            recomputed->append(tokens);
        }
        CHECK(worst <= 1e-5);
    }
}

TEST_CASE("tinyformer run generates past the window with the bounded cache: the tokens of a recomputed greedy decoding") {
    const Model model = Model::load(kRotaryWindow);
    GenerationOptions recompute;
    recompute.mode = StepMode::Recompute;
    recompute.max_new_tokens = 20;
    recompute.record_logits = true;
    const Generation expected = greedy_decode(model, {{1, 4, 5}}, recompute);
    REQUIRE(expected.tokens[0].size() > 3);  // past W = 3 (the random model says <eos> late enough)
    const test_helpers::CliRun run =
        test_helpers::run_tinyformer_ok({"run", kRotaryWindow, "--ids", "1,4,5", "--max-new-tokens", "20", "--print-ids"});
    std::string ids;
    for (int64_t token : expected.tokens[0]) ids += (ids.empty() ? "" : ",") + std::to_string(token);
    CHECK(run.out.find(ids) != std::string::npos);
    MESSAGE("run printed: ", run.out);
}
