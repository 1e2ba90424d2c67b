// Attention maps — every attention call of one forward pass of a model on
// one example, with what a picture of it needs: the per-head weights, the
// tokens of the queries and keys, and the mask that was applied.
//
// encoder-decoder: the source is read by the encoder; the decoder reads
//   <bos> followed by the target (given, or the model's own greedy output),
//   so decoder query t is the position that predicts target token t.
// decoder-only: the sequence is <bos> prompt continuation; a prefix_lm
//   model's prefix is <bos> + prompt.
#pragma once

#include "models/toy_tasks.h"

#include <string>
#include <vector>

namespace tinyformer {

struct AttentionMap {
    std::string stack;   // "encoder", "decoder" or "layers" (single-stack)
    int64_t layer = 0;
    std::string kind;    // "self" or "cross"
    std::string mask_name;  // e.g. "causal", "prefix-LM (prefix 5)", "none (bidirectional)"
    Tensor weights;         // [1, H, L, S], per head, never averaged
    Mask mask;              // what the model applied (broadcasts to [1, H, L, S])
    std::vector<std::string> query_tokens, key_tokens;  // [L], [S]
};

struct AttentionRun {
    std::vector<std::string> source_tokens, target_tokens;  // what was read (target empty for single-stack)
    std::string output;                                      // the target / continuation as text
    std::vector<AttentionMap> maps;
};

// target: the decoder's target text (encoder-decoder) or the continuation
// (decoder-only); empty = the model's greedy output.
AttentionRun attention_maps(const Model& model, const std::string& text, const std::string& target, bool has_target);

}  // namespace tinyformer
