// `tinyformer lesson swiglu` and `tinyformer lesson rope-pairs` (section 10.4): the gated FFN
// of LLaMA-style models against the ReLU FFN, and rotary's two pairings of a head's dimensions
// side by side. As in tools/cli/lesson.cpp every number is computed by the engine at run time
// (layers/feed_forward.h, layers/rotary.h, layers/multi_head_attention.h); the text quotes the
// hand calculations, which tests/test_lesson.cpp works out again.

#include "engine/ops.h"
#include "engine/random.h"
#include "layers/feed_forward.h"
#include "layers/multi_head_attention.h"
#include "layers/rotary.h"
#include "tools/cli/lesson_common.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace tinyformer::cli {
namespace {

void print_row(const char* name, const float* x, int64_t n) {
    std::printf("%s", name);
    for (int64_t i = 0; i < n; ++i) std::printf(" %10.6f", static_cast<double>(x[i]));
    std::printf("\n");
}

// The weights of a FeedForward's linear layers, no biases.
int64_t weight_count(const FeedForward& ffn) {
    return ffn.linear1.weight.numel() + ffn.linear2.weight.numel() + ffn.linear3.weight.numel();
}

// A bias-free FFN of D -> F -> D with zero weights: only its shapes are used.
FeedForward ffn_of_shape(int64_t D, int64_t F, Activation activation) {
    FeedForward ffn;
    ffn.linear1 = Linear{Tensor({F, D}), Tensor()};
    ffn.linear2 = Linear{Tensor({D, F}), Tensor()};
    if (activation == Activation::SwiGlu) ffn.linear3 = Linear{Tensor({F, D}), Tensor()};
    ffn.activation = activation;
    return ffn;
}

// q . k over Dh floats, in double.
double dot(const std::vector<float>& q, const std::vector<float>& k) {
    double sum = 0;
    for (size_t d = 0; d < q.size(); ++d) sum += static_cast<double>(q[d]) * k[d];
    return sum;
}

// The score of q at position m and k at position n, both turned by rotary_reference
// (one head, theta 10000, the given pairing).
double rotary_score(std::vector<float> q, int64_t m, std::vector<float> k, int64_t n, RopePairs pairs) {
    const int64_t Dh = static_cast<int64_t>(q.size());
    rotary_reference(q.data(), 1, Dh, m, 10000.0f, pairs);
    rotary_reference(k.data(), 1, Dh, n, 10000.0f, pairs);
    return dot(q, k);
}

// Where each row of a head goes when a checkpoint trained with half pairs runs with adjacent
// pairs: adjacent row 2p is half row p, adjacent row 2p + 1 is half row p + Dh/2, so that
// each pair of the half convention lands on a pair of the adjacent one.
std::vector<int64_t> half_to_adjacent(int64_t Dh) {
    std::vector<int64_t> from(static_cast<size_t>(Dh));
    for (int64_t p = 0; p < Dh / 2; ++p) {
        from[static_cast<size_t>(2 * p)] = p;
        from[static_cast<size_t>(2 * p + 1)] = p + Dh / 2;
    }
    return from;
}

}  // namespace

// Section 10.4: the SwiGLU FFN (Shazeer 2020), what llama2.c and LLaMA run instead of ReLU.
void lesson_swiglu() {
    heading("swiglu: the gated FFN of LLaMA-style models, against the ReLU FFN");
    std::printf("The FFN of the original Transformer, and the gated one of LLaMA (layers/feed_forward.h):\n"
                "  ReLU:    FFN(x) = W2 relu(W1 x)                 two matrices, W1 [F, D], W2 [D, F]\n"
                "  SwiGLU:  FFN(x) = W2 (SiLU(W1 x) * W3 x)        three: W1, W3 [F, D] and W2 [D, F]\n"
                "with SiLU(x) = x * sigmoid(x) = x / (1 + e^-x) and * elementwise: W3 x is multiplied by a\n"
                "gate SiLU(W1 x) that the input itself sets.\n\n");

    std::printf("SiLU against ReLU at a few points (engine/ops.h's silu and relu):\n");
    const Tensor points({5}, {-2.0f, -1.0f, 0.0f, 1.0f, 2.0f});
    print_row("  x           ", points.data(), points.numel());
    print_row("  SiLU(x)     ", silu(points).data(), points.numel());
    print_row("  ReLU(x)     ", relu(points).data(), points.numel());
    std::printf("  by hand: sigmoid(1) = 1 / (1 + e^-1) = 0.731059, so SiLU(1) = 0.731059; SiLU(2) = 2 * 0.880797\n"
                "  = 1.761594; SiLU(-1) = -1 * 0.268941 = -0.268941; SiLU(-2) = -2 * 0.119203 = -0.238406.\n"
                "  SiLU is smooth, lets small negative values through (its least value is about -0.278, at\n"
                "  x = -1.278) and comes close to ReLU for large |x|.\n\n");

    // D = 2, F = 3, no biases, weights chosen so that every product is worked by hand.
    const int64_t D = 2, F = 3;
    FeedForward swiglu;
    swiglu.linear1 = Linear{Tensor({F, D}, {1, 0, 0, 1, 1, -1}), Tensor()};  // W1 x = (1, 2, -1)
    swiglu.linear3 = Linear{Tensor({F, D}, {1, 1, 0.5f, 0, 2, 0}), Tensor()};  // W3 x = (3, 0.5, 2)
    swiglu.linear2 = Linear{Tensor({D, F}, {1, 0, 1, 0, 1, -1}), Tensor()};
    swiglu.activation = Activation::SwiGlu;
    FeedForward plain = swiglu;
    plain.linear3 = Linear{};
    plain.activation = Activation::Relu;
    const Tensor x({1, 1, D}, {1.0f, 2.0f});
    std::printf("One worked FFN, D = 2, F = 3, no biases, x = (1, 2):\n"
                "  W1 = [[1, 0], [0, 1], [1, -1]]    W3 = [[1, 1], [0.5, 0], [2, 0]]    W2 = [[1, 0, 1], [0, 1, -1]]\n"
                "  W1 x = (1, 2, -1);  SiLU(W1 x) = (0.731059, 1.761594, -0.268941);  W3 x = (3, 0.5, 2)\n"
                "  SiLU(W1 x) * W3 x = (2.193176, 0.880797, -0.537883)\n"
                "  W2 of that = (2.193176 - 0.537883, 0.880797 + 0.537883) = (1.655293, 1.418680)\n");
    const Tensor y = swiglu.forward(x);
    const Tensor y_relu = plain.forward(x);
    print_row("  the engine's FeedForward (swiglu):", y.data(), D);
    const double hand[2] = {1.655293, 1.418680};
    std::printf("  largest |engine - hand|: %.1e (float32 against 6 printed decimals)\n",
                std::max(std::fabs(y.data()[0] - hand[0]), std::fabs(y.data()[1] - hand[1])));
    std::printf("  the ReLU FFN with the same W1, W2: relu(W1 x) = (1, 2, 0), W2 of that = (1, 2):\n");
    print_row("  the engine's FeedForward (relu):  ", y_relu.data(), D);
    std::printf("  ReLU drops the third unit (W1 x = -1) whole; SiLU keeps -0.268941 of it, and W3 x scales\n"
                "  each unit again (0.5 halves the second): the gate decides per unit and per input how much\n"
                "  of W3 x gets through.\n\n");

    std::printf("The price is a third matrix. Without biases a ReLU FFN has 2 D F weights, a SwiGLU FFN 3 D F;\n"
                "with F = 4D the ReLU FFN has 8 D^2, and the SwiGLU FFN keeps that count when 3 D F = 8 D^2,\n"
                "F = 8D/3 = 2/3 * 4D. llama2.c's stories15M (D = 288) takes F = 2/3 * 4 * 288 = 768; LLaMA\n"
                "rounds 2/3 * 4D up to a multiple of 256 (D = 4096: 10922.7 -> 11008). Counted on the engine's\n"
                "FeedForward (its weights' numel):\n");
    std::printf("  %6s %8s %8s %14s\n", "D", "FFN", "F", "weights");
    const int64_t small = 288;
    const FeedForward relu_small = ffn_of_shape(small, 4 * small, Activation::Relu);
    const FeedForward swiglu_small = ffn_of_shape(small, 768, Activation::SwiGlu);
    std::printf("  %6lld %8s %8lld %14lld\n", static_cast<long long>(small), "relu", static_cast<long long>(4 * small),
                static_cast<long long>(weight_count(relu_small)));
    std::printf("  %6lld %8s %8lld %14lld\n", static_cast<long long>(small), "swiglu", 768LL,
                static_cast<long long>(weight_count(swiglu_small)));
    // LLaMA-7B's shape is counted, not allocated (three matrices of 45M floats).
    const int64_t big = 4096, big_f = 11008;
    const int64_t relu_big = 2 * big * 4 * big, swiglu_big = 3 * big * big_f;
    std::printf("  %6lld %8s %8lld %14lld\n", static_cast<long long>(big), "relu", static_cast<long long>(4 * big),
                static_cast<long long>(relu_big));
    std::printf("  %6lld %8s %8lld %14lld   (%.2f%% more than the ReLU FFN)\n", static_cast<long long>(big), "swiglu",
                static_cast<long long>(big_f), static_cast<long long>(swiglu_big),
                100.0 * static_cast<double>(swiglu_big - relu_big) / static_cast<double>(relu_big));
    std::printf("  by hand: 2 * 288 * 1152 = 663552 = 3 * 288 * 768; 2 * 4096 * 16384 = 134217728,\n"
                "  3 * 4096 * 11008 = 135266304. The same weights and multiply-adds per token, spent on a\n"
                "  gate; Shazeer (2020) found the gated FFNs train to a lower loss at equal size. The engine\n"
                "  reads it as activation \"swiglu\", W3 as linear3 (llama2.c's w3; docs/FORMAT.md).\n");
}

// Section 10.4: rotary's two pairings, adjacent (GPT-J, llama2.c) and half (GPT-NeoX, HF LLaMA).
void lesson_rope_pairs() {
    heading("rope-pairs: rotary's two pairings of a head's dimensions, side by side");
    std::printf("RoPE turns pair p = 0 .. Dh/2 - 1 of a head by theta_p = pos * base^(-2p/Dh) (base 10000,\n"
                "layers/rotary.h). Which two dimensions form pair p is a convention:\n"
                "  adjacent (GPT-J, llama2.c, Meta's llama):     (2p, 2p + 1)\n"
                "  half     (GPT-NeoX, HF LLaMA, rotate_half):   (p, p + Dh/2)\n\n");
    const int64_t Dh = 4, pos = 1;
    std::printf("Dh = %lld at pos = %lld: theta_0 = 1 * 10000^0 = 1, theta_1 = 1 * 10000^(-2/4) = 0.01.\n",
                static_cast<long long>(Dh), static_cast<long long>(pos));
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
        std::printf("  %-8s pairs", rope_pairs_name(pairs));
        for (int64_t p = 0; p < Dh / 2; ++p) {
            const int64_t first = pairs == RopePairs::Adjacent ? 2 * p : p;
            const int64_t second = pairs == RopePairs::Adjacent ? 2 * p + 1 : p + Dh / 2;
            std::printf(" (%lld, %lld) by theta_%lld", static_cast<long long>(first), static_cast<long long>(second),
                        static_cast<long long>(p));
            if (p + 1 < Dh / 2) std::printf(",");
        }
        std::printf("\n");
    }
    const std::vector<float> q = {1.0f, 2.0f, 3.0f, 4.0f};
    print_row("  q                        ", q.data(), Dh);
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half}) {
        std::vector<float> turned = q;
        rotary_reference(turned.data(), 1, Dh, pos, 10000.0f, pairs);
        std::printf("  rot(q, 1), %-8s      ", rope_pairs_name(pairs));
        print_row("", turned.data(), Dh);
    }
    std::printf("  by hand: cos 1 = 0.540302, sin 1 = 0.841471, cos 0.01 = 0.999950, sin 0.01 = 0.010000.\n"
                "  adjacent: (1, 2) by 1 -> (1 cos 1 - 2 sin 1, 1 sin 1 + 2 cos 1) = (-1.142640, 1.922076);\n"
                "            (3, 4) by 0.01 -> (2.959851, 4.0297995)\n"
                "  half:     (q0, q2) = (1, 3) by 1 -> (1 cos 1 - 3 sin 1, 1 sin 1 + 3 cos 1) = (-1.984111, 2.462378);\n"
                "            (q1, q3) = (2, 4) by 0.01 -> (1.959901, 4.019800)\n"
                "  (the engine's turns are float32: within 1e-6 of these)\n"
                "The same q gives two different vectors: the conventions turn different pairs by each angle.\n\n");

    // Within each convention the score depends on m - n only.
    const int64_t Dq = 8;
    Random random(47);
    std::vector<float> a(static_cast<size_t>(Dq)), b(static_cast<size_t>(Dq));
    for (float& v : a) v = random.normal();
    for (float& v : b) v = random.normal();
    std::printf("Dh = %lld, random q and k: the score rot(q, m) . rot(k, n) for three (m, n) with m - n = 2:\n",
                static_cast<long long>(Dq));
    std::printf("  %6s %6s %14s %14s\n", "m", "n", "adjacent", "half");
    for (const auto& [m, n] : {std::pair<int64_t, int64_t>{3, 1}, {10, 8}, {1002, 1000}})
        std::printf("  %6lld %6lld %14.6f %14.6f\n", static_cast<long long>(m), static_cast<long long>(n),
                    rotary_score(a, m, b, n, RopePairs::Adjacent), rotary_score(a, m, b, n, RopePairs::Half));
    std::printf("Each column is one number (to float rounding, which grows with the positions): both depend\n"
                "on m - n only. The columns differ: the same q and k are other vectors under the other pairing.\n\n");

    // A checkpoint trained with half pairs, run with adjacent pairs: permute W_Q's and W_K's rows.
    const int64_t D = 8, H = 2, head_dim = D / H, T = 5;
    const std::vector<int64_t> from = half_to_adjacent(head_dim);
    std::printf("Converting a checkpoint between the conventions: within each head, adjacent row 2p takes half\n"
                "row p and adjacent row 2p + 1 half row p + Dh/2, of W_Q and of W_K (and their biases); W_V and\n"
                "W_O stay. For Dh = %lld the adjacent rows read the half rows", static_cast<long long>(head_dim));
    for (int64_t r : from) std::printf(" %lld", static_cast<long long>(r));
    std::printf(" (Dh = 8:");
    for (int64_t r : half_to_adjacent(8)) std::printf(" %lld", static_cast<long long>(r));
    std::printf("). Then\nrot_adjacent(P q) = P rot_half(q) for every position, and (P q) . (P k) = q . k.\n");
    const Tensor in_proj = random.normal_tensor({3 * D, D}, 0.5f);  // [W_Q; W_K; W_V]
    const Tensor out_proj = random.normal_tensor({D, D}, 0.5f);
    Tensor permuted = in_proj;
    for (int64_t block = 0; block < 2; ++block)  // W_Q, then W_K
        for (int64_t h = 0; h < H; ++h)
            for (int64_t r = 0; r < head_dim; ++r)
                for (int64_t c = 0; c < D; ++c)
                    permuted.at({block * D + h * head_dim + r, c}) =
                        in_proj.at({block * D + h * head_dim + from[static_cast<size_t>(r)], c});
    auto attention = [&](const Tensor& weight, RopePairs pairs) {
        return MultiHeadAttention({weight, Tensor(), out_proj, Tensor()}, H, "", std::nullopt,
                                  RotaryEmbedding(head_dim, 10000.0f, pairs));
    };
    const Tensor x = random.normal_tensor({1, T, D});
    const AttentionResult trained = attention(in_proj, RopePairs::Half).forward(x, x, Mask::causal(T), with_weights());
    const AttentionResult converted =
        attention(permuted, RopePairs::Adjacent).forward(x, x, Mask::causal(T), with_weights());
    const AttentionResult unconverted =
        attention(in_proj, RopePairs::Adjacent).forward(x, x, Mask::causal(T), with_weights());
    std::printf("One causal self-attention (D = %lld, H = %lld, Dh = %lld, T = %lld, random weights) trained with half\n"
                "pairs, run by the engine's MultiHeadAttention with adjacent pairs:\n",
                static_cast<long long>(D), static_cast<long long>(H), static_cast<long long>(head_dim),
                static_cast<long long>(T));
    std::printf("  %-32s %22s %22s\n", "", "largest |weights diff|", "largest |output diff|");
    std::printf("  %-32s %22.2e %22.2e\n", "rows permuted (converted)", max_difference(converted.weights, trained.weights),
                max_difference(converted.output, trained.output));
    std::printf("  %-32s %22.2e %22.2e\n", "rows as they were (not converted)",
                max_difference(unconverted.weights, trained.weights), max_difference(unconverted.output, trained.output));
    std::printf("Permuted, the weights and the output are the trained model's (float rounding: the score's sum\n"
                "runs over the dimensions in another order); not permuted, the model attends elsewhere. A\n"
                "converter (HF's convert_llama_weights_to_hf does the inverse: Meta's adjacent rows to half) or the\n"
                "config's \"rope_pairs\" (docs/FORMAT.md) must say which one a checkpoint was trained with.\n");
}

}  // namespace tinyformer::cli
