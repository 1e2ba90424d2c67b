// Probe — is a high attention weight an explanation of the output? Two
// interventions on a trained model, each reported beside the attention
// weights it would be read from (lesson 10.3, section 11: a weight is the
// coefficient of one head's value mixture, not a causal explanation).
//
// The example: the user's input tokens (models/text.h: text through the
// model's tokenizer, or ids) and a target, given or the model's greedy output.
// Its score is the teacher-forced log-probability of the output sequence,
//   log p = sum_t log softmax(logits_t)[y_t]     y = target tokens, then <eos>
//   encoder-decoder: the decoder reads <bos> y_0 .. y_{T-1}; query t predicts y_t
//   decoder-only:    the model reads <bos> prompt y_0 .. y_{T-1}; the position
//                    P-1+t predicts y_t (P = prompt length with <bos>);
//                    a prefix_lm model's prefix is <bos> + prompt
// The scored queries are the decoder's positions (encoder-decoder) or the
// positions P-1 .. P+T-1 (decoder-only): the ones whose logits enter log p.
//
// Head ablation: for every attention call (stack, layer, self/cross) and head
// h, that head's output is set to 0 before W_O at every position (a hook,
// InterventionHooks of models/study/interventions.h). Reported: d log p = log p(ablated)
// - log p, and the greedy output with the head zeroed. Beside it, the head's
// weights A [L, S] in the unablated run, over its queries q (every source
// position for the encoder, the scored queries otherwise):
//   mean max weight  = mean_q max_s A[q, s]              (1 = every query looks at one key)
//   top key          = the key s with the largest sum_q A[q, s], and its
//                      share = that sum / number of queries
//
// Token perturbation: each input token in turn — each source position
// (encoder-decoder) or each prompt character, <bos> excluded (decoder-only) —
// is replaced by <unk> (or options.replacement); the target stays. Reported: d log p and the greedy
// output of the perturbed input. Beside it, the attention share the token
// received in the unperturbed run:
//   share(s) = mean over layers l, heads h and scored queries q of A_l[h, q, s]
//   encoder-decoder: the decoder's cross-attention (shares sum to 1 over the
//                    source); decoder-only: the self-attention (the rest of
//                    each row goes to <bos> and to the continuation).
//
// The model's hooks are changed only while an ablation runs, and restored
// after, also when an Error is thrown.
#pragma once

#include "models/decoding.h"
#include "models/study/teacher_forcing.h"

#include <optional>

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

// What the probe scores: the model's input ids (the source, or <bos> +
// prompt) and the target tokens (without <bos> and <eos>).
struct ProbeExample {
    std::vector<int64_t> input, target;
};

// The example of the user's tokens (framed by model_input): target = the
// given tokens, or the greedy output. Error when an id is outside the
// vocabulary or the sequence does not fit the model's max_len.
ProbeExample probe_example(const Model& model, const std::vector<int64_t>& tokens,
                           const std::optional<std::vector<int64_t>>& target);

// Teacher-forced log p(target, <eos> | input), summed over the T+1 tokens.
double target_log_prob(const Model& model, const ProbeExample& example);

// One head of one attention call: the call's name ("decoder.1.cross_attn",
// models/transformer.h) and the head index.
struct HeadRef {
    std::string attention;
    int64_t head = 0;
};

struct AblationResult {
    double log_prob = 0.0;
    double delta_log_prob = 0.0;       // log_prob - log p of the unablated model
    std::vector<int64_t> greedy;       // the greedy output with the heads zeroed
};

// Zeroes `heads` (on top of whatever the model's hooks do), scores the example and
// decodes greedily, then restores the model. No heads: delta 0.
AblationResult ablate_heads(Model& model, const ProbeExample& example, const std::vector<HeadRef>& heads);

struct HeadProbe {
    std::string attention;               // the call: "encoder.0.self_attn", "decoder.1.cross_attn", "layers.2.self_attn"
    std::string stack, kind;             // "encoder" / "decoder" / "layers", "self" / "cross"
    int64_t layer = 0, head = 0;
    double mean_max_weight = 0.0;
    std::string top_key;                 // the key's token
    int64_t top_key_position = 0;        // its position among the keys
    double top_key_share = 0.0;
    double delta_log_prob = 0.0;
    std::string greedy_output;
    bool output_changed = false;
};

struct TokenProbe {
    int64_t position = 0;     // in the model's input (decoder-only: <bos> is position 0)
    std::string token;        // its label (models/text.h)
    double attention_share = 0.0;
    double delta_log_prob = 0.0;
    std::string greedy_output;
    bool output_changed = false;
};

struct ProbeOptions {
    std::optional<std::vector<int64_t>> target;  // std::nullopt: the target is the greedy output
    std::string replacement = "<unk>";           // the token that replaces each input token in turn,
    std::optional<int64_t> replacement_id;       // or this id (for a model without a vocabulary)
};

struct ProbeReport {
    std::string text, target, greedy_output;  // the input (without <bos>), as text or ids; target == greedy_output unless given
    bool target_given = false;
    std::string replacement;
    int64_t scored_tokens = 0;                 // T + 1 (the target and <eos>)
    double log_prob = 0.0;
    std::string share_source;                  // "cross-attention" or "self-attention"
    std::vector<HeadProbe> heads;              // in the order the model runs them, heads 0..H-1
    std::vector<TokenProbe> tokens;            // one per perturbed input token, in order
};

// Both interventions; the replacement token must be in the model's
// vocabulary (or given as an id). Needs bos_id and eos_id.
ProbeReport probe(Model& model, const std::vector<int64_t>& tokens, const ProbeOptions& options = {});

}  // namespace tinyformer
