// attention_mask — the mask of every attention call a model makes, decided
// in this one function (lesson 10.3, sections 5 and 6) from the config and
// the inputs. The model's passes, KV-cache decoding, the attention maps and
// `tinyformer mask` all take their masks from it.
//
//   call          mask                                                shape
//   EncoderSelf   bidirectional AND source key padding                [B,1,1,S]
//   DecoderSelf   causal AND target key padding       } seq2seq_masks [B,1,T,T]
//   Cross         source key padding                  } (engine/mask.h) [B,1,1,S]
//   Self          (decoder-only / encoder-only) the config's attention AND key padding:
//                 causal [B,1,T,T], prefix_lm (prefix = the prompt, prefix_lengths [B])
//                 [B,1,T,T], bidirectional [B,1,1,T]
//
// An empty Padding means no position is padding.
//
// ALiBi (config pos_encoding "alibi", single-stack only): every Self mask
// above is ANDed with Mask::alibi (engine/mask.h), the per-head bias
//   bias[b, h, l, s] = -slope_h * |pos(query l) - pos(key s)|     [1|B,H,L,S]
// where a position is the token's own: in a whole pass key s is at s; in a
// KV-cache step the queries are the last `length` key slots and each slot's
// position is key_positions[b][slot] (after right-padded prompts of
// different lengths a generated token's slot is not its position), or the
// slot itself when key_positions is empty. Blocked keys (causal, padding)
// stay blocked; the bias only adds to the allowed ones. Its size is
// 5*B*H*L*S bytes (a flag and a float per cell; B = 1 without padding and
// without key_positions); while it is built, the ALiBi term and the AND's
// result both exist, so pass_memory (models/cost.h) counts 10*B*H*L*S, and
// both whole-sequence passes and the KV cache's prefill ask it first.
//
// T5's relative bias (pos_encoding "relative_bias", single-stack only) is
// the same kind of term, from the model's learned table (MaskInputs::
// relative_bias, [relative_buckets, H]; engine/mask.h):
//   bias[b, h, l, s] = table[bucket(pos(key s) - pos(query l)), h]
// with causal buckets for a causal model, bidirectional ones for
// bidirectional and prefix_lm models (their queries see later keys).
// A "sliding_window" W (decoder_only, causal) ANDs Mistral's window
//   allowed iff pos(query l) - W < pos(key s) <= pos(query l)
// with the same positions, so that it holds in a KV cache whose oldest
// slots were evicted (models/stepper.cpp keeps the last W of every row).
// mask_uses_positions says whether a config's Self masks have such a term.
//
// A decoding step with a KV cache runs only the `length` newest positions,
// at first..first+length-1, over the first+length cached keys (first > 0):
// the same rule cut to those query rows, causal(length, first+length): query
// i sees keys 0..first+i. One new position sees every cached key (causal(1,
// T) allows everything) but the padded slots of the cache. Generated
// positions come after any prefix, so a prefix-LM step is causal too.
#pragma once

#include "engine/mask.h"
#include "models/config.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tinyformer {

enum class AttentionCall { EncoderSelf, DecoderSelf, Cross, Self };

// What a mask depends on besides the config. Fields a call does not use are ignored.
struct MaskInputs {
    int64_t batch = 1;            // B
    int64_t length = 1;           // target / input positions this call runs (its queries)
    int64_t first = 0;            // position of the first of them (> 0: a step over a KV cache)
    Padding padding;              // target / input padding [B, first+length] (of the keys), or empty
    int64_t source_length = 0;    // encoder_decoder: S
    Padding source_padding;       // [B, S], or empty
    std::vector<int64_t> prefix_lengths;  // Self with prefix_lm, first = 0: [B]
    // Position terms only (ALiBi, relative bias, sliding window):
    // [B][first+length], the position of the token in each key slot (padding
    // slots: any value >= 0, they are blocked), or empty.
    std::vector<std::vector<int64_t>> key_positions;
    const Tensor* relative_bias = nullptr;  // relative_bias only: the model's table [relative_buckets, H]
};

// True when the config's Self masks depend on the tokens' positions: ALiBi,
// T5's relative bias, a sliding window (a decoding step builds them anew).
bool mask_uses_positions(const ModelConfig& config);

Mask attention_mask(const ModelConfig& config, AttentionCall call, const MaskInputs& inputs);

// The masks of one decoding pass, for every architecture: the one place
// decoding (models/stepper.h, EncoderDecoderModel::decode_step) takes them
// from. inputs.first = 0: the pass that starts decoding (the <bos>, the
// prompts) or a whole target; > 0: a step over the KV cache.
//   encoder_decoder: self = DecoderSelf, cross = Cross
//   decoder_only:    self = Self, cross = Mask() (unused); a one-position
//                    step with no padded slot in the cache is Mask(), which
//                    blocks nothing (what causal(1, T) AND no padding allows),
//                    so such a step builds no mask — except when the mask
//                    uses positions (ALiBi, relative bias: a bias [1|B,H,1,T];
//                    a sliding window), which every step builds anew.
struct DecodingMasks {
    Mask self, cross;
};
DecodingMasks decoding_step_masks(const ModelConfig& config, const MaskInputs& inputs);

// The masks of a decoding's steps over a KV cache, one cache for both
// architectures (EncoderDecoderModel's DecoderCache, the decoder-only
// stepper, models/stepper.cpp). A one-token step whose new position sees
// every cached key (first > 0, length 1, no padded slot in the cache, no
// position term, which changes with every step's distances) has the same masks
// at every step: self blocks nothing, cross is the source padding's. They are
// kept with the source padding they were made for and made again only when
// it changes: such a step builds no mask. Any other pass's masks are made
// anew (and held in `latest` for as long as the pass needs them).
struct StepMasks {
    std::optional<DecodingMasks> kept;
    Padding kept_source_padding;
    std::optional<DecodingMasks> latest;
};
// decoding_step_masks(config, inputs), kept in `cache` or made anew as above.
const DecodingMasks& decoding_step_masks(const ModelConfig& config, const MaskInputs& inputs, StepMasks& cache);

}  // namespace tinyformer
