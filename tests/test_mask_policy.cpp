// Tests of models/mask_policy.*: the one place that decides each attention call's
// mask. What `tinyformer mask` prints is what the model's pass records (the
// trace's "mask" of each attention call, layers/observer.h), and the step
// masks of KV-cache decoding are the full masks' last rows.

#include "models/mask_policy.h"
#include "models/study/trace.h"
#include "models/transformer.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tinyformer;
using namespace test_helpers;

namespace {

// One query per line, as lesson 10.3 writes a mask: "q2: k0 k1 k2" — written
// out here from the recorded booleans [B, L, S] of batch row 0.
std::string lines_of(const BoolTensor& allowed) {
    const int64_t L = allowed.shape[1], S = allowed.shape[2];
    std::string text;
    for (int64_t l = 0; l < L; ++l) {
        text.append("q").append(std::to_string(l)).append(":");
        bool any = false;
        for (int64_t s = 0; s < S; ++s)
            if (allowed.values[static_cast<size_t>(l * S + s)]) {
                text.append(" k").append(std::to_string(s));
                any = true;
            }
        text += any ? "\n" : " (none)\n";
    }
    return text;
}

// The lines of `tinyformer mask ...` after the heading `title` (up to a blank line).
std::string printed_block(const std::string& out, const std::string& title) {
    const size_t at = out.find(title);
    REQUIRE(at != std::string::npos);
    const size_t first = out.find('\n', at) + 1;
    const size_t end = out.find("\n\n", first);
    return out.substr(first, end == std::string::npos ? std::string::npos : end + 1 - first);
}

TokenIds ids(std::vector<int64_t> values) {
    const int64_t n = static_cast<int64_t>(values.size());
    return {1, n, std::move(values)};
}

}  // namespace

TEST_CASE("mask seq2seq prints exactly the masks the encoder-decoder model's pass uses") {
    // `mask seq2seq --len 4 --src-len 5 --pad 2` against the reverse model run on a
    // 5-token source whose last 2 are padding and a 4-token target.
    const CliRun run = run_tinyformer_ok({"mask", "seq2seq", "--len", "4", "--src-len", "5", "--pad", "2"});
    const Model model = Model::load("data/models/reverse.safetensors");
    const Padding source_padding = Padding::from_lengths({3}, 5);
    Trace trace(Trace::Detail::Everything);
    const Tensor memory = model.encoder_decoder->encode(ids({4, 5, 6, 0, 0}), source_padding, &trace);
    model.encoder_decoder->decode(ids({1, 6, 5, 4}), memory, Padding(), source_padding, &trace);
    for (int64_t layer = 0; layer < model.config.num_decoder_layers; ++layer) {
        CAPTURE(layer);
        const std::string prefix = "decoder." + std::to_string(layer) + ".";
        CHECK(printed_block(run.out, "decoder self-attention [T,T]") ==
              lines_of(trace.masks().at(prefix + "self_attn.mask")));
        CHECK(printed_block(run.out, "cross-attention [T,S]") == lines_of(trace.masks().at(prefix + "cross_attn.mask")));
    }
    // And what both say, by hand: the self mask is causal, the cross mask drops source keys 3 and 4.
    CHECK(printed_block(run.out, "decoder self-attention [T,T]") == "q0: k0\nq1: k0 k1\nq2: k0 k1 k2\nq3: k0 k1 k2 k3\n");
    CHECK(printed_block(run.out, "cross-attention [T,S]") == "q0: k0 k1 k2\nq1: k0 k1 k2\nq2: k0 k1 k2\nq3: k0 k1 k2\n");
}

TEST_CASE("mask causal and mask prefix-lm print exactly what the decoder-only models' passes use") {
    SUBCASE("causal") {
        const CliRun run = run_tinyformer_ok({"mask", "causal", "--len", "5"});
        const Model model = Model::load("data/models/reverse-causal.safetensors");
        Trace trace(Trace::Detail::Everything);
        model.single_stack->forward(ids({1, 4, 5, 6, 30}), Padding(), {}, &trace);
        for (int64_t layer = 0; layer < model.config.num_layers; ++layer)
            CHECK(printed_block(run.out, "rows are queries:") ==
                  lines_of(trace.masks().at("layers." + std::to_string(layer) + ".self_attn.mask")));
    }
    SUBCASE("prefix-lm") {
        const CliRun run = run_tinyformer_ok({"mask", "prefix-lm", "--len", "6", "--prefix", "3"});
        const Model model = Model::load("data/models/reverse-prefixlm.safetensors");
        Trace trace(Trace::Detail::Everything);
        model.single_stack->forward(ids({1, 4, 5, 30, 5, 4}), Padding(), {3}, &trace);
        for (int64_t layer = 0; layer < model.config.num_layers; ++layer)
            CHECK(printed_block(run.out, "rows are queries:") ==
                  lines_of(trace.masks().at("layers." + std::to_string(layer) + ".self_attn.mask")));
        // by hand: q0..q2 see the prefix k0..k2 both ways, q3.. are causal
        CHECK(printed_block(run.out, "rows are queries:") ==
              "q0: k0 k1 k2\nq1: k0 k1 k2\nq2: k0 k1 k2\nq3: k0 k1 k2 k3\nq4: k0 k1 k2 k3 k4\nq5: k0 k1 k2 k3 k4 k5\n");
    }
}

namespace {

ModelConfig with_attention(Architecture arch, SelfAttentionKind attention) {
    ModelConfig config;
    config.arch = arch;
    config.attention = attention;
    return config;
}

}  // namespace

TEST_CASE("A decoding step's masks are the last rows of the whole sequence's masks") {
    // Positions first..first+n-1 of a target of T = first + n, over a source with padding.
    const ModelConfig seq2seq = with_attention(Architecture::EncoderDecoder, SelfAttentionKind::Causal);
    const Padding source = Padding::from_lengths({4, 2}, 4);
    for (int64_t first : {1, 5})
        for (int64_t n : {1, 3}) {
            CAPTURE(first);
            CAPTURE(n);
            const int64_t T = first + n;
            MaskInputs whole, step;
            whole.batch = step.batch = 2;
            whole.length = T;
            step.length = n;
            step.first = first;
            whole.source_length = step.source_length = 4;
            whole.source_padding = step.source_padding = source;
            for (AttentionCall call : {AttentionCall::DecoderSelf, AttentionCall::Cross}) {
                const Mask all = attention_mask(seq2seq, call, whole), last = attention_mask(seq2seq, call, step);
                const int64_t keys = call == AttentionCall::Cross ? 4 : T;
                for (int64_t b = 0; b < 2; ++b)
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t s = 0; s < keys; ++s)
                            CHECK(last.allows(b, 0, i, s) == all.allows(b, 0, first + i, s));
            }
        }
    // A single stack: one new position at T-1 sees every cached key that is not padding,
    // which is row T-1 of the causal and of the prefix-LM mask.
    const Padding cache = Padding::from_lengths({5, 3}, 5);
    for (SelfAttentionKind kind : {SelfAttentionKind::Causal, SelfAttentionKind::PrefixLm}) {
        const ModelConfig config = with_attention(Architecture::DecoderOnly, kind);
        MaskInputs whole, step;
        whole.batch = step.batch = 2;
        whole.length = 5;
        whole.padding = step.padding = cache;
        if (kind == SelfAttentionKind::PrefixLm) whole.prefix_lengths = {2, 2};
        step.first = 4;
        const Mask all = attention_mask(config, AttentionCall::Self, whole), last = attention_mask(config, AttentionCall::Self, step);
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t s = 0; s < 5; ++s) CHECK(last.allows(b, 0, 0, s) == all.allows(b, 0, 4, s));
    }
}

TEST_CASE("attention_mask: each call's rule on a padded batch, by hand") {
    // B = 2, T = 3 target / input positions, row 1 has 2 real ones; S = 4 source positions,
    // row 1 has 1 real one.
    MaskInputs in;
    in.batch = 2;
    in.length = 3;
    in.padding = Padding::from_lengths({3, 2}, 3);
    in.source_length = 4;
    in.source_padding = Padding::from_lengths({4, 1}, 4);
    const ModelConfig seq2seq = with_attention(Architecture::EncoderDecoder, SelfAttentionKind::Causal);
    const Mask encoder = attention_mask(seq2seq, AttentionCall::EncoderSelf, in);
    const Mask decoder = attention_mask(seq2seq, AttentionCall::DecoderSelf, in);
    const Mask cross = attention_mask(seq2seq, AttentionCall::Cross, in);
    for (int64_t l = 0; l < 3; ++l) {
        for (int64_t s = 0; s < 4; ++s) {
            CHECK(encoder.allows(0, 0, l, s));            // row 0: every source key is real
            CHECK(encoder.allows(1, 0, l, s) == (s < 1));  // row 1: only source key 0
            CHECK(cross.allows(1, 0, l, s) == (s < 1));
        }
        for (int64_t s = 0; s < 3; ++s) {
            CHECK(decoder.allows(0, 0, l, s) == (s <= l));            // causal
            CHECK(decoder.allows(1, 0, l, s) == (s <= l && s < 2));   // causal AND target padding
        }
    }
    // Single stacks: causal, prefix-LM with prefixes {2, 1}, bidirectional; input padding as above.
    const auto self = [&](SelfAttentionKind kind, std::vector<int64_t> prefixes) {
        MaskInputs single = in;
        single.prefix_lengths = std::move(prefixes);
        return attention_mask(with_attention(Architecture::DecoderOnly, kind), AttentionCall::Self, single);
    };
    const Mask causal = self(SelfAttentionKind::Causal, {});
    const Mask prefix = self(SelfAttentionKind::PrefixLm, {2, 1});
    const Mask both_ways = self(SelfAttentionKind::Bidirectional, {});
    for (int64_t l = 0; l < 3; ++l)
        for (int64_t s = 0; s < 3; ++s) {
            CHECK(causal.allows(0, 0, l, s) == (s <= l));
            CHECK(prefix.allows(0, 0, l, s) == (s < 2 || s <= l));
            CHECK(prefix.allows(1, 0, l, s) == ((s < 1 || s <= l) && s < 2));
            CHECK(both_ways.allows(0, 0, l, s));
            CHECK(both_ways.allows(1, 0, l, s) == (s < 2));
        }
    // Prefix lengths belong to a prefix_lm model's self-attention only.
    CHECK_ERROR_CONTAINS(self(SelfAttentionKind::Causal, {2, 1}),
                         "prefix_len is given but the model's attention is causal");
    MaskInputs empty;
    empty.length = 0;
    CHECK_ERROR_CONTAINS(attention_mask(seq2seq, AttentionCall::DecoderSelf, empty),
                         "need batch >= 1, length >= 1");
}

TEST_CASE("decoding_step_masks gives each architecture's decoding pass the policy's masks") {
    // The one place decoding takes its masks from: the same cells as
    // attention_mask's calls for that architecture.
    auto same_cells = [](const Mask& a, const Mask& b) {
        REQUIRE(a.shape() == b.shape());
        const Shape& shape = a.shape();
        for (int64_t i = 0; i < shape[0]; ++i)
            for (int64_t h = 0; h < shape[1]; ++h)
                for (int64_t l = 0; l < shape[2]; ++l)
                    for (int64_t s = 0; s < shape[3]; ++s) CHECK(a.allows(i, h, l, s) == b.allows(i, h, l, s));
    };
    const ModelConfig seq2seq = with_attention(Architecture::EncoderDecoder, SelfAttentionKind::Causal);
    for (int64_t first : {0, 3}) {
        CAPTURE(first);
        MaskInputs in;
        in.batch = 2;
        in.length = first == 0 ? 3 : 1;
        in.first = first;
        in.source_length = 4;
        in.source_padding = Padding::from_lengths({4, 2}, 4);
        const DecodingMasks masks = decoding_step_masks(seq2seq, in);
        same_cells(masks.self, attention_mask(seq2seq, AttentionCall::DecoderSelf, in));
        same_cells(masks.cross, attention_mask(seq2seq, AttentionCall::Cross, in));
    }
    for (SelfAttentionKind kind : {SelfAttentionKind::Causal, SelfAttentionKind::PrefixLm}) {
        const ModelConfig config = with_attention(Architecture::DecoderOnly, kind);
        MaskInputs prompts;  // the pass over the prompts, padded
        prompts.batch = 2;
        prompts.length = 4;
        prompts.padding = Padding::from_lengths({4, 2}, 4);
        if (kind == SelfAttentionKind::PrefixLm) prompts.prefix_lengths = {4, 2};
        same_cells(decoding_step_masks(config, prompts).self, attention_mask(config, AttentionCall::Self, prompts));
        MaskInputs step;  // one new position over 5 cached keys, two of row 1's padding
        step.batch = 2;
        step.first = 4;
        step.padding = Padding::from_flags(BoolTensor{{2, 5}, {0, 0, 0, 0, 0, 0, 0, 1, 1, 0}});
        const Mask padded = decoding_step_masks(config, step).self;
        same_cells(padded, attention_mask(config, AttentionCall::Self, step));
        CHECK_FALSE(padded.allows(1, 0, 0, 2));  // by hand: row 1's padded slots stay blocked
        CHECK(padded.allows(1, 0, 0, 4));
        step.padding = Padding();  // no padded slot: nothing is blocked
        const DecodingMasks unpadded = decoding_step_masks(config, step);
        CHECK(unpadded.self.allows_everything());
        CHECK(unpadded.self.shape() == Shape{1, 1, 1, 1});
        CHECK(unpadded.cross.allows_everything());
    }
}

TEST_CASE("StepMasks, both architectures' one cache: a step whose masks are the same at every step makes them once") {
    // A marker stands in for the kept masks: a later step that returns it did
    // not make its masks again.
    const Mask marker = Mask::key_padding(Padding::from_lengths({1}, 2));  // blocks key 1
    SUBCASE("encoder-decoder: kept for the source padding they were made for, made again when it changes") {
        const ModelConfig seq2seq = with_attention(Architecture::EncoderDecoder, SelfAttentionKind::Causal);
        MaskInputs step;  // one new target position per row over the cached ones
        step.batch = 2;
        step.first = 1;
        step.source_length = 4;
        step.source_padding = Padding::from_lengths({4, 2}, 4);
        StepMasks cache;
        const DecodingMasks& first = decoding_step_masks(seq2seq, step, cache);
        REQUIRE(cache.kept.has_value());
        CHECK(&first == &*cache.kept);
        CHECK(first.self.allows_everything());
        CHECK(first.cross.allows(0, 0, 0, 3));
        CHECK_FALSE(first.cross.allows(1, 0, 0, 2));  // row 1's source padding
        cache.kept->cross = marker;
        step.first = 5;
        CHECK(&decoding_step_masks(seq2seq, step, cache).cross == &cache.kept->cross);
        CHECK_FALSE(cache.kept->cross.allows(0, 0, 0, 1));  // still the marker: not made again
        step.source_padding = Padding::from_lengths({2, 4}, 4);  // the rows reordered (a beam search)
        const DecodingMasks& reordered = decoding_step_masks(seq2seq, step, cache);
        CHECK_FALSE(reordered.cross.allows(0, 0, 0, 2));
        CHECK(reordered.cross.allows(1, 0, 0, 3));
        MaskInputs whole = step;  // the pass that starts decoding: made for that pass, the kept ones stay
        whole.first = 0;
        whole.length = 3;
        const DecodingMasks& pass = decoding_step_masks(seq2seq, whole, cache);
        CHECK(&pass == &*cache.latest);
        CHECK_FALSE(pass.self.allows(0, 0, 0, 1));  // causal
        CHECK(&*cache.kept == &reordered);
    }
    SUBCASE("decoder-only: an unpadded step kept; a padded step, and every ALiBi step, made anew") {
        const ModelConfig config = with_attention(Architecture::DecoderOnly, SelfAttentionKind::Causal);
        MaskInputs step;
        step.batch = 2;
        step.first = 4;
        StepMasks cache;
        CHECK(decoding_step_masks(config, step, cache).self.allows_everything());
        REQUIRE(cache.kept.has_value());
        cache.kept->self = marker;
        step.first = 6;
        CHECK_FALSE(decoding_step_masks(config, step, cache).self.allows(0, 0, 0, 1));  // the marker: kept
        step.padding = Padding::from_flags(BoolTensor{{2, 7}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0}});
        const Mask& padded = decoding_step_masks(config, step, cache).self;
        CHECK(&padded == &cache.latest->self);
        CHECK_FALSE(padded.allows(1, 0, 0, 2));  // row 1's padded slots
        CHECK(padded.allows(1, 0, 0, 6));
        ModelConfig alibi = config;
        alibi.pos_encoding = PositionalEncoding::Alibi;
        alibi.nhead = 2;
        StepMasks alibi_cache;
        MaskInputs alibi_step;  // no padding, one position: still made at each step (the distances change)
        alibi_step.first = 3;
        CHECK(decoding_step_masks(alibi, alibi_step, alibi_cache).self.has_bias());
        CHECK_FALSE(alibi_cache.kept.has_value());
    }
}
