// Tests for layers/*: the sinusoidal table, Embedding, FeedForward, and the
// encoder and decoder layers, on weights small enough to work by hand. Every
// expected number is derived in the comment beside it from the formulas in
// the headers (PyTorch semantics), never by calling the code under test.
//
// Two facts used throughout:
//   sigma(d) := 1 / (1 + e^-d): a two-key softmax over scores [s, s - d] is
//     [sigma(d), 1 - sigma(d)], since e^s / (e^s + e^(s-d)) = 1 / (1 + e^-d).
//   LayerNorm over D = 2 of [a, b]: mean (a+b)/2, deviations +-(a-b)/2, biased
//     variance (a-b)^2/4, so the normalized row is [+c, -c] if a > b (else
//     [-c, +c]) with c = (|a-b|/2) / sqrt((a-b)^2/4 + eps) = 1 / sqrt(1 + 4 eps / (a-b)^2),
//     eps = 1e-5 — a hair below 1, which the working below keeps.

#include "layers/decoder_layer.h"
#include "layers/embedding.h"
#include "layers/encoder_layer.h"
#include "models/study/trace.h"
#include "layers/feed_forward.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace tinyformer;

namespace {

// Row `row` of `t`, read as [numel / D, D] with D its last axis, equals
// `expected` to within `tolerance` (absolute).
void check_row(const Tensor& t, int64_t row, const std::vector<double>& expected, double tolerance) {
    const int64_t width = t.dim(-1);
    REQUIRE(static_cast<int64_t>(expected.size()) == width);
    REQUIRE((row + 1) * width <= t.numel());
    for (int64_t c = 0; c < width; ++c) {
        const double actual = t.data()[row * width + c];
        INFO("row ", row, ", column ", c, ": got ", actual, ", expected ", expected[static_cast<size_t>(c)]);
        CHECK(std::fabs(actual - expected[static_cast<size_t>(c)]) <= tolerance);
    }
}

// The 4x4 identity stacked three times: in_proj_weight [3D, D] with W_Q = W_K = W_V = I.
Tensor identity_in_proj_4() {
    std::vector<float> values;
    for (int block = 0; block < 3; ++block)
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c) values.push_back(r == c ? 1.0f : 0.0f);
    return Tensor({12, 4}, values);
}

// The encoder layer of the post-LN test, D = 4, H = 2, F = 2:
//   W_Q = W_K = W_V = I, in_proj_bias = 0, W_O = I, b_O = [0, 0, 0, -1]
//   linear1 [2,4] = [[1,0,0,0], [0,1,0,0]], bias [-1, 0]   (reads h[0] - 1 and h[1])
//   linear2 [4,2] = [[0,0], [0,0], [1,0], [0,1]], bias 0   (writes columns 2 and 3)
//   norm1: gain 2, bias 0.5;  norm2: gain [1, 1, 2, 2], bias [0, 0, -0.5, 0.5]
EncoderLayer four_wide_encoder_layer(bool norm_first) {
    const MultiHeadAttentionWeights attention{identity_in_proj_4(), Tensor({12}),
                                              Tensor({4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}),
                                              Tensor({4}, {0, 0, 0, -1})};
    const FeedForward feed_forward{Linear{Tensor({2, 4}, {1, 0, 0, 0, 0, 1, 0, 0}), Tensor({2}, {-1, 0})},
                                   Linear{Tensor({4, 2}, {0, 0, 0, 0, 1, 0, 0, 1}), Tensor({4})},
                                   Activation::Relu};
    return EncoderLayer{MultiHeadAttention(attention, 2), feed_forward,
                        LayerNorm{Tensor::filled({4}, 2.0f), Tensor::filled({4}, 0.5f)},
                        LayerNorm{Tensor({4}, {1, 1, 2, 2}), Tensor({4}, {0, 0, -0.5f, 0.5f})}, norm_first};
}

// The encoder layer of the pre-LN test, D = 2, H = 1, F = 2:
//   W_Q = W_K = I/2, W_V = I, in_proj_bias = 0, W_O = I, b_O = 0
//   linear1 = I, bias 0;  linear2 = [[1, 0], [1, -1]], bias 0
//   norm1: gain [1, 2], bias [0, 0.5];  norm2: gain 2, bias 0.5
EncoderLayer two_wide_encoder_layer(bool norm_first) {
    const MultiHeadAttentionWeights attention{Tensor({6, 2}, {0.5f, 0, 0, 0.5f, 0.5f, 0, 0, 0.5f, 1, 0, 0, 1}),
                                              Tensor({6}), Tensor({2, 2}, {1, 0, 0, 1}), Tensor({2})};
    const FeedForward feed_forward{Linear{Tensor({2, 2}, {1, 0, 0, 1}), Tensor({2})},
                                   Linear{Tensor({2, 2}, {1, 0, 1, -1}), Tensor({2})}, Activation::Relu};
    return EncoderLayer{MultiHeadAttention(attention, 1), feed_forward,
                        LayerNorm{Tensor({2}, {1, 2}), Tensor({2}, {0, 0.5f})},
                        LayerNorm{Tensor::filled({2}, 2.0f), Tensor::filled({2}, 0.5f)}, norm_first};
}

}  // namespace

TEST_CASE("sinusoidal_table puts sin(pos / 10000^(2i/D)) in even columns and cos in odd ones") {
    SUBCASE("max_len 4, D = 4: the column pairs use angles pos and pos / 100") {
        // i = 0: 10000^(0/4) = 1, angle = pos;  i = 1: 10000^(2/4) = 100, angle = pos / 100.
        const Tensor P = sinusoidal_table(4, 4);
        REQUIRE(P.shape() == Shape{4, 4});
        check_row(P, 0, {0, 1, 0, 1}, 0);  // sin 0 = 0, cos 0 = 1, exactly
        // sin 1 = 0.84147098, cos 1 = 0.54030231, sin 0.01 = 0.01 - 0.01^3/6 = 0.00999983,
        // cos 0.01 = 1 - 0.01^2/2 = 0.99995000
        check_row(P, 1, {0.84147098, 0.54030231, 0.00999983, 0.99995000}, 1e-6);
        // sin 2 = 0.90929743, cos 2 = -0.41614684, sin 0.02 = 0.02 - 0.000008/6 = 0.01999867,
        // cos 0.02 = 1 - 0.0004/2 = 0.99980000
        check_row(P, 2, {0.90929743, -0.41614684, 0.01999867, 0.99980000}, 1e-6);
        // sin 3 = 0.14112001, cos 3 = -0.98999250, sin 0.03 = 0.03 - 0.000027/6 = 0.02999550,
        // cos 0.03 = 1 - 0.0009/2 + 0.03^4/24 = 0.99955003
        check_row(P, 3, {0.14112001, -0.98999250, 0.02999550, 0.99955003}, 1e-6);
    }
    SUBCASE("odd D = 3: the last sin column has no cos partner") {
        // i = 0: angle = pos (columns 0, 1);  i = 1: 2i = 2 < 3, angle = pos / 10000^(2/3)
        // = pos / 464.15888 (column 2 only; column 3 would be past the end).
        const Tensor P = sinusoidal_table(4, 3);
        REQUIRE(P.shape() == Shape{4, 3});
        check_row(P, 0, {0, 1, 0}, 0);
        // 1 / 464.15888 = 0.00215443; sin of it = 0.00215443 - 0.00215443^3/6 = 0.00215443
        check_row(P, 1, {0.84147098, 0.54030231, 0.00215443}, 1e-6);
        // 3 / 464.15888 = 0.00646330; sin = 0.00646330 - 0.00646330^3/6 = 0.00646326
        check_row(P, 3, {0.14112001, -0.98999250, 0.00646326}, 1e-6);
    }
    SUBCASE("an empty table is refused, naming both sizes") {
        CHECK_ERROR_CONTAINS(sinusoidal_table(0, 4), "sinusoidal_table", "got 0 and 4");
        CHECK_ERROR_CONTAINS(sinusoidal_table(4, 0), "got 4 and 0");
    }
    SUBCASE("a table larger than the available memory is refused before allocating, with the numbers") {
        // 2^40 x 2^30 floats = 2^72 bytes: more than any machine has, and more than uint64 holds.
        CHECK_ERROR_CONTAINS(sinusoidal_table(int64_t{1} << 40, int64_t{1} << 30), "sinusoidal_table",
                             "[1099511627776,1073741824] float table needs 1099511627776 x 1073741824 x 4 bytes",
                             "bytes of memory are available; refused before allocating");
    }
}

TEST_CASE("SinusoidalPositions computes the row a pass reads, even at the end of a 2^24-position range") {
    // A config may declare max_len 2^24: the rows are computed when read, never held as a table.
    const SinusoidalPositions positions(int64_t{1} << 24, 4);
    CHECK(positions.max_len() == 16777216);
    SUBCASE("row 1 is added to what the row holds") {
        // P[1] = [sin 1, cos 1, sin 0.01, cos 0.01] = [0.84147098, 0.54030231, 0.00999983, 0.99995000]
        // (as in the table test above); added to [1, 2, 3, 4].
        std::vector<float> row = {1, 2, 3, 4};
        positions.add_to(1, row.data());
        CHECK(row[0] == doctest::Approx(1.84147098).epsilon(1e-7));
        CHECK(row[1] == doctest::Approx(2.54030231).epsilon(1e-7));
        CHECK(row[2] == doctest::Approx(3.00999983).epsilon(1e-7));
        CHECK(row[3] == doctest::Approx(4.99995000).epsilon(1e-7));
    }
    SUBCASE("the last position, 2^24 - 1 = 16777215") {
        // angles 16777215 and 167772.15 (in double): sin 16777215 = -0.94823267,
        // cos 16777215 = -0.31757646, sin 167772.15 = -0.99431040, cos 167772.15 = 0.10652153
        // (Python's math.sin / math.cos).
        std::vector<float> row(4, 0.0f);
        positions.add_to(16777215, row.data());
        CHECK(row[0] == doctest::Approx(-0.94823267).epsilon(1e-6));
        CHECK(row[1] == doctest::Approx(-0.31757646).epsilon(1e-6));
        CHECK(row[2] == doctest::Approx(-0.99431040).epsilon(1e-6));
        CHECK(row[3] == doctest::Approx(0.10652153).epsilon(1e-6));
    }
    SUBCASE("an Embedding with them: E[id] + P[pos], and positions past max_len refused") {
        // E = [[0.5, -1, 0, 2]]; at position 1000: angles 1000 and 10,
        // sin 1000 = 0.82687954, cos 1000 = 0.56237908, sin 10 = -0.54402111, cos 10 = -0.83907153.
        Embedding embedding{Tensor({1, 4}, {0.5f, -1, 0, 2}), Tensor(), false};
        embedding.sinusoidal = SinusoidalPositions(1001, 4);
        const Tensor x = embedding.forward(TokenIds{1, 1, {0}}, 1000);
        check_row(x, 0, {0.5 + 0.82687954, -1 + 0.56237908, -0.54402111, 2 - 0.83907153}, 1e-6);
        CHECK_ERROR_CONTAINS(embedding.forward(TokenIds{1, 2, {0, 0}}, 1000), "positions 1000..1001 exceed max_len = 1001");
    }
    SUBCASE("sizes below 1 are refused") {
        CHECK_ERROR_CONTAINS(SinusoidalPositions(0, 4), "max_len and d_model must be >= 1, got 0 and 4");
    }
}

TEST_CASE("Embedding adds the position row to the token row scaled by sqrt(D)") {
    // V = 3, D = 2, learned positions with max_len = 2:
    //   E = [[0.5, -1], [2, 0], [1, 3]],   P = [[0.1, 0.2], [0.3, 0.4]]
    Embedding embedding{Tensor({3, 2}, {0.5f, -1, 2, 0, 1, 3}), Tensor({2, 2}, {0.1f, 0.2f, 0.3f, 0.4f}), true};
    const TokenIds ids{1, 2, {2, 0}};

    SUBCASE("ids [[2, 0]], scale on: E[id] * sqrt 2 + P[t]") {
        // sqrt 2 = 1.41421356
        // t = 0: E[2] = [1, 3]    -> [1.41421356 + 0.1, 4.24264069 + 0.2] = [1.51421356, 4.44264069]
        // t = 1: E[0] = [0.5, -1] -> [0.70710678 + 0.3, -1.41421356 + 0.4] = [1.00710678, -1.01421356]
        const Tensor x = embedding.forward(ids);
        REQUIRE(x.shape() == Shape{1, 2, 2});
        check_row(x, 0, {1.51421356, 4.44264069}, 1e-6);
        check_row(x, 1, {1.00710678, -1.01421356}, 1e-6);
    }
    SUBCASE("continuing at first_position = 1 takes P[1] for the first id") {
        // id 1 at position 1: E[1] * sqrt 2 + P[1] = [2.82842712 + 0.3, 0 + 0.4] = [3.12842712, 0.4]
        const Tensor x = embedding.forward(TokenIds{1, 1, {1}}, 1);
        REQUIRE(x.shape() == Shape{1, 1, 2});
        check_row(x, 0, {3.12842712, 0.4}, 1e-6);
    }
    SUBCASE("scale off and no positions: the rows of E themselves") {
        embedding.scale = false;
        embedding.position_table = Tensor();
        const Tensor x = embedding.forward(ids);
        check_row(x, 0, {1, 3}, 0);     // E[2]
        check_row(x, 1, {0.5, -1}, 0);  // E[0]
    }
    SUBCASE("an id outside 0..V-1 is refused with the id, where it is, and the vocabulary") {
        CHECK_ERROR_CONTAINS(embedding.forward(TokenIds{1, 2, {2, 3}}), "token id 3 at [0,1]", "vocabulary 0..2");
        CHECK_ERROR_CONTAINS(embedding.forward(TokenIds{1, 1, {-1}}), "token id -1 at [0,0]");
    }
    SUBCASE("positions beyond max_len are refused, naming them and max_len") {
        // 3 tokens from position 0 need positions 0..2; the table has rows 0..1.
        CHECK_ERROR_CONTAINS(embedding.forward(TokenIds{1, 3, {0, 1, 2}}), "positions 0..2 exceed max_len = 2",
                             "ids [1,3]");
        // 2 tokens from position 1 need positions 1..2.
        CHECK_ERROR_CONTAINS(embedding.forward(ids, 1), "positions 1..2 exceed max_len = 2");
    }
}

TEST_CASE("FeedForward is linear2(activation(linear1(x))) with ReLU or exact GELU") {
    // D = 2, F = 3:
    //   linear1 W1 = [[1, -1], [2, 0], [-1, -1]], b1 = [0, -1, 0.5]
    //   linear2 W2 = [[1, 2, 3], [-1, 0, 1]],     b2 = [0.5, -0.5]
    // x0 = [1, 2]: hidden = [1 - 2 + 0, 2 - 1, -1 - 2 + 0.5] = [-1, 1, -2.5]
    // x1 = [0, 0]: hidden = b1 = [0, -1, 0.5]
    FeedForward ffn{Linear{Tensor({3, 2}, {1, -1, 2, 0, -1, -1}), Tensor({3}, {0, -1, 0.5f})},
                    Linear{Tensor({2, 3}, {1, 2, 3, -1, 0, 1}), Tensor({2}, {0.5f, -0.5f})}, Activation::Relu};
    const Tensor x({1, 2, 2}, {1, 2, 0, 0});

    SUBCASE("ReLU") {
        // x0: relu -> [0, 1, 0];   y = [0 + 2 + 0 + 0.5, 0 + 0 + 0 - 0.5] = [2.5, -0.5]
        // x1: relu -> [0, 0, 0.5]; y = [3 * 0.5 + 0.5, 1 * 0.5 - 0.5] = [2, 0]
        const Tensor y = ffn.forward(x);
        REQUIRE(y.shape() == Shape{1, 2, 2});
        check_row(y, 0, {2.5, -0.5}, 1e-6);
        check_row(y, 1, {2.0, 0.0}, 1e-6);
    }
    SUBCASE("GELU") {
        // gelu(h) = h * Phi(h), Phi the normal CDF = (1 + erf(h / sqrt 2)) / 2:
        //   Phi(1) = 0.84134475, Phi(-1) = 0.15865525, Phi(-2.5) = 0.00620967, Phi(0.5) = 0.69146246
        //   gelu(-1) = -0.15865525, gelu(1) = 0.84134475, gelu(-2.5) = -0.01552416,
        //   gelu(0) = 0, gelu(0.5) = 0.34573123
        // x0: y0 = -0.15865525 + 2 * 0.84134475 + 3 * -0.01552416 + 0.5 = 1.97746176
        //     y1 = 0.15865525 + 0 - 0.01552416 - 0.5 = -0.35686891
        // x1: y0 = 0 + 2 * -0.15865525 + 3 * 0.34573123 + 0.5 = 1.21988319
        //     y1 = 0 + 0 + 0.34573123 - 0.5 = -0.15426877
        ffn.activation = Activation::Gelu;
        const Tensor y = ffn.forward(x);
        check_row(y, 0, {1.97746176, -0.35686891}, 1e-6);
        check_row(y, 1, {1.21988319, -0.15426877}, 1e-6);
    }
}

namespace {

// Keeps what a layer records, by name.
struct Recorder final : tinyformer::Observer {
    std::map<std::string, Tensor> seen;
    bool wants_everything() const override { return true; }
    void record(const std::string& name, const Tensor& value) override { seen[name] = value; }
    void record_mask(const std::string&, const tinyformer::BoolTensor&) override {}
};

}  // namespace

TEST_CASE("FeedForward with silu is linear2(silu(linear1 x)); with swiglu linear2(silu(linear1 x) * linear3 x)") {
    // The FFN of the test above (D = 2, F = 3): hidden = linear1 x = [-1, 1, -2.5] (x0), [0, -1, 0.5] (x1).
    FeedForward ffn{Linear{Tensor({3, 2}, {1, -1, 2, 0, -1, -1}), Tensor({3}, {0, -1, 0.5f})},
                    Linear{Tensor({2, 3}, {1, 2, 3, -1, 0, 1}), Tensor({2}, {0.5f, -0.5f})}, Activation::Silu};
    const Tensor x({1, 2, 2}, {1, 2, 0, 0});
    SUBCASE("silu") {
        // silu(h) = h / (1 + e^-h): silu(-1) = -0.2689414, silu(1) = 0.7310586, silu(-2.5) = -2.5 / 13.182494
        //   = -0.1896455, silu(0) = 0, silu(0.5) = 0.5 / 1.6065307 = 0.3112297
        // x0: y = [-0.2689414 + 2 * 0.7310586 + 3 * -0.1896455 + 0.5, 0.2689414 - 0.1896455 - 0.5]
        //       = [1.1242394, -0.4207040]
        // x1: y = [2 * -0.2689414 + 3 * 0.3112297 + 0.5, 0.3112297 - 0.5] = [0.8958062, -0.1887703]
        Recorder recorder;
        const Tensor y = ffn.forward(x, &recorder);
        REQUIRE(y.shape() == Shape{1, 2, 2});
        check_row(y, 0, {1.1242394, -0.4207040}, 1e-6);
        check_row(y, 1, {0.8958062, -0.1887703}, 1e-6);
        REQUIRE(recorder.seen.count("hidden"));
        check_row(recorder.seen["hidden"], 0, {-0.2689414, 0.7310586, -0.1896455}, 1e-6);
    }
    SUBCASE("swiglu: the gate silu(linear1 x) times the up projection linear3 x; hidden is the product") {
        // linear3 W3 = [[0, 1], [1, 0], [1, 1]], b3 = [1, 2, -1]:
        //   x0: up = [2 + 1, 1 + 2, 3 - 1] = [3, 3, 2];  x1: up = b3 = [1, 2, -1]
        // x0: product = [-0.2689414 * 3, 0.7310586 * 3, -0.1896455 * 2] = [-0.8068243, 2.1931757, -0.3792909]
        //     y = [-0.8068243 + 2 * 2.1931757 + 3 * -0.3792909 + 0.5, 0.8068243 - 0.3792909 - 0.5]
        //       = [2.9416545, -0.0724666]
        // x1: product = [0, -0.2689414 * 2, 0.3112297 * -1] = [0, -0.5378828, -0.3112297]
        //     y = [2 * -0.5378828 + 3 * -0.3112297 + 0.5, -0.3112297 - 0.5] = [-1.5094547, -0.8112297]
        ffn.activation = Activation::SwiGlu;
        ffn.linear3 = Linear{Tensor({3, 2}, {0, 1, 1, 0, 1, 1}), Tensor({3}, {1, 2, -1})};
        Recorder recorder;
        const Tensor y = ffn.forward(x, &recorder);
        check_row(y, 0, {2.9416545, -0.0724666}, 1e-6);
        check_row(y, 1, {-1.5094547, -0.8112297}, 1e-6);
        REQUIRE(recorder.seen.count("hidden"));
        CHECK(recorder.seen["hidden"].shape() == Shape{1, 2, 3});  // [B, T, F], what linear2 reads
        check_row(recorder.seen["hidden"], 0, {-0.8068243, 2.1931757, -0.3792909}, 1e-6);
        check_row(recorder.seen["hidden"], 1, {0, -0.5378828, -0.3112297}, 1e-6);
    }
    SUBCASE("linear3 must be there exactly for swiglu") {
        ffn.activation = Activation::SwiGlu;
        CHECK_ERROR_CONTAINS(ffn.forward(x), "\"swiglu\" needs linear3");
        ffn.activation = Activation::Silu;
        ffn.linear3 = Linear{Tensor({3, 2}), Tensor()};
        CHECK_ERROR_CONTAINS(ffn.forward(x), "\"silu\" takes no linear3");
    }
}

TEST_CASE("LayerNorm with kind RmsNorm is x / sqrt(mean(x^2) + eps) * weight, and refuses a bias") {
    // x = (1, 2, 3, 4): mean(x^2) = 7.5; weight (2, 1, 1, 1), eps 0.5: 1 / sqrt(8) = 0.3535534
    //   y = [2 * 0.3535534, 0.7071068, 1.0606602, 1.4142136]
    LayerNorm norm{Tensor({4}, {2, 1, 1, 1}), Tensor(), 0.5f, NormKind::RmsNorm};
    check_row(norm.forward(Tensor({1, 4}, {1, 2, 3, 4})), 0, {0.7071068, 0.7071068, 1.0606602, 1.4142136}, 1e-6);
    norm.bias = Tensor({4});
    CHECK_ERROR_CONTAINS(norm.forward(Tensor({1, 4}, {1, 2, 3, 4})), "rms_norm has no bias");
}

TEST_CASE("A post-LN EncoderLayer (D = 4, two heads) gives the hand-worked norm2(h + FFN(h)), h = norm1(x + SA(x))") {
    // Weights: see four_wide_encoder_layer. x0 = [1, 0, 0, 1], x1 = [0, 1, 1, 1].
    //
    // Self-attention. Q = K = V = x. Dh = 2, so scores are dot products / sqrt 2.
    //   head 0, columns 0-1: x0 -> [1, 0], x1 -> [0, 1]
    //     scores row 0 = [1, 0] / sqrt 2, row 1 = [0, 1] / sqrt 2; each row differs by d = 1/sqrt 2
    //     p := sigma(1/sqrt 2) = 1 / (1 + e^-0.70710678) = 1 / (1 + 0.49306869) = 0.66976155, q := 1 - p = 0.33023845
    //     weights row 0 = [p, q], row 1 = [q, p]
    //     out row 0 = p [1,0] + q [0,1] = [p, q];  row 1 = [q, p]
    //   head 1, columns 2-3: x0 -> [0, 1], x1 -> [1, 1]
    //     scores row 0 = [1, 1] / sqrt 2 -> weights [1/2, 1/2]
    //     scores row 1 = [1, 2] / sqrt 2 -> differ by 1/sqrt 2 again -> weights [q, p]
    //     out row 0 = ([0,1] + [1,1]) / 2 = [0.5, 1];  row 1 = q [0,1] + p [1,1] = [p, q + p] = [p, 1]
    //   concat, W_O = I, b_O = [0,0,0,-1]:  SA0 = [p, q, 0.5, 0],  SA1 = [q, p, p, 0]
    // Residual r = x + SA:  r0 = [1+p, q, 0.5, 1],  r1 = [q, 1+p, 1+p, 1]
    // norm1 (gain 2, bias 0.5):
    //   r0: mean = (1 + p + q + 0.5 + 1) / 4 = 3.5 / 4 = 0.875
    //       dev = [0.125 + p, 0.125 - p, -0.375, 0.125] = [0.79476155, -0.54476155, -0.375, 0.125]
    //       var = (0.63164592 + 0.29676515 + 0.140625 + 0.015625) / 4 = 0.27116527
    //       dev / sqrt(0.27116527 + 1e-5) = dev / 0.52074491 = [1.52620127, -1.04611977, -0.72012225, 0.24004075]
    //       h0 = 2 * that + 0.5 = [3.55240254, -1.59223953, -0.94024450, 0.98008150]
    //   r1: mean = (q + 2 (1 + p) + 1) / 4 = (4 + p) / 4 = 1.16744039
    //       dev = [q - 1 - p/4, 1 + p - 1 - p/4, same, -p/4] = (p/4) [-5, 3, 3, -1]
    //       var = (p/4)^2 (25 + 9 + 9 + 1) / 4 = 11 (p/4)^2 = 0.30839912
    //       dev / sqrt(var + 1e-5) = [-5, 3, 3, -1] / sqrt(11 + 1e-5 (4/p)^2) = [-5, 3, 3, -1] / sqrt(11.00035668)
    //                              = [-5, 3, 3, -1] * 0.30150646
    //       h1 = 2 * that + 0.5 = [-2.51506456, 2.30903874, 2.30903874, -0.10301291]
    // FFN: linear1 gives [h[0] - 1, h[1]]:
    //   h0 -> [2.55240254, -1.59223953] -> relu [2.55240254, 0] -> linear2 F0 = [0, 0, 2.55240254, 0]
    //   h1 -> [-3.51506456, 2.30903874] -> relu [0, 2.30903874] -> linear2 F1 = [0, 0, 0, 2.30903874]
    // Residual s = h + F:
    //   s0 = [3.55240254, -1.59223953, 1.61215804, 0.98008150]
    //   s1 = [-2.51506456, 2.30903874, 2.30903874, 2.20602583]
    // norm2 (gain [1, 1, 2, 2], bias [0, 0, -0.5, 0.5]):
    //   s0: mean = 4.55240255 / 4 = 1.13810064; dev = [2.41430190, -2.73034017, 0.47405740, -0.15801914]
    //       sum dev^2 = 5.82885366 + 7.45475744 + 0.22473042 + 0.02497005 = 13.53331157, var = 3.38332789
    //       dev / sqrt(var + 1e-5) = dev / 1.83938519 = [1.31255917, -1.48437651, 0.25772601, -0.08590867]
    //       out0 = [1.31255917, -1.48437651, 2 * 0.25772601 - 0.5, 2 * -0.08590867 + 0.5]
    //            = [1.31255917, -1.48437651, 0.01545201, 0.32818266]
    //   s1: mean = 4.30903875 / 4 = 1.07725969; dev = [-3.59232425, 1.23177905, 1.23177905, 1.12876614]
    //       sum dev^2 = 12.90479352 + 2 * 1.51727963 + 1.27411300 = 17.21346578, var = 4.30336644
    //       dev / sqrt(var + 1e-5) = dev / 2.07445811 = [-1.73169284, 0.59378353, 0.59378353, 0.54412578]
    //       out1 = [-1.73169284, 0.59378353, 2 * 0.59378353 - 0.5, 2 * 0.54412578 + 0.5]
    //            = [-1.73169284, 0.59378353, 0.68756706, 1.58825156]
    const Tensor x({1, 2, 4}, {1, 0, 0, 1, 0, 1, 1, 1});
    const EncoderLayer layer = four_wide_encoder_layer(false);
    Trace trace(Trace::Detail::Weights);
    const Tensor y = layer.forward(x, Mask(), Padding(), &trace);
    const Tensor& weights = trace.tensor("self_attn.weights");
    REQUIRE(y.shape() == Shape{1, 2, 4});
    check_row(y, 0, {1.31255917, -1.48437651, 0.01545201, 0.32818266}, 1e-4);
    check_row(y, 1, {-1.73169284, 0.59378353, 0.68756706, 1.58825156}, 1e-4);

    // The per-head weights worked above: [B, H, T, T] = [1, 2, 2, 2].
    REQUIRE(weights.shape() == Shape{1, 2, 2, 2});
    check_row(weights, 0, {0.66976155, 0.33023845}, 1e-6);  // head 0, row 0: [p, q]
    check_row(weights, 1, {0.33023845, 0.66976155}, 1e-6);  // head 0, row 1: [q, p]
    check_row(weights, 2, {0.5, 0.5}, 1e-6);                // head 1, row 0
    check_row(weights, 3, {0.33023845, 0.66976155}, 1e-6);  // head 1, row 1: [q, p]

    SUBCASE("the same weights with norm_first = true give a different answer") {
        // Pre-LN does not renormalize the output: its first entry is about 3.5, not 1.31.
        const Tensor pre = four_wide_encoder_layer(true).forward(x, Mask(), Padding());
        CHECK(test_helpers::max_abs_difference(pre, y) > 1.0);
    }
}

TEST_CASE("A pre-LN EncoderLayer (D = 2, one head) gives the hand-worked h + FFN(norm2(h)), h = x + SA(norm1(x))") {
    // Weights: see two_wide_encoder_layer. x0 = [1, 0], x1 = [0, 2].
    //
    // norm1 (gain [1, 2], bias [0, 0.5]), with c from the D = 2 rule at the top:
    //   x0: a - b = 1,  c0 = 1 / sqrt(1 + 4e-5)     = 0.99998000;  n0 = [c0, -2 c0 + 0.5] = [0.99998000, -1.49996000]
    //   x1: a - b = -2, c1 = 1 / sqrt(1 + 4e-5 / 4) = 0.99999500;  n1 = [-c1, 2 c1 + 0.5] = [-0.99999500, 2.49999000]
    // Self-attention on n: Q = K = n/2, V = n; score(l, s) = (n_l/2).(n_s/2) / sqrt 2 = n_l.n_s / 5.65685425
    //   n0.n0 = 0.99996000 + 2.24988001 = 3.24984001
    //   n0.n1 = -0.99997500 - 3.74988500 = -4.74986000
    //   n1.n1 = 0.99999000 + 6.24995000 = 7.24994000
    //   row 0 scores [0.57449598, -0.83966455]: d = (3.24984001 + 4.74986000) / 5.65685425 = 1.41416053 (sqrt 2 but for eps)
    //     e^-d = 0.24312963 -> weights [1 / 1.24312963, 1 - that] = [0.80442134, 0.19557866]
    //   row 1 scores [-0.83966455, 1.28162043]: d = (7.24994000 + 4.74986000) / 5.65685425 = 2.12128499
    //     e^-d = 0.11987749 -> weights [1 - 1 / 1.11987749, 1 / 1.11987749] = [0.10704518, 0.89295482]
    //   o0 = 0.80442134 n0 + 0.19557866 n1 = [0.80440525 - 0.19557768, -1.20659983 + 0.48894469]
    //      = [0.60882757, -0.71765514]
    //   o1 = 0.10704518 n0 + 0.89295482 n1 = [0.10704304 - 0.89295036, -0.16056349 + 2.23237812]
    //      = [-0.78590732, 2.07181463]
    //   W_O = I, b_O = 0: SA = o.
    // Residual h = x + SA:  h0 = [1.60882757, -0.71765514],  h1 = [-0.78590732, 4.07181463]
    // norm2 (gain 2, bias 0.5):
    //   h0: a - b = 2.32648271,  c = 1 / sqrt(1 + 4e-5 / 5.41252) = 0.99999630 -> m0 = [2c + 0.5, -2c + 0.5]
    //       = [2.49999261, -1.49999261]
    //   h1: a - b = -4.85772195, c = 1 / sqrt(1 + 4e-5 / 23.59746) = 0.99999915 -> m1 = [-2c + 0.5, 2c + 0.5]
    //       = [-1.49999830, 2.49999830]
    // FFN: linear1 = I, relu: m0 -> [2.49999261, 0], m1 -> [0, 2.49999830]
    //   linear2 = [[1, 0], [1, -1]]: [g, 0] -> [g, g], [0, g] -> [0, -g]
    //   F0 = [2.49999261, 2.49999261],  F1 = [0, -2.49999830]
    // out = h + F:  out0 = [1.60882757 + 2.49999261, -0.71765514 + 2.49999261] = [4.10882018, 1.78233747]
    //               out1 = [-0.78590732 + 0, 4.07181463 - 2.49999830]         = [-0.78590732, 1.57181633]
    const Tensor x({1, 2, 2}, {1, 0, 0, 2});
    const EncoderLayer layer = two_wide_encoder_layer(true);
    Trace trace(Trace::Detail::Weights);
    const Tensor y = layer.forward(x, Mask(), Padding(), &trace);
    const Tensor& weights = trace.tensor("self_attn.weights");
    REQUIRE(y.shape() == Shape{1, 2, 2});
    check_row(y, 0, {4.10882018, 1.78233747}, 1e-4);
    check_row(y, 1, {-0.78590732, 1.57181633}, 1e-4);
    REQUIRE(weights.shape() == Shape{1, 1, 2, 2});
    check_row(weights, 0, {0.80442134, 0.19557866}, 1e-5);
    check_row(weights, 1, {0.10704518, 0.89295482}, 1e-5);

    SUBCASE("the same weights with norm_first = false give a different answer") {
        // Post-LN ends in norm2 (gain 2, bias 0.5) over D = 2, so each row is about
        // [2.5, -1.5] or [-1.5, 2.5] — nothing like [4.11, 1.78].
        const Tensor post = two_wide_encoder_layer(false).forward(x, Mask(), Padding());
        CHECK(test_helpers::max_abs_difference(post, y) > 1.0);
    }
}

TEST_CASE("A post-LN DecoderLayer attends causally to itself and across to memory, worked by hand at position 0") {
    // D = 2, H = 1, F = 2, T = 2, S = 3.
    //   x0 = [1, 0], x1 = [0, 4];  memory m = [[1, 0], [0, 1], [1, 1]]
    //   self_attn:      W_Q = W_K = W_V = I, in_proj_bias 0, W_O = I, b_O = [0, 1.5]
    //   multihead_attn: W_Q = W_K = W_V = I, in_proj_bias 0, W_O = I, b_O = 0
    //   linear1 = I, bias [-2, 0];  linear2 = [[-10, 0], [10, 0]], bias 0
    //   norm1: gain 1, bias 0;  norm2: gain 2, bias 0.5;  norm3: gain [1, 0.5], bias [0, 1]
    // (Over D = 2 a post-LN output keeps little but the sign of a - b, so the FFN
    // is chosen to flip that sign: the output then shows whether it ran on h2.)
    //
    // Position 0:
    //   self: the causal mask leaves key 0 alone -> weight exactly 1, output V0 = x0 = [1, 0];
    //     SA0 = [1, 0] + b_O = [1, 1.5]. (Were key 1 visible, SA0 would be [0.67, 2.82] and
    //     norm1 below would flip sign.)
    //   norm1(x0 + SA0) = norm1([2, 1.5]): a - b = 0.5, c = 1 / sqrt(1 + 4e-5 / 0.25) = 1 / sqrt(1.00016)
    //     = 0.99992001;  h0 = [c, -c]
    //   cross: q = h0, keys = m: scores = [c, -c, c - c] / sqrt 2 = [z, -z, 0], z = 0.70705022
    //     e^z = 2.02800027, e^-z = 0.49309658, e^0 = 1; sum = 3.52109685
    //     weights = [0.57595697, 0.14004062, 0.28400241]
    //     CA0 = 0.57595697 [1,0] + 0.14004062 [0,1] + 0.28400241 [1,1] = [0.85995938, 0.42404303]
    //   norm2(h0 + CA0) = norm2([1.85987939, -0.57587698]): a - b = 2.43575637,
    //     c = 1 / sqrt(1 + 4e-5 / 5.93291) = 0.99999663 -> [2c + 0.5, -2c + 0.5] = [2.49999326, -1.49999326]
    //   FFN: linear1 -> [2.49999326 - 2, -1.49999326] -> relu [0.49999326, 0]
    //        linear2 -> [-10 * 0.49999326, 10 * 0.49999326] = [-4.9999326, 4.9999326]
    //   residual: [2.49999326 - 4.9999326, -1.49999326 + 4.9999326] = [-2.49993934, 3.49993934]
    //   a - b = -5.99987868, c = 1 / sqrt(1 + 4e-5 / 35.99854) = 0.99999944
    //   norm3: [-c, 0.5 c + 1] = [-0.99999944, 1.49999972]
    //
    // Position 1 (its weights only):
    //   self scores [x1.x0, x1.x1] / sqrt 2 = [0, 16] / sqrt 2 = [0, 11.31370850]
    //     -> weights [1 / (1 + e^11.31370850), ...] = [0.00001220, 0.99998780]
    //   SA1 = 0.0000122 [1,0] + 0.9999878 [0,4] + [0, 1.5] = [0.0000122, 5.4999512]
    //   x1 + SA1 = [0.0000122, 9.4999512]: a - b = -9.499939, c = 1 / sqrt(1 + 4e-5 / 90.2488) = 0.99999978
    //   h1 = [-c, c]; cross scores [-c, c, 0] / sqrt 2 = [-z', z', 0], z' = 0.70710662
    //     e^z' = 2.02811466, e^-z' = 0.49306877; sum = 3.52118343
    //     weights = [0.14002928, 0.57597529, 0.28399543]
    const DecoderLayer layer{
        MultiHeadAttention({Tensor({6, 2}, {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}), Tensor({6}),
                            Tensor({2, 2}, {1, 0, 0, 1}), Tensor({2}, {0, 1.5f})},
                           1),
        MultiHeadAttention({Tensor({6, 2}, {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}), Tensor({6}),
                            Tensor({2, 2}, {1, 0, 0, 1}), Tensor({2})},
                           1),
        FeedForward{Linear{Tensor({2, 2}, {1, 0, 0, 1}), Tensor({2}, {-2, 0})},
                    Linear{Tensor({2, 2}, {-10, 0, 10, 0}), Tensor({2})}, Activation::Relu},
        LayerNorm{Tensor::filled({2}, 1.0f), Tensor({2})},
        LayerNorm{Tensor::filled({2}, 2.0f), Tensor::filled({2}, 0.5f)},
        LayerNorm{Tensor({2}, {1, 0.5f}), Tensor({2}, {0, 1})},
        false};
    const Tensor x({1, 2, 2}, {1, 0, 0, 4});
    const Tensor memory({1, 3, 2}, {1, 0, 0, 1, 1, 1});
    Trace trace(Trace::Detail::Weights);
    const Tensor y = layer.forward(x, memory, Mask::causal(2), Mask(), Padding(), &trace);
    const Tensor& self_weights = trace.tensor("self_attn.weights");
    const Tensor& cross_weights = trace.tensor("cross_attn.weights");
    REQUIRE(y.shape() == Shape{1, 2, 2});

    // Shapes: self [B, H, T, T], cross [B, H, T, S].
    REQUIRE(self_weights.shape() == Shape{1, 1, 2, 2});
    REQUIRE(cross_weights.shape() == Shape{1, 1, 2, 3});

    // Causal: above the diagonal exactly 0, so position 0 gives itself exactly 1.
    CHECK(self_weights.at({0, 0, 0, 1}) == 0.0f);
    CHECK(self_weights.at({0, 0, 0, 0}) == 1.0f);
    check_row(self_weights, 1, {0.00001220, 0.99998780}, 1e-6);

    check_row(cross_weights, 0, {0.57595697, 0.14004062, 0.28400241}, 1e-5);
    check_row(cross_weights, 1, {0.14002928, 0.57597529, 0.28399543}, 1e-5);
    check_row(y, 0, {-0.99999944, 1.49999972}, 1e-4);
}

TEST_CASE("EncoderLayer gives padded queries all-zero weight rows, but not zero outputs: the residual remains") {
    // The post-LN layer of the D = 4 test, with a third, padded position
    // x2 = [1, 1, 1, 1]. The key padding mask hides key 2 from queries 0 and 1,
    // so their rows are those of the unpadded test; query 2 is padding, so its
    // attention output (weights and, despite b_O, the projected row) is exactly 0.
    // Its output is then norm2(h2 + FFN(h2)) with h2 = norm1(x2 + 0):
    //   x2 is constant: dev = 0, so norm1 gives its bias: h2 = [0.5, 0.5, 0.5, 0.5]
    //   FFN: linear1 -> [0.5 - 1, 0.5] = [-0.5, 0.5] -> relu [0, 0.5] -> linear2 [0, 0, 0, 0.5]
    //   s2 = [0.5, 0.5, 0.5, 1]: mean 0.625, dev = [-0.125, -0.125, -0.125, 0.375]
    //     var = (3 * 0.015625 + 0.140625) / 4 = 0.046875; sqrt(var + 1e-5) = 0.21652944
    //     dev / 0.21652944 = [-0.57728870, -0.57728870, -0.57728870, 1.73186609]
    //   norm2 (gain [1, 1, 2, 2], bias [0, 0, -0.5, 0.5]):
    //     out2 = [-0.57728870, -0.57728870, -1.15457739 - 0.5, 3.46373217 + 0.5]
    //          = [-0.57728870, -0.57728870, -1.65457739, 3.96373217]
    const EncoderLayer layer = four_wide_encoder_layer(false);
    const Tensor x({1, 3, 4}, {1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1});
    const Padding padding = Padding::from_lengths({2}, 3);
    Trace trace(Trace::Detail::Weights);
    const Tensor y = layer.forward(x, Mask::key_padding(padding), padding, &trace);
    const Tensor& weights = trace.tensor("self_attn.weights");
    REQUIRE(y.shape() == Shape{1, 3, 4});
    REQUIRE(weights.shape() == Shape{1, 2, 3, 3});

    for (int64_t h = 0; h < 2; ++h) {
        CAPTURE(h);
        for (int64_t s = 0; s < 3; ++s) CHECK(weights.at({0, h, 2, s}) == 0.0f);  // padded query
        for (int64_t l = 0; l < 2; ++l) CHECK(weights.at({0, h, l, 2}) == 0.0f);  // padded key
    }
    // Real queries: the hand-worked rows of the post-LN test, padded key or not.
    check_row(weights, 0, {0.66976155, 0.33023845, 0}, 1e-6);  // head 0, row 0
    check_row(weights, 4, {0.33023845, 0.66976155, 0}, 1e-6);  // head 1, row 1
    check_row(y, 0, {1.31255917, -1.48437651, 0.01545201, 0.32818266}, 1e-4);
    check_row(y, 1, {-1.73169284, 0.59378353, 0.68756706, 1.58825156}, 1e-4);
    // The padded position: not 0 — the residual path carried x2 through both norms.
    check_row(y, 2, {-0.57728870, -0.57728870, -1.65457739, 3.96373217}, 1e-4);
}
