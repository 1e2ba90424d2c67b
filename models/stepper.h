// Stepping — advancing a batch of sequences one token at a time, the
// machinery under every search (models/decoding.h: greedy, beam, sampling).
//
// A Stepper holds B rows (one per sequence being extended) and answers one
// question, the next-token logits [B, V] of every row; a search picks the
// tokens, appends them, and keeps, drops or repeats rows (keep_rows). The
// two architectures and the two step modes differ only here:
//   encoder_decoder: rows are targets starting as <bos>; the encoder reads
//                    the sources once (memory [B, S, D])
//   decoder_only:    rows are prompts, right-padded together (prefix_lm
//                    models use the whole prompt as the bidirectional prefix)
// Step modes, same numbers:
//   KvCache:   keys and values of earlier positions are kept per layer (the
//              KV cache, layers/kv_cache.h): each step runs
//              only the new token (cross-attention K/V of the encoder memory
//              computed once; a decoder-only prompt once).
//   Recompute: the reference — each step runs the whole sequence again.
// Every mask a step uses comes from decoding_step_masks (models/mask_policy.h).
// A decoder with a "sliding_window" W keeps in its KV cache only the slots a
// next query can see (each row's last W - 1 positions, and the padding slots
// between a short prompt and its generated tokens): the oldest are evicted
// after every pass, so a long generation's cache stays bounded; the masks
// and rotary positions use each slot's token position, never its index.
//
// Reservation budget: a stepper made with room for `new_positions` tokens
// reserves its KV caches and token vectors up front, so a step allocates
// nothing; reserved_new_tokens says how many a decoding asks for.
#pragma once

#include "models/transformer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tinyformer {

enum class StepMode { KvCache, Recompute };

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
    // The first self-attention KV cache's positions and room (0 and 0 without
    // one): what a sliding window keeps bounded.
    struct CacheSize {
        int64_t length = 0, capacity = 0;
    };
    virtual CacheSize cache_size() const { return {}; }
};

// The stepper of the model's architecture over `inputs` (sources or
// prompts), with room reserved for `new_positions` new tokens per row (0:
// none; beam search reorders its caches at every step, which would copy
// reserved room each time). Error when there are no inputs, an input is
// empty, the model cannot generate (encoder_only) or, for encoder_decoder,
// has no bos_id. With `slide_window` (models/decoding.h) a row's logits are
// those of its last max_len tokens at positions 0..max_len-1 (length(b)
// still counts every token); Error when window_refusal refuses the model.
std::unique_ptr<Stepper> make_stepper(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                      StepMode mode, int64_t new_positions, bool slide_window = false);

// Empty when the model can slide a window past max_len (models/decoding.h),
// else why not, as the end of a sentence: "its learned positions have no row past it".
std::string window_refusal(const Model& model);

// How many new tokens the buffers of a decoding (KV caches, token vectors)
// get room for when it starts, so that its steps allocate nothing: the most
// it may add (max_new_tokens, 0 meaning no limit, up to the model's
// max_len), but at most kReservedTokens. A decoding that goes on past that
// grows its buffers by doubling (an allocation at 256, 512, ... tokens), and
// a config's max_len of 2^24 reserves nothing unreasonable.
constexpr int64_t kReservedTokens = 256;
int64_t reserved_new_tokens(const Model& model, int64_t max_new_tokens);

// values[rows[0]], values[rows[1]], ...; an empty vector (state a step mode
// does not keep) stays empty. The searches reorder their own rows with it too.
template <typename T>
std::vector<T> pick(const std::vector<T>& values, const std::vector<int64_t>& rows) {
    if (values.empty()) return values;
    std::vector<T> picked;
    for (int64_t row : rows) picked.push_back(values[static_cast<size_t>(row)]);
    return picked;
}

}  // namespace tinyformer
