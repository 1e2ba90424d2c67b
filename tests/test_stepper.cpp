// Tests for models/stepper.*: the KV cache against full recompute, a step
// allocating nothing once the pool is warm, a padded batch against one input
// at a time. Driven through greedy decoding (models/decoding.h), whose
// argmax makes every step's logits visible; models and inputs:
// tests/decoding_cases.h.

#include "engine/memory/float_buffer.h"
#include "models/stepper.h"
#include "tests/decoding_cases.h"
#include "tests/greedy_margin.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace tinyformer;
using namespace tinyformer::decoding_cases;

namespace {

// How far two steppings' logits may be apart (the KV cache and recompute, a
// batch and a row alone): each is a sum of products of D <= 64 or F terms of
// magnitude ~1 through a few layers, float rounding of ~1e-7 per term; the
// largest measured is ~1e-6 (the MESSAGEs below). 1e-5 keeps a factor 10.
constexpr test_helpers::LogitBound kCachedAgainstRecompute{1e-5, 0};

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
        // Not the same floats: a step's one-row products against the whole sequence's
        // gemm (other shapes, other summation orders). Equal tokens follow from the
        // logits' bound wherever recompute's margin is above twice it (greedy_margin.h);
        // every step of these models is (checked: all() below).
        double margin = std::numeric_limits<double>::infinity();
        for (size_t row = 0; row < inputs.size(); ++row) {
            const test_helpers::Decided decided =
                test_helpers::check_same_greedy_tokens(b, row, a.tokens[row], kCachedAgainstRecompute);
            CHECK(decided.all());
            margin = std::min(margin, decided.smallest_margin);
        }
        REQUIRE(a.step_logits.size() == b.step_logits.size());
        double worst = 0;
        for (size_t step = 0; step < a.step_logits.size(); ++step)
            for (int64_t i = 0; i < a.step_logits[step].numel(); ++i)
                worst = std::max(worst, static_cast<double>(std::fabs(a.step_logits[step].data()[i] -
                                                                      b.step_logits[step].data()[i])));
        CHECK(worst <= kCachedAgainstRecompute.absolute);
        size_t generated = 0;
        for (const auto& tokens : a.tokens) generated += tokens.size();
        CHECK(generated > 0);  // the comparison covered real steps
        MESSAGE(name, ": ", a.step_logits.size(), " steps, ", generated, " tokens, max |cached - recomputed| = ", worst,
                ", smallest top-2 margin ", margin);
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

TEST_CASE("A padded batch of different lengths decodes exactly as one input at a time") {
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        const auto inputs = inputs_for(model);
        for (StepMode mode : {StepMode::KvCache, StepMode::Recompute}) {
            GenerationOptions options;
            options.mode = mode;
            options.record_logits = true;
            const Generation batch = greedy_decode(model, inputs, options);
            for (size_t i = 0; i < inputs.size(); ++i) {
                // B rows against one (padded rows, other product shapes): the same tokens
                // by the margin rule of greedy_margin.h, and every step is decided.
                const Generation alone = greedy_decode(model, {inputs[i]}, options);
                const test_helpers::Decided decided =
                    test_helpers::check_same_greedy_tokens(alone, 0, batch.tokens[i], kCachedAgainstRecompute);
                CHECK(decided.all());
                CHECK(test_helpers::largest_logit_difference(batch, i, alone, 0, decided.steps) <=
                      kCachedAgainstRecompute.absolute);
                // Each step's log p moves by at most 2 * bound (its logit and log-sum-exp by one each).
                CHECK(std::fabs(batch.log_probs[i] - alone.log_probs[0]) <=
                      2 * kCachedAgainstRecompute.absolute * static_cast<double>(decided.steps));
            }
        }
    }
}
