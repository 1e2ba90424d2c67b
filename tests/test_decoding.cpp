// Tests for models/decoding.*, the searches: beam width 1 against greedy,
// beam search's answer and its hypotheses' log-probabilities, where decoding
// stops. Models and inputs: tests/decoding_cases.h.

#include "models/decoding.h"
#include "models/study/teacher_forcing.h"
#include "tests/decoding_cases.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace tinyformer;
using namespace tinyformer::decoding_cases;

TEST_CASE("Beam search of width 1 is greedy decoding") {
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        for (const auto& input : inputs_for(model)) {
            const Generation greedy = greedy_decode(model, {input});
            const Generation beam = beam_search(model, input, 1);
            // Exact by construction: width 1 steps one row, as greedy does, through the same calls
            // on the same numbers, and the best log p is the largest logit (ties: the smaller id).
            CHECK(beam.tokens == greedy.tokens);
            CHECK(beam.log_probs[0] == doctest::Approx(greedy.log_probs[0]).epsilon(1e-9));
        }
    }
}

TEST_CASE("Beam search answers with its best-scoring ended hypothesis, and each one's log-probability is the model's") {
    // Not "at least greedy's log p": the greedy path can fall out of a wider
    // beam (k other continuations outscore it at some step) and the search
    // stops once k hypotheses have ended, so a correct beam search may end
    // below greedy. What holds: the answer is the best of the hypotheses it
    // ended, ranked by their scores (with length_penalty 0, the plain summed
    // log p), and each hypothesis's log p is what a teacher-forced pass of
    // the model gives its tokens (and <eos>, when it ended there).
    double worst = 0;
    size_t checked = 0;
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        for (const auto& input : inputs_for(model)) {
            const Generation beam = beam_search(model, input, 4, /*length_penalty=*/0.0);
            REQUIRE(!beam.hypotheses.empty());
            CHECK(beam.tokens[0] == beam.hypotheses[0].tokens);
            CHECK(beam.log_probs[0] == beam.hypotheses[0].log_prob);
            // Positions a hypothesis may fill: it ended at <eos> iff it holds fewer.
            const int64_t held = model.encoder_decoder ? 1 : static_cast<int64_t>(input.size());
            const size_t room = static_cast<size_t>(std::min<int64_t>(model.config.max_len - held,
                                                                      default_max_new_tokens(model)));
            for (size_t h = 0; h < beam.hypotheses.size(); ++h) {
                const Hypothesis& hypothesis = beam.hypotheses[h];
                CAPTURE(h);
                CHECK(hypothesis.score == hypothesis.log_prob);  // length_penalty 0
                if (h > 0) CHECK(beam.hypotheses[h - 1].score >= hypothesis.score);
                const TeacherForced pass = teacher_forced_pass(model, input, hypothesis.tokens);
                const int64_t V = pass.logits.dim(2);
                std::vector<int64_t> scored = hypothesis.tokens;
                if (hypothesis.tokens.size() < room) scored.push_back(model.config.eos_id);
                double log_prob = 0;
                for (size_t t = 0; t < scored.size(); ++t) {
                    const float* row = pass.logits.data() + (pass.first_prediction + static_cast<int64_t>(t)) * V;
                    log_prob += row[scored[t]] - log_sum_exp(row, V);
                }
                const double difference = std::fabs(log_prob - hypothesis.log_prob);
                CHECK(difference <= 1e-4 * static_cast<double>(scored.size()));
                worst = std::max(worst, difference);
                ++checked;
            }
        }
    }
    CHECK(checked > 20);  // 5 models x 4 inputs, several hypotheses each
    MESSAGE(checked, " hypotheses, max |beam log p - teacher-forced log p| = ", worst);
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
