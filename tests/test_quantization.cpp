// A model quantized in memory (Model::load_q8_0, models/transformer.h): what it
// quantizes, counted by hand; the same model as a file whose weights are stored
// as Q8_0; its logits within the bound the rounding implies (q8_error_bound,
// engine/quant/q8_0.h, checked first on a product worked by hand). The lesson
// that shows them is checked in tests/test_lesson.cpp.
#include "engine/matmul.h"
#include "engine/quant/q8_0.h"
#include "models/study/teacher_forcing.h"
#include "models/study/trace.h"
#include "models/text.h"
#include "models/transformer.h"
#include "tests/helpers.h"
#include "tests/safetensors_edit.h"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace tinyformer;
using test_helpers::error_message;

namespace {

const std::string kReverse = "data/models/reverse.safetensors";
const std::string kCausal = "data/models/reverse-causal.safetensors";

// The teacher-forced pass on `text` and the float32 model's greedy output, traced.
struct Pass {
    Tensor logits, stream;  // the logits [1, n, V] and the stream the head reads [1, n, D]
};
Pass pass(const Model& model, const Model& float32, const std::string& text) {
    const std::vector<int64_t> input = model_input(float32, ModelText(float32).encode_input(text));
    const std::vector<int64_t> target = target_or_greedy(float32, input, std::nullopt);
    Trace trace(Trace::Detail::Everything);
    const Tensor logits = teacher_forced_pass(model, input, target, &trace).logits;
    return {logits, trace.tensor(model.encoder_decoder ? "decoder.norm.output" : "layers.norm.output")};
}

}  // namespace

TEST_CASE("quantization: q8_error_bound on the product worked by hand (the lesson's part 2)") {
    // w = 2.3 -63.5 17.8 0.2 -9.75 40.1 5.25 -0.6: s_w = 63.5 / 127 = 0.5, q_w = 5 -127 36 0 -20 80 11 -1.
    // x = 1.04 0.33 -2 0.5 12.7 -1 4.26 -3.3:     s_x = 12.7 / 127 = 0.1, q_x = 10 3 -20 5 127 -10 43 -33.
    // int32 sum: 50 - 381 - 720 + 0 - 2540 - 800 + 473 + 33 = -3885; scaled -3885 * 0.5 * 0.1 = -194.25.
    // w . x = 2.392 - 20.955 - 35.6 + 0.1 - 123.825 - 40.1 + 22.365 + 1.98 = -193.643: error 0.607.
    // Bound: s_w/2 sum|x| + s_x/2 sum|w| + G s_w/2 s_x/2 = 0.25 * 25.13 + 0.05 * 139.5 + 8 * 0.25 * 0.05
    //   = 6.2825 + 6.975 + 0.1 = 13.3575; q8_error_bound adds h = 1/2 + 2^-16 instead of 1/2
    //   (+ 2^-16 (0.5 * 25.13 + 0.1 * 139.5) = 4.0e-4) and float32's rounding
    //   (13 * 2^-24 * ~260 = 2.0e-4): under 13.3575 + 1e-3.
    const std::vector<float> w = {2.3f, -63.5f, 17.8f, 0.2f, -9.75f, 40.1f, 5.25f, -0.6f};
    const std::vector<float> x = {1.04f, 0.33f, -2.0f, 0.5f, 12.7f, -1.0f, 4.26f, -3.3f};
    const double bound = q8_error_bound(w.data(), x.data(), 8, 8);
    CHECK(bound >= 13.3575);
    CHECK(bound <= 13.3575 + 1e-3);
    const Q8Matrix weight = quantize_q8_0(ConstMatrixView{w.data(), 1, 8, 8}, 8);
    const float int8 = linear_q8(Tensor({1, 8}, x), weight.view(), nullptr).data()[0];
    CHECK(int8 == doctest::Approx(-194.25).epsilon(1e-6));
    CHECK(std::fabs(int8 - -193.643) == doctest::Approx(0.607).epsilon(1e-4));
    CHECK(std::fabs(int8 - -193.643) <= bound);
    // Two groups of 4: each group its own scales. The bias counts in float32's rounding only.
    CHECK(q8_error_bound(w.data(), x.data(), 8, 4) < bound);  // the groups' scales are smaller
    CHECK(q8_error_bound(w.data(), x.data(), 8, 8, 1000.0f) > bound);
    CHECK(q8_error_bound(w.data(), x.data(), 8, 8, 1000.0f) < bound + 1e-3);
    CHECK(error_message([&] { q8_error_bound(w.data(), x.data(), 8, 3); }) ==
          "q8_error_bound: group size 3 does not divide 8");
}

TEST_CASE("quantization: Model::load_q8_0 quantizes every weight take_weight reads, counted by hand") {
    // reverse: D = 64, F = 256, V = 30, 2 encoder and 2 decoder layers, sinusoidal positions (no table).
    // Quantized (take_weight): an encoder layer in_proj 192*64 + out_proj 64*64 + linear1 256*64 +
    // linear2 64*256 = 12288 + 4096 + 16384 + 16384 = 49152; a decoder layer adds the cross-attention's
    // 12288 + 4096: 65536. 2 * 49152 + 2 * 65536 + the generator 30 * 64 = 98304 + 131072 + 1920 = 231296.
    // Float32: the two embeddings 2 * 30 * 64 = 3840; an encoder layer's biases 192 + 64 + 256 + 64 = 576
    // and norms 2 * 128 = 256: 832, two: 1664; a decoder layer's biases 576 + 192 + 64 = 832 and norms
    // 3 * 128 = 384: 1216, two: 2432; encoder and decoder norms 256; generator bias 30:
    // 3840 + 1664 + 2432 + 256 + 30 = 8222. All: 239518.
    const Model float32 = Model::load(kReverse);
    CHECK(float32.numbers.float32 == 239518);
    CHECK(float32.numbers.int8 == 0);
    CHECK(float32.numbers.scales == 0);
    CHECK(float32.numbers.bytes() == 4 * 239518);
    for (int64_t G : {8, 32, 64}) {
        CAPTURE(G);
        const Model int8 = Model::load_q8_0(kReverse, G);
        CHECK(int8.numbers.float32 == 8222);
        CHECK(int8.numbers.int8 == 231296);
        CHECK(int8.numbers.scales == 231296 / G);  // 28912, 7228, 3614
        CHECK(int8.numbers.bytes() == 4 * 8222 + 231296 + 4 * (231296 / G));
    }
    // reverse-causal: decoder-only, 4 layers of 49152, lm_head 31 * 64 = 1984: 198592 quantized.
    // Float32: embed 31 * 64 = 1984, learned positions 40 * 64 = 2560, 4 * 832 = 3328, the final
    // norm 128, lm_head's bias 31: 8031.
    const Model causal = Model::load_q8_0(kCausal, 32);
    CHECK(causal.numbers.int8 == 198592);
    CHECK(causal.numbers.scales == 198592 / 32);
    CHECK(causal.numbers.float32 == 8031);
}

TEST_CASE("quantization: Model::load_q8_0 computes what a file with those weights stored as Q8_0 computes") {
    // The file: every weight take_weight reads replaced by its Q8_0 form (I8 + .scale), written
    // beside; the same quantize_q8_0, so the same int8 numbers and scales, and the same logits.
    test_helpers::TempDirectory dir;
    const int64_t G = 16;
    const std::string stored = test_helpers::edited(dir, "reverse-q8.safetensors", kReverse, [&](test_helpers::Contents& c) {
        std::vector<std::string> names;
        for (const TensorToWrite& t : c.tensors)
            if (t.name == "generator.weight" || t.name.ends_with("in_proj_weight") || t.name.ends_with("out_proj.weight") ||
                t.name.ends_with("linear1.weight") || t.name.ends_with("linear2.weight"))
                names.push_back(t.name);
        CHECK(names.size() == 2 * 4 + 2 * 6 + 1);  // per encoder layer 4, per decoder layer 6, the generator
        for (const std::string& name : names) test_helpers::quantize_tensor(c, name, G);
    });
    const Model from_file = Model::load(stored);
    const Model in_memory = Model::load_q8_0(kReverse, G);
    const Model float32 = Model::load(kReverse);
    CHECK(from_file.numbers.int8 == in_memory.numbers.int8);
    CHECK(from_file.numbers.scales == in_memory.numbers.scales);
    CHECK(from_file.numbers.float32 == in_memory.numbers.float32);
    for (const char* text : {"hello", "quantization"}) {
        CAPTURE(text);
        const Tensor a = pass(from_file, float32, text).logits, b = pass(in_memory, float32, text).logits;
        CHECK(a.values() == b.values());
        CHECK(a.values() != pass(float32, float32, text).logits.values());  // the int8 path did run
    }
    // A weight stored as Q8_0 already is read as stored, in its own groups: load_q8_0 of the
    // stored file at G = 32 equals it (the counts: the scales of G = 16, not 32).
    const Model again = Model::load_q8_0(stored, 32);
    CHECK(again.numbers.scales == 231296 / 16);
    CHECK(pass(again, float32, "hello").logits.values() == pass(from_file, float32, "hello").logits.values());
}

TEST_CASE("quantization: the int8 model's logits are within the derived bound of float32's head on the same stream") {
    // The head is the last product: logits = h W^T + b, h the stream after the final norm. On the
    // int8 model's own h, its logits must be within q8_error_bound (engine/quant/q8_0.h) of the
    // float32 head's (the original float32 W from the float32 model, not the dequantized copy)
    // on that h, logit by logit. (Earlier layers' rounding changes h itself; that is no product's
    // bound, and the lesson measures it.)
    for (const std::string& path : {kReverse, kCausal}) {
        const Model float32 = Model::load(path);
        const HeadParts head = float32.encoder_decoder ? float32.encoder_decoder->head_parts()
                                                       : float32.single_stack->head_parts();
        const int64_t V = head.weight.dim(0), D = head.weight.dim(1);
        for (int64_t G : {8, 32, 64}) {
            const Model int8 = Model::load_q8_0(path, G);
            double largest = 0, largest_ratio = 0;
            for (const char* text : {"hello", "attention", "quantization"}) {
                CAPTURE(path);
                CAPTURE(G);
                CAPTURE(text);
                const Pass quantized = pass(int8, float32, text);
                const Tensor reference = linear(quantized.stream, head.weight, head.bias);
                const float* h = quantized.stream.data();
                for (int64_t t = 0; t < quantized.logits.dim(1); ++t)
                    for (int64_t v = 0; v < V; ++v) {
                        const double error = std::fabs(static_cast<double>(quantized.logits.at({0, t, v})) -
                                                       reference.at({0, t, v}));
                        const double bound = q8_error_bound(head.weight.data() + v * D, h + t * D, D, G, head.bias.data()[v]);
                        CHECK(error <= bound);
                        largest = std::max(largest, error);
                        largest_ratio = std::max(largest_ratio, error / bound);
                    }
            }
            CHECK(largest > 0);             // the int8 head did run
            CHECK(largest_ratio > 0.01);    // and the bound is not vacuous: errors reach a percent of it
        }
    }
}

TEST_CASE("quantization: a group size that does not divide a weight's input axis is refused, naming the weight") {
    // The first weight read is encoder layer 0's in_proj [192, 64]: 48 does not divide 64.
    CHECK(error_message([] { Model::load_q8_0(kReverse, 48); }) ==
          kReverse + ": tensor 'transformer.encoder.layers.0.self_attn.in_proj_weight' [192,64] cannot be quantized "
                     "in groups of 48: the group size must divide its input axis (64)");
    // 128 divides linear2's 256 but not the 64 of the others.
    CHECK(error_message([] { Model::load_q8_0(kReverse, 128); }).find("in groups of 128") != std::string::npos);
    CHECK(error_message([] { Model::load_q8_0(kReverse, 0); }) ==
          "Checkpoint::quantize_weights: the group size must be >= 1, got 0");
}
