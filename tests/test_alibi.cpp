// Tests of ALiBi (pos_encoding "alibi"): the slopes and the bias of
// engine/mask.h worked out by hand, the mask policy's positions for KV-cache
// steps (models/mask_policy.h, models/stepper.cpp), both attention paths with
// the bias, the trace's "bias", the memory estimate, and KV-cache decoding ==
// recompute on the PyTorch reference case data/reference/do_alibi_pre_gelu_h6_pad
// (whose parity with PyTorch tests/test_parity.cpp checks; the other decoding
// properties run on it through tests/decoding_cases.h).

#include "engine/attention.h"
#include "engine/mask.h"
#include "models/cost.h"
#include "models/decoding.h"
#include "models/mask_policy.h"
#include "models/stepper.h"
#include "models/study/teacher_forcing.h"
#include "models/study/trace.h"
#include "tests/greedy_margin.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace tinyformer;

namespace {

const char* kAlibiCase = "data/reference/do_alibi_pre_gelu_h6_pad.model.safetensors";

ModelConfig alibi_config(int64_t heads, SelfAttentionKind attention = SelfAttentionKind::Causal) {
    ModelConfig config;
    config.arch = attention == SelfAttentionKind::Bidirectional ? Architecture::EncoderOnly : Architecture::DecoderOnly;
    config.attention = attention;
    config.nhead = heads;
    config.d_model = 4 * heads;
    config.pos_encoding = PositionalEncoding::Alibi;
    return config;
}

// One row of `length` positions, a whole pass.
MaskInputs whole(int64_t length) {
    MaskInputs inputs;
    inputs.length = length;
    return inputs;
}

Tensor seeded(Shape shape, uint32_t seed) {
    Tensor t(std::move(shape));
    uint32_t state = seed;
    for (int64_t i = 0; i < t.numel(); ++i) {
        state = state * 1664525u + 1013904223u;
        t.data()[i] = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
    return t;
}

}  // namespace

TEST_CASE("alibi_slopes gives the paper's slopes, also for a head count that is not a power of two") {
    // H = 8: 2^(-8(h+1)/8) = 2^-(h+1): 1/2, 1/4, ..., 1/256.
    CHECK(alibi_slopes(8) == std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f, 0.0078125f, 0.00390625f});
    // H = 6: n = 4 gives 2^(-8(h+1)/4) = 2^-2, 2^-4, 2^-6, 2^-8; the slopes of 2n = 8 are
    // 2^-1 .. 2^-8, at even indices 2^-1, 2^-3, 2^-5, ...: the first 6 - 4 = 2 of them.
    CHECK(alibi_slopes(6) == std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f});
    // H = 1: 2^(-8 * 1 / 1) = 2^-8.
    CHECK(alibi_slopes(1) == std::vector<float>{0.00390625f});
    // H = 2: 2^-4, 2^-8. H = 4: 2^-2, 2^-4, 2^-6, 2^-8.
    CHECK(alibi_slopes(2) == std::vector<float>{0.0625f, 0.00390625f});
    CHECK(alibi_slopes(4) == std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f});
    // H = 12: n = 8 gives 2^-1 .. 2^-8; 2n = 16 gives 2^(-(h+1)/2), at even indices
    // h = 0, 2, 4, 6: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (12 - 8 = 4 of them).
    const std::vector<float> twelve = alibi_slopes(12);
    REQUIRE(twelve.size() == 12);
    for (int h = 0; h < 8; ++h) CHECK(twelve[static_cast<size_t>(h)] == std::ldexp(1.0f, -(h + 1)));
    const double root_half = 0.70710678118654752440;  // 2^-0.5
    for (int i = 0; i < 4; ++i)
        CHECK(twelve[static_cast<size_t>(8 + i)] == static_cast<float>(root_half * std::ldexp(1.0, -i)));
    CHECK_ERROR_CONTAINS(alibi_slopes(0), "heads must be >= 1, got 0");
}

TEST_CASE("Mask::alibi of 3 tokens and 2 heads is -slope * |i - j|, every key allowed") {
    // slopes 1/16, 1/256. Head 0: distances [[0,1,2],[1,0,1],[2,1,0]] times -1/16.
    const Mask mask = Mask::alibi(2, 3);
    CHECK(mask.shape() == Shape{1, 2, 3, 3});
    CHECK(mask.has_bias());
    const float head0[3][3] = {{0, -0.0625f, -0.125f}, {-0.0625f, 0, -0.0625f}, {-0.125f, -0.0625f, 0}};
    const float head1[3][3] = {{0, -0.00390625f, -0.0078125f}, {-0.00390625f, 0, -0.00390625f},
                               {-0.0078125f, -0.00390625f, 0}};
    for (int64_t l = 0; l < 3; ++l)
        for (int64_t s = 0; s < 3; ++s) {
            CHECK(mask.allows(0, 0, l, s));
            CHECK(mask.bias(0, 0, l, s) == head0[l][s]);
            CHECK(mask.bias(0, 1, l, s) == head1[l][s]);
        }
    // The policy of a causal ALiBi model: the causal triangle, and the bias on the allowed keys
    // (the paper's -slope * (i - j)); a blocked key keeps no bias.
    const Mask causal = attention_mask(alibi_config(2), AttentionCall::Self, whole(3));
    CHECK(causal.shape() == Shape{1, 2, 3, 3});
    for (int64_t l = 0; l < 3; ++l)
        for (int64_t s = 0; s < 3; ++s) {
            CHECK(causal.allows(0, 0, l, s) == (s <= l));
            CHECK(causal.bias(0, 0, l, s) == (s <= l ? head0[l][s] : 0.0f));
        }
    // A bidirectional (encoder_only) ALiBi model: both directions.
    const Mask both = attention_mask(alibi_config(2, SelfAttentionKind::Bidirectional), AttentionCall::Self, whole(3));
    CHECK(both.bias(0, 0, 0, 2) == -0.125f);
    CHECK(both.bias(0, 0, 2, 0) == -0.125f);
    // The bias tensor a trace records: [B,H,L,S], 0 where blocked.
    const Tensor recorded = causal.bias_tensor({2, 2, 3, 3});
    CHECK(recorded.at({1, 0, 2, 0}) == -0.125f);
    CHECK(recorded.at({1, 0, 0, 2}) == 0.0f);
}

TEST_CASE("Mask::alibi takes each row's own positions, and refuses bad ones") {
    // Row 0: the query at position 4 over keys at 0, 1, 2, 4; row 1: the query at 1 over keys 0, 1, 2, 1.
    const Mask mask = Mask::alibi(1, {{4}, {1}}, {{0, 1, 2, 4}, {0, 1, 2, 1}});
    CHECK(mask.shape() == Shape{2, 1, 1, 4});
    const float slope = 0.00390625f;
    CHECK(mask.bias(0, 0, 0, 0) == -4 * slope);
    CHECK(mask.bias(0, 0, 0, 3) == 0.0f);
    CHECK(mask.bias(1, 0, 0, 2) == -slope);
    CHECK(mask.bias(1, 0, 0, 3) == 0.0f);
    CHECK_ERROR_CONTAINS(Mask::alibi(1, {{0}}, {{0}, {1}}), "same B >= 1 rows");
    CHECK_ERROR_CONTAINS(Mask::alibi(1, {{0}, {1}}, {{0, 1}, {1}}), "row 1 has 1 query and 1 key positions");
    CHECK_ERROR_CONTAINS(Mask::alibi(1, {{-1}}, {{0}}), "position -1");
    CHECK_ERROR_CONTAINS(Mask::alibi(2, 0), "length must be >= 1, got 0");
}

TEST_CASE("A KV-cache step's ALiBi bias uses each slot's token position, not the slot index") {
    // Prompts of 3 and 1 tokens right-padded to 3 slots, then one generated token each
    // (slot 3): row 0's is at position 3, row 1's at position 1; row 1's slots 1, 2 are padding.
    MaskInputs inputs;
    inputs.batch = 2;
    inputs.length = 1;
    inputs.first = 3;
    inputs.padding = Padding::from_lengths({4, 4}, 4);  // stand-in, replaced below
    BoolTensor flags{{2, 4}, {0, 0, 0, 0, 0, 1, 1, 0}};
    inputs.padding = Padding::from_flags(flags);
    inputs.key_positions = {{0, 1, 2, 3}, {0, 1, 2, 1}};
    const Mask mask = decoding_step_masks(alibi_config(4), inputs).self;  // slopes 1/4, 1/16, 1/64, 1/256
    CHECK(mask.shape() == Shape{2, 4, 1, 4});
    CHECK(mask.bias(0, 0, 0, 0) == -0.75f);   // |3 - 0| / 4
    CHECK(mask.bias(0, 1, 0, 2) == -0.0625f); // |3 - 2| / 16
    CHECK(mask.bias(1, 0, 0, 0) == -0.25f);   // |1 - 0| / 4: the query is at position 1, not 3
    CHECK(mask.bias(1, 0, 0, 3) == 0.0f);     // itself
    CHECK(!mask.allows(1, 0, 0, 1));
    CHECK(!mask.allows(1, 0, 0, 2));
    // Without positions, slot s is at s (right for an unpadded batch, wrong here: the test can fail).
    inputs.key_positions.clear();
    const Mask by_slot = decoding_step_masks(alibi_config(4), inputs).self;
    CHECK(by_slot.bias(1, 0, 0, 0) == -0.75f);
    // An unpadded one-token step still gets its bias (not the blocks-nothing Mask()).
    MaskInputs plain;
    plain.first = 2;
    const Mask step = decoding_step_masks(alibi_config(1), plain).self;
    CHECK(step.shape() == Shape{1, 1, 1, 3});
    CHECK(step.bias(0, 0, 0, 0) == -2 * 0.00390625f);
    inputs.key_positions = {{0, 1, 2, 3}};
    CHECK_ERROR_CONTAINS(decoding_step_masks(alibi_config(4), inputs), "key_positions has 1 rows, the batch 2");
}

TEST_CASE("The streaming path equals the materialized path with an ALiBi bias") {
    const int64_t B = 2, H = 6, L = 37, D = 24;
    const Tensor q = seeded({B, L, D}, 1), k = seeded({B, L, D}, 2), v = seeded({B, L, D}, 3);
    const Mask mask = Mask::causal(L) & Mask::key_padding(Padding::from_lengths({L, 30}, L)) & Mask::alibi(H, L);
    AttentionOptions materialized, streaming;
    materialized.path = AttentionPath::Materialized;
    streaming.path = AttentionPath::Streaming;
    streaming.query_block = 8;
    streaming.key_tile = 5;  // many tiles, so the bias is read per tile
    const AttentionResult a = multi_head_scaled_dot_product_attention(q, k, v, H, mask, materialized);
    const AttentionResult b = multi_head_scaled_dot_product_attention(q, k, v, H, mask, streaming);
    CHECK(b.path == AttentionPath::Streaming);
    CHECK(test_helpers::max_abs_difference(a.output, b.output) <= 1e-5);
    // ... and the bias matters: without it the output differs.
    const AttentionResult plain = multi_head_scaled_dot_product_attention(
        q, k, v, H, Mask::causal(L) & Mask::key_padding(Padding::from_lengths({L, 30}, L)), streaming);
    CHECK(test_helpers::max_abs_difference(plain.output, b.output) > 1e-3);
}

TEST_CASE("An ALiBi model's trace records the bias [B,H,L,S]; a model without one records none") {
    const Model model = Model::load(kAlibiCase);
    REQUIRE(model.config.pos_encoding == PositionalEncoding::Alibi);
    const int64_t H = model.config.nhead;
    Trace trace(Trace::Detail::Everything);
    const TokenIds ids{2, 4, {1, 3, 4, 5, 1, 6, 0, 0}};
    model.single_stack->forward(ids, Padding::from_lengths({4, 2}, 4), {}, &trace);
    const Tensor& bias = trace.tensor("layers.1.self_attn.bias");
    CHECK(bias.shape() == Shape{2, H, 4, 4});
    const std::vector<float> slopes = alibi_slopes(H);
    CHECK(bias.at({0, 0, 3, 0}) == -3 * slopes[0]);
    CHECK(bias.at({0, 5, 2, 1}) == -slopes[5]);
    CHECK(bias.at({0, 0, 0, 3}) == 0.0f);  // blocked (causal)
    CHECK(bias.at({1, 0, 1, 2}) == 0.0f);  // blocked (padding key)

    const Model plain = Model::load("data/reference/do_pre_gelu_learned_pad.model.safetensors");
    Trace plain_trace(Trace::Detail::Everything);
    plain.single_stack->forward(ids, Padding::from_lengths({4, 2}, 4), {}, &plain_trace);
    CHECK(plain_trace.masks().count("layers.0.self_attn.mask") == 1);
    CHECK(!plain_trace.has("layers.0.self_attn.bias"));
}

TEST_CASE("pass_memory counts an additive bias at 10*B*H*L*S bytes") {
    // B=2, D=4, H=2, F=8; L=3, S=5: 10 * 2 * 2 * 3 * 5 = 600.
    const PassMemory without = pass_memory(CostShape{2, 4, 2, 8}, 3, 5, 2, false, 10);
    const PassMemory with = pass_memory(CostShape{2, 4, 2, 8}, 3, 5, 2, false, 10, true);
    CHECK(without.bias == 0);
    CHECK(with.bias == 600);
    CHECK(with.total() == without.total() + 600);
}

TEST_CASE("An ALiBi model decodes a padded batch with the KV cache exactly as recompute, greedy and beam") {
    const Model model = Model::load(kAlibiCase);
    // Prompts of 5, 1 and 3 tokens: the short rows' generated tokens sit at slots past the padding.
    const std::vector<std::vector<int64_t>> prompts = {{1, 3, 4, 5, 6}, {1}, {1, 7, 8}};
    GenerationOptions cached, recomputed;
    cached.record_logits = recomputed.record_logits = true;
    cached.max_new_tokens = recomputed.max_new_tokens = 8;
    recomputed.mode = StepMode::Recompute;
    const Generation a = greedy_decode(model, prompts, cached);
    const Generation b = greedy_decode(model, prompts, recomputed);
    // The two steppings' logits are within 1e-5 of each other, not the same floats (one-row
    // products against whole-sequence gemms): equal tokens by the margin rule of
    // tests/greedy_margin.h, every step decided.
    const test_helpers::LogitBound bound{1e-5, 0};
    for (size_t row = 0; row < prompts.size(); ++row)
        CHECK(test_helpers::check_same_greedy_tokens(b, row, a.tokens[row], bound).all());
    REQUIRE(a.step_logits.size() == b.step_logits.size());
    REQUIRE(a.step_logits.size() >= 2);
    double worst = 0;
    for (size_t step = 0; step < a.step_logits.size(); ++step)
        worst = std::max(worst, test_helpers::max_abs_difference(a.step_logits[step], b.step_logits[step]));
    CHECK(worst <= bound.absolute);
    MESSAGE("ALiBi greedy, ", a.step_logits.size(), " steps: max |cached - recomputed| = ", worst);
    // Each row alone (no padding) gives the same tokens as in the batch (the same rule).
    for (size_t i = 0; i < prompts.size(); ++i) {
        const Generation alone = greedy_decode(model, {prompts[i]}, cached);
        const test_helpers::Decided decided = test_helpers::check_same_greedy_tokens(alone, 0, a.tokens[i], bound);
        CHECK(decided.all());
        CHECK(test_helpers::largest_logit_difference(a, i, alone, 0, decided.steps) <= bound.absolute);
    }
    // Beam search (its caches reordered every step, slot positions with them): each
    // hypothesis's log-probability is what a teacher-forced (whole-sequence) pass gives
    // its tokens and <eos> when it ended there (as tests/test_decoding.cpp checks for
    // every decoding case, this one included).
    size_t checked = 0;
    for (const auto& prompt : prompts) {
        const Generation beam = beam_search(model, prompt, 3, /*length_penalty=*/0.0);
        REQUIRE(!beam.hypotheses.empty());
        const size_t room = static_cast<size_t>(std::min<int64_t>(
            model.config.max_len - static_cast<int64_t>(prompt.size()), default_max_new_tokens(model)));
        for (const Hypothesis& hypothesis : beam.hypotheses) {
            const TeacherForced pass = teacher_forced_pass(model, prompt, hypothesis.tokens);
            const int64_t V = pass.logits.dim(2);
            std::vector<int64_t> scored = hypothesis.tokens;
            if (scored.size() < room) scored.push_back(model.config.eos_id);
            double log_p = 0;
            for (size_t t = 0; t < scored.size(); ++t) {
                const float* row = pass.logits.data() + (pass.first_prediction + static_cast<int64_t>(t)) * V;
                double top = row[0], sum = 0;
                for (int64_t i = 1; i < V; ++i) top = std::max(top, static_cast<double>(row[i]));
                for (int64_t i = 0; i < V; ++i) sum += std::exp(row[i] - top);
                log_p += row[scored[t]] - top - std::log(sum);
            }
            CHECK(std::fabs(hypothesis.log_prob - log_p) <= 1e-4 * static_cast<double>(scored.size()));
            ++checked;
        }
    }
    CHECK(checked >= 3);
}
