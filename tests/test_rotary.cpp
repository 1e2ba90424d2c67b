// Tests for layers/rotary.* (RoPE) and its use in MultiHeadAttention and the
// models: hand values of both pair conventions, the fast path equal to the
// plain reference, the score depending only on m - n, and the KV cache
// (holding turned keys) equal to recomputing the whole sequence, with and
// without grouped-query attention.
#include "engine/memory/float_buffer.h"
#include "engine/random.h"
#include "layers/multi_head_attention.h"
#include "layers/rotary.h"
#include "models/decoding.h"
#include "tests/greedy_margin.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace tinyformer;

namespace {

std::vector<float> turned(std::vector<float> x, int64_t heads, int64_t head_dim, int64_t position, RopePairs pairs,
                          float theta = 10000.0f) {
    rotary_reference(x.data(), heads, head_dim, position, theta, pairs);
    return x;
}

float dot(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
    return static_cast<float>(sum);
}

std::vector<float> random_vector(Random& random, int64_t n) {
    const Tensor t = random.normal_tensor({n});
    return {t.data(), t.data() + n};
}

}  // namespace

TEST_CASE("rotary: hand values of Dh=2 and Dh=4, in both pair conventions") {
    // Dh = 2: one pair, freq_0 = theta^0 = 1; (1, 0) at position 1 turns by 1 radian.
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
        const std::vector<float> y = turned({1.0f, 0.0f}, 1, 2, 1, pairs);
        CHECK(y[0] == doctest::Approx(0.540302).epsilon(1e-6));  // cos 1
        CHECK(y[1] == doctest::Approx(0.841471).epsilon(1e-6));  // sin 1
    }
    // Dh = 4 at position 2: pair 0 angle 2 * 1 = 2 (cos -0.4161468, sin 0.9092974);
    // pair 1 angle 2 * 10000^(-2/4) = 2 * 0.01 = 0.02 (cos 0.9998000, sin 0.0199987).
    // x = (1, 2, 3, 4).
    // adjacent: pairs (x0, x1) = (1, 2) and (x2, x3) = (3, 4):
    //   (1c - 2s, 1s + 2c) at 2      = (-2.2347417, 0.0770038)
    //   (3c' - 4s', 3s' + 4c') at .02 = (2.9194054, 4.0591960)
    const std::vector<float> adjacent = turned({1, 2, 3, 4}, 1, 4, 2, RopePairs::Adjacent);
    const float want_adjacent[] = {-2.2347417f, 0.0770038f, 2.9194054f, 4.0591960f};
    // half: pairs (x0, x2) = (1, 3) and (x1, x3) = (2, 4):
    //   (1c - 3s, 1s + 3c) at 2       -> x0 = -3.1440391, x2 = -0.3391431
    //   (2c' - 4s', 2s' + 4c') at .02 -> x1 = 1.9196053, x3 = 4.0391974
    const std::vector<float> half = turned({1, 2, 3, 4}, 1, 4, 2, RopePairs::Half);
    const float want_half[] = {-3.1440391f, 1.9196053f, -0.3391431f, 4.0391974f};
    for (int i = 0; i < 4; ++i) {
        CAPTURE(i);
        CHECK(adjacent[i] == doctest::Approx(want_adjacent[i]).epsilon(2e-6));
        CHECK(half[i] == doctest::Approx(want_half[i]).epsilon(2e-6));
    }
    CHECK(std::fabs(adjacent[0] - half[0]) > 0.5f);  // the conventions pair other dimensions: other numbers
    // Position 0 turns nothing; the frequencies are 1 / theta^(2i/Dh).
    CHECK(turned({1, 2, 3, 4}, 1, 4, 0, RopePairs::Half) == std::vector<float>{1, 2, 3, 4});
    const RotaryEmbedding rope(4, 10000.0f, RopePairs::Adjacent);
    CHECK(rope.frequency(0) == 1.0f);
    CHECK(rope.frequency(1) == doctest::Approx(0.01).epsilon(1e-6));
}

TEST_CASE("rotary: the fast path (one cos/sin per pair for every head of q and k) equals the reference bit for bit") {
    Random random(50);
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
        CAPTURE(rope_pairs_name(pairs));
        const int64_t Dh = 8, H = 4, Hkv = 2;
        const RotaryEmbedding rope(Dh, 500.0f, pairs);
        for (int64_t position : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 20, int64_t{1} << 24}) {
            CAPTURE(position);
            std::vector<float> q = random_vector(random, H * Dh), k = random_vector(random, Hkv * Dh);
            const std::vector<float> q_want = turned(q, H, Dh, position, pairs, 500.0f),
                                     k_want = turned(k, Hkv, Dh, position, pairs, 500.0f);
            rope.rotate(q.data(), H, k.data(), Hkv, position);
            // Exact by construction: both compute the angle as float(position) * the same
            // frequency, std::cos / std::sin of it, and the one turn() (layers/rotary.cpp,
            // built for baseline x86-64: no multiply-add is fused); the fast path only shares
            // a pair's cos/sin between heads.
            CHECK(q == q_want);
            CHECK(k == k_want);
        }
    }
}

TEST_CASE("rotary: the score q_m . k_n depends only on m - n (both shifted by s: the same score to float rounding)") {
    Random random(51);
    const int64_t Dh = 16;
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
        CAPTURE(rope_pairs_name(pairs));
        const std::vector<float> q = random_vector(random, Dh), k = random_vector(random, Dh);
        const float scale = std::sqrt(dot(q, q) * dot(k, k));
        for (int64_t m : {3, 10}) {
            const int64_t n = 1;
            const float score = dot(turned(q, 1, Dh, m, pairs), turned(k, 1, Dh, n, pairs));
            for (int64_t s : {1, 7, 100, 1000}) {
                CAPTURE(s);
                const float shifted = dot(turned(q, 1, Dh, m + s, pairs), turned(k, 1, Dh, n + s, pairs));
                // float32 angles of ~1000 radians are rounded by ~6e-5: the bound scales with that.
                CHECK(std::fabs(shifted - score) <= 2e-4f * scale);
            }
            // ... and it does depend on m - n.
            CHECK(std::fabs(dot(turned(q, 1, Dh, m + 1, pairs), turned(k, 1, Dh, n, pairs)) - score) > 1e-3f * scale);
        }
    }
}

TEST_CASE("rotary: odd or tiny head sizes, a bad theta and positions outside 0..2^24 are refused by name") {
    CHECK_ERROR_CONTAINS(RotaryEmbedding(3, 10000.0f, RopePairs::Adjacent), "head size Dh must be even", "got 3");
    CHECK_ERROR_CONTAINS(RotaryEmbedding(0, 10000.0f, RopePairs::Half), "got 0");
    CHECK_ERROR_CONTAINS(RotaryEmbedding(4, 0.0f, RopePairs::Half), "theta must be finite and > 0");
    CHECK_ERROR_CONTAINS(RotaryEmbedding(4, NAN, RopePairs::Half), "theta must be finite");
    const RotaryEmbedding rope(4, 10000.0f, RopePairs::Adjacent);
    float q[4] = {1, 2, 3, 4};
    CHECK_ERROR_CONTAINS(rope.rotate(q, 1, nullptr, 0, -1), "position -1 outside 0..2^24");
    CHECK_ERROR_CONTAINS(rope.rotate(q, 1, nullptr, 0, (int64_t{1} << 24) + 1), "outside 0..2^24");
    // A module whose heads are not the rotary's size.
    Random random(52);
    const MultiHeadAttentionWeights w{random.normal_tensor({24, 8}), Tensor(), random.normal_tensor({8, 8}), Tensor()};
    CHECK_ERROR_CONTAINS(MultiHeadAttention(w, 2, "", std::nullopt, RotaryEmbedding(2, 10000.0f, RopePairs::Adjacent)),
                         "rotary positions are for heads of 2 dimensions", "Dh = D/H = 4");
    // Cross-attention never turns: refused.
    const MultiHeadAttention self(w, 2, "", std::nullopt, RotaryEmbedding(4, 10000.0f, RopePairs::Adjacent));
    CHECK_ERROR_CONTAINS(self.forward(random.normal_tensor({1, 2, 8}), random.normal_tensor({1, 3, 8})),
                         "rotary positions belong to self-attention");
}

namespace {

// x[:, t:t+1, :] as its own tensor [B, 1, D].
Tensor position_of(const Tensor& x, int64_t t) {
    Tensor step({x.dim(0), 1, x.dim(2)});
    for (int64_t b = 0; b < x.dim(0); ++b)
        for (int64_t c = 0; c < x.dim(2); ++c) step.at({b, 0, c}) = x.at({b, t, c});
    return step;
}

}  // namespace

TEST_CASE("rotary attention: the KV cache (turned keys) equals the whole sequence; streaming equals materialized; GQA too") {
    const int64_t B = 2, T = 7, D = 16, H = 4;
    for (int64_t Hkv : {int64_t{4}, int64_t{2}, int64_t{1}})
        for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
            CAPTURE(Hkv);
            CAPTURE(rope_pairs_name(pairs));
            Random random(60 + Hkv);
            const int64_t rows = D + 2 * Hkv * (D / H);
            const MultiHeadAttentionWeights w{random.normal_tensor({rows, D}, 0.4f), random.normal_tensor({rows}, 0.2f),
                                              random.normal_tensor({D, D}, 0.4f), random.normal_tensor({D}, 0.2f)};
            const MultiHeadAttention attention(w, AttentionHeads{H, Hkv}, "", std::nullopt,
                                               RotaryEmbedding(D / H, 10000.0f, pairs));
            const MultiHeadAttention plain(w, AttentionHeads{H, Hkv});
            const Tensor x = random.normal_tensor({B, T, D});
            const Mask mask = Mask::causal(T);
            AttentionOptions materialized, streaming;
            materialized.path = AttentionPath::Materialized;
            streaming.path = AttentionPath::Streaming;
            streaming.key_tile = 3;
            const Tensor whole = attention.forward(x, x, mask, materialized).output;
            CHECK(test_helpers::max_abs_difference(attention.forward(x, x, mask, streaming).output, whole) <= 1e-5);
            CHECK(test_helpers::max_abs_difference(plain.forward(x, x, mask).output, whole) > 1e-3);  // it does turn
            // One token at a time: the cache holds each key turned once, at its own position.
            KVCache cache;
            for (int64_t t = 0; t < T; ++t) {
                const Tensor out = attention.forward_appending(position_of(x, t), cache, Mask(), {}).output;
                CHECK(test_helpers::max_abs_difference(out, position_of(whole, t)) <= 1e-5);
            }
            // The cached keys are the turned keys of the whole-sequence pass: x W_K^T + b_K, turned by t.
            KVCache whole_cache;
            attention.forward_appending(x, whole_cache, mask, {});
            CHECK(test_helpers::max_abs_difference(cache.key_tensor(), whole_cache.key_tensor()) <= 1e-6);
            Tensor keys = plain.project_key(x);  // [B, T, Hkv*Dh], unturned
            for (int64_t b = 0; b < B; ++b)
                for (int64_t t = 0; t < T; ++t)
                    rotary_reference(keys.data() + (b * T + t) * keys.dim(2), Hkv, D / H, t, 10000.0f, pairs);
            CHECK(test_helpers::max_abs_difference(cache.key_tensor(), keys) <= 1e-6);
            // v is not turned: the same projection, but one token at a time (a one-row product) against the
            // whole sequence (one gemm), whose sums OpenBLAS may order differently on another core; a turned
            // v would differ by O(1).
            CHECK(test_helpers::max_abs_difference(cache.value_tensor(), plain.project_value(x)) <= 1e-5);
            // Rows at other positions: first_positions shifts each row's tokens.
            KVCache shifted;
            const Tensor later = attention.forward_appending(x, shifted, mask, {}, nullptr, {5, 0}).output;
            KVCache reference;
            const Tensor row1 = attention.forward_appending(x, reference, mask, {}).output;
            for (int64_t t = 0; t < T; ++t)
                for (int64_t c = 0; c < D; ++c) {
                    CHECK(std::fabs(later.at({1, t, c}) - row1.at({1, t, c})) <= 1e-6f);  // row 1 starts at 0 in both
                    // Row 0 at 5..11: only differences of positions count, and they are the same.
                    CHECK(std::fabs(later.at({0, t, c}) - row1.at({0, t, c})) <= 1e-4f);
                }
        }
}

namespace {

// The rotary reference models of data/reference/ (tools/python/make_rotary_reference.py;
// tests/test_parity.cpp holds them against PyTorch): rotary + GQA, multi-query with "half" pairs.
const char* kRotaryModels[] = {"do_rotary_gqa_pre_gelu_pad", "do_rotary_mqa_half_post_relu"};

Model load_rotary(const std::string& name) { return Model::load("data/reference/" + name + ".model.safetensors"); }

// Prompts of different lengths starting with <bos>; ordinary ids from 3.
std::vector<std::vector<int64_t>> prompts_for(const Model& model) {
    std::vector<std::vector<int64_t>> prompts = {{3, 4, 5, 6}, {7}, {8, 9, 3}, {5, 5, 4, 3, 9, 8}};
    for (auto& prompt : prompts) {
        for (int64_t& id : prompt) id = 3 + (id - 3) % (model.config.vocab_size - 3);
        prompt.insert(prompt.begin(), model.config.bos_id);
    }
    return prompts;
}

}  // namespace

TEST_CASE("rotary models: KV-cache decoding equals recompute at every step, batched prompts of different lengths too") {
    for (const std::string name : kRotaryModels) {
        CAPTURE(name);
        const Model model = load_rotary(name);
        REQUIRE(model.config.pos_encoding == PositionalEncoding::Rotary);
        const auto prompts = prompts_for(model);
        GenerationOptions cached, recomputed;
        cached.record_logits = recomputed.record_logits = true;
        recomputed.mode = StepMode::Recompute;
        const Generation a = greedy_decode(model, prompts, cached);
        const Generation b = greedy_decode(model, prompts, recomputed);
        // Logits within 1e-5 of each other (other product shapes: not the same floats), so
        // equal tokens by the margin rule of tests/greedy_margin.h, every step decided.
        const test_helpers::LogitBound bound{1e-5, 0};
        for (size_t row = 0; row < prompts.size(); ++row)
            CHECK(test_helpers::check_same_greedy_tokens(b, row, a.tokens[row], bound).all());
        REQUIRE(a.step_logits.size() == b.step_logits.size());
        CHECK(a.step_logits.size() >= 2);
        double worst = 0;
        for (size_t step = 0; step < a.step_logits.size(); ++step)
            worst = std::max(worst, test_helpers::max_abs_difference(a.step_logits[step], b.step_logits[step]));
        CHECK(worst <= bound.absolute);
        MESSAGE(name, ": ", a.step_logits.size(), " steps, max |cached - recomputed| = ", worst);
        // Each row of the padded batch decodes as it does alone: the stepper
        // gives each row its own positions (the keys of a short prompt are not
        // turned by the batch's longest length).
        for (size_t i = 0; i < prompts.size(); ++i) {
            const Generation alone = greedy_decode(model, {prompts[i]}, cached);
            const test_helpers::Decided decided = test_helpers::check_same_greedy_tokens(alone, 0, a.tokens[i], bound);
            CHECK(decided.all());
            CHECK(test_helpers::largest_logit_difference(a, i, alone, 0, decided.steps) <= bound.absolute);
            // Each step's log p moves by at most 2 * bound (its logit and its log-sum-exp by one each).
            CHECK(std::fabs(a.log_probs[i] - alone.log_probs[0]) <= 2 * bound.absolute * static_cast<double>(decided.steps));
        }
    }
}

TEST_CASE("rotary models: a decoding step takes every tensor from the pool (turning allocates nothing)" *
          doctest::skip(!float_buffer_pool_enabled())) {
    for (const std::string name : kRotaryModels) {
        CAPTURE(name);
        const Model model = load_rotary(name);
        const std::vector<std::vector<int64_t>> input = {prompts_for(model)[0]};
        GenerationOptions options;
        options.max_new_tokens = 8;
        greedy_decode(model, input, options);  // warms the pool
        std::vector<uint64_t> allocated;
        allocated.reserve(16);
        options.after_step = [&allocated] { allocated.push_back(float_buffer_pool_stats().allocated); };
        greedy_decode(model, input, options);
        REQUIRE(allocated.size() >= 2);
        CHECK(allocated.back() == allocated.front());
    }
}
