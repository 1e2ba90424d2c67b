// The mask of every attention call a model makes, decided in one place
// (lesson 10.3, sections 5 and 6) from the config and the inputs' padding.
// The model's passes, KV-cache decoding, the attention maps and
// `tinyformer mask seq2seq` all take their masks from here.
//
//   encoder self-attention       bidirectional AND source key padding      [B,1,1,S]
//   decoder self-attention       causal AND target key padding             [B,1,T,T]
//   cross-attention              source key padding                        [B,1,1,S]
//     (the decoder's two are the engine's seq2seq_masks, engine/mask.h)
//   decoder-only / encoder-only  the config's `attention` AND key padding:
//                                causal [B,1,T,T], prefix-LM (prefix =
//                                the prompt) [B,1,T,T], bidirectional [B,1,1,T]
//
// An empty Padding means no position is padding.
//
// A decoding step with a KV cache runs only the n newest positions, at
// first..first+n-1, over the first+n cached keys: the same rule, cut to
// those query rows (causal(n, first+n): query i sees keys 0..first+i). One
// new position sees every cached key (causal(1, T) allows everything), so
// only the key padding of the cache is left.
#pragma once

#include "engine/mask.h"
#include "models/config.h"

#include <cstdint>
#include <vector>

namespace tinyformer {

// Encoder self-attention: every source position sees every real source position.
Mask encoder_self_mask(const Padding& source);

// The decoder's self- and cross-attention masks for a target of `length`
// positions (target padding [B,length] or empty) over a source of
// `source_length` (source padding [B,source_length] or empty), B rows.
Seq2SeqMasks decoder_masks(int64_t batch, int64_t length, int64_t source_length, const Padding& target,
                           const Padding& source);
// A decoding step: `new_positions` queries at first..first+new_positions-1 (no target padding).
Seq2SeqMasks decoder_step_masks(int64_t first, int64_t new_positions, const Padding& source);

// A single stack's self-attention over `length` positions: the config's kind,
// with the prefix lengths [B] for prefix_lm (and none for the others).
Mask stack_mask(SelfAttentionKind kind, int64_t length, const std::vector<int64_t>& prefix_lengths,
                const Padding& padding);
// A decoding step of a single stack: one new position per row, whose keys are
// the cache's; `cache_padding` [B, T] marks the cached slots that are padding.
Mask stack_step_mask(const Padding& cache_padding);

}  // namespace tinyformer
