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
};

Mask attention_mask(const ModelConfig& config, AttentionCall call, const MaskInputs& inputs);

// The masks of one decoding pass, for every architecture: the one place
// decoding (models/stepper.h, EncoderDecoderModel::decode_step) takes them
// from. inputs.first = 0: the pass that starts decoding (the <bos>, the
// prompts) or a whole target; > 0: a step over the KV cache.
//   encoder_decoder: self = DecoderSelf, cross = Cross
//   decoder_only:    self = Self, cross = Mask() (unused); a one-position
//                    step with no padded slot in the cache is Mask(), which
//                    blocks nothing (what causal(1, T) AND no padding allows),
//                    so such a step builds no mask.
struct DecodingMasks {
    Mask self, cross;
};
DecodingMasks decoding_step_masks(const ModelConfig& config, const MaskInputs& inputs);

}  // namespace tinyformer
