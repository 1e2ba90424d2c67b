// Decoding — the search algorithms that turn a model's next-token logits
// into output sequences: greedy, beam search and sampling. Each is one loop
// over a Stepper (models/stepper.h, which advances the model a token at a
// time, with its KV cache or by recomputing): ask next_logits() [rows, V],
// choose tokens, then keep_rows / append. The stepping does not change.
//
// Inputs, one per batch row (ids, any lengths: rows are padded together):
//   encoder_decoder: the source tokens; the target starts as <bos>
//   decoder_only:    the prompt, e.g. <bos> a b c =  (prefix_lm models use
//                    the whole prompt as the bidirectional prefix)
// Output: the generated tokens of each row, without <bos> and <eos>.
// Generation stops at <eos> (when the config has an eos_id), when the
// sequence fills the model's max_len positions, or after max_new_tokens;
// Generation::stops says which (StopReason).
//
// Past max_len (GenerationOptions::slide_window) a decoder_only causal model
// with rotary, ALiBi or no positions goes on in a sliding window, as
// nanoGPT's generate crops (idx[:, -block_size:]): each step's logits are a
// fresh pass on the row's last max_len tokens at positions 0..max_len-1. The
// cache cannot just drop its oldest rows (later layers' kept keys hold what
// the dropped tokens put in them), so each such step is a whole pass, which
// allocates as a prompt's pass does. Other models stop at max_len
// (window_refusal, models/stepper.h, says why).
// A model without an eos_id (a nanoGPT model has none) never stops by
// itself: max_new_tokens decides, and its default is smaller for it
// (default_max_new_tokens).
//
// Greedy: the argmax token each step (the first one on ties, as
// torch.argmax). Beam search (width k): keeps the k best hypotheses by summed
// log-probability; a hypothesis ends at <eos> and is scored by
// log p / (generated tokens incl. <eos>)^length_penalty; search stops when k
// have ended (or at the length limit) and the best score wins. It is a
// heuristic: the greedy path can fall out of the beam, so a wider beam may
// end with a lower log p than greedy. Width 1 is greedy.
//
// Sampling (Sampling: temperature T > 0, top_k k >= 1 or 0 for all, top_p p
// in (0, 1], seed), one step of one row, in this order, all in double:
//   1. z_i = (logit_i - max_j logit_j) / T            (T < 1 sharpens, T > 1 flattens)
//   2. p_i = exp(z_i) / sum_j exp(z_j)                 softmax(logits / T)
//   3. order the tokens by logit, largest first; equal logits by token id,
//      smaller id first (the tie rule, so top-k is well defined)
//   4. top-k: keep the first k of that order (all of them when k is 0 or >= V)
//   5. top-p: renormalise the kept ones, p'_i = p_i / sum_kept p; keep the
//      shortest prefix of the order whose p' sum reaches p (>= p; at least
//      one token; all kept ones when rounding leaves the sum just under p)
//   6. renormalise again: q_i = p_i / sum_kept p (the draw's distribution)
//   7. draw: u = Random::uniform() (engine/random.h: SplitMix64, the top 53
//      bits of next_u64() times 2^-53, in [0, 1)); walking the kept tokens in
//      the order of 3, the first token whose running sum of q exceeds u
//      (u < q_1 + ... + q_i) is the sample: the most likely token owns
//      [0, q_1), the next [q_1, q_1 + q_2), ...; the last kept token when
//      rounding leaves u past the total.
// Upstream: nanoGPT's generate is steps 1-2 and 4 with torch.multinomial;
// its top-k (logits < the k-th value -> -inf) keeps every token tied with
// the k-th, where step 4 keeps exactly k. Step 5 keeps the set Hugging Face's
// TopPLogitsWarper keeps (applied after top-k, as there).
// One uniform per generated token; input row b (counting from 0 in the
// inputs given) draws from its own Random(seed + b), so a row's uniforms do
// not depend on which other inputs are decoded with it or on the batching,
// and the same seed gives the same uniforms on every machine (no std::
// distributions, whose results differ between standard libraries). The
// tokens are the same wherever the logits' float rounding (another batch,
// another CPU's BLAS: differences of ~1e-6) does not carry a running sum
// across the uniform, that is unless a uniform falls that close to an edge
// of its token's interval. <eos>
// is drawn like any token and ends the row. Greedy is the limit T -> 0, not
// a setting: T must be > 0. Generation::log_probs of a sampled row sums the
// model's own log p (softmax of the unscaled logits) of the drawn tokens.
//
// GenerationOptions::mode picks the stepping (StepMode, models/stepper.h):
// KvCache (the default) or Recompute (the reference), the same numbers
// within 1e-5 (so, for sampling with one seed, the same tokens unless a
// uniform falls that close to a boundary of the running sums, which
// tests/test_sampling.cpp checks before comparing tokens).
#pragma once

#include "engine/random.h"
#include "models/stepper.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tinyformer {

// The default of GenerationOptions::max_new_tokens (and of `run` and
// `explore`'s --max-new-tokens). With an eos_id the model stops itself and
// the limit is only a ceiling: 1024, because a file's config may declare a
// max_len of 2^24, and decoding that far is hours of work nobody asked for.
// Without an eos_id the limit is where every continuation ends, so it is a
// length to read: 64 tokens, a few lines of text, under a second for the
// toy models, and a continuation whose explore page stays small.
constexpr int64_t kMaxNewTokensWithEos = 1024;
constexpr int64_t kMaxNewTokensWithoutEos = 64;
int64_t default_max_new_tokens(const Model& model);

// Why a generation ended: <eos> chosen, max_new_tokens reached, or the
// model's max_len positions filled (and no window slides past them).
enum class StopReason { Eos, MaxNewTokens, MaxLen };

struct GenerationOptions {
    StepMode mode = StepMode::KvCache;
    // At most this many new tokens per row, and never past max_len.
    // kModelDefault: default_max_new_tokens(model); 0: as many as max_len allows.
    static constexpr int64_t kModelDefault = -1;
    int64_t max_new_tokens = kModelDefault;
    bool record_logits = false;   // keep every step's logits [B, V]
    // Called after every step that extends the sequences (e.g. to count
    // what a step allocates, as the decode benchmark does); none by default.
    std::function<void()> after_step;
    bool slide_window = false;  // past max_len (above); Error for a model window_refusal refuses
    // Greedy and sampling (not beam search, whose best is known at the end):
    // (input row, token) as each token is chosen (not <eos>), (row, why) as a row ends.
    std::function<void(size_t, int64_t)> on_token;
    std::function<void(size_t, StopReason)> on_row_end;
};

// One finished beam-search hypothesis: its tokens (without <bos> / <eos>),
// summed log p, and the length-normalised score it was ranked by.
struct Hypothesis {
    std::vector<int64_t> tokens;
    double log_prob = 0.0, score = 0.0;
    StopReason stop = StopReason::Eos;
};

struct Generation {
    std::vector<std::vector<int64_t>> tokens;  // per row, without <bos> / <eos>
    std::vector<double> log_probs;             // per row: sum of log p of the chosen tokens (incl. <eos>)
    std::vector<StopReason> stops;             // per row: why it ended (beam search: the best hypothesis)
    std::vector<Tensor> step_logits;           // with record_logits: one [B, V] per step
    std::vector<Hypothesis> hypotheses;        // beam search: every ended hypothesis, best score first
};

// Error, before any pass, when an input leaves no position to generate into:
// a decoder-only prompt already holding max_len tokens or more (an
// encoder-decoder's target starts as <bos>, one position, so only max_len 1
// leaves it none). The message names the input (its index when there are
// several), its length and max_len. greedy_decode and beam_search ask it
// first; with a sliding window (slide_window) every prompt has room.
void refuse_inputs_without_room(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                bool slide_window = false);

// The limit options.max_new_tokens means for `model`: its default resolved
// (kModelDefault), else the value itself (0: none but max_len). Error for
// another negative value.
int64_t new_token_limit(const Model& model, const GenerationOptions& options);

Generation greedy_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const GenerationOptions& options = {});

// The settings of sampling (the steps above). The defaults change nothing
// but the search: T = 1, every token kept.
struct Sampling {
    double temperature = 1.0;  // > 0 and finite
    int64_t top_k = 0;         // >= 1, or 0: all tokens (k >= V keeps all too)
    double top_p = 1.0;        // in (0, 1]; 1 keeps all
    uint64_t seed = 0;         // input row b draws from Random(seed + b)
};

// Error naming the field, its expected range and the value (e.g.
// "sampling: temperature must be a finite number > 0, got 0").
void check_sampling(const Sampling& sampling);

// Steps 1-6 above for one row of n logits: the kept tokens in draw order
// (step 3) and their q (summing to 1). Error for n < 1, a non-finite logit
// (naming its index) or bad settings.
struct SamplingDistribution {
    std::vector<int64_t> tokens;  // the kept tokens, most likely first
    std::vector<double> q;        // q[i]: the probability of tokens[i]
};
SamplingDistribution sampling_distribution(const float* logits, int64_t n, const Sampling& sampling);
// The same, into `out` (its buffers reused: a decoding step allocates nothing new).
void sampling_distribution(const float* logits, int64_t n, const Sampling& sampling, SamplingDistribution& out,
                           std::vector<int64_t>& order);
// Step 7: the token a uniform u in [0, 1) picks from a distribution.
int64_t draw_token(const SamplingDistribution& distribution, double u);
// Steps 1-7 with one uniform from `random`.
int64_t sample_token(const float* logits, int64_t n, const Sampling& sampling, Random& random);

// Generates like greedy_decode (batched, the same stopping), drawing each
// token as above instead of taking the argmax.
Generation sample_decode(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                         const Sampling& sampling, const GenerationOptions& options = {});

Generation beam_search(const Model& model, const std::vector<int64_t>& input, int64_t width,
                       double length_penalty = 1.0, const GenerationOptions& options = {});

// log softmax of one row of logits, in double: x_i - max - log sum exp(x - max).
std::vector<double> log_softmax(const float* logits, int64_t n);
// log sum_i exp(logits[i]) (in double, shifted by the maximum): log_softmax(logits)[i] = logits[i] - log_sum_exp.
double log_sum_exp(const float* logits, int64_t n);

}  // namespace tinyformer
