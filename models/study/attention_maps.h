// Attention maps — every attention call of one forward pass of a model on
// one example, with what a picture of it needs: the per-head weights, the
// tokens of the queries and keys, and the mask that was applied.
//
// The example is the user's tokens (models/text.h: text through the model's
// tokenizer, or ids) and optionally a target:
// encoder-decoder: the source is read by the encoder; the decoder reads
//   <bos> (when the config has one) followed by the target (given, or the
//   model's own greedy output), so decoder query t predicts target token t.
//   A model without bos_id or eos_id gets no greedy target here: give it.
// decoder-only: the sequence is [<bos>] prompt [suffix] continuation (the
//   target, or the greedy output when the model has an eos_id to stop at,
//   else none: `explore` decodes such a model itself, to --max-new-tokens); a prefix_lm model's prefix is everything before the
//   continuation.
// encoder-only: the tokens, bidirectional self-attention; no target.
#pragma once

#include "models/decoding.h"
#include "models/study/teacher_forcing.h"
#include "models/study/trace.h"

#include <optional>

#include <string>
#include <vector>

namespace tinyformer {

struct AttentionMap {
    std::string name;    // the call's one name, "decoder.1.cross_attn" (models/transformer.h)
    std::string stack;   // "encoder", "decoder" or "layers" (single-stack)
    int64_t layer = 0;
    std::string kind;    // "self" or "cross"
    std::string mask_name;  // e.g. "causal", "prefix-LM (prefix 5)", "none (bidirectional)"
    int64_t prefix = 0;     // prefix-LM: the prefix length (positions 0..prefix-1); else 0
    Tensor weights;         // [1, H, L, S], per head, never averaged
    Mask mask;              // what the model applied (broadcasts to [1, H, L, S])
    std::vector<std::string> query_tokens, key_tokens;  // [L], [S]
};

struct AttentionRun {
    std::vector<std::string> source_tokens, target_tokens;  // what was read (target empty for single-stack)
    std::vector<int64_t> target;                             // the target / continuation tokens
    std::string output;                                      // ... as text (ids without a vocabulary)
    std::vector<AttentionMap> maps;  // in the order the model runs them
    TeacherForced pass;              // the pass itself: tokens read, logits
    Trace trace{Trace::Detail::Weights};  // what it recorded (Everything when asked)
};

// tokens: the user's input tokens; target: the decoder's target
// (encoder-decoder) or the continuation (decoder-only), std::nullopt = the
// model's greedy output.
// detail: Everything keeps the whole trace of the pass in run.trace.
AttentionRun attention_maps(const Model& model, const std::vector<int64_t>& tokens,
                            const std::optional<std::vector<int64_t>>& target,
                            Trace::Detail detail = Trace::Detail::Weights);

// Where an encoder-decoder model looks while it writes: for each output
// token (the target's tokens, then <eos>), the cross-attention weights of
// the decoder query that predicts it (decoder row t predicts output token t),
// averaged over the heads of one decoder layer, and the source positions in
// order of that weight, largest first.
struct OutputAlignment {
    std::string output_token;          // what this row predicts
    std::string query_token;           // what the decoder reads at this row
    std::vector<float> weights;        // [S], the mean over heads
    std::vector<int64_t> by_weight;    // source positions, largest weight first (ties: lower position first)
};
struct CrossAlignment {
    int64_t layer = 0;
    std::vector<std::string> source_tokens;
    std::vector<OutputAlignment> rows;
};
// Error for a model that is not encoder-decoder, or a layer it has not.
CrossAlignment cross_alignment(const AttentionRun& run, int64_t layer);

}  // namespace tinyformer
