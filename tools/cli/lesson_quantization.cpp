// `tinyformer lesson quantization` — int8 weights in groups (Q8_0, llama2.c's
// runq.c): one group and one dot product worked by hand, then what the
// rounding does to a trained model's logits and to the toy models' accuracy,
// and what it saves. Every number is computed here; tests/test_lesson.cpp
// holds the hand-worked ones against values worked out in its comments.

#include "engine/matmul.h"
#include "engine/quant/q8_0.h"
#include "models/study/teacher_forcing.h"
#include "models/study/toy_tasks.h"
#include "models/study/trace.h"
#include "models/text.h"
#include "models/transformer.h"
#include "tools/cli/lesson_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer::cli {
namespace {

void print_row(const char* label, const std::vector<float>& values, const char* format = " %9.4f") {
    std::printf("  %-10s", label);
    for (float value : values) std::printf(format, value);
    std::printf("\n");
}

void print_ints(const char* label, const std::vector<int8_t>& values) {
    std::printf("  %-10s", label);
    for (int8_t value : values) std::printf(" %9d", value);
    std::printf("\n");
}

const char* yes_no(bool condition) { return condition ? "yes" : "no"; }

// 1. The rule on one group of 8 numbers (the scale 0.5 is exact in float32,
// so every step below is exact but the rounding itself).
void one_group(const std::vector<float>& w) {
    const int64_t G = static_cast<int64_t>(w.size());
    std::vector<int8_t> q(w.size());
    float s = 0;
    quantize_q8_0_row(w.data(), G, G, q.data(), &s);
    float largest = 0;
    for (float value : w) largest = std::max(largest, std::fabs(value));
    std::vector<float> ratio, back, error;
    for (int64_t i = 0; i < G; ++i) {
        ratio.push_back(w[i] / s);
        back.push_back(static_cast<float>(q[i]) * s);
        error.push_back(std::fabs(w[i] - back.back()));
    }
    std::printf("1. One group of G = %lld numbers, by hand (quantize_q8_0_row):\n\n", static_cast<long long>(G));
    print_row("w", w);
    std::printf("  max|w| = %g, so s = %g / 127 = %.6f\n", largest, largest, s);
    print_row("w / s", ratio);
    print_ints("q", q);
    print_row("q * s", back);
    print_row("|error|", error);
    const float worst = *std::max_element(error.begin(), error.end());
    std::string where, halves, zeroed;
    bool halfway_away = true;  // every largest error's w / s lies halfway and was rounded away from 0
    for (int64_t i = 0; i < G; ++i) {
        char number[32], half[32];
        std::snprintf(number, sizeof number, "%g", w[i]);
        std::snprintf(half, sizeof half, "%g", ratio[i]);
        if (error[i] == worst) {
            where += (where.empty() ? "" : " and ") + std::string(number);
            halves += (halves.empty() ? "" : " and ") + std::string(half);
            halfway_away = halfway_away && std::fabs(ratio[i] - std::trunc(ratio[i])) == 0.5f &&
                           std::abs(q[i]) > std::fabs(ratio[i]);
        }
        if (q[i] == 0 && w[i] != 0) zeroed += (zeroed.empty() ? "" : ", ") + std::string(number);
    }
    const auto biggest = std::max_element(w.begin(), w.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    std::printf("  largest error %.4f at w = %s; s / 2 = %.4f; no error above s / 2: %s\n", worst, where.c_str(), s / 2,
                yes_no(worst <= s / 2));
    std::printf("  there w / s (%s) is halfway between two integers, and round takes it away from 0: %s\n",
                halves.c_str(), yes_no(halfway_away));
    std::printf("  the largest |w| comes back exactly (q = +-127): %s\n",
                yes_no(back[static_cast<size_t>(biggest - w.begin())] == *biggest));
    std::printf("  numbers smaller than s / 2 in size become 0: here %s\n"
                "  relative to max|w| no error exceeds 1/254 = %.4f: %s\n\n",
                zeroed.empty() ? "none" : zeroed.c_str(), 1.0 / 254, yes_no(worst / largest <= 1.0 / 254 + 1e-7));
}

// 2. One dot product as runq.c computes it: x quantized at run time, int8 x int8
// products summed in int32, the sum scaled once by s_w s_x.
void one_dot_product(const std::vector<float>& w, const std::vector<float>& x) {
    const int64_t G = static_cast<int64_t>(w.size());
    const Q8Matrix weight = quantize_q8_0(ConstMatrixView{w.data(), 1, G, G}, G);
    std::vector<int8_t> qx(x.size());
    float sx = 0;
    quantize_q8_0_row(x.data(), G, G, qx.data(), &sx);
    float largest_x = 0;
    for (float value : x) largest_x = std::max(largest_x, std::fabs(value));
    const float sw = weight.view().scales[0];
    int32_t dot = 0;
    std::string terms;
    for (int64_t i = 0; i < G; ++i) {
        dot += int32_t{weight.view().values[i]} * int32_t{qx[i]};
        terms += (i ? " + " : "") + std::to_string(weight.view().values[i]) + "*" + std::to_string(qx[i]);
    }
    float engine = 0;
    q8_matvec(weight.view(), qx.data(), &sx, &engine);
    double exact = 0;
    for (int64_t i = 0; i < G; ++i) exact += static_cast<double>(w[i]) * x[i];
    const float float32 = linear(Tensor({1, G}, x), Tensor({1, G}, w), Tensor()).data()[0];
    const double bound = q8_error_bound(w.data(), x.data(), G, G);
    double sum_w = 0, sum_x = 0;
    int64_t up = 0, down = 0;  // the products whose rounding moved them up, down
    for (int64_t i = 0; i < G; ++i) {
        sum_w += std::fabs(w[i]);
        sum_x += std::fabs(x[i]);
        const double rounded = static_cast<double>(weight.view().values[i]) * sw * static_cast<double>(qx[i]) * sx;
        up += rounded > static_cast<double>(w[i]) * x[i];
        down += rounded < static_cast<double>(w[i]) * x[i];
    }
    std::printf("2. One dot product in int8, as runq.c computes it: w the group above, x quantized the same way\n"
                "   when the product runs (an activation has no scales stored):\n\n");
    print_row("x", x);
    std::printf("  max|x| = %g, so s_x = %.6f\n", largest_x, sx);
    print_ints("q_x", qx);
    std::printf("  int32 sum  q_w . q_x = %s\n             = %d   (exact: int8 x int8 products summed in int32)\n",
                terms.c_str(), dot);
    std::printf("  scaled     %d * s_w * s_x = %d * %g * %.6f = %.4f   (the engine's q8_matvec: %.4f)\n", dot, dot, sw, sx,
                static_cast<double>(dot) * sw * sx, engine);
    std::printf("  float32    w . x = %.4f\n", float32);
    std::printf("  error      %.4f (%.2f%% of |w . x|)\n", std::fabs(engine - float32),
                100.0 * std::fabs(engine - float32) / std::fabs(exact));
    std::printf("  bound      s_w/2 sum|x| + s_x/2 sum|w| + G s_w/2 s_x/2 = %g * %.2f + %.2f * %.2f + %lld * %g * %.2f\n"
                "             = %.4f; with float32's own rounding %.4f (q8_error_bound, engine/quant/q8_0.h)\n",
                sw / 2, sum_x, sx / 2, sum_w, static_cast<long long>(G), sw / 2, sx / 2,
                sw / 2 * sum_x + sx / 2 * sum_w + static_cast<double>(G) * sw / 2 * sx / 2, bound);
    std::printf("  the error is %.1f%% of the bound: rounding moved %lld of the %lld products up and %lld down, and\n"
                "  these partly cancel; the bound is what they could do if every one went the same way as far as\n"
                "  it can.\n\n",
                100.0 * std::fabs(engine - float32) / bound, static_cast<long long>(up), static_cast<long long>(G),
                static_cast<long long>(down));
}

// |a - b| over two logits tensors of one shape: the largest, and the sum (for a mean).
struct Errors {
    double largest = 0, sum = 0;
    int64_t count = 0;
    void add(const Tensor& a, const Tensor& b) {
        for (int64_t i = 0; i < a.numel(); ++i) {
            const double error = std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]);
            largest = std::max(largest, error);
            sum += error;
        }
        count += a.numel();
    }
    double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
};

int64_t argmax_row(const float* row, int64_t V) { return std::max_element(row, row + V) - row; }

constexpr const char* kLogitsModel = "data/models/reverse.safetensors";
constexpr int64_t kLogitsInputs = 50;
constexpr int64_t kGroups[] = {8, 32, 64};
constexpr int64_t kAccuracyGroup = 32;  // one of kGroups: the group size of parts 4 and 5's statements

// 3. The logits of a trained model: its head alone in int8 (the bound holds
// logit by logit), then every weight in int8.
void logits_error() {
    const std::string path = lesson_model(kLogitsModel);
    const Model model = Model::load(path);
    const ModelText text(model);
    const ToyTask& task = toy_task("reverse");
    const std::vector<std::string> texts = draw_inputs(task, kLogitsInputs, 1);
    // The float32 model's teacher-forced passes on its own greedy outputs, with
    // the stream the head reads (the final norm's output).
    std::vector<std::vector<int64_t>> inputs, targets;
    std::vector<Tensor> logits, streams;
    for (const std::string& one : texts) {
        inputs.push_back(model_input(model, text.encode_input(one)));
        targets.push_back(target_or_greedy(model, inputs.back(), std::nullopt));
        Trace trace(Trace::Detail::Everything);
        logits.push_back(teacher_forced_pass(model, inputs.back(), targets.back(), &trace).logits);
        streams.push_back(trace.tensor("decoder.norm.output"));
    }
    const HeadParts head = model.encoder_decoder->head_parts();
    const int64_t V = head.weight.dim(0), D = head.weight.dim(1);
    int64_t positions = 0;
    double logit_size = 0;
    for (const Tensor& each : logits) {
        positions += each.dim(1);
        for (int64_t i = 0; i < each.numel(); ++i) logit_size += std::fabs(each.data()[i]);
    }
    logit_size /= static_cast<double>(positions * V);
    std::printf("3. The logits of %s (encoder-decoder, D = %lld, V = %lld) on %lld fresh\n"
                "   reverse inputs (draw_inputs, seed 1, as `tinyformer eval` draws them), teacher-forced on the\n"
                "   float32 model's greedy outputs: %lld positions x %lld logits; their mean |logit| is %.3f.\n\n",
                kLogitsModel, static_cast<long long>(D), static_cast<long long>(V), static_cast<long long>(kLogitsInputs),
                static_cast<long long>(positions), static_cast<long long>(V), logit_size);

    std::printf("a) The head alone in int8, on the same stream h: logits = h W^T + b with W [%lld, %lld] in Q8_0,\n"
                "   each logit against the float32 model's, and against its own bound (part 2's, q8_error_bound):\n\n",
                static_cast<long long>(V), static_cast<long long>(D));
    std::printf("  %4s %16s %14s %14s %22s %14s\n", "G", "largest |error|", "mean |error|", "largest bound",
                "every logit in bound", "largest error/bound");
    std::vector<double> head_means;
    for (int64_t G : kGroups) {
        const Q8Matrix weight = quantize_q8_0(head.weight.matrix(), G);
        Errors errors;
        bool within = true;
        double largest_bound = 0, worst_ratio = 0;
        for (size_t k = 0; k < streams.size(); ++k) {
            const Tensor& h = streams[k];
            const Tensor int8 = linear_q8(h, weight.view(), head.bias.data());
            errors.add(int8, logits[k]);
            for (int64_t t = 0; t < h.dim(1); ++t)
                for (int64_t v = 0; v < V; ++v) {
                    const double bound = q8_error_bound(head.weight.data() + v * D, h.data() + t * D, D, G, head.bias.data()[v]);
                    const double error = std::fabs(static_cast<double>(int8.at({0, t, v})) - logits[k].at({0, t, v}));
                    within = within && error <= bound;
                    largest_bound = std::max(largest_bound, bound);
                    worst_ratio = std::max(worst_ratio, error / bound);
                }
        }
        head_means.push_back(errors.mean());
        std::printf("  %4lld %16.2e %14.2e %14.2e %22s %19.1f%%\n", static_cast<long long>(G), errors.largest,
                    errors.mean(), largest_bound, yes_no(within), 100.0 * worst_ratio);
    }

    std::printf("\nb) Every weight in int8 (Model::load_q8_0: every linear layer and the head; embeddings, norms and\n"
                "   biases stay float32), the whole model against float32 on the same passes:\n\n");
    std::printf("  %4s %16s %14s %26s %22s\n", "G", "largest |error|", "mean |error|", "mean / the head alone's",
                "same top token");
    std::vector<double> means, ratios;  // per G: the mean error, and it over the head alone's
    int64_t same_at_chosen = 0;
    double mean_at_chosen = 0;
    for (size_t g = 0; g < std::size(kGroups); ++g) {
        const int64_t G = kGroups[g];
        const Model quantized = Model::load_q8_0(path, G);
        Errors errors;
        int64_t same = 0;
        for (size_t k = 0; k < inputs.size(); ++k) {
            const Tensor int8 = teacher_forced_pass(quantized, inputs[k], targets[k]).logits;
            errors.add(int8, logits[k]);
            for (int64_t t = 0; t < int8.dim(1); ++t)
                same += argmax_row(int8.data() + t * V, V) == argmax_row(logits[k].data() + t * V, V);
        }
        means.push_back(errors.mean());
        ratios.push_back(errors.mean() / head_means[g]);
        if (G == kAccuracyGroup) {
            same_at_chosen = same;
            mean_at_chosen = errors.mean();
        }
        std::printf("  %4lld %16.2e %14.2e %25.1fx %14lld/%lld\n", static_cast<long long>(G), errors.largest,
                    errors.mean(), ratios.back(), static_cast<long long>(same),
                    static_cast<long long>(positions));
    }
    const bool smaller_groups_smaller_errors = std::is_sorted(means.begin(), means.end());
    std::printf("\nSmaller groups, smaller errors (a group's scale follows its own largest number): %s.\n"
                "The whole model's mean error is %.1f to %.1fx the head's alone: every layer's rounding is\n"
                "passed on through the next ones, through attention, norms and ReLUs, which part 2's bound\n"
                "(one product, given its input) does not follow. At G = %lld the top token is the same at %lld of\n"
                "%lld positions; the mean error is %.1f%% of the mean |logit|.\n\n",
                yes_no(smaller_groups_smaller_errors), *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()),
                static_cast<long long>(kAccuracyGroup), static_cast<long long>(same_at_chosen),
                static_cast<long long>(positions), 100.0 * mean_at_chosen / logit_size);
}

constexpr int64_t kEvalExamples = 1000;

// 4. Exact match of each toy model, float32 and int8, on the examples `eval` draws.
void accuracy() {
    std::printf("4. What it costs on the toy tasks: exact match of greedy decoding on the %lld examples that\n"
                "   `tinyformer eval MODEL --task T` draws (seed 1; models/study/toy_tasks.h's evaluate), float32\n"
                "   and every weight in int8 at G = %lld:\n\n",
                static_cast<long long>(kEvalExamples), static_cast<long long>(kAccuracyGroup));
    const std::string int8_title = "int8 G = " + std::to_string(kAccuracyGroup);
    std::printf("  %-42s %-8s %11s %14s %8s\n", "model", "task", "float32", int8_title.c_str(), "change");
    std::vector<int64_t> changes;  // int8's correct minus float32's, per model
    std::vector<std::string> names;
    for (const ToyModel& toy : kToyModels) {
        const std::string path = lesson_model(toy.path);
        const ToyTask& task = toy_task(toy.task);
        const Evaluation float32 = evaluate(Model::load(path), task, kEvalExamples, 1);
        const Evaluation int8 = evaluate(Model::load_q8_0(path, kAccuracyGroup), task, kEvalExamples, 1);
        const int64_t change = int8.correct - float32.correct;
        changes.push_back(change);
        names.push_back(toy.path);
        std::printf("  %-42s %-8s %5lld/%-5lld %8lld/%-5lld %+8lld\n", toy.path, toy.task,
                    static_cast<long long>(float32.correct), static_cast<long long>(float32.total),
                    static_cast<long long>(int8.correct), static_cast<long long>(int8.total), static_cast<long long>(change));
    }
    const int64_t unchanged = std::count(changes.begin(), changes.end(), 0);
    int64_t largest = 0;
    for (int64_t change : changes) largest = std::max<int64_t>(largest, std::llabs(change));
    std::printf("\nAccuracy unchanged on %lld of %zu models", static_cast<long long>(unchanged), changes.size());
    if (largest > 0) {
        std::printf("; the largest change is %lld of %lld examples, on", static_cast<long long>(largest),
                    static_cast<long long>(kEvalExamples));
        const char* separator = "\n ";
        for (size_t i = 0; i < changes.size(); ++i)
            if (std::llabs(changes[i]) == largest) {
                std::printf("%s %s (%+lld)", separator, names[i].c_str(), static_cast<long long>(changes[i]));
                separator = ",";
            }
    }
    std::printf(".\n\n");
}

// 5. The bytes the weights take: float32 against int8 and its scales.
void bytes() {
    const std::string path = lesson_model(kLogitsModel);
    const WeightCounts float32 = Model::load(path).numbers;
    std::printf("5. What it saves: the bytes of %s's numbers, as a file stores them and\n"
                "   the products read them (Model::numbers):\n\n",
                kLogitsModel);
    std::printf("  %-12s %14s %12s %14s %14s %16s\n", "weights", "float32 (B)", "int8 (B)", "scales (B)", "total (B)",
                "vs float32");
    std::printf("  %-12s %14lld %12d %14d %14lld %15.2fx\n", "float32", static_cast<long long>(4 * float32.float32), 0, 0,
                static_cast<long long>(float32.bytes()), 1.0);
    int64_t quantized_numbers = 0;
    for (int64_t G : kGroups) {
        const WeightCounts int8 = Model::load_q8_0(path, G).numbers;
        quantized_numbers = int8.int8;  // the same at every G
        char label[32];
        std::snprintf(label, sizeof label, "int8 G = %lld", static_cast<long long>(G));
        std::printf("  %-12s %14lld %12lld %14lld %14lld %15.2fx\n", label, static_cast<long long>(4 * int8.float32),
                    static_cast<long long>(int8.int8), static_cast<long long>(4 * int8.scales),
                    static_cast<long long>(int8.bytes()),
                    static_cast<double>(float32.bytes()) / static_cast<double>(int8.bytes()));
    }
    std::printf("\n%lld of the model's %lld numbers are the linear layers' and the head's weights; each takes\n"
                "1 + 4/G bytes in int8 instead of 4:", static_cast<long long>(quantized_numbers),
                static_cast<long long>(float32.float32));
    for (int64_t G : kGroups)
        std::printf("%s %g at G = %lld", G == kGroups[0] ? "" : ",", 1.0 + 4.0 / static_cast<double>(G),
                    static_cast<long long>(G));
    std::printf(".\nThe rest (embeddings, norms, biases) stays float32. A decoding step reads every weight once per\n"
                "token: where it is bound by memory (docs/PERFORMANCE.md), at G = %lld it reads %.0f%% of the\n"
                "bytes it read in float32. (This engine keeps each int8 weight's numbers q * s in float32 beside it,\n"
                "Linear::weight, for the study tools: in its own memory an int8 model is larger, not smaller.)\n",
                static_cast<long long>(kAccuracyGroup), 100.0 * (1.0 + 4.0 / static_cast<double>(kAccuracyGroup)) / 4.0);
}

}  // namespace

void lesson_quantization() {
    heading("quantization: int8 weights in groups (Q8_0), their error and what it costs");
    std::printf("Q8_0 (llama2.c's runq.c, ggml's Q8_0; engine/quant/q8_0.h) keeps a weight matrix in groups of G\n"
                "numbers along its input axis, each group as int8 with one float32 scale:\n"
                "    s = max|w| / 127,   q = round(w / s)  in -127..127,   read back as q * s\n"
                "so rounding moves a number by at most s / 2 = max|w| / 254.\n\n");
    const std::vector<float> w = {2.3f, -63.5f, 17.8f, 0.2f, -9.75f, 40.1f, 5.25f, -0.6f};
    const std::vector<float> x = {1.04f, 0.33f, -2.0f, 0.5f, 12.7f, -1.0f, 4.26f, -3.3f};
    one_group(w);
    one_dot_product(w, x);
    logits_error();
    accuracy();
    bytes();
}

}  // namespace tinyformer::cli
