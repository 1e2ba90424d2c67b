// Masks — which keys each query may attend. ONE meaning inside the engine:
//
//     mask.allows(b, h, l, s) == true   <=>   query l may attend key s
//
// (the meaning of a Boolean attn_mask in torch.nn.functional.
// scaled_dot_product_attention). A Mask has shape [B, H, L, S]; any axis may
// be 1 and then broadcasts, as in PyTorch (a causal mask is [1,1,T,T], a key
// padding mask [B,1,1,S]). Attention applies it to the scores BEFORE softmax,
// as -inf, so a blocked key gets weight exactly 0 and the allowed weights of
// each row still sum to 1; a query whose keys are all blocked is an Error
// (unless it is a padded query, whose output is 0). A model whose config
// gives "mask_value" (e.g. -1e9, the Annotated Transformer) has blocked
// scores REPLACED by that value instead (masked_fill): then a query whose
// keys are all blocked gets uniform weights over its keys (engine/attention.h).
//
// Raw Boolean tensors from elsewhere are never guessed at: they enter only
// through a conversion named for where they come from —
//   from_torch_mha_attn_mask / from_torch_key_padding_mask:
//       nn.MultiheadAttention, True = blocked (ignore this key)
//   from_torch_sdpa_mask:
//       F.scaled_dot_product_attention, True = allowed (take part)
//   from_additive:
//       a float mask added to the scores: 0 = allowed, -inf = blocked. Any
//       other finite value is kept as a bias: it only suppresses a key, it
//       never guarantees weight 0.
//   alibi, relative_bias:
//       ALiBi's per-head linear position bias, T5's learned bucketed one
//       (below): every key allowed, a finite bias per cell; AND it with a
//       causal or padding mask.
//   sliding_window:
//       Mistral's window over the tokens' own positions (below).
//
// Padding — which positions of a [B, T] batch are padding (true = padding,
// PyTorch's key_padding_mask meaning). Padded keys are masked for every
// query; padded queries are given output 0 by attention (see attention.h).
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

// One cell of one attention call's [L, S] matrix, set by an intervention
// (models/study/interventions.h, a hook of layers/hooks.h): row
// `query`, column `key`; allowed = the key may be attended, else blocked.
struct MaskCell {
    int64_t query = 0, key = 0;
    bool allowed = false;
    friend bool operator==(const MaskCell&, const MaskCell&) = default;
};

// A Boolean tensor as it arrives from outside (PyTorch, a file): values 0/1.
struct BoolTensor {
    Shape shape;
    std::vector<uint8_t> values;
};

class Padding {
public:
    Padding() = default;  // no padding at all (batch 0, length 0 = "absent")
    // Right padding: position t of row b is padding iff t >= lengths[b].
    static Padding from_lengths(const std::vector<int64_t>& lengths, int64_t length);
    // [B, T] flags, true = padding (PyTorch's *_key_padding_mask).
    static Padding from_flags(const BoolTensor& is_padding);

    bool empty() const { return batch_ == 0 && length_ == 0; }
    int64_t batch() const { return batch_; }
    int64_t length() const { return length_; }
    bool is_padding(int64_t b, int64_t t) const { return flags_[static_cast<size_t>(b * length_ + t)] != 0; }

    friend bool operator==(const Padding&, const Padding&) = default;

private:
    int64_t batch_ = 0, length_ = 0;
    std::vector<uint8_t> flags_;
};

// T5's buckets of a relative position r = key position - query position
// (Hugging Face's T5Attention._relative_position_bucket computes the same):
//   bidirectional (a query may see later keys):
//              n = buckets / 2 (integer division); r > 0 adds n; d = |r|
//   otherwise: n = buckets; d = max(-r, 0) (a later key is blocked anyway)
//   exact = n / 2:  d < exact  ->  bucket d (one bucket per distance)
//                   else       ->  exact + floor(log(d / exact) / log(max_distance / exact) * (n - exact)),
//                                  at most n - 1 (log-spaced: every d >= max_distance shares the last)
// computed in float32 as PyTorch's T5 computes it (the log of max_distance / exact
// in double), so that a whole-number boundary falls on the same side as there;
// tests/test_relative_bias.cpp holds every bucket of 26 settings to the project's
// PyTorch function (data/reference/relative_buckets.json). Error unless
// exact >= 1 and max_distance > exact.
struct RelativeBuckets {
    int64_t buckets = 32, max_distance = 128;  // T5's
    bool bidirectional = false;
};
int64_t relative_position_bucket(int64_t relative_position, const RelativeBuckets& buckets);

class Mask {
public:
    // Allows every query to attend every key: shape [1,1,1,1], true.
    Mask();

    // --- factories (all in the true = allowed meaning) ---
    // [1,1,T,T]: query l sees key s iff s <= l (lower triangle with diagonal).
    static Mask causal(int64_t length);
    // [1,1,L,S]: the L queries are the last L of S positions (decoding with a
    // KV cache): query l sees key s iff s <= S - L + l.
    static Mask causal(int64_t queries, int64_t keys);
    // [B,1,T,T]: query l sees key s iff s < prefix_lengths[b] or s <= l. The
    // prefix is bidirectional, the rest causal (prefix-LM).
    static Mask prefix_lm(const std::vector<int64_t>& prefix_lengths, int64_t length);
    // [B,1,1,S]: every query sees key s of row b iff s is not padding.
    static Mask key_padding(const Padding& padding);
    // [1,1,T,T]: query l sees key s iff |l - s| <= radius (a local window).
    static Mask local_window(int64_t length, int64_t radius);
    // Arbitrary: a shape of rank 2..4 ([L,S], [B,L,S] or [B,H,L,S]) and its
    // values, true = allowed.
    static Mask from_allowed(const BoolTensor& allowed);

    // --- conversions named for their source ---
    // nn.MultiheadAttention bool attn_mask, True = blocked: [L,S], [B,L,S] or
    // [B,H,L,S] (PyTorch's [B*H,L,S] must be reshaped to [B,H,L,S] first).
    static Mask from_torch_mha_attn_mask(const BoolTensor& blocked);
    // nn.MultiheadAttention key_padding_mask [B,S], True = ignore this key.
    static Mask from_torch_key_padding_mask(const BoolTensor& is_padding);
    // F.scaled_dot_product_attention bool attn_mask, True = allowed: [L,S],
    // [B,L,S] or [B,H,L,S].
    static Mask from_torch_sdpa_mask(const BoolTensor& allowed);
    // Additive float mask: 0 allowed, -inf blocked, other finite = a bias kept
    // and added to the scores. NaN and +inf are refused.
    static Mask from_additive(const Tensor& additive);

    // ALiBi (Press et al., "Train Short, Test Long"): a bias on the scores,
    // no position table. Shape [B,H,L,S] with B = query_positions.size()
    // (1 row broadcasts over the batch), H = heads:
    //     bias[b, h, l, s] = -slopes[h] * |query_positions[b][l] - key_positions[b][s]|
    // slopes = alibi_slopes(heads). Every key is allowed: the bias only
    // lowers far keys; blocking is another mask's job (AND it with causal,
    // padding). Positions are the tokens' own (a KV-cache slot's token's
    // position, not the slot index); query_positions [B][L], key_positions
    // [B][S], the same B, every row the same L and S, positions >= 0.
    static Mask alibi(int64_t heads, const std::vector<std::vector<int64_t>>& query_positions,
                      const std::vector<std::vector<int64_t>>& key_positions);
    // A whole sequence of T tokens at positions 0..T-1: [1,H,T,T],
    // bias[0, h, i, j] = -slopes[h] * |i - j|.
    static Mask alibi(int64_t heads, int64_t length);
    // T5's relative position bias (Raffel et al. 2020): a learned table
    // [buckets, H], one number per head for each bucket of the relative
    // position r = key position - query position (relative_position_bucket):
    //     bias[b, h, l, s] = table[bucket(key_positions[b][s] - query_positions[b][l]), h]
    // Shape [B,H,L,S], every key allowed, positions as for alibi.
    static Mask relative_bias(const Tensor& table, const RelativeBuckets& buckets,
                              const std::vector<std::vector<int64_t>>& query_positions,
                              const std::vector<std::vector<int64_t>>& key_positions);
    // Sliding-window attention (Mistral, as Hugging Face's modeling_mistral
    // masks it): a query sees the `window` newest positions up to its own,
    //     allowed[b, 0, l, s] = q - window < k <= q,   q = query_positions[b][l], k = key_positions[b][s]
    // (causal by itself; W keys, the query's own included). Shape [B,1,L,S],
    // positions as for alibi; Error unless window >= 1.
    static Mask sliding_window(int64_t window, const std::vector<std::vector<int64_t>>& query_positions,
                               const std::vector<std::vector<int64_t>>& key_positions);

    // This mask broadcast to [batch, H|1, queries, keys] (its heads axis as it
    // is) and materialized, with `cells` set in every batch row and head, in
    // order (a later cell wins); the bias, if any, stays on the cells still
    // allowed, a blocked cell keeps none (as operator&), so a cell this mask
    // blocked and an override allows gets bias 0. Key ranges are computed again, so an
    // override that makes a hole gives contiguous = false. Error unless every
    // cell lies in [queries, keys] and the mask broadcasts to that shape.
    Mask with_cells(int64_t batch, int64_t queries, int64_t keys, const std::vector<MaskCell>& cells) const;

    // AND: a key is allowed only where both masks allow it (biases add).
    // Shapes must broadcast against each other.
    Mask operator&(const Mask& other) const;

    const Shape& shape() const { return shape_; }  // always rank 4
    bool allows(int64_t b, int64_t h, int64_t l, int64_t s) const {
        return allowed_[static_cast<size_t>(index(b, h, l, s))] != 0;
    }
    bool has_bias() const { return !bias_.empty(); }
    float bias(int64_t b, int64_t h, int64_t l, int64_t s) const {
        return has_bias() ? bias_[static_cast<size_t>(index(b, h, l, s))] : 0.0f;
    }
    // The bias broadcast to `target` = [B,H,L,S] (0 where a key is blocked,
    // and everywhere when there is none): what a trace records as "bias".
    Tensor bias_tensor(const Shape& target) const;
    // One query's view over the keys, for kernels: key s is allowed iff
    // allowed[s * step] != 0; its bias (if any) is bias[s * step].
    struct Row {
        const uint8_t* allowed;
        const float* bias;  // nullptr when the mask has no bias
        int64_t step;       // 1, or 0 when the mask broadcasts over keys
    };
    Row row(int64_t b, int64_t h, int64_t l) const;

    // True for the default mask: no key is blocked and there is no bias.
    bool allows_everything() const;

    // Where one query's allowed keys lie, for kernels that skip what the
    // mask blocks: every allowed key s has first <= s <= last (none allowed
    // when first > last). `contiguous`: every key in [first, last] is
    // allowed — true for causal, local-window, prefix-LM and padding masks
    // and their ANDs; an arbitrary mask may have holes, so a kernel must
    // check its cells before skipping inside [first, last]. A mask that
    // broadcasts over keys gives [0, kAllKeys] or none. Computed once, when
    // the mask is built.
    static constexpr int64_t kAllKeys = INT64_MAX;
    struct KeyRange {
        int64_t first, last;
        bool contiguous;
    };
    KeyRange key_range(int64_t b, int64_t h, int64_t l) const {
        return ranges_[static_cast<size_t>(b * range_strides_[0] + h * range_strides_[1] + l * range_strides_[2])];
    }

    // Throws unless this mask broadcasts to `target` = [B,H,L,S]; `op` names
    // the caller in the message.
    void check_broadcasts_to(const Shape& target, const char* op) const;

    // The lesson's picture of one (batch, head) slice, one line per query:
    //   q0: k0
    //   q1: k0 k1
    // A query that may attend no key shows "(none)".
    std::string to_ascii(int64_t queries, int64_t keys, int64_t batch = 0, int64_t head = 0) const;

private:
    Mask(Shape shape, std::vector<uint8_t> allowed, std::vector<float> bias);
    int64_t index(int64_t b, int64_t h, int64_t l, int64_t s) const {
        return b * strides_[0] + h * strides_[1] + l * strides_[2] + s * strides_[3];
    }

    Shape shape_;                 // [B|1, H|1, L|1, S|1]
    int64_t strides_[4] = {};     // 0 on broadcast axes
    std::vector<uint8_t> allowed_;
    std::vector<float> bias_;     // empty, or one finite value per element
    std::vector<KeyRange> ranges_;  // one per [B|1, H|1, L|1] row of the mask
    int64_t range_strides_[3] = {};
};

// ALiBi's head slopes, [H] (Press et al.), a geometric sequence per head:
//   H a power of two:  slope_h = 2^(-8 (h+1) / H),  h = 0..H-1
//                      (H = 8: 1/2, 1/4, ..., 1/256)
//   otherwise:         n = 2^floor(log2 H); the n slopes of n, then the
//                      slopes of 2n at its even indices 0, 2, 4, ..., the
//                      first H - n of them
//                      (H = 6: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3)
// Error unless heads >= 1.
std::vector<float> alibi_slopes(int64_t heads);

// The masks of an encoder-decoder (sequence-to-sequence) model:
//   decoder_self = causal(T) AND key_padding(target)      [B,1,T,T]
//   cross        = key_padding(source)                    [B,1,1,S]
// (the encoder's own self-attention uses key_padding(source) alone).
struct Seq2SeqMasks {
    Mask decoder_self;
    Mask cross;
};
Seq2SeqMasks seq2seq_masks(const Padding& target, const Padding& source);
// The same for a target of T = target_length positions, where an empty Padding
// means that no position is padding: that side then has no key-padding part
// (cross = the allow-everything Mask(), which attention applies to no row).
Seq2SeqMasks seq2seq_masks(int64_t target_length, const Padding& target, const Padding& source);

}  // namespace tinyformer
