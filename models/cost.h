// Cost — what a Transformer layer costs, counted from its shapes alone
// (lesson 10.3, section 10 and practice 5). `tinyformer cost` prints it.
//
// B batch, T sequence length, D d_model, H heads (Dh = D/H), F feed-forward
// dimension, Hkv key/value heads (grouped-query attention; Hkv = H without
// it): K and V are W = Hkv*Dh wide, W = D when Hkv = H. One attention has L queries and S keys (self-attention L = S = T;
// cross-attention L = T target positions, S source positions).
//
//   MACs   multiply-adds of the matrix products (a MAC is 2 FLOPs). Bias
//          adds, LayerNorm, residual adds and the activation are not counted.
//   exps   softmax's exponentials, one per score: B*H*L*S. Softmax has no MACs.
//   bytes  float32 memory traffic of a part, 4 bytes per float: parameters
//          read + activations read + activations written, each tensor moved
//          once per part (perfect reuse inside a part, none between parts).
//          The attention core is counted as the materialized path does it:
//          the scores [B,H,L,S] are written by Q K^T, read and written by
//          softmax, read by weights x V.
//
//   part               MACs        bytes / 4
//   Q projection       B*L*D^2     D^2 + D + 2*B*L*D       (W_Q, b_Q; read x, write Q)
//   K projection       B*S*D*W     D*W + W + B*S*D + B*S*W (W_K [W, D]; read x, write K)
//   V projection       B*S*D*W     D*W + W + B*S*D + B*S*W
//   output projection  B*L*D^2     D^2 + D + 2*B*L*D
//   scores Q K^T       B*L*S*D     B*L*D + B*S*W + B*H*L*S (H heads of L*S*Dh: GQA
//                                                           shares K, it saves no MACs)
//   softmax            0           2*B*H*L*S               (B*H*L*S exps)
//   weights x V        B*L*S*D     B*H*L*S + B*S*W + B*L*D
//
// KV cache (decoding): each attention keeps K and V of every position,
//   2 * W * 4 bytes per position per sequence = 8*Hkv*Dh bytes (a layer),
// so grouped-query attention divides it by H/Hkv (Hkv = 1: by H).
//   FFN (T positions)  2*B*T*D*F   2*D*F + F + D + 2*B*T*D + 4*B*T*F
//                      (linear1 reads x and writes [B,T,F], the activation
//                      reads and writes it, linear2 reads it and writes y)
//
// Streaming attention (engine/attention.h) never writes the scores: its core
// moves Q and the output once and K, V once per block of `query_block`
// queries: bytes/4 = 2*B*L*D + ceil(L/query_block) * 2*B*S*W (the score tile
// is taken to stay in cache).
//
// Encoder layer (self-attention over T, then FFN):
//   4*B*T*D^2 (projections) + 2*B*T^2*D (Q K^T and weights x V) + 2*B*T*D*F (FFN)
// The T^2 terms equal projections + FFN where 2*B*T^2*D = B*T*(4D^2 + 2DF):
//   T* = (4D^2 + 2DF) / (2D) = 2D + F        (independent of B and H)
// With W = Hkv*Dh < D the projections are B*T*(2D^2 + 2DW): T* = D + W + F.
// Below T* the projections and the FFN dominate, above it the attention core.
// Alone, the core overtakes the FFN at T = F and the projections at T = 2D.
//
// Decoder layer (self-attention over T, cross-attention of T queries over S
// source positions, FFN): the self-attention T^2 terms 2*B*T^2*D against
// everything else, B*T*(6D^2 + 2DF + 2SD) + 2*B*S*D^2 (cross K and V are
// projected from the S source positions), meet where
//   T^2 - (3D + F + S) T - S D = 0,  T* = ((3D+F+S) + sqrt((3D+F+S)^2 + 4SD)) / 2.
// (With W = Hkv*Dh: T^2 - (2D + W + F + S) T - S W = 0.)
// This counts one full forward over T positions (training, or a prompt); a
// KV cache changes the per-step counts of decoding.
//
// Memory: the scores of one layer [B,H,T,T] take 4*B*H*T^2 bytes, the
// activations [B,T,D] 4*B*T*D: the scores are larger once T > D/H = Dh.
//
// Counts are exact 64-bit integers; a count that would overflow is an Error.
#pragma once

#include "engine/attention.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

struct CostShape {
    int64_t batch = 1;      // B
    int64_t d_model = 512;  // D
    int64_t heads = 8;      // H, must divide D
    int64_t ff = 2048;      // F
    int64_t kv_heads = 0;   // Hkv, divides H; 0: = H (no grouped-query attention)

    int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }      // Hkv
    int64_t key_value_width() const { return key_value_heads() * (d_model / heads); }  // W = Hkv*Dh
};

// Error naming the value when a size is < 1, or naming both D and H when H
// does not divide D (and Hkv and H when Hkv does not divide H).
void check_cost_shape(const CostShape& shape);

struct PartCost {
    std::string name;
    int64_t macs = 0;
    int64_t exps = 0;
    int64_t bytes = 0;
};

// One attention: L queries over S keys.
struct AttentionCost {
    std::string label;  // "self-attention" or "cross-attention"
    int64_t queries = 0, keys = 0;  // L, S
    PartCost query_projection, key_projection, value_projection, output_projection;
    PartCost scores, softmax, weights_values;
    int64_t score_bytes = 0;           // [B,H,L,S] float32: what the materialized path holds
    int64_t kv_cache_bytes = 0;        // K and V [B,S,W] float32: what a KV cache holds for the S keys
    int64_t streaming_core_bytes = 0;  // the core's traffic on the streaming path (see above)

    std::vector<PartCost> parts() const;  // the seven parts, in the order above
    int64_t projection_macs() const;      // Q, K, V, output
    int64_t core_macs() const;            // Q K^T + weights x V
    int64_t core_bytes() const;           // Q K^T + softmax + weights x V (materialized)
};

// A group of parts for "which part dominates": projections, attention core(s), FFN.
struct CostGroup {
    std::string name;
    int64_t macs = 0;
    int64_t bytes = 0;
};

struct LayerCost {
    int64_t length = 0;  // T
    AttentionCost self_attention;
    std::optional<AttentionCost> cross_attention;  // decoder layers only
    PartCost feed_forward;
    int64_t activation_bytes = 0;  // [B,T,D] float32
    int64_t hidden_bytes = 0;      // [B,T,F] float32, the FFN's hidden activations
    int64_t parameter_count = 0;   // projections, FFN and LayerNorms (2 or 3) with biases

    int64_t macs() const;
    int64_t bytes() const;
    int64_t quadratic_macs() const;  // the self-attention core: 2*B*T^2*D
    int64_t linear_macs() const;     // everything else: projections, FFN (and the cross core)
    // "projections" (of every attention), "self-attention core",
    // ["cross-attention core",] "FFN".
    std::vector<CostGroup> groups() const;
};

AttentionCost attention_cost(const CostShape& shape, int64_t queries, int64_t keys, const std::string& label);
// K and V of one position of one sequence in one attention's KV cache: 2 * Hkv*Dh * 4 bytes.
int64_t kv_cache_bytes_per_position(const CostShape& shape);
LayerCost encoder_layer_cost(const CostShape& shape, int64_t length);
LayerCost decoder_layer_cost(const CostShape& shape, int64_t target_length, int64_t source_length);

// The group(s) with the most MACs (or bytes): "FFN", or "FFN = self-attention core" on a tie.
std::string dominant_by_macs(const LayerCost& layer);
std::string dominant_by_bytes(const LayerCost& layer);

// T* = 2D + F (D + W + F with GQA): where an encoder layer's T^2 terms equal its projections + FFN.
int64_t encoder_crossover_length(const CostShape& shape);
// T* of a decoder layer with S source positions (the formula above).
double decoder_crossover_length(const CostShape& shape, int64_t source_length);

// Bytes one multi_head_scaled_dot_product_attention call allocates
// (engine/attention.cpp): the output [B,L,D]; the weights [B,H,L,S] when
// asked for; and one scratch buffer reused for every (batch, head) slice —
// the scores [L,S] on the materialized path without weights (none with them:
// it writes into the weights), a tile [min(block,L), min(tile,S)] plus two
// floats per query of a block on the streaming path.
struct AttentionPathBytes {
    int64_t output = 0, weights = 0, scratch = 0;
    int64_t total() const { return output + weights + scratch; }
};
AttentionPathBytes attention_path_bytes(const CostShape& shape, int64_t queries, int64_t keys,
                                        const AttentionOptions& options);

// The working memory of one whole-sequence pass of B sequences of L queries
// attending S keys through `attentions` attention calls, an upper estimate
// (every guard before a pass uses it, with engine/memory/available.h's require_available):
//   mask               2*B*L*S bytes       (a byte per [b, query, key], when dense; the
//                                          causal or prefix-LM mask and its AND with the
//                                          padding are both held while they combine:
//                                          measured, a 40,000-token prompt's pass peaks
//                                          at 3.1 GB, 2 bytes a cell)
//   recorded weights   (attentions + 1) * 4*B*H*L*S   when weights are recorded
//                                          (each call's, plus one being computed)
//   scores             4*B*H*min(L,256)*S  (one query block of scores per head)
//   activations        12 * 4*B*L*max(D,F) (about a dozen [B,L,D] / [B,L,F])
//   logits             4*B*L*V             (V = 0 for a pass without them)
//   bias               10*B*H*L*S          with an additive bias in the mask (ALiBi,
//                                          models/mask_policy.h): a flag and a float per
//                                          [b, head, query, key] of the mask, and of the
//                                          ALiBi term it is ANDed from
//   KV cache           4*2*B*S*W*layers    (keys and values of every layer, W = Hkv*Dh) when
//                                          the pass fills a decoding's KV cache (a prefill)
// In doubles: a file of token ids can ask for more than int64 holds.
struct PassMemory {
    double mask = 0, recorded_weights = 0, scores = 0, activations = 0, logits = 0, bias = 0, kv_cache = 0;
    double total() const { return mask + recorded_weights + scores + activations + logits + bias + kv_cache; }
};
PassMemory pass_memory(const CostShape& shape, int64_t queries, int64_t keys, int64_t attentions, bool recording,
                       int64_t vocabulary, bool additive_bias = false, int64_t cached_layers = 0,
                       int64_t cached_width = 0);

}  // namespace tinyformer
