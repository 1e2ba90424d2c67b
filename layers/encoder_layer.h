// EncoderLayer — nn.TransformerEncoderLayer(batch_first=True) at inference
// (dropout is the identity):
//
//   post-LN (norm_first = false):  x = norm1(x + SelfAttention(x))
//                                  x = norm2(x + FFN(x))
//   pre-LN  (norm_first = true):   x = x + SelfAttention(norm1(x))
//                                  x = x + FFN(norm2(x))
//
//   x [B, T, D] -> [B, T, D]. `mask` is the self-attention mask (true = may
//   attend, broadcast to [B, H, T, T]); `padding` [B, T] marks padded positions,
//   which are padded queries of the attention (their attention output is 0).
//   Decoder-only and encoder-only models are stacks of this layer too, with a
//   causal, prefix-LM or no mask.
//
//   Observing (layers/observer.h): "input", "self_attn.*", "ffn.hidden", "output".
//   Hooks (layers/hooks.h), with name "encoder.1" or "layers.2": the
//   self-attention's, then the points {name}.self_attn.output,
//   {name}.after_self_attn, {name}.ffn.output, {name}.output.
//
//   Incremental decoding: with `cache`, x holds only the newest n positions;
//   their keys and values are appended to the cache and the mask broadcasts
//   to [B, H, n, S] with S the cache length after appending. Without a cache
//   the layer sees the whole sequence at once — the same code with an empty
//   cache.
//
//   first_positions [B] (rotary positions, layers/rotary.h): row b's tokens
//   are at positions first_positions[b] + 0..n-1 — 0..T-1 for a whole
//   sequence, a row's own next position at a decoding step. Empty: every row
//   starts at the cache's length.
#pragma once

#include "layers/feed_forward.h"
#include "layers/hooks.h"
#include "layers/layer_norm.h"
#include "layers/multi_head_attention.h"

namespace tinyformer {

struct EncoderLayer {
    // name: the layer's place in the trace ("encoder.1", "layers.2"), its hook points' prefix.
    EncoderLayer(MultiHeadAttention self_attention, FeedForward ffn, LayerNorm first_norm, LayerNorm second_norm,
                 bool pre_norm = false, std::string layer_name = "")
        : self_attn(std::move(self_attention)), feed_forward(std::move(ffn)), norm1(std::move(first_norm)),
          norm2(std::move(second_norm)), norm_first(pre_norm), name(std::move(layer_name)) {}

    MultiHeadAttention self_attn;
    FeedForward feed_forward;
    LayerNorm norm1, norm2;
    bool norm_first = false;
    std::string name;
    const Hooks* hooks = nullptr;  // none by default

    Tensor forward(const Tensor& x, const Mask& mask, const Padding& padding, Observer* observer = nullptr,
                   KVCache* cache = nullptr, const std::vector<int64_t>& first_positions = {}) const;
    // This layer's hooks and its attention's.
    void set_hooks(const Hooks* layer_hooks);
};

// Attention options for a layer's call: the query padding.
AttentionOptions attention_options(const Padding& query_padding);

}  // namespace tinyformer
