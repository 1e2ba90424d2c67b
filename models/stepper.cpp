#include "models/stepper.h"

#include "engine/ops.h"
#include "models/mask_policy.h"

#include <algorithm>
#include <optional>

namespace tinyformer {

namespace {

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
            const int64_t width = config.n_kv_heads * (config.d_model / config.nhead);  // K/V columns, Hkv*Dh
            for (DecoderLayerCache& layer : cache_.layers)
                layer.self.reserve(B, positions_within_budget(positions, B, width, config.num_decoder_layers), width);
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
                       int64_t new_positions, bool slide_window)
        : model_(model), mode_(mode), new_positions_(new_positions), window_(slide_window), sequences_(prompts) {
        const ModelConfig& config = model.config();
        if (config.attention == SelfAttentionKind::Bidirectional)
            fail("decode: an encoder_only model sees every position at once and cannot generate text");
        for (const auto& prompt : prompts) {
            if (prompt.empty()) fail("decode: a prompt is empty");
            prompt_lengths_.push_back(static_cast<int64_t>(prompt.size()));
        }
        for (auto& sequence : sequences_) sequence.reserve(sequence.size() + static_cast<size_t>(new_positions));
        if (mode_ == StepMode::KvCache) {
            run_prompts(windows());
            const int64_t layers = static_cast<int64_t>(cache_.layers.size());
            // A sliding window's cache never holds more than W new positions beyond what it kept.
            const int64_t window = config.sliding_window;
            const int64_t added = window > 0 ? std::min(new_positions, window) : new_positions;
            for (KVCache& layer : cache_.layers)  // room reserved up front: a step allocates nothing
                layer.reserve(layer.batch(),
                              layer.length() + positions_within_budget(added, layer.batch(), layer.width(), layers),
                              layer.width());
        }
    }

    Tensor next_logits() override {
        if (mode_ == StepMode::KvCache) return logits_;
        Padding padding;
        const std::vector<std::vector<int64_t>> rows = windows();
        const TokenIds ids = pad_rows(rows, pad_id_of(model_.config()), &padding);
        const bool prefix_lm = model_.config().attention == SelfAttentionKind::PrefixLm;
        const Tensor logits = model_.forward(ids, padding, prefix_lm ? prompt_lengths_ : std::vector<int64_t>{});
        std::vector<int64_t> last;
        for (const auto& row : rows) last.push_back(static_cast<int64_t>(row.size()) - 1);
        return logits_at(logits, last);
    }

    void append(const std::vector<int64_t>& tokens) override {
        for (size_t b = 0; b < sequences_.size(); ++b) sequences_[b].push_back(tokens[b]);
        if (mode_ != StepMode::KvCache) return;
        const auto past = [&](const auto& row) { return static_cast<int64_t>(row.size()) > model_.config().max_len; };
        if (window_ && std::any_of(sequences_.begin(), sequences_.end(), past)) {  // a fresh pass on each window
            cache_ = StackCache();
            cache_padding_.clear();
            slot_positions_.clear();
            run_prompts(windows());
            return;
        }
        // One new position per row, at that row's own next position; it sees
        // every cached key except the padding slots of shorter prompts.
        const int64_t B = static_cast<int64_t>(sequences_.size());
        newest_.batch = B;
        newest_.values.assign(tokens.begin(), tokens.end());
        positions_.clear();
        for (const auto& sequence : sequences_) positions_.push_back(static_cast<int64_t>(sequence.size()) - 1);
        for (auto& flags : cache_padding_) flags.push_back(0);
        if (tracks_positions()) // the new slot holds the row's newest token, at the row's own position
            for (size_t b = 0; b < sequences_.size(); ++b) slot_positions_[b].push_back(positions_[b]);
        const Tensor logits = model_.forward_step(newest_, positions_, step_mask(), Padding(), cache_);  // [B, 1, V]
        logits_ = logits.reshaped({B, logits.dim(2)});
        evict_outside_window();
    }

    void keep_rows(const std::vector<int64_t>& rows) override {
        sequences_ = pick(sequences_, rows);
        prompt_lengths_ = pick(prompt_lengths_, rows);
        cache_padding_ = pick(cache_padding_, rows);
        slot_positions_ = pick(slot_positions_, rows);
        logits_ = gather_batch(logits_, rows);
        for (KVCache& layer : cache_.layers) layer.keep_rows(rows);
    }

    int64_t length(int64_t b) const override { return static_cast<int64_t>(sequences_[static_cast<size_t>(b)].size()); }

    CacheSize cache_size() const override {
        if (cache_.layers.empty()) return {};
        return {cache_.layers[0].length(), cache_.layers[0].capacity()};
    }

private:
    // A row's last max_len tokens with a sliding window, else the row as it is.
    std::vector<std::vector<int64_t>> windows() const {
        if (!window_) return sequences_;
        const auto max_len = static_cast<size_t>(model_.config().max_len);
        std::vector<std::vector<int64_t>> rows;
        for (const auto& sequence : sequences_)
            rows.emplace_back(sequence.end() - static_cast<std::ptrdiff_t>(std::min(sequence.size(), max_len)),
                              sequence.end());
        return rows;
    }

    // KV cache: the prompts (or with a window, the rows' windows) in one
    // pass, right-padded together, with the model's mask, from position 0.
    void run_prompts(const std::vector<std::vector<int64_t>>& rows) {
        std::vector<int64_t> lengths;
        for (const auto& row : rows) lengths.push_back(static_cast<int64_t>(row.size()));
        Padding padding;
        const TokenIds ids = pad_rows(rows, pad_id_of(model_.config()), &padding);
        // The prompts' pass, as forward() checks its own: its mask (with ALiBi, a
        // [B,H,P,P] bias) is made before any layer runs, so it is checked first.
        refuse_pass_beyond_memory("prefill", model_.config(), ids.batch, ids.length, ids.length,
                                  model_.config().num_layers, false, model_.config().vocab_size,
                                  /*fills_kv_cache=*/true);
        const bool prefix_lm = model_.config().attention == SelfAttentionKind::PrefixLm;
        MaskInputs inputs;
        inputs.batch = ids.batch;
        inputs.length = ids.length;
        inputs.padding = padding;
        if (prefix_lm) inputs.prefix_lengths = prompt_lengths_;
        inputs.relative_bias = model_.relative_bias_table();
        const Mask mask = decoding_step_masks(model_.config(), inputs).self;
        const Tensor logits = model_.forward_step(ids, std::vector<int64_t>(sequences_.size(), 0), mask, padding,
                                                  cache_);  // [B, P, V]
        std::vector<int64_t> last;
        for (int64_t length : lengths) last.push_back(length - 1);
        logits_ = logits_at(logits, last);
        for (size_t b = 0; b < rows.size(); ++b) {
            std::vector<uint8_t> flags(static_cast<size_t>(ids.length), 0);
            flags.reserve(static_cast<size_t>(ids.length + new_positions_));  // one more flag per step
            for (int64_t t = lengths[b]; t < ids.length; ++t) flags[static_cast<size_t>(t)] = 1;
            cache_padding_.push_back(std::move(flags));
            if (tracks_positions()) {  // slot t holds the prompt's token t (padding slots too: blocked anyway)
                std::vector<int64_t> positions(static_cast<size_t>(ids.length));
                positions.reserve(static_cast<size_t>(ids.length + new_positions_));
                for (int64_t t = 0; t < ids.length; ++t) positions[static_cast<size_t>(t)] = t;
                slot_positions_.push_back(std::move(positions));
            }
        }
        evict_outside_window();
    }

    // Whether the masks need each slot's token position (models/mask_policy.h).
    bool tracks_positions() const { return mask_uses_positions(model_.config()); }

    // A sliding window of W: drops the cache slots that no row's next query
    // (at position next = the row's length) can see: a row's tokens at
    // positions <= next - W, and padding. Every row drops the same number of
    // oldest slots, as many as every row can spare. (Past max_len with
    // slide_window every step is a fresh pass on the window: nothing to keep.)
    void evict_outside_window() {
        const int64_t window = model_.config().sliding_window;
        const auto past = [&](const auto& row) { return static_cast<int64_t>(row.size()) > model_.config().max_len; };
        if (window == 0 || cache_padding_.empty() || (window_ && std::any_of(sequences_.begin(), sequences_.end(), past)))
            return;
        size_t spare = cache_padding_[0].size();
        for (size_t b = 0; b < sequences_.size(); ++b) {
            const int64_t next = static_cast<int64_t>(sequences_[b].size());
            size_t unseen = 0;
            while (unseen < spare && (cache_padding_[b][unseen] || slot_positions_[b][unseen] <= next - window)) ++unseen;
            spare = unseen;
        }
        if (spare == 0) return;
        for (KVCache& layer : cache_.layers) layer.drop_front(static_cast<int64_t>(spare));
        const auto drop = [spare](auto& row) { row.erase(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(spare)); };
        for (auto& flags : cache_padding_) drop(flags);
        for (auto& positions : slot_positions_) drop(positions);
    }

    // The mask of a one-position step over the cached keys, from
    // decoding_step_masks and its step-mask cache (models/mask_policy.h).
    // Without prompt padding it blocks nothing at any step: made once. With
    // it, the padding slots of shorter prompts stay blocked while the keys
    // grow by one a step: made at each step. A position term (ALiBi's or
    // T5's bias, a sliding window) depends on the distance of each slot's
    // token to the new one: made at each step from slot_positions_.
    const Mask& step_mask() {
        MaskInputs inputs;  // one new position per row, over the T cached keys
        inputs.batch = static_cast<int64_t>(sequences_.size());
        inputs.relative_bias = model_.relative_bias_table();
        if (tracks_positions()) inputs.key_positions = slot_positions_;
        bool padded = tracks_positions();  // such steps take the cache's padding flags, padded or not
        for (const auto& flags : cache_padding_) padded = padded || std::find(flags.begin(), flags.end(), 1) != flags.end();
        if (padded) inputs.padding = cache_padding();
        inputs.first = static_cast<int64_t>(cache_padding_[0].size()) - 1;
        return decoding_step_masks(model_.config(), inputs, step_masks_).self;
    }

    Padding cache_padding() const {
        BoolTensor flags{{static_cast<int64_t>(cache_padding_.size()), static_cast<int64_t>(cache_padding_[0].size())}, {}};
        for (const auto& row : cache_padding_) flags.values.insert(flags.values.end(), row.begin(), row.end());
        return Padding::from_flags(flags);
    }

    const SingleStackModel& model_;
    StepMode mode_;
    int64_t new_positions_;
    bool window_;  // a sliding window past max_len (make_stepper)
    std::vector<std::vector<int64_t>> sequences_;
    std::vector<int64_t> prompt_lengths_;
    std::vector<std::vector<uint8_t>> cache_padding_;  // per row: 1 where a cache slot is prompt padding
    // Position terms only, per row: the position of the token each cache slot
    // holds. Prompts right-padded to P slots: slot t < P holds position t; the
    // k-th generated token sits at slot P + k but at position prompt_length + k
    // (slots shift down together when a sliding window evicts the oldest).
    std::vector<std::vector<int64_t>> slot_positions_;
    TokenIds newest_{0, 1, {}};                        // a step's input: the newest token of every row
    std::vector<int64_t> positions_;                   // and each row's position
    StepMasks step_masks_;                             // a step's mask, kept while it stays the same
    StackCache cache_;
    Tensor logits_;
};

}  // namespace

std::string window_refusal(const Model& model) {
    const ModelConfig& config = model.config;
    if (config.pos_encoding == PositionalEncoding::Learned) return "its learned positions have no row past it";
    if (config.pos_encoding == PositionalEncoding::Sinusoidal)
        return "its sinusoidal positions are a table of max_len rows, none past it";
    if (model.encoder_decoder) return "an encoder_decoder model's target starts at <bos>, which a window would cut";
    if (config.attention == SelfAttentionKind::PrefixLm)
        return "a prefix_lm model's prompt is its bidirectional prefix, which a window would cut";
    return "";
}

int64_t reserved_new_tokens(const Model& model, int64_t max_new_tokens) {
    const int64_t max_len = model.config.max_len;
    const int64_t most = max_new_tokens > 0 ? std::min(max_new_tokens, max_len) : max_len;
    return std::min(most, kReservedTokens);
}

std::unique_ptr<Stepper> make_stepper(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                      StepMode mode, int64_t new_positions, bool slide_window) {
    if (inputs.empty()) fail("decode: no input sequences");
    const int64_t max_len = model.config.max_len;
    if (slide_window && !window_refusal(model).empty())
        fail("decode: the model cannot slide a window past its max_len of ", max_len, ": ", window_refusal(model));
    if (model.encoder_decoder)  // <bos> and the new tokens
        return std::make_unique<EncoderDecoderStepper>(*model.encoder_decoder, inputs, mode,
                                                       std::min(1 + new_positions, max_len));
    return std::make_unique<SingleStackStepper>(*model.single_stack, inputs, mode, new_positions, slide_window);
}

}  // namespace tinyformer
