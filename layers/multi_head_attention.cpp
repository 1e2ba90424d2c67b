#include "layers/multi_head_attention.h"

#include "engine/matmul.h"
#include "engine/ops.h"

#include <algorithm>
#include <cmath>

namespace tinyformer {

namespace {

// The numbers a view shows, as a tensor [B, L, C] (for an observer).
Tensor tensor_of(ConstBatchView view) {
    Tensor copy({view.batch, view.rows, view.cols});
    for (int64_t b = 0; b < view.batch; ++b)
        for (int64_t l = 0; l < view.rows; ++l) {
            const float* from = view.matrix(b).row(l);
            std::copy(from, from + view.cols, copy.data() + (b * view.rows + l) * view.cols);
        }
    return copy;
}

void check_shape(const Tensor& t, const Shape& expected, const char* name) {
    if (t.shape() != expected)
        fail("MultiHeadAttention: ", name, " must be ", shape_string(expected), ", got ", shape_string(t.shape()));
}

// options, with the first `rows` rows of the values known to be finite.
AttentionOptions with_rows_known_finite(const AttentionOptions& options, int64_t rows) {
    AttentionOptions checked = options;
    checked.value_rows_known_finite = std::max(options.value_rows_known_finite, rows);
    return checked;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionWeights& weights, AttentionHeads heads,
                                       std::string name, std::optional<float> mask_value,
                                       std::optional<RotaryEmbedding> rotary, std::string call)
    : heads_(heads.query), kv_heads_(heads.key_value), name_(std::move(name)), call_(std::move(call)),
      output_point_(call_.empty() ? "output" : call_ + ".output"), mask_value_(mask_value),
      rotary_(std::move(rotary)) {
    if (weights.out_proj_weight.rank() != 2)
        fail("MultiHeadAttention: out_proj.weight must be [D,D], got ", shape_string(weights.out_proj_weight.shape()));
    d_model_ = weights.out_proj_weight.dim(0);
    const int64_t D = d_model_;
    if (D < 1) fail("MultiHeadAttention: d_model must be >= 1, got ", D);
    if (heads_ < 1 || D % heads_ != 0)
        fail("MultiHeadAttention: d_model (", D, ") must be divisible by the number of heads (", heads_, ")");
    if (kv_heads_ < 1 || heads_ % kv_heads_ != 0)
        fail("MultiHeadAttention: the key/value heads (", kv_heads_, ") must be >= 1 and divide the heads (", heads_,
             ")");
    head_dim_ = D / heads_;
    if (rotary_ && rotary_->head_dim() != head_dim_)
        fail("MultiHeadAttention: the rotary positions are for heads of ", rotary_->head_dim(),
             " dimensions, but the heads have Dh = D/H = ", head_dim_);
    const int64_t rows = D + 2 * kv_width();  // 3D when Hkv = H
    check_shape(weights.in_proj_weight, {rows, D}, "in_proj_weight");
    if (!weights.in_proj_bias.empty()) check_shape(weights.in_proj_bias, {rows}, "in_proj_bias");
    check_shape(weights.out_proj_weight, {D, D}, "out_proj.weight");
    if (!weights.out_proj_bias.empty()) check_shape(weights.out_proj_bias, {D}, "out_proj.bias");
    if (mask_value && !std::isfinite(*mask_value))
        fail("MultiHeadAttention: mask_value must be finite, got ", *mask_value);
    w_in_ = weights.in_proj_weight;
    b_in_ = weights.in_proj_bias;
    w_out_ = weights.out_proj_weight;
    b_out_ = weights.out_proj_bias;
    const auto check_q8 = [](const Q8Matrix& q8, const Tensor& weight, const char* name) {
        if (!q8.empty() && (q8.rows() != weight.dim(0) || q8.cols() != weight.dim(1)))
            fail("MultiHeadAttention: the Q8_0 ", name, " is [", q8.rows(), ",", q8.cols(), "] but the weight is ",
                 shape_string(weight.shape()));
    };
    check_q8(weights.in_proj_q8, w_in_, "in_proj_weight");
    check_q8(weights.out_proj_q8, w_out_, "out_proj.weight");
    q8_in_ = weights.in_proj_q8;
    q8_out_ = weights.out_proj_q8;
}

namespace {

// x W^T + b, W given as float32 rows or, when `q8` is not empty, as Q8_0 (the same rows; runq.c's int8 product).
Tensor project_rows(const Tensor& x, ConstMatrixView weight, const Q8View& q8, const float* bias) {
    return q8.rows ? linear_q8(x, q8, bias) : linear(x, weight, bias);
}

}  // namespace

int64_t MultiHeadAttention::part_offset(int64_t part) const { return part == 0 ? 0 : d_model_ + (part - 1) * kv_width(); }
int64_t MultiHeadAttention::part_width(int64_t part) const { return part == 0 ? d_model_ : kv_width(); }

// W_Q (part 0: rows 0..D-1 of in_proj), W_K (1: the next Hkv*Dh rows), W_V
// (2: the last Hkv*Dh), read in place.
Tensor MultiHeadAttention::project(const Tensor& x, int64_t part) const {
    const Q8View q8 = q8_in_.empty() ? Q8View{} : q8_in_.view().rows_range(part_offset(part), part_width(part));
    return project_rows(x, w_in_.matrix().rows_range(part_offset(part), part_width(part)), q8,
                        b_in_.empty() ? nullptr : b_in_.data() + part_offset(part));
}

Tensor MultiHeadAttention::project_query(const Tensor& x_q) const { return project(x_q, 0); }
Tensor MultiHeadAttention::project_key(const Tensor& x_kv) const { return project(x_kv, 1); }
Tensor MultiHeadAttention::project_value(const Tensor& x_kv) const { return project(x_kv, 2); }

AttentionResult MultiHeadAttention::attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const Mask& mask, const AttentionOptions& options, Observer* observer) const {
    if (key.rank() != 3 || value.rank() != 3)
        fail("MultiHeadAttention: key and value must be [B,S,D], got ", shape_string(key.shape()), " and ",
             shape_string(value.shape()));
    if (query.rank() != 3) fail("MultiHeadAttention: query must be [B,L,D], got ", shape_string(query.shape()));
    return attend_views(query.batch_view(), key.batch_view(), value.batch_view(), mask, options, observer,
                        options.first_query.value_or(0), !options.first_query);
}

AttentionResult MultiHeadAttention::attend(const Tensor& query, const KVCache& cache, const Mask& mask,
                                           const AttentionOptions& options, Observer* observer) const {
    if (query.rank() != 3) fail("MultiHeadAttention: query must be [B,L,D], got ", shape_string(query.shape()));
    return attend_views(query.batch_view(), cache.keys(), cache.values(), mask, options, observer,
                        options.first_query.value_or(0), !options.first_query);
}

AttentionResult MultiHeadAttention::attend_views(ConstBatchView query, ConstBatchView key, ConstBatchView value,
                                                 const Mask& model_mask, const AttentionOptions& options,
                                                 Observer* observer, int64_t first, bool whole_pass) const {
    const bool everything = observer && observer->wants_everything();
    AttentionOptions asked = options;  // what the observer wants computed
    asked.want_weights = options.want_weights || observer;
    asked.want_scores = options.want_scores || everything;
    if (mask_value_) asked.mask_value = mask_value_;  // the model's: blocked scores are replaced by it
    if (everything) {
        observer->record("q", tensor_of(query));  // [B, L, D]
        observer->record("k", tensor_of(key));    // [B, S, Hkv*Dh]
        observer->record("v", tensor_of(value));  // [B, S, Hkv*Dh]
    }
    const AttentionCallInfo call{call_, query.batch, heads_, query.rows, key.rows, first, whole_pass};
    std::optional<Mask> replaced;  // by a hook
    AttentionResult result;
    try {
        if (hooks_) replaced = hooks_->attention_mask(call, model_mask);
        // Heads are column blocks of Q, K, V: the engine reads them as views.
        result = multi_head_scaled_dot_product_attention(query, key, value, AttentionHeads{heads_, kv_heads_},
                                                         replaced ? *replaced : model_mask, asked);
        if (hooks_) hooks_->attention_heads(call, result.output);  // z = Concat(heads) [B, L, D]
    } catch (const Error& error) {
        if (name_.empty()) throw;
        fail(name_, ": ", error.message());  // which layer's attention, e.g. an overflow in its values
    }
    const Mask& mask = replaced ? *replaced : model_mask;  // the mask used
    if (everything) {
        const int64_t B = query.batch, L = query.rows, S = key.rows;
        observer->record("scores", result.scores);  // [B, H, L, S], before the mask
        BoolTensor allowed{{B, L, S}, std::vector<uint8_t>(static_cast<size_t>(B * L * S))};
        for (int64_t b = 0; b < B; ++b)  // the model's masks are the same for every head
            for (int64_t l = 0; l < L; ++l)
                for (int64_t s = 0; s < S; ++s) allowed.values[static_cast<size_t>((b * L + l) * S + s)] = mask.allows(b, 0, l, s);
        observer->record_mask("mask", allowed);  // [B, L, S], 1 = may attend
        if (mask.has_bias()) observer->record("bias", mask.bias_tensor({B, heads_, L, S}));  // [B, H, L, S], ALiBi
    }
    if (observer) observer->record("weights", result.weights);  // [B, H, L, S]
    if (everything) observer->record("z", result.output);        // Concat(heads) [B, L, D], before W_O
    result.output = project_rows(result.output, w_out_.matrix(), q8_out_.view(),  // Concat(heads) W_O^T + b_O, [B, L, D]
                                 b_out_.empty() ? nullptr : b_out_.data());
    zero_padded_queries(result.output, options.query_padding);  // b_O must not revive a padded query: its row stays 0
    if (hooks_) hooks_->residual({output_point_, first, whole_pass}, result.output);
    if (everything) observer->record("output", result.output);  // [B, L, D]
    return result;
}

AttentionResult MultiHeadAttention::forward(const Tensor& x_q, const Tensor& x_kv, const Mask& mask,
                                            const AttentionOptions& options, Observer* observer) const {
    for (const Tensor* x : {&x_q, &x_kv})
        if (x->rank() != 3 || x->dim(2) != d_model_)
            fail("MultiHeadAttention: inputs must be [B,L,D] with D=", d_model_, "; got x_q ",
                 shape_string(x_q.shape()), ", x_kv ", shape_string(x_kv.shape()));
    // The model's own paths, with a cache that lives for this call only.
    KVCache keys_values;
    if (&x_q == &x_kv) return forward_appending(x_q, keys_values, mask, options, observer);  // self-attention
    return forward_fixed(x_q, x_kv, keys_values, mask, options, observer);                  // cross-attention
}

AttentionResult MultiHeadAttention::forward_appending(const Tensor& x_new, KVCache& cache, const Mask& mask,
                                                     const AttentionOptions& options, Observer* observer,
                                                     const std::vector<int64_t>& first_positions) const {
    if (x_new.rank() != 3 || x_new.dim(2) != d_model_)
        fail("MultiHeadAttention: input must be [B,n,D] with D=", d_model_, "; got ", shape_string(x_new.shape()));
    if (!cache.empty() && cache.batch() != x_new.dim(0))
        fail("MultiHeadAttention: the cache holds B=", cache.batch(), " rows but the input has B=", x_new.dim(0));
    if (!first_positions.empty() && static_cast<int64_t>(first_positions.size()) != x_new.dim(0))
        fail("MultiHeadAttention: first_positions has ", first_positions.size(), " values for B=", x_new.dim(0),
             " rows");
    // Self-attention: Q, K and V in one product, [Q | K | V] = x in_proj_weight^T + in_proj_bias,
    // [B, n, D + 2*Hkv*Dh] (one sgemm, or at a decoding step one sgemv, instead of three), each read in place.
    Tensor qkv = project_rows(x_new, w_in_.matrix(), q8_in_.view(), b_in_.empty() ? nullptr : b_in_.data());
    const int64_t B = x_new.dim(0), n = x_new.dim(1), width = qkv.dim(2);
    const auto part = [&](int64_t p) {
        return ConstBatchView{qkv.data() + part_offset(p), B, n, part_width(p), n * width, width};
    };
    if (rotary_) {
        // Turn Q and K by each token's own position, before K goes into the cache.
        if (observer && observer->wants_everything()) {
            observer->record("q_unrotated", tensor_of(part(0)));  // [B, n, D]
            observer->record("k_unrotated", tensor_of(part(1)));  // [B, n, Hkv*Dh]
        }
        for (int64_t b = 0; b < B; ++b) {
            const int64_t first = first_positions.empty() ? cache.length() : first_positions[static_cast<size_t>(b)];
            for (int64_t t = 0; t < n; ++t) {
                float* row = qkv.data() + (b * n + t) * width;  // [Q | K | V] of one token
                rotary_->rotate(row, heads_, row + part_offset(1), kv_heads_, first + t);
            }
        }
    }
    // The rows cached before this call were found finite by the calls that
    // appended them: only the n new rows' values are checked.
    const int64_t checked_rows = cache.length();
    const bool whole_pass = cache.empty() && !options.first_query;  // a whole pass starts on an empty cache
    cache.append(part(1), part(2));  // copied to rows length..length+n-1 of the cache's buffers
    try {
        return attend_views(part(0), cache.keys(), cache.values(), mask, with_rows_known_finite(options, checked_rows),
                            observer, checked_rows, whole_pass);
    } catch (...) {
        cache.truncate(checked_rows);  // rows not found finite never stay in the cache
        throw;
    }
}

AttentionResult MultiHeadAttention::forward_fixed(const Tensor& x_q, const Tensor& x_kv, KVCache& cache,
                                                  const Mask& mask, const AttentionOptions& options,
                                                  Observer* observer) const {
    if (rotary_)
        fail("MultiHeadAttention", name_.empty() ? "" : " " + name_,
             ": rotary positions belong to self-attention; this module cannot attend to fixed keys (cross-attention)");
    if (!cache.empty())  // filled by an earlier call, whose attention checked every value
        return attend(project_query(x_q), cache, mask, with_rows_known_finite(options, cache.length()), observer);
    for (const Tensor* x : {&x_q, &x_kv})
        if (x->rank() != 3 || x->dim(2) != d_model_)
            fail("MultiHeadAttention: inputs must be [B,L,D] with D=", d_model_, "; got x_q ",
                 shape_string(x_q.shape()), ", x_kv ", shape_string(x_kv.shape()));
    Tensor key = project_key(x_kv), value = project_value(x_kv);
    AttentionResult result = attend(project_query(x_q), key, value, mask, options, observer);  // every value checked
    cache.assign(std::move(key), std::move(value));  // kept only once checked
    return result;
}

}  // namespace tinyformer
