// The formulas the lessons print, read from their output as a learner reads them
// (tests/expression.h) and evaluated at a few points against the engine's own numbers:
// ALiBi's slopes (alibi_slopes) and bias (Mask::alibi), grouped-query attention's K/V head
// (AttentionHeads::key_value_head) and KV cache bytes (kv_cache_bytes_per_position), rotary's
// angle (RotaryEmbedding::frequency) and score (rotary_reference), LayerNorm (layers/layer_norm.h),
// SiLU and the FFN parameter counts of `lesson swiglu`. A formula changed in the text but not
// in the code (or the other way round) fails here, even where no printed number moves.
#include <doctest/doctest.h>

#include "engine/attention.h"
#include "engine/mask.h"
#include "engine/ops.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/rotary.h"
#include "models/cost.h"
#include "tests/expression.h"
#include "tests/lesson_output.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace tinyformer;
using test_helpers::Expression;
using test_helpers::lesson_output;

namespace {

// The text after `label` in `text`, up to `end` (not included), spaces trimmed; REQUIRE: both there.
std::string formula_after(const std::string& text, const std::string& label, const std::string& end) {
    const size_t at = text.find(label);
    REQUIRE_MESSAGE(at != std::string::npos, "the lesson no longer prints: ", label);
    const size_t start = at + label.size();
    const size_t stop = text.find(end, start);
    REQUIRE_MESSAGE(stop != std::string::npos, "no '", end, "' after: ", label);
    std::string formula = text.substr(start, stop - start);
    while (!formula.empty() && formula.back() == ' ') formula.pop_back();
    while (!formula.empty() && formula.front() == ' ') formula.erase(0, 1);
    return formula;
}

// A formula with the words of its parenthetical remarks removed: "2 (K and V) * layers"
// -> "2 * layers". A group with no operator and more than one word is a remark, not a factor.
std::string without_remarks(const std::string& formula) {
    static const std::regex remark(R"(\s*\((\s*[A-Za-z]+)(\s+[A-Za-z]+)+\s*\))");
    return std::regex_replace(formula, remark, "");
}

}  // namespace

TEST_CASE("lesson alibi: the printed slope formula equals alibi_slopes for H = 1, 2, 4, 8, 16; the rule for other H too") {
    const std::string& out = lesson_output("alibi");
    const std::string formula = formula_after(out, "slope_h = ", ";");
    CAPTURE(formula);
    for (int64_t heads : {1, 2, 4, 8, 16}) {
        const std::vector<float> slopes = alibi_slopes(heads);
        for (int64_t h = 0; h < heads; ++h) {
            CAPTURE(heads);
            CAPTURE(h);
            const double value = Expression::evaluate(formula, {{"h", double(h)}, {"H", double(heads)}});
            CHECK(value == doctest::Approx(slopes[size_t(h)]).epsilon(1e-6));  // float32 slopes
        }
    }
    // Other H: "the n = 2^floor(log2 H) slopes of n heads, then the slopes of 2n heads at indices
    // 0, 2, ...": n from the printed formula, each slope from the printed power-of-two formula.
    const std::string n_formula = formula_after(out, "the n = ", " slopes of n heads");
    CAPTURE(n_formula);
    for (int64_t heads : {3, 5, 6, 7, 12}) {
        CAPTURE(heads);
        const int64_t n = int64_t(Expression::evaluate(n_formula, {{"H", double(heads)}}));
        std::vector<double> expected;
        for (int64_t h = 0; h < n; ++h) expected.push_back(Expression::evaluate(formula, {{"h", double(h)}, {"H", double(n)}}));
        for (int64_t h = 0; int64_t(expected.size()) < heads; h += 2)
            expected.push_back(Expression::evaluate(formula, {{"h", double(h)}, {"H", double(2 * n)}}));
        const std::vector<float> slopes = alibi_slopes(heads);
        REQUIRE(slopes.size() == expected.size());
        for (size_t h = 0; h < slopes.size(); ++h) CHECK(expected[h] == doctest::Approx(slopes[h]).epsilon(1e-6));
    }
}

TEST_CASE("lesson alibi: the printed bias formulas equal Mask::alibi's bias, alone and with the causal mask") {
    const std::string& out = lesson_output("alibi");
    const std::string both = formula_after(out, "bias[h, i, j] = ", "\n");
    // "-slope_h * |i - j|         (causal: -slope_h * (i - j))"
    const size_t causal_at = both.find("(causal: ");
    REQUIRE(causal_at != std::string::npos);
    const std::string plain = both.substr(0, both.find("  "));
    std::string causal = both.substr(causal_at + 9);
    REQUIRE(causal.back() == ')');
    causal.pop_back();
    CAPTURE(plain);
    CAPTURE(causal);
    const int64_t H = 8, T = 5;
    const std::vector<float> slopes = alibi_slopes(H);
    const Mask alibi = Mask::alibi(H, T);
    const Mask causal_alibi = Mask::alibi(H, T) & Mask::causal(T);
    for (int64_t h : {0, 3, 7})
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j < T; ++j) {
                CAPTURE(h);
                CAPTURE(i);
                CAPTURE(j);
                const Expression::Variables at = {{"slope_h", slopes[size_t(h)]}, {"i", double(i)}, {"j", double(j)}};
                CHECK(Expression::evaluate(plain, at) == doctest::Approx(alibi.bias(0, h, i, j)).epsilon(1e-6));
                if (j <= i) CHECK(Expression::evaluate(causal, at) == doctest::Approx(causal_alibi.bias(0, h, i, j)).epsilon(1e-6));
            }
}

TEST_CASE("every lesson and doc that writes ALiBi's bias as slope times distance gives it Mask::alibi's sign and size") {
    // "-slope * distance", "-slope_h * |i - j|", "-slope_h * (i - j)", "-slope_h * |pos_i - pos_j|",
    // with the sign (or none) in front; in the docs' tables '|' is written '\|'.
    static const std::regex written(R"(([-+]?) ?slope(_h)? \* (distance|\|i - j\||\(i - j\)|\|pos_i - pos_j\|))");
    std::vector<std::pair<std::string, std::string>> texts;  // (where, text)
    for (const auto& [name, out] : test_helpers::lesson_outputs()) texts.emplace_back("lesson " + name, out);
    for (const char* doc : {"README.md", "docs/FORMAT.md", "docs/LESSONS.md", "docs/TOY_MODELS.md", "docs/EXTRAPOLATION.md",
                            "docs/FAMILIES.md", "docs/PICTURES.md", "docs/ATTENTION.md"}) {
        std::string text = test_helpers::read_file(doc);
        text = std::regex_replace(text, std::regex(R"(\\\|)"), "|");
        texts.emplace_back(doc, text);
    }
    // Query 3 and key 1 of head 0 at H = 8 (slope 1/2): distance 2, bias -1.
    const double bias = Mask::alibi(8, 4).bias(0, 0, 3, 1);
    REQUIRE(bias == -1.0);
    int found = 0, in_lessons = 0;
    for (const auto& [where, text] : texts)
        for (auto it = std::sregex_iterator(text.begin(), text.end(), written); it != std::sregex_iterator(); ++it) {
            const std::string formula = it->str();
            CAPTURE(where);
            CAPTURE(formula);
            const double value = Expression::evaluate(formula, {{"slope", 0.5}, {"slope_h", 0.5}, {"distance", 2.0},
                                                                {"i", 3.0}, {"j", 1.0}, {"pos_i", 3.0}, {"pos_j", 1.0}});
            CHECK(value == bias);
            ++found;
            in_lessons += where.rfind("lesson ", 0) == 0;
        }
    MESSAGE(found, " statements of ALiBi's bias checked, ", in_lessons, " of them in lessons");
    CHECK(in_lessons >= 2);  // lesson alibi's two, at least
    CHECK(found >= 5);
}

TEST_CASE("lesson gqa: the printed K/V head of query head h equals the engine's, for several H and Hkv") {
    const std::string& out = lesson_output("gqa");
    const std::string formula = formula_after(out, "reads K/V head ", " (engine/attention.h)");
    CAPTURE(formula);
    for (const auto& [H, Hkv] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {8, 4}, {6, 3}, {6, 2}, {12, 4}, {4, 1}, {4, 4}})
        for (int64_t h = 0; h < H; ++h) {
            CAPTURE(H);
            CAPTURE(Hkv);
            CAPTURE(h);
            const double read = Expression::evaluate(formula, {{"h", double(h)}, {"H", double(H)}, {"Hkv", double(Hkv)}}, true);
            CHECK(read == double(AttentionHeads(H, Hkv).key_value_head(h)));
        }
    // The bytes per token: "2 (K and V) * layers * Hkv * Dh * 4 bytes" against models/cost.h.
    const std::string bytes = without_remarks(formula_after(out, "per token it holds (float32)\n", " bytes\n"));
    CAPTURE(bytes);
    for (const auto& [layers, H, Hkv, Dh] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
             {6, 6, 6, 48}, {6, 6, 2, 48}, {32, 32, 8, 128}, {1, 4, 1, 16}}) {
        CostShape shape;
        shape.d_model = H * Dh;
        shape.heads = H;
        shape.kv_heads = Hkv;
        shape.ff = 4 * H * Dh;
        const double value =
            Expression::evaluate(bytes, {{"layers", double(layers)}, {"Hkv", double(Hkv)}, {"Dh", double(Dh)}});
        CHECK(value == double(layers * kv_cache_bytes_per_position(shape)));
    }
}

TEST_CASE("lesson rotary: the printed angle equals position times RotaryEmbedding's frequency; the printed score is rotary's") {
    const std::string& out = lesson_output("rotary");
    const std::string angle = formula_after(out, "by angle = ", "\n");
    CAPTURE(angle);
    for (int64_t Dh : {2, 8, 64})
        for (int64_t i = 0; i < Dh / 2; i += Dh / 8 + 1)
            for (int64_t position : {0, 1, 7, 1000}) {
                CAPTURE(Dh);
                CAPTURE(i);
                CAPTURE(position);
                const RotaryEmbedding rotary(Dh, 10000.0f, RopePairs::Adjacent);
                const double value = Expression::evaluate(
                    angle, {{"position", double(position)}, {"theta", 10000.0}, {"i", double(i)}, {"Dh", double(Dh)}});
                // The engine's frequency is float32 (powf of a float exponent): 1e-6 relative.
                CHECK(value == doctest::Approx(double(position) * rotary.frequency(i)).epsilon(1e-6));
            }
    // "score is cos m cos n + sin m sin n = cos(m - n)": both sides against q = k = (1, 0) turned
    // by rotary_reference, Dh = 2.
    const std::string score = formula_after(out, "score is ", " (radians)");
    const size_t equals = score.find(" = ");
    REQUIRE(equals != std::string::npos);
    for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{3, 1}, {0, 5}, {10, 2}, {7, 7}}) {
        float q[2] = {1.0f, 0.0f}, k[2] = {1.0f, 0.0f};
        rotary_reference(q, 1, 2, m, 10000.0f, RopePairs::Adjacent);
        rotary_reference(k, 1, 2, n, 10000.0f, RopePairs::Adjacent);
        const double engine = double(q[0]) * k[0] + double(q[1]) * k[1];
        for (const std::string& side : {score.substr(0, equals), score.substr(equals + 3)}) {
            CAPTURE(side);
            CHECK(Expression::evaluate(side, {{"m", double(m)}, {"n", double(n)}}) == doctest::Approx(engine).epsilon(1e-5));
        }
    }
}

TEST_CASE("lesson norms: the printed LayerNorm formula equals layers/layer_norm.h on a vector") {
    const std::string& out = lesson_output("norms");
    const std::string formula = formula_after(out, "LayerNorm:  y = ", "  ");
    CAPTURE(formula);
    const std::vector<float> x = {0.5f, -2.0f, 3.0f, 1.5f, -0.25f};
    const float eps = 1e-5f;
    const Tensor weight({5}, {1.5f, 0.5f, -1.0f, 2.0f, 1.0f}), bias({5}, {0.1f, -0.2f, 0.0f, 0.3f, 1.0f});
    const LayerNorm norm{weight, bias, eps, NormKind::LayerNorm};
    const Tensor y = norm.forward(Tensor({1, 5}, x));
    // mean and biased variance worked here: mean = 2.75 / 5 = 0.55; var = mean((x - 0.55)^2).
    double mean = 0, var = 0;
    for (float v : x) mean += v / 5.0;
    for (float v : x) var += (v - mean) * (v - mean) / 5.0;
    for (size_t d = 0; d < x.size(); ++d) {
        CAPTURE(d);
        const double value = Expression::evaluate(formula, {{"x", x[d]}, {"mean", mean}, {"var", var}, {"eps", eps},
                                                            {"weight", weight.data()[d]}, {"bias", bias.data()[d]}});
        CHECK(value == doctest::Approx(y.data()[d]).epsilon(1e-5));
    }
}

namespace {

// A bias-free FFN of D -> F -> D with zero weights, for its weight count.
int64_t ffn_weights(int64_t D, int64_t F, Activation activation) {
    FeedForward ffn;
    ffn.linear1 = Linear{Tensor({F, D}), Tensor()};
    ffn.linear2 = Linear{Tensor({D, F}), Tensor()};
    if (activation == Activation::SwiGlu) ffn.linear3 = Linear{Tensor({F, D}), Tensor()};
    return ffn.linear1.weight.numel() + ffn.linear2.weight.numel() + ffn.linear3.weight.numel();
}

}  // namespace

TEST_CASE("lesson swiglu: the printed SiLU equals engine/ops.h's silu; the printed weight counts and F equal FeedForward's") {
    const std::string& out = lesson_output("swiglu");
    const std::string silu_text = formula_after(out, "with SiLU(x) = ", " and * elementwise");
    size_t equals = silu_text.find(" = ");
    REQUIRE(equals != std::string::npos);
    const Tensor points({6}, {-3.0f, -1.278f, -0.5f, 0.0f, 0.5f, 2.0f});
    const Tensor engine = silu(points);
    for (const std::string& side : {silu_text.substr(0, equals), silu_text.substr(equals + 3)})
        for (int64_t i = 0; i < points.numel(); ++i) {
            CAPTURE(side);
            CAPTURE(points.data()[i]);
            const double value = Expression::evaluate(side, {{"x", points.data()[i]}, {"e", std::exp(1.0)}});
            CHECK(value == doctest::Approx(engine.data()[i]).epsilon(1e-6));
        }
    // "a ReLU FFN has 2 D F weights, a SwiGLU FFN 3 D F;"
    const std::string relu_count = formula_after(out, "a ReLU FFN has ", " weights");
    const std::string swiglu_count = formula_after(out, "a SwiGLU FFN ", ";");
    for (const auto& [D, F] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {16, 64}, {288, 768}}) {
        CAPTURE(D);
        CAPTURE(F);
        CHECK(Expression::evaluate(relu_count, {{"D", double(D)}, {"F", double(F)}}) == double(ffn_weights(D, F, Activation::Relu)));
        CHECK(Expression::evaluate(swiglu_count, {{"D", double(D)}, {"F", double(F)}}) ==
              double(ffn_weights(D, F, Activation::SwiGlu)));
    }
    // "F = 8D/3 = 2/3 * 4D": both forms give the SwiGLU FFN a ReLU FFN's weights at F = 4D.
    const std::string f_text = formula_after(out, "\nF = ", ". ");
    equals = f_text.find(" = ");
    REQUIRE(equals != std::string::npos);
    for (const std::string& side : {f_text.substr(0, equals), f_text.substr(equals + 3)})
        for (int64_t D : {3, 288, 768}) {
            CAPTURE(side);
            CAPTURE(D);
            const double F = Expression::evaluate(side, {{"D", double(D)}});
            REQUIRE(F == std::floor(F));
            CHECK(ffn_weights(D, int64_t(F), Activation::SwiGlu) == ffn_weights(D, 4 * D, Activation::Relu));
        }
}

TEST_CASE("lesson rope-pairs: the printed angle equals RotaryEmbedding's; the printed pairs are the dimensions rotary_reference turns together") {
    const std::string& out = lesson_output("rope-pairs");
    const std::string angle = formula_after(out, "theta_p = ", " (base 10000");
    CAPTURE(angle);
    for (RopePairs pairs : {RopePairs::Adjacent, RopePairs::Half})
        for (int64_t Dh : {4, 8, 64})
            for (int64_t p = 0; p < Dh / 2; p += Dh / 8 + 1)
                for (int64_t pos : {1, 5, 300}) {
                    const RotaryEmbedding rotary(Dh, 10000.0f, pairs);
                    const double value = Expression::evaluate(
                        angle, {{"pos", double(pos)}, {"base", 10000.0}, {"p", double(p)}, {"Dh", double(Dh)}});
                    CHECK(value == doctest::Approx(double(pos) * rotary.frequency(p)).epsilon(1e-6));
                }
    // "(2p, 2p + 1)" and "(p, p + Dh/2)": a unit vector on the pair's first dimension, turned at
    // position 1, moves into the second one only (by sin theta_p) and stays there otherwise.
    for (const auto& [label, pairs] : {std::pair<std::string, RopePairs>{"Meta's llama):", RopePairs::Adjacent},
                                       {"rotate_half):", RopePairs::Half}}) {
        std::string pair = formula_after(out, label, "\n");
        REQUIRE(pair.size() > 2);
        pair = pair.substr(1, pair.size() - 2);  // without ( and )
        const size_t comma = pair.find(", ");
        REQUIRE(comma != std::string::npos);
        CAPTURE(pair);
        const int64_t Dh = 8;
        for (int64_t p = 0; p < Dh / 2; ++p) {
            const Expression::Variables at = {{"p", double(p)}, {"Dh", double(Dh)}};
            const int64_t first = int64_t(Expression::evaluate(pair.substr(0, comma), at));
            const int64_t second = int64_t(Expression::evaluate(pair.substr(comma + 2), at));
            std::vector<float> x(size_t(Dh), 0.0f);
            x[size_t(first)] = 1.0f;
            rotary_reference(x.data(), 1, Dh, 1, 10000.0f, pairs);
            CAPTURE(p);
            for (int64_t d = 0; d < Dh; ++d)
                if (d != first && d != second) CHECK(x[size_t(d)] == 0.0f);
            const RotaryEmbedding rotary(Dh, 10000.0f, pairs);
            CHECK(x[size_t(second)] == doctest::Approx(std::sin(double(rotary.frequency(p)))).epsilon(1e-6));
        }
    }
}

TEST_CASE("the formula reader reads the lessons' notation") {
    CHECK(Expression::evaluate("2^(-8 (h+1) / H)", {{"h", 1}, {"H", 4}}) == 0.0625);
    CHECK(Expression::evaluate("-slope_h * |i - j|", {{"slope_h", 0.5}, {"i", 1}, {"j", 3}}) == -1.0);
    CHECK(Expression::evaluate("h / (H / Hkv)", {{"h", 5}, {"H", 8}, {"Hkv", 2}}, true) == 1.0);
    CHECK(Expression::evaluate("h % Hkv", {{"h", 5}, {"Hkv", 2}}) == 1.0);
    CHECK(Expression::evaluate("2^-8", {}) == 1.0 / 256);
    CHECK(Expression::evaluate("-x^2", {{"x", 3}}) == -9.0);
    CHECK(Expression::evaluate("cos m cos n + sin m sin n", {{"m", 1}, {"n", 0}}) == doctest::Approx(std::cos(1.0)));
    CHECK(Expression::evaluate("2^floor(log2 H)", {{"H", 6}}) == 4.0);
    CHECK_THROWS_WITH(Expression::evaluate("2 * q", {}), doctest::Contains("no value for 'q'"));
    CHECK_THROWS_WITH(Expression::evaluate("(1 + 2", {}), doctest::Contains("expected ')'"));
}

namespace {

bool has_operator(const std::string& text) { return text.find_first_of("+-*/^") != std::string::npos; }

// The number a piece of text starts with ("13824 B", "0.500000", "-194.2500   (the engine's",
// "0.01." at a sentence's end):
// its text, or empty.
std::string leading_number(const std::string& text) {
    static const std::regex number(R"(^-?\d+(\.\d+)?(?![\w(/*^])(?!\.\d))");
    std::smatch match;
    return std::regex_search(text, match, number) ? match.str() : std::string();
}

}  // namespace

TEST_CASE("every piece of arithmetic a lesson prints, 'EXPRESSION = NUMBER' on one line, holds to the number's digits") {
    // "by hand: 2 * 6 * 6 * 48 * 4 = 13824 B", "s = 63.5 / 127 = 0.500000", "e^4 / (2 + e^4) = 0.964663":
    // the longest end of the text before " = " that is an expression of numbers alone (e is Euler's
    // number), against the number after it. Text with names in it (x - 2.5, D/H) is not arithmetic.
    int checked = 0;
    for (const auto& [name, out] : test_helpers::lesson_outputs()) {
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);) {
            for (size_t at = line.find(" = "); at != std::string::npos; at = line.find(" = ", at + 3)) {
                const std::string right = leading_number(line.substr(at + 3));
                if (right.empty()) continue;
                const std::string left = line.substr(0, at);
                double value = 0;
                std::string expression;
                for (size_t start = 0; start < left.size(); ++start) {
                    if (start > 0 && left[start - 1] != ' ' && left[start - 1] != '(') continue;
                    const std::string candidate = left.substr(start);
                    if (!has_operator(candidate.substr(1))) continue;
                    try {
                        value = Expression::evaluate(candidate, {{"e", std::exp(1.0)}});
                        expression = candidate;
                        break;
                    } catch (const std::runtime_error&) {
                    }
                }
                if (expression.empty()) continue;
                const size_t point = right.find('.');
                const int decimals = point == std::string::npos ? 0 : int(right.size() - point - 1);
                CAPTURE(name);
                CAPTURE(line);
                CAPTURE(expression);
                // Half a unit of the result's last digit for its rounding, and 2e-7 of its size for
                // the rounded numbers the hand working carries (0.367879, 0.606531, 1.974410 give
                // 5.6532736 for 5.653274: 6.5e-7 off, 1.5e-7 beyond the half unit).
                const double tolerance = 0.5 * std::pow(10.0, -decimals) + 2e-7 * std::max(1.0, std::fabs(value));
                CHECK(std::fabs(value - std::stod(right)) <= tolerance);
                ++checked;
            }
        }
    }
    MESSAGE(checked, " printed equalities checked");
    CHECK(checked >= 10);
}
