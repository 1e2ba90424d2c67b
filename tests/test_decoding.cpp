// Tests for models/decoding.*: the KV cache against full recompute, beam
// width 1 against greedy, a padded batch against one input at a time. The
// models are the PyTorch reference checkpoints of data/reference/ (random
// weights: they generate long, varied sequences, which is what these
// properties need); tests/test_toy_models.cpp checks the trained models.

#include "engine/memory/float_buffer.h"
#include "models/decoding.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace tinyformer;

namespace {

const char* kCases[] = {"ed_post_relu_sin", "ed_pre_gelu_learned_pad", "do_prefix_pre_gelu_sin",
                        "do_pre_gelu_learned_pad", "do_post_relu_sin_h1"};

Model load_case(const std::string& name) { return Model::load("data/reference/" + name + ".model.safetensors"); }

// Inputs of different lengths: sources for encoder-decoder models, prompts
// starting with <bos> for decoder-only ones. Ordinary ids start at 3.
std::vector<std::vector<int64_t>> inputs_for(const Model& model) {
    const int64_t vocab = model.encoder_decoder ? model.config.src_vocab_size : model.config.vocab_size;
    std::vector<std::vector<int64_t>> inputs = {{3, 4, 5, 6}, {7}, {8, 9, 3}, {5, 5, 4, 3, 9, 8}};
    for (auto& input : inputs) {
        for (int64_t& id : input) id = 3 + (id - 3) % (vocab - 3);
        if (!model.encoder_decoder) input.insert(input.begin(), model.config.bos_id);
    }
    return inputs;
}

}  // namespace

TEST_CASE("Greedy decoding with the KV cache gives the recompute path's tokens and logits at every step") {
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        const auto inputs = inputs_for(model);
        GenerationOptions cached, recomputed;
        cached.record_logits = recomputed.record_logits = true;
        recomputed.mode = StepMode::Recompute;
        const Generation a = greedy_decode(model, inputs, cached);
        const Generation b = greedy_decode(model, inputs, recomputed);
        CHECK(a.tokens == b.tokens);
        REQUIRE(a.step_logits.size() == b.step_logits.size());
        double worst = 0;
        for (size_t step = 0; step < a.step_logits.size(); ++step)
            for (int64_t i = 0; i < a.step_logits[step].numel(); ++i)
                worst = std::max(worst, static_cast<double>(std::fabs(a.step_logits[step].data()[i] -
                                                                      b.step_logits[step].data()[i])));
        CHECK(worst <= 1e-5);
        size_t generated = 0;
        for (const auto& tokens : a.tokens) generated += tokens.size();
        CHECK(generated > 0);  // the comparison covered real steps
        MESSAGE(name, ": ", a.step_logits.size(), " steps, ", generated, " tokens, max |cached - recomputed| = ", worst);
    }
}

// Skipped (and counted so by doctest; tests/main.cpp says why) when the pool is
// off: sanitizer builds keep none, nor does TINYFORMER_POOL=off.
TEST_CASE("A decoding step takes every tensor's memory from the pool (after the first step)" *
          doctest::skip(!float_buffer_pool_enabled())) {
    // The decode benchmark counts the heap allocations of a step (0); this is
    // the part a test can see: no step after the first needs a buffer the
    // pool does not have. The first decoding fills the pool with the sizes a
    // step makes (a sequence's first steps meet new sizes: the attention's
    // scratch grows with the cache); the second is counted.
    int compared = 0;
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        const std::vector<std::vector<int64_t>> input = {inputs_for(model)[0]};
        GenerationOptions options;
        options.max_new_tokens = 12;
        greedy_decode(model, input, options);
        std::vector<uint64_t> allocated;
        allocated.reserve(16);
        options.after_step = [&allocated] { allocated.push_back(float_buffer_pool_stats().allocated); };
        const Generation generation = greedy_decode(model, input, options);
        MESSAGE(name, ": ", allocated.size(), " steps counted, ", generation.tokens[0].size(), " tokens");
        if (allocated.size() < 2) continue;  // it ended after one step: nothing to compare
        ++compared;
        CHECK(allocated.back() == allocated.front());
    }
    CHECK(compared >= 3);  // the property was seen, on both architectures' models
}

TEST_CASE("Beam search of width 1 is greedy decoding") {
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        for (const auto& input : inputs_for(model)) {
            const Generation greedy = greedy_decode(model, {input});
            const Generation beam = beam_search(model, input, 1);
            CHECK(beam.tokens == greedy.tokens);
            CHECK(beam.log_probs[0] == doctest::Approx(greedy.log_probs[0]).epsilon(1e-9));
        }
    }
}

TEST_CASE("Beam search never finds a lower log-probability than greedy at equal length normalisation 0") {
    // With length_penalty 0 the score is the plain summed log-probability; a
    // wider beam keeps the greedy path among its candidates, so its best ended
    // hypothesis scores at least as well whenever greedy ended with <eos>.
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        for (const auto& input : inputs_for(model)) {
            const Generation greedy = greedy_decode(model, {input});
            const Generation beam = beam_search(model, input, 4, /*length_penalty=*/0.0);
            const bool greedy_ended = static_cast<int64_t>(greedy.tokens[0].size() + input.size()) + 1 < model.config.max_len;
            if (greedy_ended) CHECK(beam.log_probs[0] >= greedy.log_probs[0] - 1e-9);
        }
    }
}

TEST_CASE("A padded batch of different lengths decodes exactly as one input at a time") {
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        const auto inputs = inputs_for(model);
        for (StepMode mode : {StepMode::KvCache, StepMode::Recompute}) {
            GenerationOptions options;
            options.mode = mode;
            const Generation batch = greedy_decode(model, inputs, options);
            for (size_t i = 0; i < inputs.size(); ++i) {
                const Generation alone = greedy_decode(model, {inputs[i]}, options);
                CHECK(batch.tokens[i] == alone.tokens[0]);
                CHECK(batch.log_probs[i] == doctest::Approx(alone.log_probs[0]).epsilon(1e-6));
            }
        }
    }
}

TEST_CASE("Decoding stops at max_len positions and after max_new_tokens") {
    const Model model = load_case("ed_post_relu_sin");
    GenerationOptions options;
    options.max_new_tokens = 2;
    for (const auto& tokens : greedy_decode(model, inputs_for(model), options).tokens) CHECK(tokens.size() <= 2);
    for (const auto& tokens : greedy_decode(model, inputs_for(model)).tokens)
        CHECK(static_cast<int64_t>(tokens.size()) <= model.config.max_len - 1);  // <bos> takes position 0
    const Model encoder_only = load_case("eo_post_relu_learned_h1");
    CHECK_ERROR_CONTAINS(greedy_decode(encoder_only, {{3, 4}}), "cannot generate");
    CHECK_ERROR_CONTAINS(beam_search(model, {3, 4}, 0), "width must be >= 1, got 0");
}
