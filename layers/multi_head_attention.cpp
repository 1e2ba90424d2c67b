#include "layers/multi_head_attention.h"

#include "engine/matmul.h"
#include "engine/ops.h"

#include <algorithm>

namespace tinyformer {

namespace {

// Rows [first, first+count) of a matrix, or elements of a vector, as a Tensor.
Tensor slice_rows(const Tensor& t, int64_t first, int64_t count) {
    const int64_t row = t.rank() == 2 ? t.dim(1) : 1;
    Shape shape = t.shape();
    shape[0] = count;
    Tensor part(shape);
    std::copy(t.data() + first * row, t.data() + (first + count) * row, part.data());
    return part;
}

void check_shape(const Tensor& t, const Shape& expected, const char* name) {
    if (t.shape() != expected)
        fail("MultiHeadAttention: ", name, " must be ", shape_string(expected), ", got ", shape_string(t.shape()));
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionWeights& weights, int64_t heads) : heads_(heads) {
    if (weights.out_proj_weight.rank() != 2)
        fail("MultiHeadAttention: out_proj.weight must be [D,D], got ", shape_string(weights.out_proj_weight.shape()));
    d_model_ = weights.out_proj_weight.dim(0);
    const int64_t D = d_model_;
    if (D < 1) fail("MultiHeadAttention: d_model must be >= 1, got ", D);
    if (heads < 1 || D % heads != 0)
        fail("MultiHeadAttention: d_model (", D, ") must be divisible by the number of heads (", heads, ")");
    check_shape(weights.in_proj_weight, {3 * D, D}, "in_proj_weight");
    check_shape(weights.in_proj_bias, {3 * D}, "in_proj_bias");
    check_shape(weights.out_proj_weight, {D, D}, "out_proj.weight");
    check_shape(weights.out_proj_bias, {D}, "out_proj.bias");
    w_query_ = slice_rows(weights.in_proj_weight, 0, D);
    w_key_ = slice_rows(weights.in_proj_weight, D, D);
    w_value_ = slice_rows(weights.in_proj_weight, 2 * D, D);
    b_query_ = slice_rows(weights.in_proj_bias, 0, D);
    b_key_ = slice_rows(weights.in_proj_bias, D, D);
    b_value_ = slice_rows(weights.in_proj_bias, 2 * D, D);
    w_out_ = weights.out_proj_weight;
    b_out_ = weights.out_proj_bias;
}

void MultiHeadAttention::set_zeroed_heads(std::vector<int64_t> heads) {
    for (int64_t head : heads)
        if (head < 0 || head >= heads_)
            fail("MultiHeadAttention: cannot zero head ", head, "; the heads are 0..", heads_ - 1);
    zeroed_heads_ = std::move(heads);
}

Tensor MultiHeadAttention::project_query(const Tensor& x_q) const { return linear(x_q, w_query_, b_query_); }
Tensor MultiHeadAttention::project_key(const Tensor& x_kv) const { return linear(x_kv, w_key_, b_key_); }
Tensor MultiHeadAttention::project_value(const Tensor& x_kv) const { return linear(x_kv, w_value_, b_value_); }

AttentionResult MultiHeadAttention::attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const Mask& mask, const AttentionOptions& options, Observer* observer) const {
    if (key.rank() != 3 || value.rank() != 3)
        fail("MultiHeadAttention: key and value must be [B,S,D], got ", shape_string(key.shape()), " and ",
             shape_string(value.shape()));
    return attend_views(query, key.batch_view(), value.batch_view(), mask, options, observer,
                        [&]() -> const Tensor& { return key; }, [&]() -> const Tensor& { return value; });
}

AttentionResult MultiHeadAttention::attend(const Tensor& query, const KVCache& cache, const Mask& mask,
                                           const AttentionOptions& options, Observer* observer) const {
    return attend_views(query, cache.keys(), cache.values(), mask, options, observer,
                        [&] { return cache.key_tensor(); }, [&] { return cache.value_tensor(); });
}

template <typename KeyTensor, typename ValueTensor>
AttentionResult MultiHeadAttention::attend_views(const Tensor& query, ConstBatchView key, ConstBatchView value,
                                                 const Mask& mask, const AttentionOptions& options, Observer* observer,
                                                 KeyTensor key_tensor, ValueTensor value_tensor) const {
    const bool everything = observer && observer->wants_everything();
    AttentionOptions asked = options;  // what the observer wants computed
    asked.want_weights = options.want_weights || observer;
    asked.want_scores = options.want_scores || everything;
    if (everything) {
        observer->record("q", query);  // [B, L, D]
        observer->record("k", key_tensor());    // [B, S, D]
        observer->record("v", value_tensor());  // [B, S, D]
    }
    // Heads are column blocks of Q, K, V: the engine reads them as views.
    AttentionResult result = multi_head_scaled_dot_product_attention(query, key, value, heads_, mask, asked);
    const int64_t head_dim = d_model_ / heads_;
    for (int64_t head : zeroed_heads_)  // ablation: the head's columns of Concat(heads) [B, L, D]
        for (int64_t row = 0; row < result.output.dim(0) * result.output.dim(1); ++row) {
            float* columns = result.output.data() + row * d_model_ + head * head_dim;
            std::fill(columns, columns + head_dim, 0.0f);
        }
    if (everything) {
        const int64_t B = query.dim(0), L = query.dim(1), S = key.rows;
        observer->record("scores", result.scores);  // [B, H, L, S], before the mask
        BoolTensor allowed{{B, L, S}, std::vector<uint8_t>(static_cast<size_t>(B * L * S))};
        for (int64_t b = 0; b < B; ++b)  // the model's masks are the same for every head
            for (int64_t l = 0; l < L; ++l)
                for (int64_t s = 0; s < S; ++s) allowed.values[static_cast<size_t>((b * L + l) * S + s)] = mask.allows(b, 0, l, s);
        observer->record_mask("mask", allowed);  // [B, L, S], 1 = may attend
    }
    if (observer) observer->record("weights", result.weights);  // [B, H, L, S]
    if (everything) observer->record("z", result.output);        // Concat(heads) [B, L, D], before W_O
    result.output = linear(result.output, w_out_, b_out_);  // Concat(heads) W_O^T + b_O, [B, L, D]
    const Padding& padding = options.query_padding;
    for (int64_t b = 0; b < padding.batch(); ++b)  // b_O must not revive a padded query: its row stays 0
        for (int64_t l = 0; l < padding.length(); ++l)
            if (padding.is_padding(b, l)) {
                MatrixView row = result.output.matrix(b).rows_range(l, 1);
                std::fill(row.data, row.data + d_model_, 0.0f);
            }
    if (everything) observer->record("output", result.output);  // [B, L, D]
    return result;
}

AttentionResult MultiHeadAttention::forward(const Tensor& x_q, const Tensor& x_kv, const Mask& mask,
                                            const AttentionOptions& options, Observer* observer) const {
    for (const Tensor* x : {&x_q, &x_kv})
        if (x->rank() != 3 || x->dim(2) != d_model_)
            fail("MultiHeadAttention: inputs must be [B,L,D] with D=", d_model_, "; got x_q ",
                 shape_string(x_q.shape()), ", x_kv ", shape_string(x_kv.shape()));
    return attend(project_query(x_q), project_key(x_kv), project_value(x_kv), mask, options, observer);
}

AttentionResult MultiHeadAttention::forward_appending(const Tensor& x_new, KVCache& cache, const Mask& mask,
                                                     const AttentionOptions& options, Observer* observer) const {
    if (x_new.rank() != 3 || x_new.dim(2) != d_model_)
        fail("MultiHeadAttention: input must be [B,n,D] with D=", d_model_, "; got ", shape_string(x_new.shape()));
    if (!cache.empty() && cache.batch() != x_new.dim(0))
        fail("MultiHeadAttention: the cache holds B=", cache.batch(), " rows but the input has B=", x_new.dim(0));
    // Written at rows length..length+n-1 of the cache's buffers (taken over when empty: no copy).
    cache.append(project_key(x_new), project_value(x_new));
    return attend(project_query(x_new), cache, mask, options, observer);
}

AttentionResult MultiHeadAttention::forward_fixed(const Tensor& x_q, const Tensor& x_kv, KVCache& cache,
                                                  const Mask& mask, const AttentionOptions& options,
                                                  Observer* observer) const {
    if (cache.empty()) {
        for (const Tensor* x : {&x_q, &x_kv})
            if (x->rank() != 3 || x->dim(2) != d_model_)
                fail("MultiHeadAttention: inputs must be [B,L,D] with D=", d_model_, "; got x_q ",
                     shape_string(x_q.shape()), ", x_kv ", shape_string(x_kv.shape()));
        cache.assign(project_key(x_kv), project_value(x_kv));
    }
    return attend(project_query(x_q), cache, mask, options, observer);
}

}  // namespace tinyformer
