// `tinyformer lesson NAME` for section 10.4 (what lesson 10.3 leaves for the
// next lesson): normalisation and where the residual goes, rotary and ALiBi
// positions, grouped-query attention's KV cache, and length extrapolation
// measured on trained models. As in tools/cli/lesson.cpp every number is
// computed by the engine at run time; the text quotes the hand calculations
// (tests/test_lesson.cpp has the working).

#include "engine/ops.h"
#include "engine/random.h"
#include "layers/encoder_layer.h"
#include "models/toy_tasks.h"
#include "models/transformer.h"
#include "tools/cli/cli.h"
#include "tools/cli/lesson_common.h"

#include <cmath>
#include <cstdio>
#include <string>
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
            std::printf("  %5lld/%-2lld %3.0f%%", static_cast<long long>(correct), static_cast<long long>(n),
                        100.0 * static_cast<double>(correct) / static_cast<double>(n));
        }
        std::printf("\n");
    }
    std::printf("\n1-16 is the training range; 17-24 and 25-32 are lengths no model saw. A learned table has rows past 16 that training never updated; a\n"
                "sinusoidal one has values the model never read; rotary and ALiBi see only distances, of\n"
                "which the longer inputs bring new ones too. Whatever the numbers show, they are %lld examples\n"
                "per cell, a smaller sample than the committed table in docs/EXTRAPOLATION.md (measured with\n"
                "`tinyformer eval MODEL --task reverse --lengths A-B`); read differences of a few examples\n"
                "as noise.\n",
                static_cast<long long>(n));
}

}  // namespace tinyformer::cli
