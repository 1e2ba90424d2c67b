// Greedy tokens compared between two computations of one model's logits: the
// KV cache and recompute, a padded batch and one row alone, the engine and
// PyTorch. Their logits are not the same floats (other shapes, other BLAS
// calls, another library: other summation orders), only within a bound of
// each other, so their argmax may differ where two logits are that close.
//
// The rule: if each logit of computation B is within `bound` of A's, and A's
// largest logit leads its second largest by more than 2 * bound, B's argmax
// is A's (the leader can lose at most `bound`, the runner-up gain at most
// `bound`). Greedy feeds each choice back, so a step is decided only when
// every step before it was: the decided steps are the leading steps whose
// margin is above 2 * bound. Over them the tokens must be equal; after the
// first near tie the two may part, and only the decided prefix is compared.
// A test that wants the whole output equal checks that every step was decided.
//
// The margin is read from A's recorded logits (GenerationOptions::record_logits).
#pragma once

#include "engine/random.h"
#include "models/decoding.h"
#include "models/text.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace test_helpers {

// |a - b| <= absolute + relative |b| for every logit (relative is taken of the
// leading logit, the largest magnitude that matters to the margin).
struct LogitBound {
    double absolute = 0, relative = 0;
    double at(double logit) const { return absolute + relative * std::fabs(logit); }
};

// FORMAT.md's agreement of the engine with PyTorch: |a - b| <= 1e-4 + 1e-4 |b|.
inline constexpr LogitBound kPytorchAgreement{1e-4, 1e-4};

// How greedy's choices of one input row stand against the bound.
struct Decided {
    size_t steps = 0;     // the steps of the row (its tokens, and the <eos> step when it ended there)
    size_t decided = 0;   // the leading steps whose margin exceeds 2 * bound
    double smallest_margin = std::numeric_limits<double>::infinity();  // the decided steps' and the first near tie's
    bool all() const { return decided == steps; }
};

// The largest of n logits minus the second largest (+inf for one logit).
inline double top_two_gap(const float* row, int64_t n) {
    double first = -std::numeric_limits<double>::infinity(), second = first;
    for (int64_t i = 0; i < n; ++i) {
        const double x = row[i];
        if (x > first) {
            second = first;
            first = x;
        } else if (x > second) {
            second = x;
        }
    }
    return first - second;
}

// Row `row` of a greedy decoding made with record_logits. Its steps are the
// recorded ones in which the row still took part (decode_rows writes finished
// rows as 0): one per token, and one more when it chose <eos>.
inline Decided decided_steps(const tinyformer::Generation& greedy, size_t row, LogitBound bound) {
    REQUIRE_MESSAGE(!greedy.step_logits.empty(), "the decoding must record its logits (record_logits)");
    Decided result;
    const size_t tokens = greedy.tokens.at(row).size();
    bool deciding = true;
    for (size_t step = 0; step < greedy.step_logits.size() && step <= tokens; ++step) {
        const tinyformer::Tensor& logits = greedy.step_logits[step];  // [B, V]
        const int64_t V = logits.dim(1);
        const float* values = logits.data() + static_cast<int64_t>(row) * V;
        if (step == tokens && std::all_of(values, values + V, [](float x) { return x == 0.0f; })) break;  // ended before
        ++result.steps;
        if (!deciding) continue;
        const double leader = *std::max_element(values, values + V);
        const double margin = top_two_gap(values, V);
        result.smallest_margin = std::min(result.smallest_margin, margin);
        if (margin > 2 * bound.at(leader))
            ++result.decided;
        else
            deciding = false;
    }
    return result;
}

// The largest |a - b| between the recorded logits of row_a of `a` and row_b of
// `b` over their first `steps` steps (the steps both took with the same tokens).
inline double largest_logit_difference(const tinyformer::Generation& a, size_t row_a, const tinyformer::Generation& b,
                                       size_t row_b, size_t steps) {
    REQUIRE(a.step_logits.size() >= steps);
    REQUIRE(b.step_logits.size() >= steps);
    double worst = 0;
    for (size_t step = 0; step < steps; ++step) {
        const int64_t V = a.step_logits[step].dim(1);
        REQUIRE(b.step_logits[step].dim(1) == V);
        const float* x = a.step_logits[step].data() + static_cast<int64_t>(row_a) * V;
        const float* y = b.step_logits[step].data() + static_cast<int64_t>(row_b) * V;
        for (int64_t i = 0; i < V; ++i) worst = std::max(worst, static_cast<double>(std::fabs(x[i] - y[i])));
    }
    return worst;
}

// Another computation's greedy tokens for input row `row` against these
// (recorded) ones: equal over every decided step, and in full when every step
// was decided. Returns the row's Decided, for the caller's count of near ties.
inline Decided check_same_greedy_tokens(const tinyformer::Generation& ours, size_t row,
                                        const std::vector<int64_t>& theirs, LogitBound bound) {
    const Decided decided = decided_steps(ours, row, bound);
    const std::vector<int64_t>& mine = ours.tokens.at(row);
    CAPTURE(row);
    CAPTURE(decided.decided);
    CAPTURE(decided.steps);
    if (decided.all()) {
        CHECK(theirs == mine);
    } else {
        // Tokens 0..decided-1 were chosen at decided steps (step t chooses token t).
        const size_t n = std::min(decided.decided, mine.size());
        CHECK(theirs.size() >= n);
        CHECK(std::equal(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(n), theirs.begin(),
                         theirs.begin() + static_cast<std::ptrdiff_t>(std::min(n, theirs.size()))));
    }
    return decided;
}

// The same against another computation's OUTPUT TEXT (PyTorch's greedy.tsv):
// in full when every step was decided, else the decided tokens' text must
// begin it. `decode` is the model's decode_output.
inline Decided check_same_greedy_text(const tinyformer::Generation& ours, size_t row, const std::string& theirs,
                                      LogitBound bound,
                                      const std::function<std::string(const std::vector<int64_t>&)>& decode) {
    const Decided decided = decided_steps(ours, row, bound);
    const std::vector<int64_t>& mine = ours.tokens.at(row);
    CAPTURE(row);
    CAPTURE(decided.decided);
    CAPTURE(decided.steps);
    if (decided.all()) {
        CHECK(decode(mine) == theirs);
    } else {
        const size_t n = std::min(decided.decided, mine.size());
        const std::string prefix = decode({mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(n)});
        CHECK(theirs.rfind(prefix, 0) == 0);
    }
    return decided;
}

// Sampling (models/decoding.h steps 1-7) compared the same way. Logits within
// `bound` of ours move each probability, and each ratio of two, by a factor
// within exp(+-2 bound / T), so each running sum of p or q, and the edges of
// the drawn token's interval [S_before, S_before + q), by at most
// exp(2 bound / T) - 1 (the slack). A draw is decided when
//   - no other token's logit is within 2 bound of the drawn one's (no token
//     can swap places with it in the order of step 3);
//   - with top-k, the k-th and (k+1)-th logits are more than 2 bound apart
//     (the same tokens kept);
//   - with top-p, no running sum of the renormalised p' lies within the slack
//     of p (the same prefix kept);
//   - its uniform u lies further than the slack from both edges.
// The uniforms are replayed: input row b's k-th token draws Random(seed + b)'s
// k-th uniform (row_seed = seed + b).
inline Decided check_same_sampled_tokens(const tinyformer::Generation& ours, size_t row, uint64_t row_seed,
                                         const tinyformer::Sampling& sampling, const std::vector<int64_t>& theirs,
                                         LogitBound bound) {
    REQUIRE_MESSAGE(!ours.step_logits.empty(), "the decoding must record its logits (record_logits)");
    Decided result;
    const std::vector<int64_t>& mine = ours.tokens.at(row);
    tinyformer::Random random(row_seed);
    bool deciding = true;
    for (size_t step = 0; step < ours.step_logits.size() && step <= mine.size(); ++step) {
        const tinyformer::Tensor& logits = ours.step_logits[step];
        const int64_t V = logits.dim(1);
        const float* values = logits.data() + static_cast<int64_t>(row) * V;
        if (step == mine.size() && std::all_of(values, values + V, [](float x) { return x == 0.0f; })) break;
        ++result.steps;
        const double u = random.uniform();
        if (!deciding) continue;
        const tinyformer::SamplingDistribution d = tinyformer::sampling_distribution(values, V, sampling);
        double before = 0;
        size_t drawn = 0;
        while (drawn + 1 < d.q.size() && !(u < before + d.q[drawn])) before += d.q[drawn++];
        const int64_t token = d.tokens[drawn];
        // The replay must reproduce our own draw (the same uniform on the same
        // logits): otherwise it would judge the wrong tokens.
        if (step < mine.size()) CHECK(token == mine[step]);
        const double leader = *std::max_element(values, values + V);
        const double slack = std::expm1(2 * bound.at(leader) / sampling.temperature) + 1e-12;
        double nearest_logit = std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < V; ++i)
            if (i != token) nearest_logit = std::min(nearest_logit, std::fabs(static_cast<double>(values[i]) - values[token]));
        const double margin = std::min(u - before, before + d.q[drawn] - u);
        result.smallest_margin = std::min(result.smallest_margin, margin);
        bool same_kept = true;
        std::vector<double> sorted(values, values + V);
        std::sort(sorted.begin(), sorted.end(), std::greater<double>());
        const int64_t k = sampling.top_k == 0 ? V : std::min<int64_t>(sampling.top_k, V);
        if (k < V) same_kept = sorted[static_cast<size_t>(k - 1)] - sorted[static_cast<size_t>(k)] > 2 * bound.at(leader);
        if (sampling.top_p < 1.0) {
            // p' over the top-k tokens, in the order of step 3 (the sorted logits).
            double z = 0;
            for (int64_t i = 0; i < k; ++i) z += std::exp((sorted[static_cast<size_t>(i)] - leader) / sampling.temperature);
            double running = 0;
            for (int64_t i = 0; i < k; ++i) {
                running += std::exp((sorted[static_cast<size_t>(i)] - leader) / sampling.temperature) / z;
                if (std::fabs(running - sampling.top_p) <= slack) same_kept = false;
            }
        }
        if (margin > slack && nearest_logit > 2 * bound.at(leader) && same_kept)
            ++result.decided;
        else
            deciding = false;
    }
    CAPTURE(row);
    CAPTURE(result.decided);
    CAPTURE(result.steps);
    if (result.all()) {
        CHECK(theirs == mine);
    } else {
        const size_t n = std::min(result.decided, mine.size());
        CHECK(theirs.size() >= n);
        CHECK(std::equal(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(n), theirs.begin(),
                         theirs.begin() + static_cast<std::ptrdiff_t>(std::min(n, theirs.size()))));
    }
    return result;
}

// The engine's greedy outputs for `texts` (the model's tokenizer and framing,
// as generate_text) against PyTorch's (`expected`, e.g. a committed
// greedy.tsv), row by row under FORMAT's agreement bound: in full where every
// step is decided, else the decided tokens' text must begin PyTorch's.
struct AgainstPytorch {
    std::vector<std::string> outputs;  // the engine's, as text
    int64_t same = 0;                  // rows whose whole output is PyTorch's
    int64_t decided = 0;               // rows whose every step is decided
    std::vector<bool> row_decided;
};

inline AgainstPytorch greedy_against_pytorch(
    const tinyformer::Model& model, const std::vector<std::string>& texts, const std::vector<std::string>& expected,
    int64_t max_new_tokens = tinyformer::GenerationOptions::kModelDefault) {
    REQUIRE(texts.size() == expected.size());
    const tinyformer::ModelText text(model);
    std::vector<std::vector<int64_t>> inputs;
    for (const std::string& each : texts) inputs.push_back(tinyformer::model_input(model, text.encode_input(each)));
    tinyformer::GenerationOptions options;
    options.record_logits = true;
    options.max_new_tokens = max_new_tokens;
    const tinyformer::Generation greedy = tinyformer::greedy_decode(model, inputs, options);
    AgainstPytorch result;
    const auto decode = [&](const std::vector<int64_t>& ids) { return text.decode_output(ids); };
    for (size_t i = 0; i < texts.size(); ++i) {
        CAPTURE(texts[i]);
        const Decided decided = check_same_greedy_text(greedy, i, expected[i], kPytorchAgreement, decode);
        result.outputs.push_back(decode(greedy.tokens[i]));
        result.same += result.outputs.back() == expected[i];
        result.decided += decided.all();
        result.row_decided.push_back(decided.all());
    }
    return result;
}

}  // namespace test_helpers
