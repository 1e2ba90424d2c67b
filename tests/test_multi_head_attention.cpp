// Tests for layers/multi_head_attention.*.

#include "engine/attention.h"
#include "engine/matmul.h"
#include "engine/random.h"
#include "layers/multi_head_attention.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace tinyformer;

namespace {

MultiHeadAttentionWeights random_weights(Random& random, int64_t D) {
    return {random.normal_tensor({3 * D, D}, 0.4f), random.normal_tensor({3 * D}, 0.2f),
            random.normal_tensor({D, D}, 0.4f), random.normal_tensor({D}, 0.2f)};
}

// y[b, t, o] = sum_i x[b, t, i] * W[row0 + o, i] + bias[row0 + o], by plain loops.
Tensor project_by_hand(const Tensor& x, const Tensor& W, const Tensor& bias, int64_t row0, int64_t out) {
    Tensor y({x.dim(0), x.dim(1), out});
    for (int64_t b = 0; b < x.dim(0); ++b)
        for (int64_t t = 0; t < x.dim(1); ++t)
            for (int64_t o = 0; o < out; ++o) {
                double sum = bias.at({row0 + o});
                for (int64_t i = 0; i < x.dim(2); ++i) sum += static_cast<double>(x.at({b, t, i})) * W.at({row0 + o, i});
                y.at({b, t, o}) = static_cast<float>(sum);
            }
    return y;
}

// Columns [first, first+count) of a [B, T, D] tensor, copied: a head's slice.
Tensor columns(const Tensor& x, int64_t first, int64_t count) {
    Tensor y({x.dim(0), x.dim(1), count});
    for (int64_t b = 0; b < x.dim(0); ++b)
        for (int64_t t = 0; t < x.dim(1); ++t)
            for (int64_t c = 0; c < count; ++c) y.at({b, t, c}) = x.at({b, t, first + c});
    return y;
}

}  // namespace

TEST_CASE("MultiHeadAttention equals a hand loop over heads calling scaled_dot_product_attention") {
    const int64_t B = 2, L = 3, S = 5, D = 12, H = 3, Dh = D / H;
    Random random(10);
    const MultiHeadAttentionWeights w = random_weights(random, D);
    const MultiHeadAttention attention(w, H);
    const Tensor x_q = random.normal_tensor({B, L, D});   // decoder states: L queries
    const Tensor x_kv = random.normal_tensor({B, S, D});  // encoder memory: S keys (cross-attention)
    const Mask mask = Mask::key_padding(Padding::from_lengths({5, 3}, S));
    AttentionOptions options;
    options.want_weights = true;
    const AttentionResult result = attention.forward(x_q, x_kv, mask, options);
    REQUIRE(result.output.shape() == Shape{B, L, D});
    REQUIRE(result.weights.shape() == Shape{B, H, L, S});

    // The hand loop: project with plain loops (rows 0..D-1 of in_proj are W_Q,
    // D..2D-1 W_K, 2D..3D-1 W_V), attend head by head, concatenate, W_O.
    const Tensor Q = project_by_hand(x_q, w.in_proj_weight, w.in_proj_bias, 0, D);
    const Tensor K = project_by_hand(x_kv, w.in_proj_weight, w.in_proj_bias, D, D);
    const Tensor V = project_by_hand(x_kv, w.in_proj_weight, w.in_proj_bias, 2 * D, D);
    Tensor concat({B, L, D});
    AttentionOptions head_options;
    head_options.want_weights = true;
    for (int64_t h = 0; h < H; ++h) {
        const AttentionResult head = scaled_dot_product_attention(columns(Q, h * Dh, Dh), columns(K, h * Dh, Dh),
                                                                  columns(V, h * Dh, Dh), mask, head_options);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t l = 0; l < L; ++l) {
                for (int64_t c = 0; c < Dh; ++c) concat.at({b, l, h * Dh + c}) = head.output.at({b, l, c});
                for (int64_t s = 0; s < S; ++s)
                    CHECK(result.weights.at({b, h, l, s}) == doctest::Approx(head.weights.at({b, l, s})).epsilon(1e-5));
            }
    }
    const Tensor expected = project_by_hand(concat, w.out_proj_weight, w.out_proj_bias, 0, D);
    for (int64_t i = 0; i < expected.numel(); ++i)
        CHECK(std::fabs(result.output.data()[i] - expected.data()[i]) <= 1e-4f);
    // Padded keys of batch 1 (positions 3, 4) get weight 0 in every head.
    for (int64_t h = 0; h < H; ++h) CHECK(result.weights.at({1, h, 0, 3}) == 0.0f);
}

TEST_CASE("MultiHeadAttention refuses D % H != 0 and badly shaped weights, naming the shapes") {
    Random random(11);
    const MultiHeadAttentionWeights w = random_weights(random, 8);
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, 3), "d_model (8) must be divisible by the number of heads (3)");
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, 0), "divisible");
    MultiHeadAttentionWeights bad = w;
    bad.in_proj_weight = Tensor({24, 7});
    CHECK_ERROR_CONTAINS(MultiHeadAttention(bad, 2), "in_proj_weight must be [24,8], got [24,7]");
    const MultiHeadAttention attention(w, 2);
    CHECK_ERROR_CONTAINS(attention.forward(Tensor({1, 3, 6}), Tensor({1, 3, 8})), "D=8", "x_q [1,3,6]");
}

TEST_CASE("MultiHeadAttention keeps padded query rows at exactly 0 despite the output bias") {
    Random random(12);
    const MultiHeadAttentionWeights w = random_weights(random, 4);
    const MultiHeadAttention attention(w, 2);
    const Tensor x = random.normal_tensor({1, 3, 4});
    const Padding padding = Padding::from_lengths({2}, 3);
    AttentionOptions options;
    options.query_padding = padding;
    const AttentionResult result = attention.forward(x, x, Mask::causal(3) & Mask::key_padding(padding), options);
    for (int64_t c = 0; c < 4; ++c) CHECK(result.output.at({0, 2, c}) == 0.0f);
    CHECK(result.output.at({0, 1, 0}) != 0.0f);
}

namespace {

// Grouped-query weights for H query heads and Hkv key/value heads of Dh:
// in_proj [D + 2*Hkv*Dh, D] (rows W_Q, W_K, W_V), biases likewise.
MultiHeadAttentionWeights random_gqa_weights(Random& random, int64_t D, int64_t H, int64_t Hkv) {
    const int64_t rows = D + 2 * Hkv * (D / H);
    return {random.normal_tensor({rows, D}, 0.4f), random.normal_tensor({rows}, 0.2f), random.normal_tensor({D, D}, 0.4f),
            random.normal_tensor({D}, 0.2f)};
}

// The same module with every key/value head copied for each query head of its
// group (what repeat_interleave(H / Hkv) does to K and V), as an ordinary
// [3D, D] multi-head attention: query head h gets rows of K/V head h / (H/Hkv).
MultiHeadAttentionWeights expanded_heads(const MultiHeadAttentionWeights& w, int64_t D, int64_t H, int64_t Hkv) {
    const int64_t Dh = D / H, group = H / Hkv;
    MultiHeadAttentionWeights out{Tensor({3 * D, D}), Tensor({3 * D}), w.out_proj_weight, w.out_proj_bias};
    for (int64_t r = 0; r < D; ++r) {  // W_Q unchanged
        for (int64_t c = 0; c < D; ++c) out.in_proj_weight.at({r, c}) = w.in_proj_weight.at({r, c});
        out.in_proj_bias.at({r}) = w.in_proj_bias.at({r});
    }
    for (int64_t part = 1; part <= 2; ++part)  // W_K, W_V
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < Dh; ++i) {
                const int64_t to = part * D + h * Dh + i, from = D + (part - 1) * Hkv * Dh + (h / group) * Dh + i;
                for (int64_t c = 0; c < D; ++c) out.in_proj_weight.at({to, c}) = w.in_proj_weight.at({from, c});
                out.in_proj_bias.at({to}) = w.in_proj_bias.at({from});
            }
    return out;
}

}  // namespace

TEST_CASE("Grouped-query attention equals the same model with its K/V heads repeated, for Hkv = H, H/2, 1") {
    const int64_t B = 2, T = 6, D = 16, H = 4;
    for (int64_t Hkv : {int64_t{4}, int64_t{2}, int64_t{1}}) {
        CAPTURE(Hkv);
        Random random(30 + Hkv);
        const MultiHeadAttentionWeights w = random_gqa_weights(random, D, H, Hkv);
        const MultiHeadAttention gqa(w, AttentionHeads{H, Hkv});
        const MultiHeadAttention expanded(expanded_heads(w, D, H, Hkv), H);
        CHECK(gqa.kv_width() == Hkv * D / H);
        const Tensor x = random.normal_tensor({B, T, D});
        const Mask mask = Mask::causal(T);
        for (AttentionPath path : {AttentionPath::Materialized, AttentionPath::Streaming}) {
            CAPTURE(path_name(path));
            AttentionOptions options;
            options.path = path;
            options.want_weights = path == AttentionPath::Materialized;
            options.key_tile = 4;  // streaming: two tiles, a rescale between them
            const AttentionResult got = gqa.forward(x, x, mask, options);
            const AttentionResult want = expanded.forward(x, x, mask, options);
            CHECK(test_helpers::max_abs_difference(got.output, want.output) <= 1e-5);
            if (options.want_weights) CHECK(test_helpers::max_abs_difference(got.weights, want.weights) <= 1e-6);
        }
        // Cross-attention (keys from another sequence, S != L) too.
        const Tensor memory = random.normal_tensor({B, 9, D});
        CHECK(test_helpers::max_abs_difference(gqa.forward(x, memory).output, expanded.forward(x, memory).output) <= 1e-5);
        // A token at a time through the KV cache (Hkv*Dh wide) == the whole sequence.
        const Tensor whole = gqa.forward(x, x, mask).output;
        KVCache cache;
        for (int64_t t = 0; t < T; ++t) {
            Tensor step({B, 1, D});
            for (int64_t b = 0; b < B; ++b)
                for (int64_t c = 0; c < D; ++c) step.at({b, 0, c}) = x.at({b, t, c});
            const Tensor out = gqa.forward_appending(step, cache, Mask(), {}).output;
            CHECK(cache.width() == Hkv * D / H);
            for (int64_t b = 0; b < B; ++b)
                for (int64_t c = 0; c < D; ++c) CHECK(std::fabs(out.at({b, 0, c}) - whole.at({b, t, c})) <= 1e-5f);
        }
    }
}

TEST_CASE("Grouped-query attention refuses head counts and widths that do not fit, in one line") {
    Random random(40);
    const MultiHeadAttentionWeights w = random_gqa_weights(random, 8, 4, 2);  // in_proj [16, 8]
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, AttentionHeads{4, 3}), "key/value heads (3)", "divide the heads (4)");
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, AttentionHeads{4, 0}), "key/value heads (0)");
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, AttentionHeads{4, 4}), "in_proj_weight must be [24,8], got [16,8]");
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, AttentionHeads{4, 1}), "in_proj_weight must be [12,8], got [16,8]");
    // The engine: the counts are given, the widths must fit them.
    const Tensor q = random.normal_tensor({1, 3, 8}), k2 = random.normal_tensor({1, 5, 4}), v2 = random.normal_tensor({1, 5, 4});
    CHECK(multi_head_scaled_dot_product_attention(q, k2, v2, AttentionHeads{4, 2}).output.shape() == Shape{1, 3, 8});
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(q, k2, v2, AttentionHeads{4, 3}),
                         "key/value heads Hkv=3 must be >= 1 and divide the H=4 query heads");
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(q, k2, v2, AttentionHeads{4, 1}),
                         "key has Dk=4 but query has Dk=2", "H=4 query heads, Hkv=1 key/value heads");
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(q, k2, v2, 4), "key has Dk=1 but query has Dk=2");
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(q, random.normal_tensor({1, 5, 3}), v2, AttentionHeads{4, 2}),
                         "key/value last axis (3) is not divisible by Hkv=2");
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(q, k2, random.normal_tensor({1, 5, 5}), AttentionHeads{4, 2}),
                         "key/value last axis (5)");
    const std::string message =
        test_helpers::error_message([&] { multi_head_scaled_dot_product_attention(q, k2, v2, AttentionHeads{4, 3}); });
    CHECK(message.find('\n') == std::string::npos);
}
