#include "models/mask_policy.h"

#include "engine/error.h"

#include <utility>

namespace tinyformer {

namespace {

Mask key_padding_or_all(const Padding& padding) { return padding.empty() ? Mask() : Mask::key_padding(padding); }

// A step's rows of the causal mask: `length` queries at first.. over first+length keys.
Mask causal_step(const MaskInputs& in) {
    return in.length == 1 ? Mask() : Mask::causal(in.length, in.first + in.length);
}

// The positions of a Self call's queries [B|1][L] and keys [B|1][S] (see
// the header): the queries are the last `length` of first+length key slots.
std::pair<std::vector<std::vector<int64_t>>, std::vector<std::vector<int64_t>>> positions_of(const MaskInputs& in) {
    const int64_t keys = in.first + in.length;
    if (in.key_positions.empty()) {
        std::vector<int64_t> key(static_cast<size_t>(keys)), query(static_cast<size_t>(in.length));
        for (int64_t s = 0; s < keys; ++s) key[static_cast<size_t>(s)] = s;
        for (int64_t l = 0; l < in.length; ++l) query[static_cast<size_t>(l)] = in.first + l;
        return {{query}, {key}};
    }
    if (static_cast<int64_t>(in.key_positions.size()) != in.batch)
        fail("attention_mask: key_positions has ", in.key_positions.size(), " rows, the batch ", in.batch);
    std::vector<std::vector<int64_t>> queries;
    for (size_t b = 0; b < in.key_positions.size(); ++b) {
        const auto& row = in.key_positions[b];
        if (static_cast<int64_t>(row.size()) != keys)
            fail("attention_mask: key_positions[", b, "] has ", row.size(), " slots, expected first + length = ", keys);
        queries.emplace_back(row.end() - in.length, row.end());
    }
    return {queries, in.key_positions};
}

// A Self mask's terms that depend on the tokens' positions (see the header):
// ALiBi's or T5's bias, the sliding window.
Mask position_terms(const ModelConfig& config, const MaskInputs& in, Mask mask) {
    const auto [queries, keys] = positions_of(in);
    if (config.pos_encoding == PositionalEncoding::Alibi) mask = mask & Mask::alibi(config.nhead, queries, keys);
    if (config.pos_encoding == PositionalEncoding::RelativeBias) {
        if (!in.relative_bias) fail("attention_mask: a relative_bias model's masks need its table (MaskInputs::relative_bias)");
        const RelativeBuckets buckets{config.relative_buckets, config.relative_max_distance,
                                      config.attention != SelfAttentionKind::Causal};
        mask = mask & Mask::relative_bias(*in.relative_bias, buckets, queries, keys);
    }
    if (config.sliding_window > 0) mask = mask & Mask::sliding_window(config.sliding_window, queries, keys);
    return mask;
}

Mask self_mask(const ModelConfig& config, const MaskInputs& in) {
    if (in.first > 0 && config.attention != SelfAttentionKind::Bidirectional)
        return causal_step(in) & key_padding_or_all(in.padding);
    Mask mask;  // bidirectional: nothing but the padding
    switch (config.attention) {
        case SelfAttentionKind::Causal: mask = Mask::causal(in.length); break;
        case SelfAttentionKind::PrefixLm: mask = Mask::prefix_lm(in.prefix_lengths, in.length); break;
        case SelfAttentionKind::Bidirectional: break;
    }
    return mask & key_padding_or_all(in.padding);
}

}  // namespace

bool mask_uses_positions(const ModelConfig& config) {
    return config.pos_encoding == PositionalEncoding::Alibi || config.pos_encoding == PositionalEncoding::RelativeBias ||
           config.sliding_window > 0;
}

Mask attention_mask(const ModelConfig& config, AttentionCall call, const MaskInputs& in) {
    if (in.batch < 1 || in.length < 1 || in.first < 0)
        fail("attention_mask: need batch >= 1, length >= 1, first >= 0; got ", in.batch, ", ", in.length, ", ",
             in.first);
    const bool prefix_lm = call == AttentionCall::Self && config.attention == SelfAttentionKind::PrefixLm;
    if (!in.prefix_lengths.empty() && (!prefix_lm || in.first > 0))
        fail("forward: prefix_len is given but the model's attention is ", attention_kind_name(config.attention));
    switch (call) {
        case AttentionCall::EncoderSelf:  // every source position sees every real one
            return key_padding_or_all(in.source_padding);
        case AttentionCall::DecoderSelf:
        case AttentionCall::Cross: {
            if (in.first > 0)
                return call == AttentionCall::Cross ? key_padding_or_all(in.source_padding) : causal_step(in);
            // A whole target: the engine's seq2seq pair (what `tinyformer mask seq2seq` prints).
            const Seq2SeqMasks masks = seq2seq_masks(in.length, in.padding, in.source_padding);
            return call == AttentionCall::DecoderSelf ? masks.decoder_self : masks.cross;
        }
        case AttentionCall::Self:
            if (mask_uses_positions(config)) return position_terms(config, in, self_mask(config, in));
            return self_mask(config, in);
    }
    fail("attention_mask: unknown attention call");
}

DecodingMasks decoding_step_masks(const ModelConfig& config, const MaskInputs& inputs) {
    if (config.arch == Architecture::EncoderDecoder)
        return {attention_mask(config, AttentionCall::DecoderSelf, inputs),
                attention_mask(config, AttentionCall::Cross, inputs)};
    if (inputs.first > 0 && inputs.length == 1 && inputs.padding.empty() && !mask_uses_positions(config))
        return {Mask(), Mask()};
    return {attention_mask(config, AttentionCall::Self, inputs), Mask()};
}

const DecodingMasks& decoding_step_masks(const ModelConfig& config, const MaskInputs& inputs, StepMasks& cache) {
    const bool same_every_step = inputs.first > 0 && inputs.length == 1 && inputs.padding.empty() &&
                                 inputs.key_positions.empty() && !mask_uses_positions(config);
    if (!same_every_step) {
        cache.latest = decoding_step_masks(config, inputs);
        return *cache.latest;
    }
    if (!cache.kept || cache.kept_source_padding != inputs.source_padding) {
        cache.kept = decoding_step_masks(config, inputs);
        cache.kept_source_padding = inputs.source_padding;
    }
    return *cache.kept;
}

}  // namespace tinyformer
