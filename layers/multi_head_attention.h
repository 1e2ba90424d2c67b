// MultiHeadAttention — nn.MultiheadAttention(batch_first=True) at inference,
// in PyTorch's layout (lesson 10.3, section 7):
//
//   in_proj_weight [3D, D]: rows 0..D-1 are W_Q, D..2D-1 W_K, 2D..3D-1 W_V
//   in_proj_bias   [3D]     out_proj_weight [D, D]     out_proj_bias [D]
//
//   Q = x_q  W_Q^T + b_Q    [B, L, D]      (x_q: the queries' inputs)
//   K = x_kv W_K^T + b_K    [B, S, D]      (x_kv: the keys'/values' inputs;
//   V = x_kv W_V^T + b_V    [B, S, D]       x_kv = x_q for self-attention)
//   head_h = Attention(Q_h, K_h, V_h)      Q_h = columns h*Dh..(h+1)*Dh-1, Dh = D/H
//   MHA(x) = Concat(head_1, ..., head_H) W_O^T + b_O     [B, L, D]
//
// Without biases (the config's "bias": false, nanoGPT's bias=False),
// in_proj_bias and out_proj_bias are empty and the "+ b" terms are absent.
// A checkpoint with separate q_proj / k_proj / v_proj weights (the config's
// "qkv": "separate") is fused into in_proj_weight = [W_Q; W_K; W_V] by the
// loader (models/transformer.cpp), which is the same product row for row.
//
// mask_value (the config's "mask_value"; absent: -inf): what blocked keys'
// scores become before softmax (AttentionOptions::mask_value,
// engine/attention.h): with it, a query whose keys are all blocked gets
// uniform weights over them. It holds for every call of the module.
//
// Grouped-query attention (the config's "n_kv_heads" = Hkv, dividing H;
// engine/attention.h): K and V have Hkv heads of Dh, so W_K and W_V are
// [Hkv*Dh, D] and in_proj_weight is [D + 2*Hkv*Dh, D] (rows W_Q, W_K, W_V):
//   K = x_kv W_K^T + b_K    [B, S, Hkv*Dh]     V likewise
//   head_h = Attention(Q_h, K_g, V_g)          g = h / (H / Hkv)
// The KV cache holds Hkv*Dh columns per position. Hkv = H is the layout above.
//
// Rotary positions (the config's "pos_encoding": "rotary", layers/rotary.h):
// with a RotaryEmbedding, forward_appending turns Q (H heads) and K (Hkv
// heads) of every new token by that token's position, right after the
// projection and BEFORE K is appended to the cache (the cache holds turned
// keys, each turned once); V is never turned, and forward_fixed
// (cross-attention) refuses a module with rotary positions.
//
// D % H == 0 is required. Per-head weights come back as [B, H, L, S], never
// averaged over heads. Cross-attention is the same module with x_kv = the
// encoder memory, so L != S is normal.
//
// Hooks (layers/hooks.h): a module given hooks (set_hooks; the model gives
// its hooks to every module) calls them at two places of every call — the
// mask before softmax, and z = Concat(heads) before W_O — and hands its
// output to the point "{call}.output". Study instruments (head ablation, mask
// overrides: models/study/interventions.h) are hooks; none by default.
//
// A module loaded from a checkpoint carries its tensor prefix as its name
// ("transformer.decoder.layers.1.self_attn"), and an Error of the attention
// it runs (or of a hook it calls) starts with that name: an overflow names the
// layer and the tensor ("...: attention: value holds a non-finite number ...").
// Its call name is the trace's ("decoder.1.self_attn"): what hooks see.
//
// Observing (layers/observer.h): with an observer, the call hands out
// "weights" (and, when it wants everything, q, k, v, scores, mask, z and
// output); weights and scores are then computed whatever the options say.
// q [B, L, D] and k [B, S, Hkv*Dh] are what the scores use: turned, with
// rotary positions; such a module also hands out q_unrotated [B, L, D] and
// k_unrotated [B, n, Hkv*Dh] (the new positions' keys before turning: the
// whole sequence in a whole-sequence pass).
#pragma once

#include "engine/attention.h"
#include "engine/quant/q8_0.h"
#include "engine/tensor.h"
#include "layers/hooks.h"
#include "layers/kv_cache.h"
#include "layers/observer.h"
#include "layers/rotary.h"

#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

struct MultiHeadAttentionWeights {
    Tensor in_proj_weight;   // [3D, D]; with Hkv key/value heads [D + 2*Hkv*Dh, D]
    Tensor in_proj_bias;     // [3D] ([D + 2*Hkv*Dh]), or empty: no bias
    Tensor out_proj_weight;  // [D, D]
    Tensor out_proj_bias;    // [D], or empty: no bias
    // Q8_0 forms of the two weights (the products then run in int8), or empty.
    Q8Matrix in_proj_q8{}, out_proj_q8{};
};

class MultiHeadAttention {
public:
    // heads: H, or AttentionHeads{H, Hkv} for grouped-query attention.
    // name: the module's tensor prefix in the checkpoint, or empty.
    // mask_value: absent, blocked scores are -inf; given (finite), they are replaced by it.
    // rotary: the rotary positions of a self-attention (head_dim must be D/H), or none.
    // call: the call's trace name ("decoder.1.cross_attn"), what hooks see; or empty.
    MultiHeadAttention(const MultiHeadAttentionWeights& weights, AttentionHeads heads, std::string name = "",
                       std::optional<float> mask_value = std::nullopt,
                       std::optional<RotaryEmbedding> rotary = std::nullopt, std::string call = "");

    // x_q [B, L, D], x_kv [B, S, D] -> output [B, L, D] (+ weights [B, H, L, S]).
    // The code the model runs: forward(x, x) (the same tensor) is self-attention,
    // forward_appending on an empty cache (one fused Q|K|V product); otherwise
    // cross-attention, forward_fixed on an empty cache. The path (materialized
    // or streaming) is options.path, resolved inside the engine.
    AttentionResult forward(const Tensor& x_q, const Tensor& x_kv, const Mask& mask = Mask(),
                            const AttentionOptions& options = {}, Observer* observer = nullptr) const;

    // Self-attention over a growing sequence: x_new [B, n, D] are the newest
    // positions. Their keys and values are appended to `cache`, and their
    // queries attend over every cached position: mask broadcasts to
    // [B, H, n, S] with S = cache length after appending. The model's
    // self-attention call (encoder and decoder layers); forward(x, x) runs it too.
    // first_positions [B]: the position of row b's first new token (its
    // tokens are at first_positions[b] + 0..n-1), what rotary positions turn
    // by; empty: every row starts at the cache's length (0 when empty).
    // The rows already in `cache` are the ones earlier calls appended, whose
    // values those calls found finite: only the n new rows' values are checked
    // (AttentionOptions::value_rows_known_finite = the length before
    // appending). A call that throws takes its rows back out of the cache.
    AttentionResult forward_appending(const Tensor& x_new, KVCache& cache, const Mask& mask,
                                      const AttentionOptions& options, Observer* observer = nullptr,
                                      const std::vector<int64_t>& first_positions = {}) const;
    // Attention over keys and values that do not change between calls
    // (cross-attention to an encoder memory): projected from x_kv on the first
    // call (cache empty), whose attention checks them all, and kept in `cache`
    // once it succeeded; reused after, unchecked.
    AttentionResult forward_fixed(const Tensor& x_q, const Tensor& x_kv, KVCache& cache, const Mask& mask,
                                  const AttentionOptions& options, Observer* observer = nullptr) const;

    // The steps of forward, for callers that keep K and V (a KV cache).
    Tensor project_query(const Tensor& x_q) const;   // [B, L, D]
    Tensor project_key(const Tensor& x_kv) const;    // [B, S, Hkv*Dh] (= [B, S, D] when Hkv = H)
    Tensor project_value(const Tensor& x_kv) const;  // [B, S, Hkv*Dh]
    // Attention over heads of projected Q, K, V, then the output projection.
    AttentionResult attend(const Tensor& query, const Tensor& key, const Tensor& value, const Mask& mask,
                           const AttentionOptions& options, Observer* observer = nullptr) const;
    // The same over keys and values held by a KV cache (views, no copy).
    AttentionResult attend(const Tensor& query, const KVCache& cache, const Mask& mask,
                           const AttentionOptions& options, Observer* observer = nullptr) const;

    int64_t d_model() const { return d_model_; }
    int64_t heads() const { return heads_; }
    int64_t kv_heads() const { return kv_heads_; }            // Hkv
    int64_t kv_width() const { return kv_heads_ * head_dim_; }  // Hkv*Dh: K and V columns, a KV cache's width
    const std::string& name() const { return name_; }
    const std::optional<float>& mask_value() const { return mask_value_; }
    const std::optional<RotaryEmbedding>& rotary() const { return rotary_; }
    const std::string& call() const { return call_; }
    // W_O [D, D] and b_O [D] (or empty), read-only: head h's part of the output
    // is its Dh columns of z times columns h*Dh.. of W_O (direct logit attribution).
    const Tensor& out_proj_weight() const { return w_out_; }
    const Tensor& out_proj_bias() const { return b_out_; }

    // The hooks every call runs (layers/hooks.h), or none (nullptr, the default).
    void set_hooks(const Hooks* hooks) { hooks_ = hooks; }

private:
    // The call itself: `first` is the slot of its first query, `whole_pass`
    // false in a KV-cache step (what hooks are told).
    AttentionResult attend_views(ConstBatchView query, ConstBatchView key, ConstBatchView value, const Mask& mask,
                                 const AttentionOptions& options, Observer* observer, int64_t first,
                                 bool whole_pass) const;

    int64_t d_model_, heads_, kv_heads_, head_dim_;
    std::string name_, call_, output_point_;  // output_point_: "{call}.output"
    std::optional<float> mask_value_;
    std::optional<RotaryEmbedding> rotary_;  // none: no rotary positions
    const Hooks* hooks_ = nullptr;
    Tensor project(const Tensor& x, int64_t part) const;  // x W^T + b with W_Q, W_K or W_V (part 0, 1, 2)
    int64_t part_offset(int64_t part) const;  // first row of part 0, 1, 2 in in_proj: 0, D, D + Hkv*Dh
    int64_t part_width(int64_t part) const;   // its rows: D, Hkv*Dh, Hkv*Dh
    Tensor w_in_, b_in_;  // in_proj_weight [D + 2*Hkv*Dh, D] = W_Q; W_K; W_V, and in_proj_bias (or empty)
    Tensor w_out_, b_out_;
    Q8Matrix q8_in_, q8_out_;  // the Q8_0 weights, or empty
};

}  // namespace tinyformer
