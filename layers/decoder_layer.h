// DecoderLayer — nn.TransformerDecoderLayer(batch_first=True) at inference
// (dropout is the identity):
//
//   post-LN (norm_first = false):  x = norm1(x + SelfAttention(x))            causal
//                                  x = norm2(x + CrossAttention(x, memory))   queries x, keys/values memory
//                                  x = norm3(x + FFN(x))
//   pre-LN  (norm_first = true):   x = x + SelfAttention(norm1(x))
//                                  x = x + CrossAttention(norm2(x), memory)
//                                  x = x + FFN(norm3(x))
//
//   x [B, T, D], memory [B, S, D] -> [B, T, D]. self_mask broadcasts to
//   [B, H, T, T] (causal AND target padding), cross_mask to [B, H, T, S]
//   (source padding); target_padding [B, T] marks padded queries of both.
//
//   Incremental decoding: with `cache`, x holds only the newest n target
//   positions; self-attention keys and values are appended to cache->self
//   (self_mask broadcasts to [B, H, n, T_cached]), and the memory's keys and
//   values are projected into cache->cross once and reused.
#pragma once

#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/multi_head_attention.h"

namespace tinyformer {

struct DecoderLayerCache {
    KVCache self;   // grows by one position per decoding step
    KVCache cross;  // the encoder memory's keys and values, computed once
};

struct DecoderLayer {
    // name: the layer's place in the trace ("decoder.1"), its hook points' prefix.
    DecoderLayer(MultiHeadAttention self_attention, MultiHeadAttention cross_attention, FeedForward ffn,
                 LayerNorm first_norm, LayerNorm second_norm, LayerNorm third_norm, bool pre_norm = false,
                 std::string layer_name = "")
        : self_attn(std::move(self_attention)), multihead_attn(std::move(cross_attention)), feed_forward(std::move(ffn)),
          norm1(std::move(first_norm)), norm2(std::move(second_norm)), norm3(std::move(third_norm)),
          norm_first(pre_norm), name(std::move(layer_name)) {}

    MultiHeadAttention self_attn;
    MultiHeadAttention multihead_attn;  // cross-attention, PyTorch's name
    FeedForward feed_forward;
    LayerNorm norm1, norm2, norm3;
    bool norm_first = false;
    std::string name;
    const Hooks* hooks = nullptr;  // none by default

    // Per-head weights go to the observer (self_attn.weights [B, H, T, T],
    // cross_attn.weights [B, H, T, S]).
    // Observing (layers/observer.h): "input", "self_attn.*", "cross_attn.*", "ffn.hidden", "output".
    // Hooks (layers/hooks.h), in this order: the self-attention's,
    // {name}.self_attn.output, {name}.after_self_attn, the cross-attention's,
    // {name}.cross_attn.output, {name}.after_cross_attn, {name}.ffn.output, {name}.output.
    Tensor forward(const Tensor& x, const Tensor& memory, const Mask& self_mask, const Mask& cross_mask,
                   const Padding& target_padding, Observer* observer = nullptr,
                   DecoderLayerCache* cache = nullptr) const;
    // This layer's hooks and its attentions'.
    void set_hooks(const Hooks* layer_hooks);
};

}  // namespace tinyformer
