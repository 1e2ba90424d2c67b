// Scaled dot-product attention (lesson 10.3, section 2):
//
//     A = softmax(Q K^T / sqrt(Dk) + M)      softmax over S, the key axis
//     O = A V
//
//   query Q [B, L, Dk]     key K [B, S, Dk]     value V [B, S, Dv]
//   scores / weights A [B, L, S]              output O [B, L, Dv]
//
// M comes from a Mask (engine/mask.h, true = may attend): blocked keys get
// -inf before softmax, so their weight is exactly 0 and each query's allowed
// weights sum to 1. A finite additive bias in the mask is added as it is.
//
// options.mask_value (a finite number, the config's "mask_value"): blocked
// keys' scores are REPLACED by it instead (PyTorch's masked_fill(mask == 0,
// mask_value) before softmax, as the Annotated Transformer does with -1e9):
//   scores[l, s] = allowed(l, s) ? Q_l K_s / sqrt(Dk) + bias : mask_value
// A blocked key then keeps the weight exp(mask_value - max) / z: exactly 0 in
// float32 whenever some allowed score is above mask_value + 87.3 (so -1e9
// gives the -inf numbers for every query that may attend a key), and a query
// whose keys are ALL blocked gets uniform weights 1/S over its S keys (all
// its scores are equal) instead of the Error below. With mask_value the
// streaming path computes every key's score (it skips no masked tile).
//
// Query padding (options.query_padding [B, L], true = padding): the output
// row and weight row of a padded query are exactly 0 — masking padded keys
// does not remove padded queries' outputs, so this is done here, explicitly.
//
// A query that may attend no key has no softmax distribution (without
// mask_value: every score is -inf): Error naming the batch and query index —
// unless that query is padding (then 0). Padded queries are 0 with
// mask_value too. No NaN ever leaves this function.
//
// Two paths, one answer (to float rounding):
//   Materialized: scores [L, S] via sgemm, mask, softmax, then A V. Memory
//                 O(L*S). The only path that can return the weights.
//   Streaming:    walks key tiles with an online softmax (running maximum and
//                 sum per query, rescaling the partial output when the
//                 maximum grows), never holding more than a tile of scores.
//   Automatic picks Materialized iff weights (or scores) are wanted, else Streaming.
//
// Multi-head form: query [B, L, H*Dk], key [B, S, H*Dk], value [B, S, H*Dv];
// head h is the column block h of the last axis, read as a strided 2-D view
// (split_heads, below: no copy). Output [B, L, H*Dv] (heads concatenated in
// place: merge_heads), weights [B, H, L, S], mask broadcast to [B, H, L, S].
//
// Grouped-query attention (GQA; multi-query when Hkv = 1): the heads are
// AttentionHeads{H, Hkv}, Hkv dividing H, and key/value are NARROWER than
// the query: key [B, S, Hkv*Dk], value [B, S, Hkv*Dv]. The H/Hkv query heads
// of a group share one key/value head:
//
//   query head h reads key/value head  g = h / (H / Hkv)      (integer division)
//
// (llama2.c's h / kv_mul; PyTorch's repeat_interleave(H / Hkv) of K and V
// along the head axis, then ordinary attention.) Here head g is the same
// strided view for each of its query heads: nothing is copied or expanded.
// Hkv = H is ordinary multi-head attention. The counts are given, never
// guessed from the widths: widths that do not fit them are an Error.
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <optional>

namespace tinyformer {

// Head split and concat, the one place they happen (strided 2-D views, no copy):
//
//   split_heads(x, H, b, h):  x [B, L, H*Dh] -> head h of batch row b, [L, Dh]
//                             = columns h*Dh..(h+1)*Dh-1 of x[b]
//   merge_heads(z, H, b, h):  where head h of batch row b goes in
//                             Concat(head_1, ..., head_H) z [B, L, H*Dh]: the
//                             same columns, writable, [L, Dh]
//
// Dh = x.cols / H (the caller has checked that H divides it). A [B, L, H, Dh]
// reshape and transpose to [B, H, L, Dh] in PyTorch; here nothing moves.
ConstMatrixView split_heads(ConstBatchView x, int64_t heads, int64_t b, int64_t h);
MatrixView merge_heads(Tensor& concat, int64_t heads, int64_t b, int64_t h);

// Query padding, the one named function: rows l of x [B, L, N] where
// padding(b, l) is true become exactly +0 (not -0). Empty padding: nothing.
// It runs on two floors, each for its own guarantee (see the callers):
// MultiHeadAttention's output after W_O (b_O must not revive the row), and the
// model's outputs (the residual, FFN and final norm make padded rows non-zero
// again). Attention itself needs none: a padded query's weights are all +0, so
// its output sums to +0 (multi_head_scaled_dot_product_attention).
void zero_padded_queries(Tensor& x, const Padding& padding);

// The head counts of one multi-head call: H query heads and Hkv key/value
// heads (GQA, see the top of this file). From one number: H = Hkv.
struct AttentionHeads {
    int64_t query = 1;      // H
    int64_t key_value = 1;  // Hkv, divides H
    AttentionHeads(int64_t heads) : query(heads), key_value(heads) {}  // NOLINT: H heads of everything
    AttentionHeads(int64_t query_heads, int64_t key_value_heads) : query(query_heads), key_value(key_value_heads) {}
    // The key/value head that query head h reads: h / (H / Hkv).
    int64_t key_value_head(int64_t h) const { return h / (query / key_value); }
};

enum class AttentionPath { Automatic, Materialized, Streaming };
const char* path_name(AttentionPath path);  // "materialized", "streaming", "automatic"

struct AttentionOptions {
    AttentionPath path = AttentionPath::Automatic;
    bool want_weights = false;     // needs the materialized path
    bool want_scores = false;      // Q K^T / sqrt(Dk) before the mask (a trace); materialized path too
    Padding query_padding;         // [B, L], true = padded query; empty = none
    int64_t query_block = 256;     // streaming: queries per block
    int64_t key_tile = 2048;       // streaming: keys per tile (256 x 2048 floats = 2 MiB of scores)
    // Absent: blocked keys' scores are -inf. Given (finite): they are replaced
    // by it (masked_fill semantics, see the top of this file).
    std::optional<float> mask_value;
    // Rows 0..n-1 of every batch row of `value` are already known to be
    // finite (a KV cache's earlier positions, checked by an earlier step):
    // the check that the values are finite reads only the rows from n on.
    // 0 (the default, the reference): every row is checked.
    int64_t value_rows_known_finite = 0;
    // A KV-cache decoding step: the slot of this call's first query (its
    // queries are slots first_query..first_query+L-1; a decoder layer passes
    // its self-attention cache length before the step to both its calls).
    // Absent: a whole pass, queries 0..L-1. Not read here: a module hands it
    // to its hooks (layers/hooks.h).
    std::optional<int64_t> first_query;
};

// The path that runs: Automatic is Materialized when weights are wanted (only
// that path holds them), else Streaming. Error, prefixed by `who`, when
// weights are asked of the streaming path.
AttentionPath resolve_path(const AttentionOptions& options, const char* who);

struct AttentionResult {
    Tensor output;        // [B, L, Dv], or [B, L, H*Dv] for the multi-head form
    Tensor weights;       // [B, L, S] or [B, H, L, S] when asked for, else empty
    Tensor scores;        // the same shape, before the mask, when asked for (want_scores), else empty
    AttentionPath path;   // the path that ran: Materialized or Streaming
    // Streaming: the key tiles whose scores were computed, summed over batch
    // rows, heads and query blocks (blocked tiles are skipped); materialized: 0.
    int64_t key_tiles_computed = 0;
    // Scores computed (one query times one key), summed over batch rows and
    // heads: B*H*L*S on the materialized path, fewer when streaming skips.
    int64_t scores_computed = 0;
};

AttentionResult scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                             const Mask& mask = Mask(), const AttentionOptions& options = {});

// heads: H, or AttentionHeads{H, Hkv} with key [B, S, Hkv*Dk], value [B, S, Hkv*Dv].
AttentionResult multi_head_scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        AttentionHeads heads, const Mask& mask = Mask(),
                                                        const AttentionOptions& options = {});
// The same with query, key and value as batch views [B, L, H*Dk], [B, S, Hkv*Dk],
// [B, S, Hkv*Dv]: the first S rows of a KV cache's buffers (layers/kv_cache.h),
// or the Q, K, V column blocks of one fused projection, read in place.
AttentionResult multi_head_scaled_dot_product_attention(ConstBatchView query, ConstBatchView key, ConstBatchView value,
                                                        AttentionHeads heads, const Mask& mask = Mask(),
                                                        const AttentionOptions& options = {});

}  // namespace tinyformer
