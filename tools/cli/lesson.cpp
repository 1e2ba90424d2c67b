// `tinyformer lesson [NAME|all]` — lesson 10.3's worked examples and
// practices, run on the engine as a learner would run them in a notebook.
// Every number printed here is computed by the engine at run time; the
// expected values quoted in the text are the lesson's hand calculations.

#include "engine/attention.h"
#include "engine/mask.h"
#include "engine/matmul.h"
#include "engine/random.h"
#include "layers/embedding.h"
#include "layers/encoder_layer.h"
#include "layers/multi_head_attention.h"
#include "models/checkpoint.h"
#include "models/cost.h"
#include "models/decoding.h"
#include "models/text.h"
#include "models/study/toy_tasks.h"
#include "models/transformer.h"
#include "tools/cli/cli.h"
#include "tools/cli/lesson_common.h"
#include "tools/measure/measure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer::cli {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

void print_row_sums(ConstMatrixView weights) {
    std::printf("row sums:");
    for (int64_t r = 0; r < weights.rows; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < weights.cols; ++c) sum += weights(r, c);
        std::printf(" %.6f", sum);
    }
    std::printf("\n");
}

// W_Q, W_K, W_V, W_O with entries ~ N(0, 0.25), biases ~ N(0, 0.01), for a model of width D.
MultiHeadAttentionWeights random_attention_weights(Random& random, int64_t D) {
    return {random.normal_tensor({3 * D, D}, 0.5f), random.normal_tensor({3 * D}, 0.1f),
            random.normal_tensor({D, D}, 0.5f), random.normal_tensor({D}, 0.1f)};
}

// Practice 1.
void lesson_shapes() {
    heading("shapes: cross-attention, L != S (practice 1)");
    std::printf("In cross-attention the queries come from the decoder (length L) and the keys\n"
                "and values from the encoder (length S), so L and S can differ.\n\n");
    Random random(1);
    const Tensor query = random.normal_tensor({2, 4, 8});  // [B, L, Dk]
    const Tensor key = random.normal_tensor({2, 6, 8});    // [B, S, Dk]
    const Tensor value = random.normal_tensor({2, 6, 5});  // [B, S, Dv]
    const AttentionResult result = scaled_dot_product_attention(query, key, value, Mask(), with_weights());
    std::printf("query   Q [B,L,Dk] = %s\n", shape_string(query.shape()).c_str());
    std::printf("key     K [B,S,Dk] = %s\n", shape_string(key.shape()).c_str());
    std::printf("value   V [B,S,Dv] = %s\n", shape_string(value.shape()).c_str());
    std::printf("scores  A [B,L,S]  = %s   (softmax runs over S, the key axis)\n",
                shape_string(result.weights.shape()).c_str());
    std::printf("output  O [B,L,Dv] = %s\n\n", shape_string(result.output.shape()).c_str());
    print_matrix("weights of batch 0 (one row per query, one column per key)", result.weights.matrix(0));
    print_row_sums(result.weights.matrix(0));
    std::printf("\nA key with the wrong Dk is refused with both shapes named:\n  ");
    try {
        scaled_dot_product_attention(query, random.normal_tensor({2, 6, 7}), value);
    } catch (const Error& error) {
        std::printf("%s\n", error.message().c_str());
    }
}

// Section 5's worked example and practice 2.
void lesson_causal() {
    heading("causal: the 3x3 worked example (practice 2)");
    std::printf("Q = K = 0, so every allowed score is 0 and each query averages its allowed values.\n"
                "V = [2, 4, 8]. Causal mask (true = may attend):\n\n");
    const Tensor zeros({1, 3, 2});
    const Tensor value({1, 3, 1}, {2.0f, 4.0f, 8.0f});
    const Mask causal = Mask::causal(3);
    std::printf("%s\n", causal.to_ascii(3, 3).c_str());
    AttentionResult result = scaled_dot_product_attention(zeros, zeros, value, causal, with_weights());
    print_matrix("weights", result.weights.matrix(0));
    std::printf("outputs: %.6f %.6f %.6f   (lesson: 2, 3, 14/3 = %.6f)\n", result.output.at({0, 0, 0}),
                result.output.at({0, 1, 0}), result.output.at({0, 2, 0}), 14.0 / 3.0);
    bool future_zero = true;
    for (int64_t l = 0; l < 3; ++l)
        for (int64_t s = l + 1; s < 3; ++s) future_zero = future_zero && result.weights.at({0, l, s}) == 0.0f;
    std::printf("every future weight (key > query) is exactly 0: %s\n\n", future_zero ? "yes" : "NO");

    std::printf("The reversed mask (each query sees itself and the FUTURE) changes the numbers at once,\n"
                "which is why this check beats checking shapes:\n\n");
    const Mask reversed = Mask::from_allowed(bool_matrix(3, 3, {1, 1, 1, 0, 1, 1, 0, 0, 1}));
    std::printf("%s\n", reversed.to_ascii(3, 3).c_str());
    result = scaled_dot_product_attention(zeros, zeros, value, reversed, with_weights());
    std::printf("outputs: %.6f %.6f %.6f   (by hand: 14/3, (4+8)/2 = 6, 8)\n", result.output.at({0, 0, 0}),
                result.output.at({0, 1, 0}), result.output.at({0, 2, 0}));
}

// Section 6 ("don't treat 'Transformer mask' as a single template"): PyTorch's
// is_causal=True when the queries are fewer than the keys.
void lesson_is_causal() {
    heading("is-causal: is_causal=True aligns the triangle top-left when L != S (section 6)");
    std::printf("A decoding step with a KV cache has fewer queries than keys: the new token(s) are the LAST\n"
                "L of S positions. The engine's Mask::causal(L, S) aligns the triangle bottom-right: query l\n"
                "sees key s iff s <= S - L + l, so the step's rows are the last rows of the full pass.\n"
                "PyTorch's is_causal=True (F.scaled_dot_product_attention since 2.0; on 1.13 the private\n"
                "F._scaled_dot_product_attention) builds torch.ones(L, S).tril(): query l sees key s iff\n"
                "s <= l, aligned top-left. For L = S the two are the same mask; for L < S they are not.\n\n"
                "Q = K = 0, V = 2, 4, 8 as in `lesson causal`: the full pass (L = S = 3) gives 2, 3, 14/3.\n"
                "Here q0, q1 are the step's own queries; the last of them is position 2.\n");
    const Tensor keys({1, 3, 2});
    const Tensor value({1, 3, 1}, {2.0f, 4.0f, 8.0f});
    for (int64_t L : {1, 2}) {
        const int64_t S = 3;
        std::vector<uint8_t> tril(static_cast<size_t>(L * S));  // torch.ones(L, S).tril(): True = allowed
        for (int64_t l = 0; l < L; ++l)
            for (int64_t s = 0; s < S; ++s) tril[static_cast<size_t>(l * S + s)] = s <= l;
        const Mask engine = Mask::causal(L, S);
        const Mask torch_mask = Mask::from_torch_sdpa_mask(bool_matrix(L, S, tril));
        const Tensor queries({1, L, 2});
        const AttentionResult bottom_right = scaled_dot_product_attention(queries, keys, value, engine);
        const AttentionResult top_left = scaled_dot_product_attention(queries, keys, value, torch_mask);
        auto outputs = [L](const Tensor& output) {
            std::string text;
            for (int64_t l = 0; l < L; ++l) {
                char number[32];
                std::snprintf(number, sizeof number, " %.6f", output.at({0, l, 0}));
                text += number;
            }
            return text;
        };
        std::printf("\nL = %lld new token(s) over S = %lld keys:\n", static_cast<long long>(L),
                    static_cast<long long>(S));
        std::printf("  Mask::causal(%lld, %lld), bottom-right (the engine):\n%s", static_cast<long long>(L),
                    static_cast<long long>(S), engine.to_ascii(L, S).c_str());
        std::printf("  -> outputs%s   (by hand: %s)\n", outputs(bottom_right.output).c_str(),
                    L == 1 ? "(2+4+8)/3 = 14/3, the full pass's last row" : "3 and 14/3, the full pass's last two rows");
        std::printf("  torch.ones(%lld, %lld).tril() via Mask::from_torch_sdpa_mask, top-left (is_causal=True):\n%s",
                    static_cast<long long>(L), static_cast<long long>(S), torch_mask.to_ascii(L, S).c_str());
        std::printf("  -> outputs%s   (by hand: %s)\n", outputs(top_left.output).c_str(),
                    L == 1 ? "2 = V of k0 alone: the newest token sees only the first" : "2 and 3: the full pass's FIRST two rows");
    }
    std::printf("\nNo error, no NaN: every row has a key, every number is plausible, and the cached step\n"
                "silently reads the wrong keys. is_causal=True is right only when L = S (a whole-sequence\n"
                "pass); a cached step needs the bottom-right mask passed explicitly, in torch\n"
                "torch.ones(L, S, dtype=torch.bool).tril(S - L) (recent PyTorch also has\n"
                "torch.nn.attention.bias.causal_lower_right), or no mask at all when L = 1.\n");
}

// Section 4 and practice 3.
void lesson_conventions() {
    heading("conventions: the two PyTorch Boolean meanings (practice 3)");
    std::printf("nn.MultiheadAttention's bool attn_mask / key_padding_mask: True = BLOCKED.\n"
                "F.scaled_dot_product_attention's bool attn_mask:        True = ALLOWED.\n"
                "tinyformer keeps one meaning inside (true = may attend) and converts at the boundary\n"
                "with functions named for the source.\n\n");
    const Tensor zeros({1, 3, 2});
    const Tensor value({1, 3, 1}, {2.0f, 4.0f, 8.0f});
    // The causal mask as each API wants it.
    const BoolTensor mha_style = bool_matrix(3, 3, {0, 1, 1, 0, 0, 1, 0, 0, 0});   // triu(1): True = blocked
    const BoolTensor sdpa_style = bool_matrix(3, 3, {1, 0, 0, 1, 1, 0, 1, 1, 1});  // tril: True = allowed
    const Mask from_mha = Mask::from_torch_mha_attn_mask(mha_style);
    const Mask from_sdpa = Mask::from_torch_sdpa_mask(sdpa_style);
    std::printf("MHA tensor [[F,T,T],[F,F,T],[F,F,F]] via from_torch_mha_attn_mask:\n%s\n",
                from_mha.to_ascii(3, 3).c_str());
    std::printf("SDPA tensor [[T,F,F],[T,T,F],[T,T,T]] via from_torch_sdpa_mask:\n%s\n",
                from_sdpa.to_ascii(3, 3).c_str());
    const AttentionResult a = scaled_dot_product_attention(zeros, zeros, value, from_mha, with_weights());
    const AttentionResult b = scaled_dot_product_attention(zeros, zeros, value, from_sdpa, with_weights());
    print_matrix("weights (MHA tensor, MHA conversion)", a.weights.matrix(0));
    print_matrix("weights (SDPA tensor, SDPA conversion)", b.weights.matrix(0));
    std::printf("identical: %s\n\n", a.weights.values() == b.weights.values() ? "yes" : "NO");

    std::printf("The migration bug: the MHA tensor passed on as if it were an SDPA mask.\n"
                "Query 2 now sees nothing and query 0 sees only the future:\n\n");
    const Mask migrated = Mask::from_torch_sdpa_mask(mha_style);
    std::printf("%s", migrated.to_ascii(3, 3).c_str());
    try {
        scaled_dot_product_attention(zeros, zeros, value, migrated, with_weights());
    } catch (const Error& error) {
        std::printf("-> %s\n", error.message().c_str());
    }
}

// Section 4's last paragraph and practice 4; section 3's query padding.
void lesson_empty_row() {
    heading("empty-row: a query whose every key is masked (practice 4)");
    std::printf("Softmax over nothing has no distribution. Computed naively, every entry is\n"
                "exp(-inf - max) with max = -inf, i.e. exp(nan):\n  naive softmax([-inf, -inf, -inf]) =");
    const float row[3] = {-kInf, -kInf, -kInf};
    float max_score = -kInf;
    for (float v : row) max_score = std::max(max_score, v);
    double sum = 0;
    for (float v : row) sum += std::exp(v - max_score);
    for (float v : row) std::printf(" %g", std::exp(v - max_score) / sum);
    std::printf("\n\ntinyformer refuses it, naming batch and query:\n  ");
    const Tensor zeros({1, 3, 2});
    const Tensor value({1, 3, 1}, {2.0f, 4.0f, 8.0f});
    const Mask keys = Mask::from_allowed(bool_matrix(3, 3, {1, 0, 0, 1, 1, 0, 0, 0, 0}));  // query 2: no key
    try {
        scaled_dot_product_attention(zeros, zeros, value, keys, with_weights());
    } catch (const Error& error) {
        std::printf("%s\n", error.message().c_str());
    }
    std::printf("\nIf query 2 is padding, its result is DEFINED: output and weight row exactly 0.\n"
                "Masking padded keys alone never does this; padded queries must be marked too:\n\n");
    AttentionOptions options = with_weights();
    options.query_padding = Padding::from_lengths({2}, 3);  // positions 0, 1 real; 2 padding
    const AttentionResult result = scaled_dot_product_attention(zeros, zeros, value, keys, options);
    print_matrix("weights", result.weights.matrix(0));
    std::printf("outputs: %g %g %g   (query 2 is padding; any NaN: %s)\n", result.output.at({0, 0, 0}),
                result.output.at({0, 1, 0}), result.output.at({0, 2, 0}),
                result.output.all_finite() && result.weights.all_finite() ? "no" : "YES");
}

// Section 3: -inf vs a finite negative, and masking after softmax.
void lesson_finite_negative() {
    heading("finite-negative: -inf vs a finite negative, and zeroing after softmax");
    std::printf("Scores of one query against 3 keys: [0, 0, 10004]. Key 2 is to be masked.\n\n");
    const float big = 10004.0f;
    // Q K^T / sqrt(Dk) with Dk = 1: q = 1, keys 0, 0, 10004.
    const Tensor query({1, 1, 1}, {1.0f});
    const Tensor key({1, 3, 1}, {0.0f, 0.0f, big});
    const Tensor value({1, 3, 1}, {1.0f, 2.0f, 100.0f});
    const Tensor minus_inf({1, 3}, {0.0f, 0.0f, -kInf});
    const Tensor finite({1, 3}, {0.0f, 0.0f, -1e4f});
    const AttentionResult hard =
        scaled_dot_product_attention(query, key, value, Mask::from_additive(minus_inf), with_weights());
    const AttentionResult soft =
        scaled_dot_product_attention(query, key, value, Mask::from_additive(finite), with_weights());
    print_matrix("additive mask [0, 0, -inf] -> weights", hard.weights.matrix(0), 6);
    print_matrix("additive mask [0, 0, -1e4] -> weights", soft.weights.matrix(0), 6);
    std::printf("With -1e4 the masked key's score is still 10004 - 10000 = 4 > 0, so it gets\n"
                "e^4 / (2 + e^4) = %.6f of the weight: a finite negative only suppresses\n"
                "relative to the other scores; -inf guarantees exactly 0.\n\n",
                std::exp(4.0) / (2.0 + std::exp(4.0)));

    std::printf("Zeroing after softmax without renormalising: all scores 0, key 2 zeroed afterwards.\n");
    const Tensor flat_key({1, 3, 1});
    AttentionResult all = scaled_dot_product_attention(query, flat_key, value, Mask(), with_weights());
    all.weights.at({0, 0, 2}) = 0.0f;
    std::printf("zeroed after softmax:  ");
    print_row_sums(all.weights.matrix(0));
    const AttentionResult proper =
        scaled_dot_product_attention(query, flat_key, value, Mask::from_additive(minus_inf), with_weights());
    std::printf("masked before softmax: ");
    print_row_sums(proper.weights.matrix(0));
}

// Section 2: why divide by sqrt(Dk).
void lesson_scale() {
    heading("scale: why 1/sqrt(Dk)");
    std::printf("q and k with independent unit-variance components: Var(q . k) = Dk.\n"
                "Dividing by sqrt(Dk) brings it back to ~1 and keeps softmax from saturating.\n"
                "(Sampled: 4000 random pairs for the variance; 200 queries x 16 keys for the weights.)\n\n");
    std::printf("%6s  %12s  %12s  %16s  %16s\n", "Dk", "Var(q.k)", "Var(q.k/sqD)", "max weight raw", "max weight /sqD");
    Random random(7);
    for (int64_t dk : {4, 64, 1024}) {
        double sum = 0, sum_sq = 0;
        const int pairs = 4000;
        for (int i = 0; i < pairs; ++i) {
            double dot = 0;
            for (int64_t d = 0; d < dk; ++d) dot += static_cast<double>(random.normal()) * random.normal();
            sum += dot;
            sum_sq += dot * dot;
        }
        const double variance = sum_sq / pairs - (sum / pairs) * (sum / pairs);
        // Largest softmax weight of a query over 16 keys, raw and scaled, averaged over queries.
        const Tensor query = random.normal_tensor({1, 200, dk});
        const Tensor key = random.normal_tensor({1, 16, dk});
        const Tensor value({1, 16, 1});
        const AttentionResult scaled = scaled_dot_product_attention(query, key, value, Mask(), with_weights());
        // Without the scale: multiply Q by sqrt(Dk) so that the engine's 1/sqrt(Dk) cancels.
        Tensor raw_query = query;
        for (int64_t i = 0; i < raw_query.numel(); ++i) raw_query.data()[i] *= std::sqrt(static_cast<float>(dk));
        const AttentionResult raw = scaled_dot_product_attention(raw_query, key, value, Mask(), with_weights());
        auto mean_max = [](const Tensor& weights) {
            double total = 0;
            const ConstMatrixView w = weights.matrix(0);
            for (int64_t r = 0; r < w.rows; ++r) total += *std::max_element(w.row(r), w.row(r) + w.cols);
            return total / static_cast<double>(w.rows);
        };
        std::printf("%6lld  %12.2f  %12.3f  %16.3f  %16.3f\n", static_cast<long long>(dk), variance,
                    variance / static_cast<double>(dk), mean_max(raw.weights), mean_max(scaled.weights));
    }
    std::printf("\nUnscaled, the largest weight approaches 1 as Dk grows (softmax saturates, gradients\n"
                "vanish); scaled, it stays moderate. The argument assumes independent, zero-mean,\n"
                "unit-variance components - trained representations need not satisfy it.\n");
}

// Section 7: multi-head attention.
void lesson_multihead() {
    heading("multihead: H heads, concat, output projection");
    const int64_t D = 8, H = 2;
    Random random(3);
    const MultiHeadAttentionWeights weights = random_attention_weights(random, D);
    const MultiHeadAttention attention(weights, H);
    const Tensor x = random.normal_tensor({1, 4, D});
    const AttentionResult result = attention.forward(x, x, Mask::causal(4), with_weights());
    std::printf("D = %lld, H = %lld, Dh = D/H = %lld. x %s -> output %s, weights [B,H,L,S] = %s\n\n",
                static_cast<long long>(D), static_cast<long long>(H), static_cast<long long>(D / H),
                shape_string(x.shape()).c_str(), shape_string(result.output.shape()).c_str(),
                shape_string(result.weights.shape()).c_str());
    print_matrix("head 0 weights", result.weights.matrix(0));
    print_matrix("head 1 weights", result.weights.matrix(1));
    std::printf("(mask: causal over the 4 positions)\n");
    std::printf("\nMore heads do not add projection parameters, nor multiply-adds: W_Q, W_K, W_V, W_O and their\n"
                "biases are [3D, D] + [3D] + [D, D] + [D] whatever H is, and Q K^T is H products of\n"
                "[T,Dh] x [Dh,T], H * T^2 * Dh = T^2 * D multiply-adds. What grows with H is the scores:\n"
                "[B,H,T,T], one T x T matrix per head, which the materialized path holds (models/cost.h,\n"
                "as `tinyformer cost --heads H --seq 512` prints them). At D = 512, T = 512, B = 1:\n");
    for (int64_t heads : {1, 8, 16}) {
        const int64_t d_model = 512, T = 512;
        const MultiHeadAttentionWeights big{Tensor({3 * d_model, d_model}), Tensor({3 * d_model}),
                                            Tensor({d_model, d_model}), Tensor({d_model})};
        const MultiHeadAttention module(big, heads);  // checks D % H and the shapes
        const int64_t parameters = big.in_proj_weight.numel() + big.in_proj_bias.numel() +
                                   big.out_proj_weight.numel() + big.out_proj_bias.numel();
        const AttentionCost cost = attention_cost(CostShape{1, d_model, heads, 2048}, T, T, "self-attention");
        std::printf("  H = %2lld, Dh = %3lld: %lld projection parameters, %lld score multiply-adds, scores %s\n",
                    static_cast<long long>(module.heads()), static_cast<long long>(d_model / heads),
                    static_cast<long long>(parameters), static_cast<long long>(cost.scores.macs),
                    measure::bytes_text(static_cast<double>(cost.score_bytes)).c_str());
    }
    std::printf("The head size Dh = D/H shrinks as H grows; the score memory grows as H: 4 * B * H * T^2 bytes.\n");
    std::printf("\n");
    std::printf("Each head has its own weights from its own learned subspace; nothing forces a head\n"
                "to mean anything a person would name. The heads' outputs are concatenated and\n"
                "mixed by W_O. D must be divisible by H:\n  ");
    try {
        MultiHeadAttention(weights, 3);
    } catch (const Error& error) {
        std::printf("%s\n", error.message().c_str());
    }
}

// Section 8/10: the fused (streaming) path gives the same answer without [L,S].
void lesson_paths() {
    heading("paths: materialized vs streaming (fused-style) attention");
    Random random(5);
    const int64_t L = 300, S = 1000, Dk = 64;  // one head: the table below uses the same shape
    const Tensor query = random.normal_tensor({1, L, Dk});
    const Tensor key = random.normal_tensor({1, S, Dk});
    const Tensor value = random.normal_tensor({1, S, Dk});
    AttentionOptions materialized, streaming;
    materialized.path = AttentionPath::Materialized;
    streaming.path = AttentionPath::Streaming;
    const AttentionResult a = scaled_dot_product_attention(query, key, value, Mask(), materialized);
    const AttentionResult b = scaled_dot_product_attention(query, key, value, Mask(), streaming);
    double max_diff = 0;
    for (int64_t i = 0; i < a.output.numel(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(a.output.data()[i] - b.output.data()[i])));
    std::printf("The same answer: L = %lld, S = %lld, Dk = Dv = %lld, largest difference between the two\n"
                "paths' outputs %.2e (float rounding, not semantics).\n\n",
                static_cast<long long>(L), static_cast<long long>(S), static_cast<long long>(Dk), max_diff);

    // What each path holds besides the output (models/cost.h, the formula `cost` prints):
    // materialized, the scores [L,S]; streaming, one tile [min(block,L), min(tile,S)] and
    // 2 floats per query of a block. One head of Dk = Dv = 64, as above.
    const CostShape shape{1, Dk, 1, 256};
    std::printf("What each path allocates for one head of Dk = Dv = %lld (output [L,Dv] + scratch; models/cost.h,\n"
                "as `tinyformer cost` counts it), and the peak memory one call really adds, measured in a\n"
                "child process:\n",
                static_cast<long long>(shape.d_model / shape.heads));
    std::printf("  %5s %6s  %-13s %28s %14s\n", "L", "S", "path", "output + scratch", "measured");
    for (const auto& [queries, keys] : {std::pair<int64_t, int64_t>{300, 1000}, {8192, 8192}})
        for (const AttentionOptions* options : {&materialized, &streaming}) {
            const AttentionPathBytes bytes = attention_path_bytes(shape, queries, keys, *options);
            const measure::PeakMemory peak =
                measure::attention_peak_memory(1, queries, keys, shape.d_model, shape.heads, *options);
            const std::string formula = measure::bytes_text(static_cast<double>(bytes.output)) + " + " +
                                        measure::bytes_text(static_cast<double>(bytes.scratch));
            std::printf("  %5lld %6lld  %-13s %28s %14s\n", static_cast<long long>(queries),
                        static_cast<long long>(keys), path_name(options->path), formula.c_str(),
                        peak.measured ? measure::bytes_text(static_cast<double>(peak.rss_growth_bytes)).c_str()
                                      : peak.note);
        }
    std::printf("\nAt L = 300, S = 1000 the streaming tile is clamped to the 1000 keys there are, so the\n"
                "two paths hold about the same; at L = S = 8192 the materialized path holds the whole\n"
                "[L,S] = 256 MiB of scores and the streaming one a [256, 2048] tile: the saving is real\n"
                "only when [L,S] is large. Both still do the same L x S x (Dk + Dv) multiply-adds (section 10).\n"
                "Only the materialized path can return the weights (heatmaps need it); the streaming\n"
                "path is the default when they are not asked for. Speed: make bench.\n");
}

// Section 10: a sparse mask saves work only where the engine skips what it blocks.
void lesson_local() {
    heading("local: a sparse mask is not automatically faster; measure it (section 10)");
    const int64_t T = 2048, Dk = 64, W = 32, stride = 16;
    Random random(12);
    const Tensor query = random.normal_tensor({1, T, Dk}), key = random.normal_tensor({1, T, Dk}),
                 value = random.normal_tensor({1, T, Dk});
    // Query l sees key s iff s = l (mod 16): as sparse as a window of 128, but spread over every key.
    std::vector<uint8_t> strided(static_cast<size_t>(T * T));
    for (int64_t l = 0; l < T; ++l)
        for (int64_t s = 0; s < T; ++s) strided[static_cast<size_t>(l * T + s)] = (s - l) % stride == 0;
    AttentionOptions materialized, streaming;
    materialized.path = AttentionPath::Materialized;
    streaming.path = AttentionPath::Streaming;
    struct Case {
        const char* name;
        Mask mask;
        const AttentionOptions* options;
        const char* what;
    };
    const Case cases[] = {
        {"no mask", Mask(), &streaming, "every score"},
        {"local W=32, materialized", Mask::local_window(T, W), &materialized,
         "every score, then -inf on the blocked ones"},
        {"local W=32, streaming", Mask::local_window(T, W), &streaming, "per block of queries, only the keys its windows reach"},
        {"strided 1 in 16, streaming", Mask::from_allowed(bool_matrix(T, T, strided)), &streaming,
         "an allowed key in every tile: nothing to skip"},
    };
    std::printf("L = S = %lld, Dk = %lld, one head; streaming works on blocks of %lld queries x tiles of up to\n"
                "%lld keys (engine/attention.h). Each call timed 5 times on 1 BLAS thread, the median:\n\n",
                static_cast<long long>(T), static_cast<long long>(Dk), static_cast<long long>(streaming.query_block),
                static_cast<long long>(streaming.key_tile));
    std::printf("  %-28s %8s %19s %9s %8s  %s\n", "mask, path", "allowed", "scores computed", "time", "vs none",
                "what it computes");
    // One BLAS thread: the small products of skipped-tile streaming would otherwise time
    // OpenBLAS's threads waking up more than the arithmetic.
    const int threads = blas_threads();
    set_blas_threads(1);
    double no_mask_seconds = 0;
    for (const Case& c : cases) {
        int64_t allowed = 0;
        for (int64_t l = 0; l < T; ++l)
            for (int64_t s = 0; s < T; ++s) allowed += c.mask.allows(0, 0, l, s);
        std::vector<double> seconds;
        AttentionResult result;
        for (int repetition = 0; repetition < 5; ++repetition) {
            const measure::Clock::time_point start = measure::Clock::now();
            result = scaled_dot_product_attention(query, key, value, c.mask, *c.options);
            seconds.push_back(measure::seconds_since(start));
        }
        const double time = measure::median(seconds);
        if (no_mask_seconds == 0) no_mask_seconds = time;
        const double cells = static_cast<double>(T * T);
        std::printf("  %-28s %7.2f%% %9lld (%5.1f%%) %6.1f ms %7.2fx  %s\n", c.name, 100.0 * allowed / cells,
                    static_cast<long long>(result.scores_computed), 100.0 * result.scores_computed / cells,
                    time * 1e3, no_mask_seconds / time, c.what);
    }
    set_blas_threads(threads);
    std::printf("\nThe window allows 3.15%% of the scores, but only the streaming path turns that into less\n"
                "work, and only by blocks of queries: a block of 256 queries computes every key from its\n"
                "first query's window start to its last query's window end (256 + 2W = 320 keys, 288 at\n"
                "the two ends), so it computes 15.2%%. The materialized path computes all of them and then\n"
                "blocks most. The strided mask allows only 6.25%%, yet each block's allowed keys run from\n"
                "the first key to the last and every tile holds some, so nothing is skipped and nothing is\n"
                "saved. A sparse mask is a speed-up only when the kernel skips the blocked work; time it\n"
                "(and see `make bench`, suite attention, for 8192 tokens).\n");
}

// Section 4, practice 4: a fully masked row across PyTorch versions.
void lesson_nan_history() {
    heading("nan-history: the fully-masked row, and why a silent 0 hides a convention bug");
    std::printf("A query whose every key is masked has no softmax distribution. What comes out:\n"
                "  PyTorch 1.13 (Debian's; the tools here): nn.MultiheadAttention (and the private\n"
                "      F._scaled_dot_product_attention; the public one arrived in 2.0) give NaN for the row.\n"
                "  PyTorch >= 2.5: SDPA, and MultiheadAttention with need_weights=False, give 0\n"
                "      (pytorch#131060, #133882, _safe_softmax); need_weights=True still gives NaN (#160064).\n"
                "  tinyformer: an error naming batch and query, unless the query is padding (then 0).\n\n");
    std::printf("The migration bug of `lesson conventions`: the causal mask written for\n"
                "nn.MultiheadAttention (True = blocked) passed to an SDPA-style API (True = allowed).\n"
                "Q = K = 0, V = [2, 4, 8]; query 0 now sees keys 1 and 2, query 1 key 2, query 2 nothing:\n\n");
    const float values[3] = {2.0f, 4.0f, 8.0f};
    const uint8_t mha_style[3][3] = {{0, 1, 1}, {0, 0, 1}, {0, 0, 0}};  // triu(1): True = blocked
    // Scores are all 0; read as SDPA's True = allowed, the blocked ones get -inf.
    double naive[3], safe[3];
    for (int q = 0; q < 3; ++q) {
        float max_score = -kInf;
        float scores[3];
        for (int k = 0; k < 3; ++k) {
            scores[k] = mha_style[q][k] ? 0.0f : -kInf;
            max_score = std::max(max_score, scores[k]);
        }
        double sum = 0, weighted = 0;
        for (int k = 0; k < 3; ++k) sum += std::exp(static_cast<double>(scores[k] - max_score));  // exp(nan) if all -inf
        for (int k = 0; k < 3; ++k) weighted += std::exp(static_cast<double>(scores[k] - max_score)) / sum * values[k];
        naive[q] = weighted;
        safe[q] = max_score == -kInf ? 0.0 : weighted;  // _safe_softmax: an all -inf row becomes 0
    }
    auto shown = [](double value) { return std::isnan(value) ? std::string("NaN") : std::to_string(value).substr(0, 4); };
    std::printf("  softmax as PyTorch 1.13:        outputs %s, %s, %s\n", shown(naive[0]).c_str(), shown(naive[1]).c_str(),
                shown(naive[2]).c_str());
    std::printf("  softmax as PyTorch >= 2.5 SDPA: outputs %s, %s, %s\n", shown(safe[0]).c_str(), shown(safe[1]).c_str(),
                shown(safe[2]).c_str());
    std::printf("  tinyformer:                     ");
    try {
        const Mask migrated = Mask::from_torch_sdpa_mask(bool_matrix(3, 3, {0, 1, 1, 0, 0, 1, 0, 0, 0}));
        scaled_dot_product_attention(Tensor({1, 3, 2}), Tensor({1, 3, 2}), Tensor({1, 3, 1}, {2.0f, 4.0f, 8.0f}), migrated);
        std::printf("no error?\n");
    } catch (const Error& error) {
        std::printf("%s\n", error.message().c_str());
    }
    std::printf("\nThe right answers are 2, 3, 14/3 (`lesson causal`). With NaN the bug shows at once (and\n"
                "spreads: 0 * NaN = NaN in the next layer); with a silent 0 every number is finite and\n"
                "plausible, and the wrong mask trains on. An error names the query that has no key.\n");
}

// Section 8: need_weights and the two paths.
void lesson_need_weights() {
    heading("need-weights: asking for the weights chooses the slower path");
    std::printf("nn.MultiheadAttention(..., need_weights=True) returns the weights, averaged over heads\n"
                "[B,L,S] when average_attn_weights=True (the default), per head [B,H,L,S] when False;\n"
                "need_weights=False returns None for them; in PyTorch 2.x that is one of the conditions\n"
                "for its fused kernel (1.13's fast path is gated by other conditions).\n"
                "tinyformer's choice is the same: AttentionOptions.want_weights.\n\n");
    const int64_t D = 8, H = 2;
    Random random(3);
    const MultiHeadAttentionWeights weights = random_attention_weights(random, D);
    const MultiHeadAttention attention(weights, H);
    const Tensor x = random.normal_tensor({1, 5, D});
    const AttentionResult with = attention.forward(x, x, Mask::causal(5), with_weights());
    const AttentionResult without = attention.forward(x, x, Mask::causal(5), AttentionOptions());
    std::printf("  weights asked for:     path %-12s weights %s (per head, never averaged)\n", path_name(with.path),
                shape_string(with.weights.shape()).c_str());
    std::printf("  weights not asked for: path %-12s weights %s\n", path_name(without.path),
                without.weights.empty() ? "none" : shape_string(without.weights.shape()).c_str());
    double difference = 0;
    for (int64_t i = 0; i < with.output.numel(); ++i)
        difference = std::max(difference, static_cast<double>(std::fabs(with.output.data()[i] - without.output.data()[i])));
    std::printf("  the outputs differ by at most %.2e (float rounding)\n", difference);
    std::printf("  average_attn_weights=True would give the mean over heads, e.g. query 1: ");
    for (int64_t s = 0; s < 5; ++s)
        std::printf("%.4f ", (with.weights.at({0, 0, 1, s}) + with.weights.at({0, 1, 1, s})) / 2.0f);
    std::printf("\n\nAveraged weights hide what each head does; tinyformer never averages unless asked\n"
                "(`tinyformer attention --average-heads`).\n");
}

// Section 8: dropout at inference, and SDPA's dropout_p.
void lesson_dropout() {
    heading("dropout: none at inference; SDPA's dropout_p does not read train()/eval()");
    const double p = 0.1;
    const float scores[5] = {1.0f, 2.0f, 0.5f, 3.0f, 1.5f};
    float row[5];
    std::copy(scores, scores + 5, row);
    float max_score = *std::max_element(row, row + 5);
    double sum = 0;
    for (float& v : row) sum += (v = std::exp(v - max_score));
    for (float& v : row) v = static_cast<float>(v / sum);
    std::printf("One attention row, softmax([1, 2, 0.5, 3, 1.5]):\n  ");
    double total = 0;
    for (float v : row) {
        std::printf("%.4f ", v);
        total += v;
    }
    std::printf("  sum %.4f\n", total);
    // A dropout draw that drops key 3 (the largest weight): each weight is kept with
    // probability 1 - p and then scaled by 1 / (1 - p), so the expected row is unchanged.
    const int dropped = 3;
    std::printf("Dropout at p = %.1f in training: each weight is zeroed with probability p and the rest\n"
                "are scaled by 1/(1-p) = %.4f. One draw that zeroes key %d:\n  ",
                p, 1.0 / (1.0 - p), dropped);
    total = 0;
    for (int k = 0; k < 5; ++k) {
        const double kept = k == dropped ? 0.0 : row[k] / (1.0 - p);
        std::printf("%.4f ", kept);
        total += kept;
    }
    std::printf("  sum %.4f (1 only in expectation)\n\n", total);
    std::printf("At inference (module.eval()) nn.MultiheadAttention and nn.Transformer apply no dropout, and\n"
                "tinyformer, an inference engine, has none: every row sums to 1.\n"
                "The pitfall: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1) drops out even under\n"
                "eval(); it does not know the module's mode. A module must pass\n"
                "    dropout_p = self.dropout if self.training else 0.0\n");
}

// Section 9: what positions change.
void lesson_positions() {
    heading("positions: without them a permuted input permutes the output; with them it does not");
    const int64_t T = 6, D = 16, V = 10;
    Random random(13);
    EncoderLayer layer{MultiHeadAttention({random.normal_tensor({3 * D, D}, 0.3f), random.normal_tensor({3 * D}, 0.1f),
                                           random.normal_tensor({D, D}, 0.3f), random.normal_tensor({D}, 0.1f)},
                                          4),
                       FeedForward{Linear{random.normal_tensor({32, D}, 0.3f), random.normal_tensor({32}, 0.1f)},
                                   Linear{random.normal_tensor({D, 32}, 0.3f), random.normal_tensor({D}, 0.1f)},
                                   Activation::Relu},
                       LayerNorm{Tensor::filled({D}, 1.0f), Tensor({D})}, LayerNorm{Tensor::filled({D}, 1.0f), Tensor({D})},
                       false};
    const Tensor tokens = random.normal_tensor({V, D});
    const std::vector<int64_t> ids = {3, 7, 1, 9, 4, 2};
    const std::vector<int64_t> perm = {2, 0, 5, 1, 4, 3};  // new position i holds old token perm[i]
    std::vector<int64_t> permuted_ids;
    for (int64_t i : perm) permuted_ids.push_back(ids[static_cast<size_t>(i)]);
    std::printf("Tokens [3,7,1,9,4,2] and the same tokens permuted by [2,0,5,1,4,3] through one encoder\n"
                "layer (D = 16, H = 4); max |layer(x)[perm[i]] - layer(permuted x)[i]|:\n");
    struct Case {
        const char* name;
        Tensor table;
    };
    const Case cases[] = {{"no positions", Tensor()},
                          {"sinusoidal positions", sinusoidal_table(T, D)},
                          {"learned positions (random table)", random.normal_tensor({T, D})}};
    for (const Case& each : cases) {
        const Embedding embedding{tokens, each.table, false};
        const Tensor out = layer.forward(embedding.forward({1, T, ids}), Mask(), Padding());
        const Tensor out_of_permuted = layer.forward(embedding.forward({1, T, permuted_ids}), Mask(), Padding());
        double worst = 0;
        for (int64_t i = 0; i < T; ++i)
            for (int64_t d = 0; d < D; ++d)
                worst = std::max(worst, static_cast<double>(std::fabs(out.at({0, perm[static_cast<size_t>(i)], d}) -
                                                                      out_of_permuted.at({0, i, d}))));
        std::printf("  %-34s %.2e\n", each.name, worst);
    }
    std::printf("Without positions the layer sees a set: the same tokens in any order give the same\n"
                "outputs, moved with them (float rounding only). A position table added to the\n"
                "embeddings makes order part of the input, so the outputs change.\n");
}

// Section 9: attention has no positional information.
void lesson_permutation() {
    heading("permutation: self-attention without positions is permutation-equivariant");
    Random random(11);
    const int64_t T = 5, D = 4;
    const Tensor x = random.normal_tensor({1, T, D});
    const std::vector<int64_t> perm = {3, 0, 4, 1, 2};  // new position i holds old token perm[i]
    Tensor permuted({1, T, D});
    for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < D; ++d) permuted.at({0, i, d}) = x.at({0, perm[static_cast<size_t>(i)], d});
    auto distance = [&](const Tensor& out, const Tensor& out_of_permuted) {
        double worst = 0;  // compare out[perm[i]] with out_of_permuted[i]
        for (int64_t i = 0; i < T; ++i)
            for (int64_t d = 0; d < D; ++d)
                worst = std::max(worst, static_cast<double>(std::fabs(out.at({0, perm[static_cast<size_t>(i)], d}) -
                                                                      out_of_permuted.at({0, i, d}))));
        return worst;
    };
    std::printf("Tokens permuted by %s; compare attention(permuted x) with permuted attention(x):\n",
                "[3,0,4,1,2]");
    std::printf("  no mask:                                  max difference %.2e\n",
                distance(scaled_dot_product_attention(x, x, x).output,
                         scaled_dot_product_attention(permuted, permuted, permuted).output));
    const Mask causal = Mask::causal(T);
    std::printf("  causal mask, same mask for both:          max difference %.2e\n",
                distance(scaled_dot_product_attention(x, x, x, causal).output,
                         scaled_dot_product_attention(permuted, permuted, permuted, causal).output));
    std::vector<uint8_t> permuted_mask(static_cast<size_t>(T * T));
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
            permuted_mask[static_cast<size_t>(i * T + j)] =
                causal.allows(0, 0, perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    std::printf("  causal mask permuted along both axes too: max difference %.2e\n",
                distance(scaled_dot_product_attention(x, x, x, causal).output,
                         scaled_dot_product_attention(permuted, permuted, permuted,
                                                      Mask::from_allowed(bool_matrix(T, T, permuted_mask)))
                             .output));
    std::printf("A causal or local mask carries position; without it (and without positional\n"
                "encodings) attention cannot tell token order.\n");
}

// Section 6: the causal mask keeps the answers out of training, on two trained models.
constexpr const char* kHonestModel = "data/models/reverse-causal.safetensors";
constexpr const char* kPeekingModel = "data/models/reverse-peeking.safetensors";

}  // namespace

// A lesson's model, `relative` to the checkout: from the current folder when
// it is there, else from the checkout the running binary lives in
// (build/tinyformer -> the folder above build/; /proc/self/exe, up to three
// folders up), so that `tinyformer lesson all` runs from anywhere. Empty
// when neither has it.
std::string find_lesson_model(const std::string& relative) {
    if (std::filesystem::is_regular_file(relative)) return relative;
    std::error_code error;
    std::filesystem::path folder = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
    for (int up = 0; !error && up < 4 && !folder.empty(); ++up) {
        std::error_code missing;
        if (std::filesystem::is_regular_file(folder / relative, missing)) return (folder / relative).string();
        if (folder == folder.root_path()) break;
        folder = folder.parent_path();
    }
    return "";
}

// find_lesson_model, or an Error naming where it was looked for.
std::string lesson_model(const std::string& relative) {
    const std::string found = find_lesson_model(relative);
    if (found.empty()) {
        std::error_code error;
        const std::string binary = std::filesystem::read_symlink("/proc/self/exe", error).string();
        fail("lesson: ", relative, " is missing: not in the current folder, nor in the checkout of ",
             error ? "the tinyformer binary" : binary,
             "; the lessons that read trained models (peeking, patching, lens, extrapolation, quantization) run from a tinyformer checkout that has "
             "data/models/");
    }
    return found;
}

namespace {

// A single-stack checkpoint's weights run with another self-attention: the
// peeking model read the way it was trained (bidirectional), not the way its
// config says it must be used (causal).
SingleStackModel single_stack_with_attention(const std::string& path, SelfAttentionKind attention) {
    Checkpoint checkpoint = Checkpoint::open(path);
    ModelConfig config = checkpoint.config();
    config.attention = attention;
    SingleStackModel model(config, checkpoint);
    checkpoint.refuse_unknown();
    return model;
}

Tensor logits_of(const SingleStackModel& model, const std::vector<int64_t>& ids) {
    return model.forward(TokenIds{1, static_cast<int64_t>(ids.size()), ids}, Padding(), {});
}

// The largest |a - b| of two passes' logits [1, n, V] over positions first..last.
double largest_difference(const Tensor& a, const Tensor& b, int64_t first, int64_t last) {
    const int64_t V = a.shape()[2];
    double worst = 0;
    for (int64_t t = first; t <= last; ++t)
        for (int64_t v = 0; v < V; ++v)
            worst = std::max(worst, static_cast<double>(std::fabs(a.at({0, t, v}) - b.at({0, t, v}))));
    return worst;
}

// Teacher forcing as in training (tools/python/train_toy.py): the model reads
// prompt + target; the row of the prompt's last token ('=') predicts target
// token 0, ..., the row of the last target token predicts <eos> (scored only
// with `score_eos`). The summed cross-entropy (nats) of those tokens, and their count.
struct Loss {
    double sum = 0;
    int64_t tokens = 0;
    double mean() const { return sum / static_cast<double>(tokens); }
};

void add_teacher_forced_loss(const SingleStackModel& model, const std::vector<int64_t>& prompt,
                             const std::vector<int64_t>& target, int64_t eos, bool score_eos, Loss& loss) {
    std::vector<int64_t> ids = prompt;
    ids.insert(ids.end(), target.begin(), target.end());
    const Tensor logits = logits_of(model, ids);
    const int64_t V = logits.shape()[2];
    for (size_t k = 0; k < target.size() + (score_eos ? 1 : 0); ++k) {
        const int64_t row = static_cast<int64_t>(prompt.size() + k) - 1;
        const int64_t label = k < target.size() ? target[k] : eos;
        loss.sum -= log_softmax(logits.data() + row * V, V)[static_cast<size_t>(label)];
        ++loss.tokens;
    }
}

void lesson_peeking() {
    heading("peeking: the causal mask keeps the answers out of training (section 6)");
    const Model honest = Model::load(lesson_model(kHonestModel));
    const ModelText text(honest);
    const SingleStackModel& causal = *honest.single_stack;

    // 1. On the shipped causal model, what follows position t cannot reach the logits up to t.
    const std::vector<int64_t> prompt = model_input(honest, text.encode_input("attention"));  // <bos>attention=
    const int64_t t = static_cast<int64_t>(prompt.size()) - 1;
    std::vector<int64_t> a = prompt, b = prompt;
    for (int64_t id : text.encode_output("noitnetta")) a.push_back(id);
    for (int64_t id : text.encode_output("zyxwvutsr")) b.push_back(id);
    const int64_t last = static_cast<int64_t>(a.size()) - 1;
    std::printf("%s (decoder-only, 4 layers, causal mask), two inputs that share positions\n"
                "0..t = 0..%lld and differ after t:\n  A: %s\n  B: %s\n",
                kHonestModel, static_cast<long long>(t), text.decode_input(a).c_str(), text.decode_input(b).c_str());
    const Tensor logits_a = logits_of(causal, a), logits_b = logits_of(causal, b);
    std::printf("  causal mask:        largest |logits A - logits B| at positions <= t: %g   at positions > t: %.3f\n",
                largest_difference(logits_a, logits_b, 0, t), largest_difference(logits_a, logits_b, t + 1, last));
    const SingleStackModel bidirectional_honest = single_stack_with_attention(lesson_model(kHonestModel), SelfAttentionKind::Bidirectional);
    std::printf("  the same weights without the mask: at positions <= t: %.3f   at positions > t: %.3f\n",
                largest_difference(logits_of(bidirectional_honest, a), logits_of(bidirectional_honest, b), 0, t),
                largest_difference(logits_of(bidirectional_honest, a), logits_of(bidirectional_honest, b), t + 1, last));
    std::printf("With the mask the logits up to t are bit for bit the same whatever follows: position t's\n"
                "prediction of the next token is made without it. Without the mask every position reads the\n"
                "whole sequence, its own label (the next token) included.\n\n");

    // 2. A model trained without the mask, on the same fresh examples.
    const Model peeking = Model::load(lesson_model(kPeekingModel));
    const SingleStackModel as_trained =
        single_stack_with_attention(lesson_model(kPeekingModel), SelfAttentionKind::Bidirectional);
    const ToyTask& task = toy_task("reverse");
    const int64_t n = 200;
    Random random(1);
    std::vector<std::string> texts;
    for (int64_t i = 0; i < n; ++i) {
        std::string one;
        const int64_t length = random.uniform_int(1, 16);
        for (int64_t j = 0; j < length; ++j)
            one += task.alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(task.alphabet.size()) - 1))];
        texts.push_back(one);
    }
    // The same prompts with answers no model can predict from them: random letters of the answer's
    // length. A model that does not see its labels loses at least log 26 nats per letter on them
    // (on average over random letters: the cross-entropy of a uniform choice is at least its entropy).
    std::vector<std::string> random_answers;
    for (const std::string& each : texts) {
        std::string one;
        for (size_t j = 0; j < each.size(); ++j)
            one += task.alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(task.alphabet.size()) - 1))];
        random_answers.push_back(one);
    }
    const int64_t eos = honest.config.eos_id;
    Loss honest_loss, peeking_loss, peeking_causal_loss, honest_random, peeking_random;
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::vector<int64_t> input = model_input(honest, text.encode_input(texts[i]));
        const std::vector<int64_t> target = text.encode_output(task.answer(texts[i]));
        const std::vector<int64_t> random_target = text.encode_output(random_answers[i]);
        add_teacher_forced_loss(causal, input, target, eos, true, honest_loss);
        add_teacher_forced_loss(as_trained, input, target, eos, true, peeking_loss);
        add_teacher_forced_loss(*peeking.single_stack, input, target, eos, true, peeking_causal_loss);
        add_teacher_forced_loss(causal, input, random_target, eos, false, honest_random);
        add_teacher_forced_loss(as_trained, input, random_target, eos, false, peeking_random);
    }
    // Exact matches, and the longest input among them.
    auto exact = [&](const std::vector<std::string>& outputs, size_t& longest_right) {
        int64_t correct = 0;
        longest_right = 0;
        for (size_t i = 0; i < texts.size(); ++i)
            if (outputs[i] == task.answer(texts[i])) {
                ++correct;
                longest_right = std::max(longest_right, texts[i].size());
            }
        return correct;
    };
    const std::vector<std::string> peeking_outputs = generate_text(peeking, texts, 1, {});
    size_t honest_longest = 0, peeking_longest = 0;
    const int64_t honest_exact = exact(generate_text(honest, texts, 1, {}), honest_longest);
    const int64_t peeking_exact = exact(peeking_outputs, peeking_longest);
    // The inputs no longer than its longest right answer; of the longer ones, those whose
    // output starts with the right letter (the last input letter, just before '=').
    int64_t short_inputs = 0, longer_inputs = 0, first_letter_right = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        if (texts[i].size() <= peeking_longest) {
            ++short_inputs;
            continue;
        }
        ++longer_inputs;
        first_letter_right += !peeking_outputs[i].empty() && peeking_outputs[i][0] == texts[i].back();
    }
    std::printf("%s: reverse-causal's architecture, data generator, seed and optimiser settings,\n"
                "trained with NO mask (every position sees the future; labels shifted by one as usual) and\n"
                "for 5000 steps where reverse-causal had 6000 (the first line of each data/models/*.train.log);\n"
                "exported as causal.\n"
                "%lld fresh reverse examples (tinyformer::Random, seed 1); loss = teacher-forced mean\n"
                "cross-entropy (nats) of the %lld target tokens and <eos> after '='; exact match = greedy\n"
                "decoding, which is causal: the tokens after the current one do not exist yet.\n\n",
                kPeekingModel, static_cast<long long>(n), static_cast<long long>(honest_loss.tokens));
    std::printf("  honest loss (causal, as trained):          %.3g\n", honest_loss.mean());
    std::printf("  peeking loss (bidirectional, as trained):  %.3g\n", peeking_loss.mean());
    std::printf("  peeking loss (causal, as decoding runs):   %.3g\n", peeking_causal_loss.mean());
    std::printf("  honest exact match:   %5.1f%% (%lld/%lld)\n",
                100.0 * static_cast<double>(honest_exact) / static_cast<double>(n), static_cast<long long>(honest_exact),
                static_cast<long long>(n));
    std::printf("  peeking exact match:  %5.1f%% (%lld/%lld)\n\n",
                100.0 * static_cast<double>(peeking_exact) / static_cast<double>(n), static_cast<long long>(peeking_exact),
                static_cast<long long>(n));
    std::printf("Reversal is a function of the prompt, so an honest model can drive its loss to 0 too; how low\n"
                "is abnormally low shows on answers that are NOT a function of the prompt. The same prompts\n"
                "teacher-forced with random letters as the answer; the loss of their %lld letters: a model that\n"
                "does not see its labels loses at least log 26 = %.3f nats per letter, on average.\n\n",
                static_cast<long long>(honest_random.tokens), std::log(26.0));
    std::printf("  honest loss on random answers:             %.3g\n", honest_random.mean());
    std::printf("  peeking loss on random answers:            %.3g   (%.0fx lower: it reads the answer)\n\n",
                peeking_random.mean(), honest_random.mean() / peeking_random.mean());
    std::printf("The peeking model learned to copy the next token, which it could see. Its training log\n"
                "(data/models/reverse-peeking.train.log) does not give that away on this task: the answer\n"
                "follows from the prompt, so the honest model's loss (reverse-causal.train.log) falls to 0\n"
                "as well. On answers that do not follow from the prompt, as in real text, a loss below\n"
                "what the data allows is the symptom; here, far below log 26. At generation the token it\n"
                "copied does not exist yet, and what it learned besides copying is not enough: it gets\n"
                "right only inputs of at most %lld letters (%lld of the %lld here); of the %lld longer inputs\n"
                "%lld start with the right letter (the one just before '=', which it can see) and every\n"
                "one goes wrong after that.\n",
                static_cast<long long>(peeking_longest), static_cast<long long>(peeking_exact),
                static_cast<long long>(short_inputs), static_cast<long long>(longer_inputs),
                static_cast<long long>(first_letter_right));
}

struct Lesson {
    const char* name;
    const char* summary;
    void (*run)();
    std::vector<const char*> models = {};  // the trained models it reads (found with lesson_model)
};

// The lessons in the order of lesson 10.3's sections, then section 10.4's.
struct Section {
    const char* title;
    std::vector<Lesson> lessons;
};

std::vector<const char*> toy_model_paths() {
    std::vector<const char*> paths;
    for (const ToyModel& model : kToyModels) paths.push_back(model.path);
    return paths;
}

const std::vector<Section>& sections() {
    static const std::vector<Section> all = {
        {"10.3 §2 scaled dot-product attention: the shapes, and why 1/sqrt(Dk)",
         {{"shapes", "practice 1: Q/K/V/scores/output shapes of cross-attention, L != S", lesson_shapes},
          {"scale", "why 1/sqrt(Dk): dot-product variance and softmax saturation for Dk = 4, 64, 1024", lesson_scale}}},
        {"10.3 §3 the mask goes in before softmax",
         {{"finite-negative", "-inf vs a finite negative; zeroing after softmax leaves rows unnormalised",
           lesson_finite_negative}}},
        {"10.3 §4 one Boolean tensor, two meanings; a query with no key",
         {{"conventions", "practice 3: nn.MultiheadAttention (True = blocked) vs SDPA (True = allowed)",
           lesson_conventions},
          {"empty-row", "practice 4: a fully masked query: the error, then the defined padding result", lesson_empty_row},
          {"nan-history", "a fully masked row: NaN (PyTorch 1.13), 0 (>= 2.5), an error here; why 0 hides bugs",
           lesson_nan_history}}},
        {"10.3 §5 one head from scratch: the 3x3 worked example",
         {{"causal", "practice 2: the 3x3 causal example (2, 3, 14/3), then the reversed mask", lesson_causal}}},
        {"10.3 §6 the causal mask, and why it is not one template",
         {{"is-causal", "is_causal=True is top-left when L != S: a cached step gives 2, not 14/3", lesson_is_causal},
          {"peeking", "trained models: the causal mask keeps later tokens out; one trained without it peeks",
           lesson_peeking, {kHonestModel, kPeekingModel}}}},
        {"10.3 §7 multi-head attention",
         {{"multihead", "H heads: per-head weights [B,H,L,S], concat, W_O; scores grow with H; D % H != 0 refused",
           lesson_multihead}}},
        {"10.3 §8 what the framework APIs do: weights, dropout",
         {{"need-weights", "need_weights / average_attn_weights: asking for weights runs the materialized path",
           lesson_need_weights},
          {"dropout", "no dropout at inference; p=0.1 on one row; SDPA's dropout_p ignores eval()", lesson_dropout}}},
        {"10.3 §9 attention itself knows no positions",
         {{"permutation", "without positions attention is permutation-equivariant; a causal mask is not",
           lesson_permutation},
          {"positions", "permuting tokens: equivariant without positions, not with sinusoidal or learned ones",
           lesson_positions}}},
        {"10.3 §10 what attention costs, beyond O(T^2)",
         {{"paths", "materialized vs streaming (online-softmax) attention: same answer, no [L,S]", lesson_paths},
          {"local", "a local window mask: dense vs tile-skipping, timed; a strided mask skips nothing", lesson_local}}},
        {"10.3 §11 attention weights are not causal explanations: counterfactuals, the stream",
         {{"patching", "activation patching on reverse, sort, dates: the changed position's stream carries the answer",
           lesson_patching, {kStudyModels[0], kStudyModels[1], kStudyModels[2]}},
          {"lens", "the logit lens and direct attribution: when the answer becomes readable; pre- vs post-LN norms",
           lesson_lens, {kStudyModels[0], kStudyModels[1], kStudyModels[3]}}}},
        {"10.4 residuals and normalisation, positions, grouped KV heads (the next lesson)",
         {{"norms", "LayerNorm vs RMSNorm on 1,2,3,4; pre-LN vs post-LN on one block: the stream, the final norm",
           lesson_norms},
          {"swiglu", "the gated FFN W2 (SiLU(W1 x) * W3 x) against ReLU's, by hand; F = 2/3 * 4D keeps the weights of a 4D FFN",
           lesson_swiglu},
          {"rotary", "RoPE: the score of q at m and k at n depends on m - n only; the KV cache holds turned keys",
           lesson_rotary},
          {"rope-pairs", "RoPE's adjacent (llama2.c) and half (HF LLaMA) pairs on one q; converting W_Q, W_K rows between them",
           lesson_rope_pairs},
          {"alibi", "ALiBi's per-head slopes (H = 4, 6, 8) and bias, the 3x3 example with slope 1/2: 5.653274",
           lesson_alibi},
          {"gqa", "grouped-query attention: KV cache bytes per token of stories15M at 6, 3, 2, 1 K/V heads; equals repeated K/V heads",
           lesson_gqa},
          {"extrapolation", "per position scheme, live: reversal trained on 1..16 letters (exact match at 1-16, 17-24, 25-32) and LM loss per position past 32",
           lesson_extrapolation,
           {kExtrapolationModels[0], kExtrapolationModels[1], kExtrapolationModels[2], kExtrapolationModels[3],
            kLmModels[0], kLmModels[1], kLmModels[2], kLmModels[3], kLmModels[4], kLmHeldOut}}}},
        {"beyond the lessons: int8 weights (Q8_0), as llama2.c's runq.c runs them",
         {{"quantization", "int8 weights in groups: one group and one int8 dot product by hand; the logits' error and the toy tasks' accuracy",
           lesson_quantization, toy_model_paths()}}},
    };
    return all;
}

void print_lessons(std::FILE* out) {
    std::fprintf(out, "usage: tinyformer lesson [NAME|all]\n\nLessons 10.3 and 10.4's worked examples, and int8 weights, run on the engine:\n");
    for (const Section& section : sections()) {
        std::fprintf(out, "%s\n", section.title);
        for (const Lesson& lesson : section.lessons) std::fprintf(out, "  %-16s %s\n", lesson.name, lesson.summary);
    }
    std::fprintf(out, "  %-16s every one of the above, in this order, each section named\n", "all");
}

// `tinyformer lesson NAME --help`: what the lesson shows and what it reads.
void print_lesson_help(const Lesson& lesson) {
    std::printf("usage: tinyformer lesson %s\n\n%s\n", lesson.name, lesson.summary);
    if (!lesson.models.empty()) {
        std::printf("Reads the trained models\n");
        for (const char* model : lesson.models) std::printf("  %s\n", model);
        std::printf("from the current folder or else from the checkout the tinyformer binary was built in.\n");
    }
}

bool is_help(const std::string& arg) { return arg == "--help" || arg == "-h"; }

}  // namespace

int lesson_command(const Arguments& args) {
    if (args.empty() || is_help(args[0])) {
        print_lessons(stdout);
        return 0;
    }
    const bool all = args[0] == "all";
    std::vector<std::pair<const Section*, const Lesson*>> chosen;
    for (const Section& section : sections())
        for (const Lesson& lesson : section.lessons)
            if (all || args[0] == lesson.name) chosen.emplace_back(&section, &lesson);
    if (chosen.empty()) throw UsageError("unknown lesson '" + args[0] + "' (run 'tinyformer lesson' for the list)");
    if (args.size() == 2 && is_help(args[1])) {
        if (all) {
            print_lessons(stdout);
            return 0;
        }
        print_lesson_help(*chosen[0].second);
        return 0;
    }
    if (args.size() > 1) throw UsageError("lesson takes one NAME, got " + std::to_string(args.size()) + " arguments");
    // The trained models are looked for before anything is printed: a missing one is the only line.
    for (const auto& each : chosen)
        for (const char* model : each.second->models) lesson_model(model);
    const Section* current = nullptr;
    for (const auto& [section, lesson] : chosen) {
        if (all && section != current) std::printf("\n\n== %s ==\n", section->title);
        current = section;
        lesson->run();
    }
    return 0;
}

}  // namespace tinyformer::cli
