#include "engine/attention.h"

#include "engine/matmul.h"
#include "engine/ops.h"
#include "engine/bit_cast.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <limits>

namespace tinyformer {

namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// One (batch, head) slice of the problem, as 2-D views into the big tensors.
struct HeadSlice {
    ConstMatrixView query;  // [L, Dk]
    ConstMatrixView key;    // [S, Dk]
    ConstMatrixView value;  // [S, Dv]
    MatrixView output;      // [L, Dv]
    MatrixView weights;     // [L, S]; data == nullptr when not wanted
    MatrixView scores;      // [L, S], Q K^T / sqrt(Dk) before the mask; data == nullptr when not wanted
    int64_t batch, head;
};

// What every slice shares: the mask, the query padding, the scale, and the
// input shapes for error messages.
struct Problem {
    const Mask& mask;
    bool mask_blocks_nothing;
    const Padding& query_padding;
    float scale;  // 1 / sqrt(Dk)
    float blocked_score;  // what a blocked key's score becomes: -inf, or options.mask_value
    int64_t heads;  // H, the query heads
    ConstBatchView query;  // for error messages
    ConstBatchView key;

    bool is_padded_query(int64_t b, int64_t l) const {
        return !query_padding.empty() && query_padding.is_padding(b, l);
    }
    std::string where(const HeadSlice& slice, int64_t l) const {
        std::string text = "query " + std::to_string(l) + " of batch " + std::to_string(slice.batch);
        return heads > 1 ? text + ", head " + std::to_string(slice.head) : text;
    }
};

// True when every one of n floats is finite: an exponent field of all ones
// means inf or NaN. Integer OR over the row: vectorised, no branch per score.
bool all_finite(const float* values, int64_t n) {
    uint32_t non_finite = 0;
    for (int64_t j = 0; j < n; ++j)
        non_finite |= (bit_cast<uint32_t>(values[j]) & 0x7F800000u) == 0x7F800000u;
    return non_finite == 0;
}

void check_scores_finite(const Problem& problem, const HeadSlice& slice, int64_t l, int64_t first_key,
                         const float* scores, int64_t count) {
    if (all_finite(scores, count)) return;
    for (int64_t j = 0; j < count; ++j)
        if (!std::isfinite(scores[j]))
            fail("attention: the score of ", problem.where(slice, l), " with key ", first_key + j,
                 " is not finite (query ", shape_string(problem.query.shape()), ", key ",
                 shape_string(problem.key.shape()), "): query and key must be finite and Q K^T / sqrt(Dk) must fit "
                 "in float32");
}

[[noreturn]] void fail_empty_row(const Problem& problem, const HeadSlice& slice, int64_t l) {
    fail("attention: ", problem.where(slice, l), " may attend no key (mask ", shape_string(problem.mask.shape()),
         " blocks all ", slice.key.rows, "): softmax has no distribution. Allow at least one key, or mark the "
         "query as padding (options.query_padding) to define its output as 0");
}

// Adds the mask M to one query's scores for keys [first_key, first_key+count):
// `blocked` where the key is blocked — -inf (weight exactly 0 after softmax),
// or the mask_value that replaces the score — and + bias where an additive
// mask carries one.
void apply_mask(float* scores, int64_t first_key, int64_t count, const Mask::Row& row, float blocked) {
    if (row.step == 0) {  // the mask broadcasts over keys: one answer for the whole row
        if (!row.allowed[0])
            std::fill(scores, scores + count, blocked);
        else if (row.bias)
            for (int64_t j = 0; j < count; ++j) scores[j] += row.bias[0];
        return;
    }
    const uint8_t* allowed = row.allowed + first_key * row.step;
    if (row.bias) {
        const float* bias = row.bias + first_key * row.step;
        for (int64_t j = 0; j < count; ++j) scores[j] = allowed[j] ? scores[j] + bias[j] : blocked;
    } else {
        for (int64_t j = 0; j < count; ++j) scores[j] = allowed[j] ? scores[j] : blocked;
    }
}

void zero_row(float* row, int64_t n) { std::fill(row, row + n, 0.0f); }

// A = softmax(Q K^T / sqrt(Dk) + M), O = A V — the formula, written out.
void attend_materialized(const Problem& problem, const HeadSlice& slice, float* scratch) {
    const int64_t L = slice.query.rows, S = slice.key.rows;
    MatrixView scores = slice.weights;
    if (!scores.data) scores = {scratch, L, S, S};  // room for L * S floats
    gemm(slice.query, Transpose::No, slice.key, Transpose::Yes, scores, problem.scale);  // [L, S]
    for (int64_t l = 0; l < L; ++l) {
        float* row = scores.row(l);
        check_scores_finite(problem, slice, l, 0, row, S);
        if (slice.scores.data) std::copy(row, row + S, slice.scores.row(l));  // kept as they were before the mask
        if (problem.is_padded_query(slice.batch, l)) {
            zero_row(row, S);
            continue;
        }
        if (!problem.mask_blocks_nothing)
            apply_mask(row, 0, S, problem.mask.row(slice.batch, slice.head, l), problem.blocked_score);
        if (!softmax_row(row, S)) fail_empty_row(problem, slice, l);  // over S, the key axis
    }
    gemm(scores, Transpose::No, slice.value, Transpose::No, slice.output);  // [L, Dv]; a padded row: sum of 0 * v = +0
}

// True when no non-padded query of rows [q0, q0+rows) may attend any key of
// [s0, s0+keys): the cells of an arbitrary mask, checked before skipping.
bool tile_blocked(const Problem& problem, const HeadSlice& slice, int64_t q0, int64_t rows, int64_t s0, int64_t keys) {
    for (int64_t r = 0; r < rows; ++r) {
        if (problem.is_padded_query(slice.batch, q0 + r)) continue;
        const Mask::Row row = problem.mask.row(slice.batch, slice.head, q0 + r);
        if (row.step == 0) {
            if (row.allowed[0]) return false;
            continue;
        }
        const uint8_t* allowed = row.allowed + s0;
        uint8_t any = 0;
        for (int64_t j = 0; j < keys; ++j) any |= allowed[j];
        if (any) return false;
    }
    return true;
}

// The same result without holding [L, S]: for each block of queries, walk the
// keys tile by tile keeping, per query, the running maximum m and the running
// sum z of exp(score - m); the output row accumulates sum exp(score - m) v and
// is rescaled by exp(m_old - m_new) whenever m grows. At the end O = acc / z.
//
// What the mask blocks is not computed: the tiles of a query block cover only
// the keys between the first and the last key any of its queries may attend
// (Mask::key_range: causal, local window, prefix-LM, padding), and when a
// row's allowed keys have holes (an arbitrary mask) a tile whose every cell is
// blocked is skipped. Skipped scores would have had weight exactly 0; they are
// not checked for being finite either.
struct Computed {
    int64_t tiles = 0, scores = 0;
};

// The floats attend_streaming needs in `scratch`.
int64_t streaming_scratch_size(int64_t L, int64_t S, int64_t query_block, int64_t key_tile) {
    const int64_t block = std::min(query_block, L), tile = std::min(key_tile, S);
    return block * tile + 2 * block;  // one tile of scores, and the running maximum and sum per query
}

Computed attend_streaming(const Problem& problem, const HeadSlice& slice, int64_t query_block, int64_t key_tile,
                          float* scratch) {
    Computed computed;
    const int64_t L = slice.query.rows, S = slice.key.rows, Dv = slice.value.cols;
    const int64_t block = std::min(query_block, L), tile = std::min(key_tile, S);
    float* running_max = scratch + block * tile;
    float* running_sum = running_max + block;

    for (int64_t q0 = 0; q0 < L; q0 += block) {
        const int64_t rows = std::min(block, L - q0);
        MatrixView accumulator = slice.output.rows_range(q0, rows);  // [rows, Dv]
        // The keys this block may attend: [first_key, last_key].
        int64_t first_key = 0, last_key = S - 1;
        bool holes = false;
        // With a mask_value, a blocked key is a score like any other: every key is computed.
        const bool blocked_keys_weigh_zero = problem.blocked_score == kMinusInfinity;
        if (!problem.mask_blocks_nothing && blocked_keys_weigh_zero) {
            first_key = S;
            last_key = -1;
            for (int64_t r = 0; r < rows; ++r) {
                if (problem.is_padded_query(slice.batch, q0 + r)) continue;
                const Mask::KeyRange range = problem.mask.key_range(slice.batch, slice.head, q0 + r);
                if (range.first > range.last) continue;  // this query may attend nothing: an error below
                first_key = std::min(first_key, range.first);
                last_key = std::max(last_key, std::min(range.last, S - 1));
                holes = holes || !range.contiguous;
            }
        }
        for (int64_t r = 0; r < rows; ++r) {
            zero_row(accumulator.row(r), Dv);
            running_max[r] = kMinusInfinity;
            running_sum[r] = 0.0f;
        }
        // Tiles of equal width over [first_key, last_key], at most `tile` wide: a
        // masked block's keys do not end in one narrow tile (a slow small product).
        const int64_t span = last_key + 1 - first_key;
        const int64_t tiles = span > 0 ? (span + tile - 1) / tile : 0;
        const int64_t width = tiles > 0 ? (span + tiles - 1) / tiles : tile;
        for (int64_t s0 = first_key; s0 <= last_key; s0 += width) {
            const int64_t keys = std::min(width, last_key + 1 - s0);
            if (holes && tile_blocked(problem, slice, q0, rows, s0, keys)) continue;
            ++computed.tiles;
            computed.scores += rows * keys;
            MatrixView probabilities{scratch, rows, keys, keys};
            gemm(slice.query.rows_range(q0, rows), Transpose::No, slice.key.rows_range(s0, keys), Transpose::Yes,
                 probabilities, problem.scale);  // scores of this tile, [rows, keys]
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t l = q0 + r;
                float* row = probabilities.row(r);
                check_scores_finite(problem, slice, l, s0, row, keys);
                if (!problem.is_padded_query(slice.batch, l) && !problem.mask_blocks_nothing)
                    apply_mask(row, s0, keys, problem.mask.row(slice.batch, slice.head, l), problem.blocked_score);
                const float tile_max = row_max(row, keys);
                if (problem.is_padded_query(slice.batch, l) || tile_max == kMinusInfinity) {
                    zero_row(row, keys);  // nothing of this tile takes part
                    continue;
                }
                const float new_max = std::max(running_max[r], tile_max);
                const float correction = std::exp(running_max[r] - new_max);  // exp(-inf) = 0 the first time
                const float tile_sum = exp_shifted_sum(row, keys, new_max);  // row := exp(score - m)
                if (correction != 1.0f)
                    for (int64_t c = 0; c < Dv; ++c) accumulator(r, c) *= correction;
                running_sum[r] = running_sum[r] * correction + tile_sum;
                running_max[r] = new_max;
            }
            gemm(probabilities, Transpose::No, slice.value.rows_range(s0, keys), Transpose::No, accumulator, 1.0f,
                 1.0f);  // acc += P V_tile
        }
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t l = q0 + r;
            if (problem.is_padded_query(slice.batch, l)) continue;  // +0 + 0 * v: it stays +0
            if (running_sum[r] == 0.0f) fail_empty_row(problem, slice, l);
            const float inverse = 1.0f / running_sum[r];
            for (int64_t c = 0; c < Dv; ++c) accumulator(r, c) *= inverse;
        }
    }
    return computed;
}

void check_inputs(ConstBatchView query, ConstBatchView key, ConstBatchView value, AttentionHeads heads,
                  int64_t value_rows_known_finite) {
    // Built only for a message: this runs at every decoding step.
    auto shapes = [&] {
        return "query " + shape_string(query.shape()) + ", key " + shape_string(key.shape()) + ", value " +
               shape_string(value.shape());
    };
    if (query.batch != key.batch || key.batch != value.batch)
        fail("attention: batch dimensions must match; got ", shapes());
    const int64_t H = heads.query, Hkv = heads.key_value;
    if (H < 1) fail("attention: heads must be >= 1, got ", H);
    if (Hkv < 1 || H % Hkv != 0)
        fail("attention: the key/value heads Hkv=", Hkv, " must be >= 1 and divide the H=", H, " query heads");
    if (query.cols % H != 0)
        fail("attention: the query's last axis (", query.cols, ") is not divisible by H=", H, " heads; got ", shapes());
    for (int64_t last : {key.cols, value.cols})
        if (last % Hkv != 0)
            fail("attention: the key/value last axis (", last, ") is not divisible by Hkv=", Hkv,
                 " key/value heads; got ", shapes());
    if (query.cols / H != key.cols / Hkv)
        fail("attention: key has Dk=", key.cols / Hkv, " but query has Dk=", query.cols / H, " (", shapes(),
             H != Hkv ? text_of("; H=", H, " query heads, Hkv=", Hkv, " key/value heads)") : std::string(")"));
    if (key.rows != value.rows)
        fail("attention: key has S=", key.rows, " but value has S=", value.rows, " (", shapes(), ")");
    if (key.rows == 0 || query.cols == 0)
        fail("attention: source length S and key dimension Dk must be positive; got ", shapes());
    if (value_rows_known_finite < 0)
        fail("attention: value_rows_known_finite must be >= 0, got ", value_rows_known_finite);
    // The rows not known to be finite yet: all of them by default; at a
    // decoding step with a KV cache, only the new position's.
    const int64_t known = std::min(value_rows_known_finite, value.rows);
    const ConstBatchView unchecked{value.data + known * value.row_stride, value.batch, value.rows - known, value.cols,
                                   value.batch_stride, value.row_stride};
    if (!unchecked.all_finite()) fail("attention: value holds a non-finite number (", shapes(), ")");
}

}  // namespace

ConstMatrixView split_heads(ConstBatchView x, int64_t heads, int64_t b, int64_t h) {
    const int64_t head_dim = x.cols / heads;
    return x.matrix(b).columns(h * head_dim, head_dim);  // [L, Dh]
}

MatrixView merge_heads(Tensor& concat, int64_t heads, int64_t b, int64_t h) {
    const int64_t head_dim = concat.dim(2) / heads;
    return concat.matrix(b).columns(h * head_dim, head_dim);  // [L, Dh] of [B, L, H*Dh]
}

void zero_padded_queries(Tensor& x, const Padding& padding) {
    for (int64_t b = 0; b < padding.batch(); ++b)
        for (int64_t l = 0; l < padding.length(); ++l)
            if (padding.is_padding(b, l)) zero_row(x.matrix(b).row(l), x.dim(2));
}

AttentionPath resolve_path(const AttentionOptions& options, const char* who) {
    AttentionPath path = options.path;
    if (path == AttentionPath::Automatic)
        path = options.want_weights || options.want_scores ? AttentionPath::Materialized : AttentionPath::Streaming;
    if ((options.want_weights || options.want_scores) && path == AttentionPath::Streaming)
        fail(who, ": weights or scores were asked for, but the streaming path never holds them; use the materialized path");
    return path;
}

const char* path_name(AttentionPath path) {
    switch (path) {
        case AttentionPath::Materialized: return "materialized";
        case AttentionPath::Streaming: return "streaming";
        case AttentionPath::Automatic: return "automatic";
    }
    return "unknown";
}

AttentionResult multi_head_scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        AttentionHeads heads, const Mask& mask,
                                                        const AttentionOptions& options) {
    if (query.rank() != 3 || key.rank() != 3 || value.rank() != 3)
        fail("attention: query, key and value must be three-dimensional [B,L,Dk], [B,S,Dk], [B,S,Dv]; got query ",
             shape_string(query.shape()), ", key ", shape_string(key.shape()), ", value ", shape_string(value.shape()));
    return multi_head_scaled_dot_product_attention(query.batch_view(), key.batch_view(), value.batch_view(), heads, mask,
                                                   options);
}

AttentionResult multi_head_scaled_dot_product_attention(ConstBatchView query, ConstBatchView key, ConstBatchView value,
                                                        AttentionHeads head_counts, const Mask& mask,
                                                        const AttentionOptions& options) {
    check_inputs(query, key, value, head_counts, options.value_rows_known_finite);
    const int64_t heads = head_counts.query, kv_heads = head_counts.key_value;
    const int64_t B = query.batch, L = query.rows, S = key.rows;
    const int64_t Dk = query.cols / heads, Dv = value.cols / kv_heads;
    mask.check_broadcasts_to({B, heads, L, S}, "attention");
    if (!options.query_padding.empty() &&
        (options.query_padding.batch() != B || options.query_padding.length() != L))
        fail("attention: query_padding is [", options.query_padding.batch(), ",", options.query_padding.length(),
             "] but the query is [B,L] = [", B, ",", L, "]");
    if (options.query_block < 1 || options.key_tile < 1)
        fail("attention: query_block and key_tile must be >= 1, got ", options.query_block, " and ", options.key_tile);

    const AttentionPath path = resolve_path(options, "attention");

    if (options.mask_value && !std::isfinite(*options.mask_value))
        fail("attention: mask_value must be finite, got ", *options.mask_value);
    const Problem problem{mask,
                          mask.allows_everything(),
                          options.query_padding,
                          1.0f / std::sqrt(float(Dk)),
                          options.mask_value.value_or(kMinusInfinity),
                          heads,
                          query,
                          key};
    AttentionResult result{Tensor({B, L, heads * Dv}), Tensor(), Tensor(), path};
    if (options.want_weights) result.weights = Tensor({B, heads, L, S});
    if (options.want_scores) result.scores = Tensor({B, heads, L, S});

    // Scores of one head at a time: [L, S] when the weights are not kept, or a tile
    // of them when streaming (a buffer of the pool: a decoding step allocates nothing).
    const int64_t scratch_size = path == AttentionPath::Streaming
                                     ? streaming_scratch_size(L, S, options.query_block, options.key_tile)
                                 : options.want_weights ? 0
                                                        : L * S;
    FloatBuffer scratch(static_cast<size_t>(scratch_size));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t g = head_counts.key_value_head(h);  // h / (H / Hkv): the group's K/V head, shared
            const HeadSlice slice{split_heads(query, heads, b, h),    // [L, Dk] of [B, L, H*Dk]
                                  split_heads(key, kv_heads, b, g),   // [S, Dk] of [B, S, Hkv*Dk]
                                  split_heads(value, kv_heads, b, g), // [S, Dv] of [B, S, Hkv*Dv]
                                  merge_heads(result.output, heads, b, h),  // [L, Dv] of [B, L, H*Dv]
                                  options.want_weights ? result.weights.matrix(b * heads + h) : MatrixView{},
                                  options.want_scores ? result.scores.matrix(b * heads + h) : MatrixView{},
                                  b,
                                  h};
            if (path == AttentionPath::Materialized) {
                attend_materialized(problem, slice, scratch.data());
                result.scores_computed += L * S;
            } else {
                const Computed computed =
                    attend_streaming(problem, slice, options.query_block, options.key_tile, scratch.data());
                result.key_tiles_computed += computed.tiles;
                result.scores_computed += computed.scores;
            }
        }
    // No zeroing here: a padded query's weights are all +0 and both paths sum
    // 0 * v onto +0, so its output is already 0 (issue #37: a zeroing here
    // changed nothing, so it went; see zero_padded_queries for the others).
    return result;
}

AttentionResult scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                             const Mask& mask, const AttentionOptions& options) {
    AttentionResult result = multi_head_scaled_dot_product_attention(query, key, value, 1, mask, options);
    if (!result.weights.empty())  // [B, 1, L, S] -> [B, L, S]
        result.weights = result.weights.reshaped({query.dim(0), query.dim(1), key.dim(1)});
    if (!result.scores.empty())
        result.scores = result.scores.reshaped({query.dim(0), query.dim(1), key.dim(1)});
    return result;
}

}  // namespace tinyformer
