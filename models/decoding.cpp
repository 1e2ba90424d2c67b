#include "models/decoding.h"

#include "engine/ops.h"
#include "models/mask_policy.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

namespace tinyformer {

namespace {

// One batch of sequences being extended a token at a time. The two
// architectures and the two step modes differ only here.
class Stepper {
public:
    virtual ~Stepper() = default;
    // [B, V]: the next-token logits of every row.
    virtual Tensor next_logits() = 0;
    // Appends tokens[b] to row b.
    virtual void append(const std::vector<int64_t>& tokens) = 0;
    // Keeps rows `rows`, in that order (repeats allowed).
    virtual void keep_rows(const std::vector<int64_t>& rows) = 0;
    // Tokens in row b so far (the prompt or <bos> included).
    virtual int64_t length(int64_t b) const = 0;
};

// values[rows[0]], values[rows[1]], ...; an empty vector (state a step mode
// does not keep) stays empty.
template <typename T>
std::vector<T> pick(const std::vector<T>& values, const std::vector<int64_t>& rows) {
    if (values.empty()) return values;
    std::vector<T> picked;
    for (int64_t row : rows) picked.push_back(values[static_cast<size_t>(row)]);
    return picked;
}

// Rows of different lengths, right-padded with `pad` into one [B, T] batch.
TokenIds pad_rows(const std::vector<std::vector<int64_t>>& rows, int64_t pad, Padding* padding) {
    int64_t width = 0;
    std::vector<int64_t> lengths;
    for (const auto& row : rows) {
        width = std::max<int64_t>(width, static_cast<int64_t>(row.size()));
        lengths.push_back(static_cast<int64_t>(row.size()));
    }
    TokenIds ids{static_cast<int64_t>(rows.size()), width, {}};
    for (const auto& row : rows) {
        ids.values.insert(ids.values.end(), row.begin(), row.end());
        ids.values.insert(ids.values.end(), static_cast<size_t>(width) - row.size(), pad);
    }
    if (padding) *padding = Padding::from_lengths(lengths, width);
    return ids;
}

// The last row of logits [B, n, V] at index `at[b]` of each row -> [B, V].
Tensor logits_at(const Tensor& logits, const std::vector<int64_t>& at) {
    const int64_t B = logits.dim(0), n = logits.dim(1), V = logits.dim(2);
    Tensor out({B, V});
    for (int64_t b = 0; b < B; ++b) {
        const float* row = logits.data() + (b * n + at[static_cast<size_t>(b)]) * V;
        std::copy(row, row + V, out.data() + b * V);
    }
    return out;
}

int64_t pad_id_of(const ModelConfig& config) { return config.pad_id >= 0 ? config.pad_id : 0; }

// Of `positions` wanted in the self-attention KV caches of `layers` layers,
// B rows of width D, as many as kReservedBytes of keys and values hold (at
// least 1): reserving never costs more than that, whatever B, D and the
// layers; a decoding that needs more grows the caches by doubling.
constexpr int64_t kReservedBytes = int64_t{64} << 20;
int64_t positions_within_budget(int64_t positions, int64_t batch, int64_t width, int64_t layers) {
    const int64_t per_position = 2 * batch * width * static_cast<int64_t>(sizeof(float)) * std::max<int64_t>(layers, 1);
    return std::max<int64_t>(1, std::min(positions, kReservedBytes / per_position));
}

class EncoderDecoderStepper : public Stepper {
public:
    // positions: the target positions a row gets room for (<bos> and reserved_new_tokens).
    EncoderDecoderStepper(const EncoderDecoderModel& model, const std::vector<std::vector<int64_t>>& sources,
                          StepMode mode, int64_t positions)
        : model_(model), mode_(mode) {
        const ModelConfig& config = model.config();
        if (config.bos_id < 0) fail("decode: the model's config has no bos_id to start the target with");
        for (const auto& source : sources)
            if (source.empty()) fail("decode: a source sequence is empty");
        source_lengths_.clear();
        for (const auto& source : sources) source_lengths_.push_back(static_cast<int64_t>(source.size()));
        const TokenIds ids = pad_rows(sources, pad_id_of(config), &source_padding_);
        memory_ = model.encode(ids, source_padding_);  // [B, S, D], once
        targets_.assign(sources.size(), {config.bos_id});
        for (auto& target : targets_) target.reserve(static_cast<size_t>(positions));
        if (mode_ == StepMode::KvCache) {  // room reserved up front: a step allocates nothing
            const int64_t B = static_cast<int64_t>(sources.size());
            cache_.layers.resize(static_cast<size_t>(config.num_decoder_layers));
            for (DecoderLayerCache& layer : cache_.layers)
                layer.self.reserve(B, positions_within_budget(positions, B, config.d_model, config.num_decoder_layers),
                                   config.d_model);
            run_new_tokens();
        }
    }

    Tensor next_logits() override {
        if (mode_ == StepMode::KvCache) return logits_;
        Padding unused;
        const TokenIds ids = pad_rows(targets_, 0, &unused);  // all rows have the same length
        const Tensor logits = model_.decode(ids, memory_, Padding(), source_padding_);
        return logits_at(logits, std::vector<int64_t>(targets_.size(), ids.length - 1));
    }

    void append(const std::vector<int64_t>& tokens) override {
        for (size_t b = 0; b < targets_.size(); ++b) targets_[b].push_back(tokens[b]);
        if (mode_ == StepMode::KvCache) run_new_tokens();
    }

    void keep_rows(const std::vector<int64_t>& rows) override {
        targets_ = pick(targets_, rows);
        source_lengths_ = pick(source_lengths_, rows);
        memory_ = gather_batch(memory_, rows);
        source_padding_ = Padding::from_lengths(source_lengths_, memory_.dim(1));
        logits_ = gather_batch(logits_, rows);
        for (DecoderLayerCache& layer : cache_.layers)
            for (KVCache* kv : {&layer.self, &layer.cross}) kv->keep_rows(rows);
    }

    int64_t length(int64_t b) const override { return static_cast<int64_t>(targets_[static_cast<size_t>(b)].size()); }

private:
    // KV cache: run only the newest token of every row.
    void run_new_tokens() {
        newest_.batch = static_cast<int64_t>(targets_.size());
        newest_.values.clear();
        for (const auto& target : targets_) newest_.values.push_back(target.back());
        const Tensor logits = model_.decode_step(newest_, memory_, source_padding_, cache_);  // [B, 1, V]
        logits_ = logits.reshaped({logits.dim(0), logits.dim(2)});
    }

    const EncoderDecoderModel& model_;
    StepMode mode_;
    std::vector<int64_t> source_lengths_;
    Padding source_padding_;
    Tensor memory_;
    std::vector<std::vector<int64_t>> targets_;
    TokenIds newest_{0, 1, {}};  // the newest token of every row, one step's input
    DecoderCache cache_;
    Tensor logits_;
};

class SingleStackStepper : public Stepper {
public:
    SingleStackStepper(const SingleStackModel& model, const std::vector<std::vector<int64_t>>& prompts, StepMode mode,
                       int64_t new_positions)
        : model_(model), mode_(mode), new_positions_(new_positions), sequences_(prompts) {
        const ModelConfig& config = model.config();
        if (config.attention == SelfAttentionKind::Bidirectional)
            fail("decode: an encoder_only model sees every position at once and cannot generate text");
        for (const auto& prompt : prompts) {
            if (prompt.empty()) fail("decode: a prompt is empty");
            prompt_lengths_.push_back(static_cast<int64_t>(prompt.size()));
        }
        for (auto& sequence : sequences_) sequence.reserve(sequence.size() + static_cast<size_t>(new_positions));
        if (mode_ == StepMode::KvCache) {
            run_prompts();
            const int64_t layers = static_cast<int64_t>(cache_.layers.size());
            for (KVCache& layer : cache_.layers)  // room reserved up front: a step allocates nothing
                layer.reserve(layer.batch(),
                              layer.length() + positions_within_budget(new_positions, layer.batch(), layer.width(), layers),
                              layer.width());
        }
    }

    Tensor next_logits() override {
        if (mode_ == StepMode::KvCache) return logits_;
        Padding padding;
        const TokenIds ids = pad_rows(sequences_, pad_id_of(model_.config()), &padding);
        const bool prefix_lm = model_.config().attention == SelfAttentionKind::PrefixLm;
        const Tensor logits = model_.forward(ids, padding, prefix_lm ? prompt_lengths_ : std::vector<int64_t>{});
        std::vector<int64_t> last;
        for (const auto& sequence : sequences_) last.push_back(static_cast<int64_t>(sequence.size()) - 1);
        return logits_at(logits, last);
    }

    void append(const std::vector<int64_t>& tokens) override {
        for (size_t b = 0; b < sequences_.size(); ++b) sequences_[b].push_back(tokens[b]);
        if (mode_ != StepMode::KvCache) return;
        // One new position per row, at that row's own next position; it sees
        // every cached key except the padding slots of shorter prompts.
        const int64_t B = static_cast<int64_t>(sequences_.size());
        newest_.batch = B;
        newest_.values.assign(tokens.begin(), tokens.end());
        positions_.clear();
        for (const auto& sequence : sequences_) positions_.push_back(static_cast<int64_t>(sequence.size()) - 1);
        for (auto& flags : cache_padding_) flags.push_back(0);
        const Tensor logits = model_.forward_step(newest_, positions_, step_mask(), Padding(), cache_);  // [B, 1, V]
        logits_ = logits.reshaped({B, logits.dim(2)});
    }

    void keep_rows(const std::vector<int64_t>& rows) override {
        sequences_ = pick(sequences_, rows);
        prompt_lengths_ = pick(prompt_lengths_, rows);
        cache_padding_ = pick(cache_padding_, rows);
        logits_ = gather_batch(logits_, rows);
        for (KVCache& layer : cache_.layers) layer.keep_rows(rows);
    }

    int64_t length(int64_t b) const override { return static_cast<int64_t>(sequences_[static_cast<size_t>(b)].size()); }

private:
    // KV cache: the prompts once, right-padded together, with the model's mask.
    void run_prompts() {
        Padding padding;
        const TokenIds ids = pad_rows(sequences_, pad_id_of(model_.config()), &padding);
        const bool prefix_lm = model_.config().attention == SelfAttentionKind::PrefixLm;
        MaskInputs inputs;
        inputs.batch = ids.batch;
        inputs.length = ids.length;
        inputs.padding = padding;
        if (prefix_lm) inputs.prefix_lengths = prompt_lengths_;
        const Mask mask = attention_mask(model_.config(), AttentionCall::Self, inputs);
        const Tensor logits = model_.forward_step(ids, std::vector<int64_t>(sequences_.size(), 0), mask, padding,
                                                  cache_);  // [B, P, V]
        std::vector<int64_t> last;
        for (int64_t length : prompt_lengths_) last.push_back(length - 1);
        logits_ = logits_at(logits, last);
        for (size_t b = 0; b < sequences_.size(); ++b) {
            std::vector<uint8_t> flags(static_cast<size_t>(ids.length), 0);
            flags.reserve(static_cast<size_t>(ids.length + new_positions_));  // one more flag per step
            for (int64_t t = prompt_lengths_[b]; t < ids.length; ++t) flags[static_cast<size_t>(t)] = 1;
            cache_padding_.push_back(std::move(flags));
        }
    }

    // The mask of a one-position step over the cached keys. Without prompt
    // padding it blocks nothing at any step: made once. With it, the padding
    // slots of shorter prompts stay blocked while the keys grow by one a
    // step: made at each step.
    const Mask& step_mask() {
        bool padded = false;
        for (const auto& flags : cache_padding_) padded = padded || std::find(flags.begin(), flags.end(), 1) != flags.end();
        if (!padded) return unpadded_step_mask_;
        MaskInputs inputs;  // one new position per row, over the T cached keys
        inputs.batch = static_cast<int64_t>(sequences_.size());
        inputs.padding = cache_padding();
        inputs.first = inputs.padding.length() - 1;
        padded_step_mask_ = attention_mask(model_.config(), AttentionCall::Self, inputs);
        return *padded_step_mask_;
    }

    Padding cache_padding() const {
        BoolTensor flags{{static_cast<int64_t>(cache_padding_.size()), static_cast<int64_t>(cache_padding_[0].size())}, {}};
        for (const auto& row : cache_padding_) flags.values.insert(flags.values.end(), row.begin(), row.end());
        return Padding::from_flags(flags);
    }

    const SingleStackModel& model_;
    StepMode mode_;
    int64_t new_positions_;
    std::vector<std::vector<int64_t>> sequences_;
    std::vector<int64_t> prompt_lengths_;
    std::vector<std::vector<uint8_t>> cache_padding_;  // per row: 1 where a cache slot is prompt padding
    TokenIds newest_{0, 1, {}};                        // a step's input: the newest token of every row
    std::vector<int64_t> positions_;                   // and each row's position
    Mask unpadded_step_mask_;                          // Mask(): blocks nothing
    std::optional<Mask> padded_step_mask_;
    StackCache cache_;
    Tensor logits_;
};

// How many new tokens the buffers of a decoding (KV caches, token vectors)
// get room for when it starts, so that its steps allocate nothing: the most
// it may add (options.max_new_tokens, up to the model's max_len), but at most
// kReservedTokens. A decoding that goes on past that grows its buffers by
// doubling (an allocation at 256, 512, ... tokens), and a config's max_len of
// 2^24 reserves nothing unreasonable.
constexpr int64_t kReservedTokens = 256;
int64_t reserved_new_tokens(const Model& model, const GenerationOptions& options) {
    const int64_t max_len = model.config.max_len;
    const int64_t most = options.max_new_tokens > 0 ? std::min(options.max_new_tokens, max_len) : max_len;
    return std::min(most, kReservedTokens);
}

// The stepper of the model's architecture, with room for reserved_new_tokens
// when `reserve` (greedy decoding; beam search reorders its caches at every
// step, which would copy the reserved room each time).
std::unique_ptr<Stepper> make_stepper(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                      const GenerationOptions& options, bool reserve) {
    if (inputs.empty()) fail("decode: no input sequences");
    const int64_t max_len = model.config.max_len, new_positions = reserve ? reserved_new_tokens(model, options) : 0;
    if (model.encoder_decoder)  // <bos> and the new tokens
        return std::make_unique<EncoderDecoderStepper>(*model.encoder_decoder, inputs, options.mode,
                                                       std::min(1 + new_positions, max_len));
    return std::make_unique<SingleStackStepper>(*model.single_stack, inputs, options.mode, new_positions);
}

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
    std::unique_ptr<Stepper> stepper = make_stepper(model, inputs, options, /*reserve=*/true);
    Generation result;
    result.tokens.resize(inputs.size());
    for (auto& tokens : result.tokens) tokens.reserve(static_cast<size_t>(reserved_new_tokens(model, options)));
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
    std::unique_ptr<Stepper> stepper = make_stepper(model, {input}, options, /*reserve=*/false);

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
