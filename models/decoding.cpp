#include "models/decoding.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace tinyformer {

namespace {

// The token that ends a row, or -1 (no token is -1): a model without an
// eos_id runs until max_new_tokens or max_len.
int64_t eos_of(const Model& model) { return model.config.eos_id >= 0 ? model.config.eos_id : -1; }

int64_t argmax(const float* values, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (values[i] > values[best]) best = i;  // strict: the first maximum wins, as torch.argmax
    return best;
}

}  // namespace

void refuse_inputs_without_room(const Model& model, const std::vector<std::vector<int64_t>>& inputs, bool slide_window) {
    if (slide_window) return;  // the window keeps the last max_len tokens: there is always a next position
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

int64_t default_max_new_tokens(const Model& model) {
    return model.config.eos_id >= 0 ? kMaxNewTokensWithEos : kMaxNewTokensWithoutEos;
}

int64_t new_token_limit(const Model& model, const GenerationOptions& options) {
    if (options.max_new_tokens == GenerationOptions::kModelDefault) return default_max_new_tokens(model);
    if (options.max_new_tokens < 0)
        fail("decode: max_new_tokens must be >= 0 (0: up to max_len) or GenerationOptions::kModelDefault, got ",
             options.max_new_tokens);
    if (options.slide_window && options.max_new_tokens == 0)  // no max_len to stop at: only <eos> would end a row
        fail("decode: a sliding window needs max_new_tokens >= 1 (0 means up to max_len, which a window passes)");
    return options.max_new_tokens;
}

namespace {

// The loop greedy_decode and sample_decode share: every active row's next
// token is choose(row's logits, V, input row); a row ends at <eos>, at
// max_len positions or after the token limit.
template <typename Choose>
Generation decode_rows(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                       const GenerationOptions& options, Choose&& choose) {
    const int64_t eos = eos_of(model), max_len = model.config.max_len;
    const int64_t limit = new_token_limit(model, options);
    refuse_inputs_without_room(model, inputs, options.slide_window);  // before the prompts' pass
    const int64_t reserved = reserved_new_tokens(model, limit);
    std::unique_ptr<Stepper> stepper = make_stepper(model, inputs, options.mode, reserved, options.slide_window);
    Generation result;
    result.tokens.resize(inputs.size());
    for (auto& tokens : result.tokens) tokens.reserve(static_cast<size_t>(reserved));
    result.log_probs.assign(inputs.size(), 0.0);
    result.stops.assign(inputs.size(), StopReason::Eos);
    const auto end_row = [&](size_t b, StopReason why) {
        result.stops[b] = why;
        if (options.on_row_end) options.on_row_end(b, why);
    };
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
            const size_t b = static_cast<size_t>(active[r]);
            const int64_t token = choose(row, V, b);
            result.log_probs[b] += row[token] - log_sum_exp(row, V);  // log_softmax(row)[token]
            if (token != eos) {
                result.tokens[b].push_back(token);
                if (options.on_token) options.on_token(b, token);
            }
            const bool full_length = !options.slide_window && stepper->length(static_cast<int64_t>(r)) + 1 >= max_len;
            const bool enough = limit > 0 && static_cast<int64_t>(result.tokens[b].size()) >= limit;
            if (token == eos || enough || full_length) {  // the tokens asked for count as such even at max_len
                end_row(b, token == eos ? StopReason::Eos : enough ? StopReason::MaxNewTokens : StopReason::MaxLen);
                continue;
            }
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

}  // namespace

Generation greedy_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const GenerationOptions& options) {
    return decode_rows(model, inputs, options, [](const float* row, int64_t V, size_t) { return argmax(row, V); });
}

void check_sampling(const Sampling& sampling) {
    if (!std::isfinite(sampling.temperature) || sampling.temperature <= 0)
        fail("sampling: temperature must be a finite number > 0 (greedy decoding is the limit T -> 0: leave sampling "
             "out for it), got ", sampling.temperature);
    if (sampling.top_k < 0) fail("sampling: top_k must be >= 1 (or 0: every token), got ", sampling.top_k);
    if (!(sampling.top_p > 0 && sampling.top_p <= 1))
        fail("sampling: top_p must be in (0, 1], got ", sampling.top_p);
}

void sampling_distribution(const float* logits, int64_t n, const Sampling& sampling, SamplingDistribution& out,
                           std::vector<int64_t>& order) {
    check_sampling(sampling);
    if (n < 1) fail("sampling: expected at least one logit, got ", n);
    double max_logit = logits[0];
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(logits[i])) fail("sampling: logit ", i, " is ", logits[i], ", not a finite number");
        max_logit = std::max(max_logit, static_cast<double>(logits[i]));
    }
    // 3. the order: largest logit first, equal logits by smaller id.
    order.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    auto before = [&](int64_t a, int64_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; };
    // 4. top-k: only the first k need ordering.
    const int64_t k = sampling.top_k == 0 ? n : std::min(sampling.top_k, n);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    // 1-2. p_i = exp((logit_i - max) / T) / sum; the sum over all n tokens.
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += std::exp((logits[i] - max_logit) / sampling.temperature);
    out.tokens.clear();
    out.q.clear();
    double kept_mass = 0;
    for (int64_t i = 0; i < k; ++i) {
        const int64_t token = order[static_cast<size_t>(i)];
        const double p = std::exp((logits[token] - max_logit) / sampling.temperature) / total;
        out.tokens.push_back(token);
        out.q.push_back(p);
        kept_mass += p;
    }
    // 5. top-p over the top-k tokens renormalised: the shortest prefix reaching p.
    if (sampling.top_p < 1) {
        double running = 0;
        size_t count = 0;
        while (count < out.q.size()) {
            running += out.q[count] / kept_mass;
            ++count;
            if (running >= sampling.top_p) break;
        }
        out.tokens.resize(count);
        out.q.resize(count);
        kept_mass = 0;
        for (double p : out.q) kept_mass += p;
    }
    // 6. q_i = p_i / sum_kept p.
    for (double& q : out.q) q /= kept_mass;
}

SamplingDistribution sampling_distribution(const float* logits, int64_t n, const Sampling& sampling) {
    SamplingDistribution out;
    std::vector<int64_t> order;
    sampling_distribution(logits, n, sampling, out, order);
    return out;
}

int64_t draw_token(const SamplingDistribution& distribution, double u) {
    if (distribution.tokens.empty() || distribution.tokens.size() != distribution.q.size())
        fail("draw_token: the distribution has ", distribution.tokens.size(), " tokens and ", distribution.q.size(),
             " probabilities; expected the same number, at least one");
    if (!(u >= 0 && u < 1)) fail("draw_token: u must be in [0, 1), got ", u);
    double running = 0;
    for (size_t i = 0; i < distribution.tokens.size(); ++i) {
        running += distribution.q[i];
        if (u < running) return distribution.tokens[i];
    }
    return distribution.tokens.back();  // rounding left the total just under u
}

int64_t sample_token(const float* logits, int64_t n, const Sampling& sampling, Random& random) {
    return draw_token(sampling_distribution(logits, n, sampling), random.uniform());
}

Generation sample_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const Sampling& sampling, const GenerationOptions& options) {
    check_sampling(sampling);
    std::vector<Random> randoms;  // input row b: Random(seed + b)
    randoms.reserve(inputs.size());
    for (size_t b = 0; b < inputs.size(); ++b) randoms.emplace_back(sampling.seed + static_cast<uint64_t>(b));
    SamplingDistribution distribution;  // reused every step
    std::vector<int64_t> order;
    return decode_rows(model, inputs, options, [&](const float* row, int64_t V, size_t b) {
        sampling_distribution(row, V, sampling, distribution, order);
        return draw_token(distribution, randoms[b].uniform());
    });
}

Generation beam_search(const Model& model, const std::vector<int64_t>& input, int64_t width, double length_penalty,
                       const GenerationOptions& options) {
    if (width < 1) fail("beam_search: width must be >= 1, got ", width);
    const int64_t eos = eos_of(model), max_len = model.config.max_len;
    const int64_t limit = new_token_limit(model, options);
    refuse_inputs_without_room(model, {input}, options.slide_window);  // before the prompt's pass
    std::unique_ptr<Stepper> stepper =
        make_stepper(model, {input}, options.mode, /*new_positions=*/0, options.slide_window);

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
                ended.push_back({parent.tokens, c.log_prob, score_of(c.log_prob, parent.tokens.size() + 1),
                                 StopReason::Eos});
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
        const bool full_length = !options.slide_window && length >= max_len;
        const bool enough = limit > 0 && static_cast<int64_t>(next[0].tokens.size()) >= limit;
        if (full_length || enough) {  // out of tokens or positions: the alive ones end here
            const StopReason why = enough ? StopReason::MaxNewTokens : StopReason::MaxLen;
            for (const Alive& h : next)
                ended.push_back({h.tokens, h.log_prob, score_of(h.log_prob, h.tokens.size()), why});
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
    result.stops = {best.stop};
    result.hypotheses = ended;
    std::stable_sort(result.hypotheses.begin(), result.hypotheses.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    return result;
}

}  // namespace tinyformer
