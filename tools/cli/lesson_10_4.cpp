// `tinyformer lesson NAME` for section 10.4 (what lesson 10.3 leaves for the
// next lesson): normalisation and where the residual goes, rotary and ALiBi
// positions, grouped-query attention's KV cache, and length extrapolation
// measured on trained models. As in tools/cli/lesson.cpp every number is
// computed by the engine at run time; the text quotes the hand calculations
// (tests/test_lesson.cpp has the working).

#include "engine/matmul.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "layers/encoder_layer.h"
#include "layers/kv_cache.h"
#include "layers/multi_head_attention.h"
#include "layers/rotary.h"
#include "models/cost.h"
#include "models/study/lm_loss.h"
#include "models/study/toy_tasks.h"
#include "models/tokenizers/tokenizer.h"
#include "models/transformer.h"
#include "tools/cli/cli.h"
#include "tools/cli/lesson_common.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer::cli {
namespace {

void print_vector(const char* name, const Tensor& x) {
    std::printf("%s", name);
    for (int64_t i = 0; i < x.numel(); ++i) std::printf(" %8.4f", x.data()[i]);
    std::printf("\n");
}

// The root mean square of every value of x: sqrt(mean(x^2)).
double rms(const Tensor& x) {
    double sum = 0;
    for (int64_t i = 0; i < x.numel(); ++i) sum += static_cast<double>(x.data()[i]) * x.data()[i];
    return std::sqrt(sum / static_cast<double>(x.numel()));
}

// q . k over Dh floats, in double.
double dot(const std::vector<float>& q, const std::vector<float>& k) {
    double sum = 0;
    for (size_t d = 0; d < q.size(); ++d) sum += static_cast<double>(q[d]) * k[d];
    return sum;
}

// The score of a query q at position m against a key k at position n: both
// turned by rotary_reference (one head, theta 10000, adjacent pairs), then q . k.
double rotary_score(std::vector<float> q, int64_t m, std::vector<float> k, int64_t n) {
    const int64_t head_dim = static_cast<int64_t>(q.size());
    rotary_reference(q.data(), 1, head_dim, m, 10000.0f, RopePairs::Adjacent);
    rotary_reference(k.data(), 1, head_dim, n, 10000.0f, RopePairs::Adjacent);
    return dot(q, k);
}

}  // namespace

void lesson_norms() {
    heading("norms: LayerNorm vs RMSNorm, and where the residual goes (pre-LN vs post-LN)");
    std::printf("LayerNorm:  y = (x - mean) / sqrt(var + eps) * weight + bias    (centres, then scales)\n"
                "RMSNorm:    y = x / sqrt(mean(x^2) + eps) * weight              (scales only; no mean, no bias)\n"
                "The same vector through both, weight 1, bias 0, eps = 1e-5 (layers/layer_norm.h):\n\n");
    const Tensor ones = Tensor::filled({4}, 1.0f);
    const LayerNorm layer_norm{ones, Tensor({4}), 1e-5f, NormKind::LayerNorm};
    const LayerNorm rms_norm{ones, Tensor(), 1e-5f, NormKind::RmsNorm};
    const Tensor x({1, 4}, {1.0f, 2.0f, 3.0f, 4.0f});
    print_vector("  x                  ", x);
    print_vector("  LayerNorm(x)       ", layer_norm.forward(x));
    print_vector("  RMSNorm(x)         ", rms_norm.forward(x));
    std::printf("  by hand: mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so LayerNorm is\n"
                "  (x - 2.5) / sqrt(1.25) = -1.3416 -0.4472 0.4472 1.3416; mean(x^2) = 30 / 4 = 7.5,\n"
                "  sqrt(7.5) = 2.7386, so RMSNorm is x / 2.7386 = 0.3651 0.7303 1.0954 1.4606.\n\n");
    const Tensor shifted({1, 4}, {11.0f, 12.0f, 13.0f, 14.0f});
    print_vector("  x + 10             ", shifted);
    print_vector("  LayerNorm(x + 10)  ", layer_norm.forward(shifted));
    print_vector("  RMSNorm(x + 10)    ", rms_norm.forward(shifted));
    std::printf("  LayerNorm removes the shift (the same output as for x); RMSNorm does not: mean(x^2) is\n"
                "  (121 + 144 + 169 + 196) / 4 = 157.5, sqrt 12.5499, so 11 / 12.5499 = 0.8765 ... 1.1155.\n");
    const Tensor doubled({1, 4}, {2.0f, 4.0f, 6.0f, 8.0f});
    std::printf("  Both undo a scale: largest |norm(2x) - norm(x)|: LayerNorm %.1e, RMSNorm %.1e (eps only).\n"
                "  RMSNorm is one reduction instead of two and has no bias; llama2.c and Llama use it.\n\n",
                max_difference(layer_norm.forward(doubled), layer_norm.forward(x)),
                max_difference(rms_norm.forward(doubled), rms_norm.forward(x)));

    // One encoder block, the same weights, its two arrangements.
    const int64_t T = 5, D = 16, H = 4, F = 64, depth = 6;
    Random random(21);
    const MultiHeadAttention attention({random.normal_tensor({3 * D, D}, 0.3f), random.normal_tensor({3 * D}, 0.1f),
                                        random.normal_tensor({D, D}, 0.3f), random.normal_tensor({D}, 0.1f)},
                                       H);
    FeedForward ffn;
    ffn.linear1 = Linear{random.normal_tensor({F, D}, 0.3f), random.normal_tensor({F}, 0.1f)};
    ffn.linear2 = Linear{random.normal_tensor({D, F}, 0.3f), random.normal_tensor({D}, 0.1f)};
    ffn.activation = Activation::Relu;
    const LayerNorm norm{Tensor::filled({D}, 1.0f), Tensor({D}), 1e-5f, NormKind::LayerNorm};
    const EncoderLayer post_ln{attention, ffn, norm, norm, false};
    const EncoderLayer pre_ln{attention, ffn, norm, norm, true};
    const Tensor input = random.normal_tensor({1, T, D});

    std::printf("Where the residual goes: one encoder block (D = %lld, H = %lld, F = %lld, random weights),\n"
                "the same weights in both arrangements (layers/encoder_layer.h):\n"
                "  post-LN:  x = norm1(x + Attention(x));   x = norm2(x + FFN(x))\n"
                "            the norm is on the residual stream itself, after every add\n"
                "  pre-LN:   x = x + Attention(norm1(x));   x = x + FFN(norm2(x))\n"
                "            the sublayers read a normalised copy; the stream is never normalised\n",
                static_cast<long long>(D), static_cast<long long>(H), static_cast<long long>(F));
    // The engine's layer against the formulas, from its parts.
    auto attend = [&](const Tensor& in) { return attention.forward(in, in, Mask(), {}).output; };
    const Tensor post_a = norm.forward(add(input, attend(input)));
    const Tensor post_by_parts = norm.forward(add(post_a, ffn.forward(post_a)));
    const Tensor pre_a = add(input, attend(norm.forward(input)));
    const Tensor pre_by_parts = add(pre_a, ffn.forward(norm.forward(pre_a)));
    std::printf("  largest |engine - the formula from the parts|: post-LN %.2e, pre-LN %.2e\n\n",
                max_difference(post_ln.forward(input, Mask(), Padding()), post_by_parts),
                max_difference(pre_ln.forward(input, Mask(), Padding()), pre_by_parts));

    std::printf("The same block applied %lld times; the RMS of the residual stream after each (input RMS %.3f):\n",
                static_cast<long long>(depth), rms(input));
    std::printf("  %5s %10s %10s %22s\n", "layer", "post-LN", "pre-LN", "pre-LN + final norm");
    Tensor post = input, pre = input;
    for (int64_t layer = 1; layer <= depth; ++layer) {
        post = post_ln.forward(post, Mask(), Padding());
        pre = pre_ln.forward(pre, Mask(), Padding());
        std::printf("  %5lld %10.3f %10.3f %22.3f\n", static_cast<long long>(layer), rms(post), rms(pre),
                    rms(norm.forward(pre)));
    }
    std::printf("Post-LN ends every block with a norm, so its stream stays at RMS 1 (weight 1, bias 0).\n"
                "Pre-LN adds each sublayer's output to a stream nothing normalises, so it grows with depth;\n"
                "a pre-LN model therefore ends with one more norm before the output head (the final norm:\n"
                "the config's \"final_norm\", GPT-2's ln_f, llama2.c's norm), which a post-LN model does not\n"
                "need. What pre-LN buys is the residual path itself: from the input to the last layer it is\n"
                "a plain sum, with no norm on it to pass gradients through.\n");
}

// Section 10.4: rotary positions. The score of a turned query and key depends
// on m - n only; a KV cache holds keys turned once, by their own positions.
void lesson_rotary() {
    heading("rotary: q and k turned by their positions; the score sees only m - n");
    std::printf("RoPE turns each pair of a head's dimensions by angle = position * theta^(-2i/Dh)\n"
                "(layers/rotary.h; llama2.c's adjacent pairs (2i, 2i+1), theta = 10000). Rotations keep dot\n"
                "products and add angles, so for a query at m and a key at n\n"
                "    rot(q, m) . rot(k, n) = q . rot(k, n - m)      which depends on m - n only.\n\n");
    const std::vector<float> unit = {1.0f, 0.0f};
    std::printf("Dh = 2, q = k = (1, 0): one pair, frequency theta^0 = 1, rot(q, m) = (cos m, sin m), so the\n"
                "score is cos m cos n + sin m sin n = cos(m - n) (radians):\n");
    std::printf("  %6s %6s %12s %12s\n", "m", "n", "score", "cos(m - n)");
    for (const auto& [m, n] : {std::pair<int64_t, int64_t>{3, 1}, {13, 11}, {1003, 1001}, {1, 3}})
        std::printf("  %6lld %6lld %12.6f %12.6f\n", static_cast<long long>(m), static_cast<long long>(n),
                    rotary_score(unit, m, unit, n), std::cos(static_cast<double>(m - n)));
    std::printf("  by hand: cos(2) = -0.416147 for every pair with m - n = 2, and cos(-2) is the same.\n\n");

    const int64_t Dh = 64, m = 7, n = 3;
    Random random(41);
    std::vector<float> q(static_cast<size_t>(Dh)), k(static_cast<size_t>(Dh));
    for (float& v : q) v = random.normal();
    for (float& v : k) v = random.normal();
    const double base = rotary_score(q, m, k, n);
    std::printf("Dh = %lld, random q and k, the query at m = %lld, the key at n = %lld: score %.6f.\n"
                "Both moved on by s (the query at m + s, the key at n + s), m - n still %lld:\n",
                static_cast<long long>(Dh), static_cast<long long>(m), static_cast<long long>(n), base,
                static_cast<long long>(m - n));
    std::printf("  %8s %12s %20s\n", "s", "score", "score - score(s=0)");
    for (int64_t s : {1, 10, 100, 1000, 10000}) {
        const double shifted = rotary_score(q, m + s, k, n + s);
        std::printf("  %8lld %12.6f %20.2e\n", static_cast<long long>(s), shifted, shifted - base);
    }
    std::printf("The same score to float rounding: the angles are float32 (position * frequency, then cos and\n"
                "sin of that float), so the rounding grows with the positions themselves, not with m - n.\n\n");

    // What the KV cache stores, on the module the models run (layers/multi_head_attention.h).
    const int64_t D = 8, H = 2, T = 4;
    const Tensor in_proj_weight = random.normal_tensor({3 * D, D}, 0.5f);  // [W_Q; W_K; W_V], no bias
    const MultiHeadAttention attention({in_proj_weight, Tensor(), random.normal_tensor({D, D}, 0.5f), Tensor()},
                                       H, "", std::nullopt, RotaryEmbedding(D / H, 10000.0f, RopePairs::Adjacent));
    const Tensor x = random.normal_tensor({1, T, D});
    KVCache cache;
    std::vector<Tensor> after_step;  // the cache's keys after each step
    for (int64_t t = 0; t < T; ++t) {
        const Tensor token({1, 1, D}, std::vector<float>(x.data() + t * D, x.data() + (t + 1) * D));
        attention.forward_appending(token, cache, Mask(), {});
        after_step.push_back(cache.key_tensor());
    }
    // k_n = x_n W_K before any rotation, projected as the step projected it: the module's own
    // call, one token through the fused Q|K|V product, whose columns D..2D-1 are K. (W_K alone,
    // a product of another shape, could sum in another order: equal only to float rounding.)
    Tensor unturned({1, T, D});
    for (int64_t t = 0; t < T; ++t) {
        const Tensor token({1, 1, D}, std::vector<float>(x.data() + t * D, x.data() + (t + 1) * D));
        const Tensor qkv_t = linear(token, in_proj_weight, Tensor());  // [1, 1, 3D]
        std::copy(qkv_t.data() + D, qkv_t.data() + 2 * D, unturned.data() + t * D);
    }
    std::printf("What a KV cache stores: one self-attention with rotary positions (D = %lld, H = %lld, Dh = %lld,\n"
                "random weights) run as decoding runs it, one token per step, %lld steps. Its cache holds\n"
                "rot(k_n, n), each key turned by ITS OWN position when it is written, and never again:\n",
                static_cast<long long>(D), static_cast<long long>(H), static_cast<long long>(D / H),
                static_cast<long long>(T));
    std::printf("  %3s %24s %16s %32s\n", "n", "|cached - rot(k_n, n)|", "|cached - k_n|", "|cached at step n - at the end|");
    for (int64_t pos = 0; pos < T; ++pos) {
        std::vector<float> expected(unturned.data() + pos * D, unturned.data() + (pos + 1) * D);
        rotary_reference(expected.data(), H, D / H, pos, 10000.0f, RopePairs::Adjacent);
        double vs_turned = 0, vs_unturned = 0, vs_later = 0;
        for (int64_t d = 0; d < D; ++d) {
            const float cached = after_step.back().at({0, pos, d});
            vs_turned = std::max(vs_turned, static_cast<double>(std::fabs(cached - expected[static_cast<size_t>(d)])));
            vs_unturned = std::max(vs_unturned, static_cast<double>(std::fabs(cached - unturned.at({0, pos, d}))));
            vs_later = std::max(vs_later, static_cast<double>(std::fabs(cached - after_step[static_cast<size_t>(pos)].at({0, pos, d}))));
        }
        std::printf("  %3lld %24.2e %16.2e %32.2e\n", static_cast<long long>(pos), vs_turned, vs_unturned, vs_later);
    }
    std::printf("The cache equals rot(k_n, n) exactly (the module's fast path is the reference, bit for bit);\n"
                "it differs from the plain k_n except at n = 0 (angle 0); and a row written at step n is the\n"
                "same at the end. Each step turns only its new query, by its position m; the scores\n"
                "rot(q, m) . rot(k_n, n) then depend on m - n as above. V is never turned, and there is no\n"
                "position table: no max_len row to run out of (what longer inputs do to a model trained\n"
                "short is `lesson extrapolation`'s question).\n");
}

// Section 10.4: ALiBi, a per-head bias on the scores from engine/mask.h.
void lesson_alibi() {
    heading("alibi: a per-head linear bias on the scores instead of a position table");
    std::printf("ALiBi (Press et al., \"Train Short, Test Long\") adds to every allowed score\n"
                "    bias[h, i, j] = -slope_h * |i - j|         (causal: -slope_h * (i - j))\n"
                "and puts nothing into the embeddings. The slopes are a geometric sequence per head\n"
                "(alibi_slopes, engine/mask.h): for H a power of two slope_h = 2^(-8 (h+1) / H); otherwise\n"
                "the n = 2^floor(log2 H) slopes of n heads, then the slopes of 2n heads at indices 0, 2, ...:\n\n");
    for (int64_t heads : {4, 6, 8}) {
        std::printf("  H = %lld:", static_cast<long long>(heads));
        for (float slope : alibi_slopes(heads)) std::printf(" 2^%g", std::log2(static_cast<double>(slope)));
        std::printf("\n");
    }
    std::printf("  by hand: H = 4: 2^(-8 (h+1) / 4) = 2^-2, 2^-4, 2^-6, 2^-8; H = 8: 2^-1 ... 2^-8; H = 6: n = 4,\n"
                "  the four of H = 4, then those of H = 8 at indices 0 and 2: 2^-1, 2^-3.\n\n");

    const int64_t T = 4, H = 4;
    const Mask mask = Mask::alibi(H, T) & Mask::causal(T);
    const std::vector<float> slopes = alibi_slopes(H);
    std::printf("The bias of each head, Mask::alibi(%lld, %lld) & Mask::causal(%lld) (row i: query, column j: key;\n"
                "-inf: a key the causal mask blocks):\n",
                static_cast<long long>(H), static_cast<long long>(T), static_cast<long long>(T));
    for (int64_t h = 0; h < H; ++h) {
        std::printf("  head %lld, slope %g:\n", static_cast<long long>(h), static_cast<double>(slopes[static_cast<size_t>(h)]));
        for (int64_t i = 0; i < T; ++i) {
            std::printf("   ");
            for (int64_t j = 0; j < T; ++j) {
                if (!mask.allows(0, h, i, j)) {
                    std::printf(" %9s", "-inf");
                    continue;
                }
                const float bias = mask.bias(0, h, i, j);
                std::printf(" %9.5f", bias == 0.0f ? 0.0 : static_cast<double>(bias));  // no "-0"
            }
            std::printf("\n");
        }
    }
    std::printf("Each diagonal is one distance i - j, so one bias: the bias sees distances, not positions.\n"
                "Head 0 (the steepest) favours the nearest keys; head 3's bias is nearly flat, so it can\n"
                "look far back.\n\n");

    // The 3x3 worked example with the slope of H = 8's head 0, 1/2, from the engine's own mask.
    const int64_t heads = 8;
    const Tensor zeros({1, 3, heads});  // Q = K = 0: every score 0, only the bias differs
    Tensor value({1, 3, heads});
    for (int64_t h = 0; h < heads; ++h) {
        value.at({0, 0, h}) = 2.0f;
        value.at({0, 1, h}) = 4.0f;
        value.at({0, 2, h}) = 8.0f;
    }
    const AttentionResult result = multi_head_scaled_dot_product_attention(
        zeros, zeros, value, heads, Mask::alibi(heads, 3) & Mask::causal(3), with_weights());
    std::printf("The 3x3 example of `lesson causal` (Q = K = 0, V = 2, 4, 8, causal) with ALiBi: head 0 of\n"
                "H = 8, slope %g, through Mask::alibi(8, 3) & Mask::causal(3):\n",
                static_cast<double>(alibi_slopes(heads)[0]));
    print_matrix("  weights", result.weights.matrix(0), 6);
    std::printf("  outputs: %.6f %.6f %.6f   (without the bias: 2, 3, 14/3 = 4.666667)\n",
                static_cast<double>(result.output.at({0, 0, 0})), static_cast<double>(result.output.at({0, 1, 0})),
                static_cast<double>(result.output.at({0, 2, 0})));
    std::printf("  by hand, the last query: scores 0 + bias -1, -0.5, 0; e^-1 = 0.367879, e^-0.5 = 0.606531,\n"
                "  e^0 = 1, sum 1.974410; (2 * 0.367879 + 4 * 0.606531 + 8 * 1) / 1.974410 = 5.653274.\n"
                "  The engine's value minus the hand value: %.1e (float32 rounding).\n"
                "  The bias moves weight to the nearer keys, so the output is nearer V = 8 than 14/3 is.\n\n",
                static_cast<double>(result.output.at({0, 2, 0})) - 5.653274);
    std::printf("Why no position table: the bias is computed from the two positions when attention runs\n"
                "(a KV-cache slot keeps its token's position), so any length has its bias; there is nothing\n"
                "added to the embeddings and no max_len rows to run out of. Nor does it touch q, k or v: it\n"
                "is a term of the mask, which both attention paths and the pictures read.\n");
}

// Section 10.4: grouped-query attention. What fewer K/V heads save (the KV
// cache, by models/cost.h), and that the attention is the same as with
// every K/V head repeated.
void lesson_gqa() {
    heading("gqa: grouped-query attention: fewer K/V heads, a smaller KV cache, the same attention");
    std::printf("With H query heads and Hkv key/value heads (Hkv divides H; multi-query when Hkv = 1), query\n"
                "head h reads K/V head h / (H / Hkv) (engine/attention.h). A KV cache keeps K and V of every\n"
                "layer for every past token, so per token it holds (float32)\n"
                "    2 (K and V) * layers * Hkv * Dh * 4 bytes\n"
                "The stories15M shape (llama2.c: D = 288, 6 layers, H = 6, Dh = 48, 256 tokens of context),\n"
                "by models/cost.h's kv_cache_bytes_per_position (one layer) times the layers:\n\n");
    const int64_t D = 288, layers = 6, heads = 6, context = 256;
    std::printf("  %4s %4s %16s %14s %22s\n", "H", "Hkv", "bytes per token", "KiB per token", "MiB at 256 tokens");
    for (int64_t kv : {6, 3, 2, 1}) {
        CostShape shape;
        shape.d_model = D;
        shape.heads = heads;
        shape.ff = 768;
        shape.kv_heads = kv;
        const int64_t per_token = layers * kv_cache_bytes_per_position(shape);
        std::printf("  %4lld %4lld %16lld %14.2f %22.4f\n", static_cast<long long>(heads), static_cast<long long>(kv),
                    static_cast<long long>(per_token), static_cast<double>(per_token) / 1024.0,
                    static_cast<double>(per_token * context) / (1024.0 * 1024.0));
    }
    std::printf("  by hand: 2 * 6 * 6 * 48 * 4 = 13824 B = 13.5 KiB per token with 6 K/V heads; 3, 2, 1 heads\n"
                "  keep 1/2, 1/3, 1/6 of it: 6912, 4608, 2304 B; at 256 tokens 13824 * 256 B = 3.375 MiB.\n"
                "  (Hkv must divide H: 6 heads allow 6, 3, 2 and 1, not 4.)\n\n");

    // The same attention: GQA against the expanded heads.
    const int64_t H = 8, Hkv = 2, Dh = 4, L = 5;
    Random random(31);
    const Tensor query = random.normal_tensor({1, L, H * Dh});
    const Tensor key = random.normal_tensor({1, L, Hkv * Dh});
    const Tensor value = random.normal_tensor({1, L, Hkv * Dh});
    // What torch's repeat_interleave(H / Hkv) along the head axis builds: head h holds K/V head h / (H / Hkv).
    Tensor expanded_key({1, L, H * Dh}), expanded_value({1, L, H * Dh});
    for (int64_t s = 0; s < L; ++s)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < Dh; ++d) {
                const int64_t g = h / (H / Hkv);
                expanded_key.at({0, s, h * Dh + d}) = key.at({0, s, g * Dh + d});
                expanded_value.at({0, s, h * Dh + d}) = value.at({0, s, g * Dh + d});
            }
    std::printf("H = %lld query heads over Hkv = %lld K/V heads (Dh = %lld, L = S = %lld, causal, random Q, K, V):\n"
                "the engine's GQA call against ordinary %lld-head attention on K and V with each K/V head\n"
                "repeated %lld times (query heads 0-3 read K/V head 0, heads 4-7 head 1):\n",
                static_cast<long long>(H), static_cast<long long>(Hkv), static_cast<long long>(Dh),
                static_cast<long long>(L), static_cast<long long>(H), static_cast<long long>(H / Hkv));
    for (AttentionPath path : {AttentionPath::Materialized, AttentionPath::Streaming}) {
        AttentionOptions options;
        options.path = path;
        options.want_weights = path == AttentionPath::Materialized;
        const AttentionResult grouped = multi_head_scaled_dot_product_attention(
            query, key, value, AttentionHeads{H, Hkv}, Mask::causal(L), options);
        const AttentionResult expanded =
            multi_head_scaled_dot_product_attention(query, expanded_key, expanded_value, H, Mask::causal(L), options);
        std::printf("  %-13s largest |GQA - expanded|: output %.2e", path_name(path),
                    max_difference(grouped.output, expanded.output));
        if (options.want_weights) std::printf(", weights %.2e", max_difference(grouped.weights, expanded.weights));
        std::printf("\n");
    }
    std::printf("The same numbers: GQA is ordinary attention whose K/V heads are shared, read in place, never\n"
                "copied. What it saves is the cache (and the K/V projections: W_K, W_V are [Hkv*Dh, D]);\n"
                "whether a model with fewer K/V heads is as good is a training question, not an inference one.\n");
}

// Section 10.4 / issue #23 item 3: length extrapolation, measured live on
// helper X's four reverse models (tools/python/train_extrapolation.py).
void lesson_extrapolation() {
    heading("extrapolation: trained on 1..16 letters, tested on longer inputs, per position scheme");
    struct Range {
        int64_t min, max;
    };
    const Range ranges[] = {{1, 16}, {17, 24}, {25, 32}};
    const int64_t n = 50;  // examples per range: a few seconds in all
    std::printf("Four decoder-only reverse models of the same size, steps and seed, trained on inputs of\n"
                "1..16 letters, differing only in how they know positions (docs/EXTRAPOLATION.md):\n"
                "  learned      a trained [max_len, D] table added to the embeddings\n"
                "  sinusoidal   the fixed sin/cos table added to the embeddings\n"
                "  rotary       q and k rotated by their positions in every attention (no table)\n"
                "  alibi        -slope * distance added to the scores (no table)\n"
                "Exact match of greedy decoding on %lld fresh inputs per length range (tinyformer::Random,\n"
                "seed 1; lengths uniform in the range, letters uniform):\n\n",
                static_cast<long long>(n));
    std::printf("  %-44s", "model");
    for (const Range& range : ranges) std::printf(" %10lld-%-2lld", static_cast<long long>(range.min), static_cast<long long>(range.max));
    std::printf("\n");
    const ToyTask& task = toy_task("reverse");
    std::string best_name;
    int64_t best_long = -1, right_longest = 0;  // the best 17-24 count; all right answers at 25-32
    for (const char* path : kExtrapolationModels) {
        const Model model = Model::load(lesson_model(path));
        std::printf("  %-44s", path);
        Random random(1);
        for (const Range& range : ranges) {
            std::vector<std::string> texts;
            for (int64_t i = 0; i < n; ++i) {
                std::string one;
                const int64_t length = random.uniform_int(range.min, range.max);
                for (int64_t j = 0; j < length; ++j)
                    one += task.alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(task.alphabet.size()) - 1))];
                texts.push_back(one);
            }
            const std::vector<std::string> outputs = generate_text(model, texts, 1, {});
            int64_t correct = 0;
            for (size_t i = 0; i < texts.size(); ++i) correct += outputs[i] == task.answer(texts[i]);
            if (range.min == 17 && correct > best_long) best_long = correct, best_name = path;
            if (range.min == 25) right_longest += correct;
            std::printf("  %5lld/%-2lld %3.0f%%", static_cast<long long>(correct), static_cast<long long>(n),
                        100.0 * static_cast<double>(correct) / static_cast<double>(n));
        }
        std::printf("\n");
    }
    // Which rows of reverse-learned's table training reached: the longest training
    // example (16 letters) is read as <bos> + 16 letters + "=" + the 16-letter answer.
    const Model learned = Model::load(lesson_model(kExtrapolationModels[0]));
    const std::string longest(16, 'a');
    const int64_t trained_rows = static_cast<int64_t>(
        model_input(learned, Tokenizer(learned.text.input_vocab()).encode(longest)).size() + longest.size());
    std::printf("\nFrom the numbers: best at 17-24: %s (%lld/%lld);\nright at 25-32: %lld of %lld inputs in all.\n",
                best_name.c_str(), static_cast<long long>(best_long), static_cast<long long>(n),
                static_cast<long long>(right_longest), static_cast<long long>(4 * n));
    std::printf("1-16 is the training range; 17-24 and 25-32 are lengths no model saw. The learned table's\n"
                "rows %lld..%lld were never trained (the longest training example fills positions 0..%lld);\n"
                "the sinusoidal one has values the model never read; rotary and ALiBi see only distances.\n"
                "Reversing needs the model to count down from a length it never saw, and on such\n"
                "algorithmic tasks the literature (Kazemnejad et al. 2023; Ruoss et al. 2023) finds every\n"
                "standard scheme fails; docs/EXTRAPOLATION.md shows rotary's right answers at 17-24 are\n"
                "all of length 17. These are %lld examples per cell, a smaller sample than the committed\n"
                "table (`tinyformer eval MODEL --task reverse --lengths A-B`); read differences of a few\n"
                "examples as noise.\n",
                static_cast<long long>(trained_rows), static_cast<long long>(learned.config.max_len - 1),
                static_cast<long long>(trained_rows - 1), static_cast<long long>(n));

    // The second experiment: language-model loss per position (models/study/lm_loss.h).
    const int64_t sequences = 50;  // of the 200 held-out ones: under a second in all
    const std::vector<PositionRange> spans = {{2, 31}, {32, 47}, {48, 63}, {64, 95}, {96, 127}};
    std::printf("\nA task that needs only local context: five decoder-only models (positions learned,\n"
                "sinusoidal, rotary, alibi, none) trained on windows of 32 letters of a second-order\n"
                "Markov chain over a..h (the next letter depends on the two before it). Mean NLL (nats)\n"
                "per position range on the first %lld of the 200 held-out sequences of\n"
                "data/models/lm-heldout.txt (position p predicts letter p+1; 2-31 was trained):\n\n  %-16s",
                static_cast<long long>(sequences), "model");
    for (const PositionRange& span : spans) std::printf(" %7s", position_range_text(span).c_str());
    std::printf("\n");
    std::string text;
    {
        std::ifstream in(lesson_model(kLmHeldOut), std::ios::binary);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::string flattest, steepest;
    double least = 0, most = 0;
    int64_t lm_trained = 0, lm_last_row = 0;  // lm-learned: rows lm_trained..lm_last_row never trained
    for (const char* path : kLmModels) {
        const Model model = Model::load(lesson_model(path));
        if (path == kLmModels[0]) lm_trained = model.text.train_max_len, lm_last_row = model.config.max_len - 1;
        std::vector<std::vector<int64_t>> ids = read_lm_sequences(model, text);
        ids.resize(static_cast<size_t>(sequences));
        const std::vector<double> means = mean_nll_per_range(mean_nll_per_position(model, ids), spans);
        std::string name = std::string(path).substr(std::string("data/models/").size());
        name = name.substr(0, name.size() - std::string(".safetensors").size());
        std::printf("  %-16s", name.c_str());
        for (double mean : means) std::printf(" %7.4f", mean);
        std::printf("\n");
        const double rise = means.back() - means.front();  // 96-127 minus 2-31
        if (flattest.empty() || rise < least) least = rise, flattest = name;
        if (steepest.empty() || rise > most) most = rise, steepest = name;
    }
    std::printf("\nFrom the numbers: from 2-31 to 96-127 the loss of %s changes least (%+.4f nats),\n"
                "that of %s most (%+.4f nats). The chain's own entropy, the best any model can do,\n"
                "is the same at every position. ALiBi's bias keeps every head on the last few letters\n"
                "at any length; rotary's angles at distances past %lld and the learned table's rows\n"
                "%lld..%lld (never trained) are new to the model there. docs/EXTRAPOLATION.md has the\n"
                "full table (200 sequences) and the picture.\n",
                flattest.c_str(), least, steepest.c_str(), most, static_cast<long long>(lm_trained - 1),
                static_cast<long long>(lm_trained), static_cast<long long>(lm_last_row));
}

}  // namespace tinyformer::cli
