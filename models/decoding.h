// Decoding — the search algorithms that turn a model's next-token logits
// into output sequences: greedy and beam search. Each is one loop over a
// Stepper (models/stepper.h, which advances the model a token at a time,
// with its KV cache or by recomputing): ask next_logits() [rows, V], choose
// tokens, then keep_rows / append. A new search (e.g. sampling) is another
// such loop here; the stepping does not change.
//
// Inputs, one per batch row (ids, any lengths: rows are padded together):
//   encoder_decoder: the source tokens; the target starts as <bos>
//   decoder_only:    the prompt, e.g. <bos> a b c =  (prefix_lm models use
//                    the whole prompt as the bidirectional prefix)
// Output: the generated tokens of each row, without <bos> and <eos>.
// Generation stops at <eos> or when the sequence fills the model's max_len
// positions (or after max_new_tokens, when given).
//
// Greedy: the argmax token each step (the first one on ties, as
// torch.argmax). Beam search (width k): keeps the k best hypotheses by summed
// log-probability; a hypothesis ends at <eos> and is scored by
// log p / (generated tokens incl. <eos>)^length_penalty; search stops when k
// have ended (or at the length limit) and the best score wins. It is a
// heuristic: the greedy path can fall out of the beam, so a wider beam may
// end with a lower log p than greedy. Width 1 is greedy.
//
// GenerationOptions::mode picks the stepping (StepMode, models/stepper.h):
// KvCache (the default) or Recompute (the reference), same numbers.
#pragma once

#include "models/stepper.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tinyformer {

struct GenerationOptions {
    StepMode mode = StepMode::KvCache;
    // At most this many, and never past max_len; 0: as many as max_len
    // allows. 1024 by default, because a file's config may declare a max_len
    // of 2^24, and decoding that far is hours of work nobody asked for.
    int64_t max_new_tokens = 1024;
    bool record_logits = false;   // keep every step's logits [B, V]
    // Called after every step that extends the sequences (e.g. to count
    // what a step allocates, as the decode benchmark does); none by default.
    std::function<void()> after_step;
};

// One finished beam-search hypothesis: its tokens (without <bos> / <eos>),
// summed log p, and the length-normalised score it was ranked by.
struct Hypothesis {
    std::vector<int64_t> tokens;
    double log_prob = 0.0, score = 0.0;
};

struct Generation {
    std::vector<std::vector<int64_t>> tokens;  // per row, without <bos> / <eos>
    std::vector<double> log_probs;             // per row: sum of log p of the chosen tokens (incl. <eos>)
    std::vector<Tensor> step_logits;           // with record_logits: one [B, V] per step
    std::vector<Hypothesis> hypotheses;        // beam search: every ended hypothesis, best score first
};

// Error, before any pass, when an input leaves no position to generate into:
// a decoder-only prompt already holding max_len tokens or more (an
// encoder-decoder's target starts as <bos>, one position, so only max_len 1
// leaves it none). The message names the input (its index when there are
// several), its length and max_len. greedy_decode and beam_search ask it first.
void refuse_inputs_without_room(const Model& model, const std::vector<std::vector<int64_t>>& inputs);

Generation greedy_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const GenerationOptions& options = {});

Generation beam_search(const Model& model, const std::vector<int64_t>& input, int64_t width,
                       double length_penalty = 1.0, const GenerationOptions& options = {});

// log softmax of one row of logits, in double: x_i - max - log sum exp(x - max).
std::vector<double> log_softmax(const float* logits, int64_t n);
// log sum_i exp(logits[i]) (in double, shifted by the maximum): log_softmax(logits)[i] = logits[i] - log_sum_exp.
double log_sum_exp(const float* logits, int64_t n);

}  // namespace tinyformer
