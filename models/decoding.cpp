#include "models/decoding.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace tinyformer {

namespace {

int64_t eos_of(const Model& model) {
    if (model.config.eos_id < 0) fail("decode: the model's config has no eos_id to stop at");
    return model.config.eos_id;
}

int64_t argmax(const float* values, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (values[i] > values[best]) best = i;  // strict: the first maximum wins, as torch.argmax
    return best;
}

}  // namespace

void refuse_inputs_without_room(const Model& model, const std::vector<std::vector<int64_t>>& inputs) {
    const int64_t max_len = model.config.max_len;
    for (size_t b = 0; b < inputs.size(); ++b) {
        // The positions a row holds before its first step: the prompt, or <bos>.
        const int64_t held = model.encoder_decoder ? 1 : static_cast<int64_t>(inputs[b].size());
        if (held < max_len) continue;
        const std::string which = inputs.size() == 1 ? std::string("the input") : text_of("input ", b);
        if (model.encoder_decoder)
            fail("decode: the model's max_len is 1, so <bos> fills the target and nothing is left to generate");
        fail("decode: ", which, " (", held, " tokens) already fills max_len = ", max_len,
             " positions; nothing is left to generate");
    }
}

double log_sum_exp(const float* logits, int64_t n) {
    double max_logit = logits[0];
    for (int64_t i = 1; i < n; ++i) max_logit = std::max(max_logit, static_cast<double>(logits[i]));
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(logits[i] - max_logit);
    return max_logit + std::log(sum);
}

std::vector<double> log_softmax(const float* logits, int64_t n) {
    const double log_sum = log_sum_exp(logits, n);
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = logits[i] - log_sum;
    return out;
}

Generation greedy_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const GenerationOptions& options) {
    const int64_t eos = eos_of(model), max_len = model.config.max_len;
    refuse_inputs_without_room(model, inputs);  // before the prompts' pass
    const int64_t reserved = reserved_new_tokens(model, options.max_new_tokens);
    std::unique_ptr<Stepper> stepper = make_stepper(model, inputs, options.mode, reserved);
    Generation result;
    result.tokens.resize(inputs.size());
    for (auto& tokens : result.tokens) tokens.reserve(static_cast<size_t>(reserved));
    result.log_probs.assign(inputs.size(), 0.0);
    std::vector<int64_t> active(inputs.size());  // stepper row -> input row
    for (size_t b = 0; b < inputs.size(); ++b) active[b] = static_cast<int64_t>(b);

    std::vector<int64_t> keep, tokens;  // made once: a step allocates nothing
    while (!active.empty()) {
        const Tensor logits = stepper->next_logits();  // [rows, V]
        const int64_t V = logits.dim(1);
        if (options.record_logits) {  // by input row; finished rows stay 0
            Tensor full({static_cast<int64_t>(inputs.size()), V});
            for (size_t r = 0; r < active.size(); ++r)
                std::copy(logits.data() + static_cast<int64_t>(r) * V, logits.data() + static_cast<int64_t>(r + 1) * V,
                          full.data() + active[r] * V);
            result.step_logits.push_back(std::move(full));
        }
        keep.clear();
        tokens.clear();
        for (size_t r = 0; r < active.size(); ++r) {
            const float* row = logits.data() + static_cast<int64_t>(r) * V;
            const int64_t token = argmax(row, V);
            const size_t b = static_cast<size_t>(active[r]);
            result.log_probs[b] += row[token] - log_sum_exp(row, V);  // log_softmax(row)[token]
            if (token == eos) continue;
            result.tokens[b].push_back(token);
            const bool full_length = stepper->length(static_cast<int64_t>(r)) + 1 >= max_len;
            const bool enough = options.max_new_tokens > 0 &&
                                static_cast<int64_t>(result.tokens[b].size()) >= options.max_new_tokens;
            if (full_length || enough) continue;
            keep.push_back(static_cast<int64_t>(r));
            tokens.push_back(token);
        }
        if (keep.empty()) break;
        if (keep.size() != active.size()) {
            stepper->keep_rows(keep);
            active = pick(active, keep);
        }
        stepper->append(tokens);
        if (options.after_step) options.after_step();
    }
    return result;
}

Generation beam_search(const Model& model, const std::vector<int64_t>& input, int64_t width, double length_penalty,
                       const GenerationOptions& options) {
    if (width < 1) fail("beam_search: width must be >= 1, got ", width);
    const int64_t eos = eos_of(model), max_len = model.config.max_len;
    refuse_inputs_without_room(model, {input});  // before the prompt's pass
    std::unique_ptr<Stepper> stepper = make_stepper(model, {input}, options.mode, /*new_positions=*/0);

    struct Alive {
        std::vector<int64_t> tokens;
        double log_prob = 0.0;
    };
    auto score_of = [&](double log_prob, size_t generated) {
        return log_prob / std::pow(static_cast<double>(std::max<size_t>(generated, 1)), length_penalty);
    };
    std::vector<Alive> alive = {Alive{}};
    std::vector<Hypothesis> ended;  // finished: tokens, log p, score
    while (true) {
        const Tensor logits = stepper->next_logits();  // [alive, V]
        const int64_t V = logits.dim(1);
        struct Candidate {
            double log_prob;
            int64_t parent, token;
        };
        std::vector<Candidate> candidates;
        for (size_t i = 0; i < alive.size(); ++i) {
            const std::vector<double> log_p = log_softmax(logits.data() + static_cast<int64_t>(i) * V, V);
            for (int64_t v = 0; v < V; ++v)
                candidates.push_back({alive[i].log_prob + log_p[static_cast<size_t>(v)], static_cast<int64_t>(i), v});
        }
        // Best first; equal scores keep (parent, token) order, so width 1 is greedy.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& a, const Candidate& b) { return a.log_prob > b.log_prob; });
        std::vector<Alive> next;
        std::vector<int64_t> parents, tokens;
        for (const Candidate& c : candidates) {
            if (static_cast<int64_t>(next.size()) == width) break;
            const Alive& parent = alive[static_cast<size_t>(c.parent)];
            if (c.token == eos) {
                ended.push_back({parent.tokens, c.log_prob, score_of(c.log_prob, parent.tokens.size() + 1)});
                continue;
            }
            Alive grown{parent.tokens, c.log_prob};
            grown.tokens.push_back(c.token);
            next.push_back(std::move(grown));
            parents.push_back(c.parent);
            tokens.push_back(c.token);
        }
        if (static_cast<int64_t>(ended.size()) >= width || next.empty()) break;
        const int64_t length = stepper->length(parents[0]) + 1;  // every hypothesis grows in step
        const bool enough = options.max_new_tokens > 0 &&
                            static_cast<int64_t>(next[0].tokens.size()) >= options.max_new_tokens;
        if (length >= max_len || enough) {  // out of positions: the alive ones end here
            for (const Alive& h : next) ended.push_back({h.tokens, h.log_prob, score_of(h.log_prob, h.tokens.size())});
            break;
        }
        alive = std::move(next);
        stepper->keep_rows(parents);
        stepper->append(tokens);
        if (options.after_step) options.after_step();
    }
    const Hypothesis& best = *std::max_element(ended.begin(), ended.end(),
                                               [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    Generation result;
    result.tokens = {best.tokens};
    result.log_probs = {best.log_prob};
    result.hypotheses = ended;
    std::stable_sort(result.hypotheses.begin(), result.hypotheses.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    return result;
}

}  // namespace tinyformer
