// The logit lens, direct logit attribution and the residual stream's norms
// (issue #34, parts 2 and 3): what the residual stream "would say" after each
// layer of the stack that produces the logits, how much each head and each
// FFN pushes one token's logit, and how large the stream grows.
//
// The pass: the teacher-forced pass of models/study/teacher_forcing.h over the
// input and a target (given, or the greedy output). The stack is the one whose
// last layer feeds the head: "decoder" (encoder-decoder; the encoder reaches
// it only through cross-attention) or "layers" (single-stack). A recording
// hook (layers/hooks.h) copies the stream at "tgt_embed.output" / "embed.output"
// (the lens's layer "embed") and at "{stack}.{i}.output".
//
// The lens: each recorded stream x [1, n, D] goes through the model's own head,
// logits = unembed(x) (models/transformer.h: the final norm when the model has
// one, then W_U, tied or not), at every position. The answer at a position is
// the model's own next token there: the argmax of its real logits. Reported
// per layer and position: the top-K tokens with their probabilities, and the
// answer's rank (1 = on top) and probability.
//
// Direct logit attribution, pre-LN models only: the stream after the last
// layer is a sum,
//   x_N = embed + sum_i [ sum_h z_h W_O,h^T + b_O (each attention call of
//         layer i) + FFN_i ]
// where z_h are head h's Dh columns of Concat(heads) and W_O,h the matching
// columns of W_O. The final norm is linear once its scale s is frozen at the
// actual stream x_N (TransformerLens's frozen-scale attribution):
//   layer_norm       norm(x) = (x - mean(x)) / s * w + b    s = sqrt(var(x_N) + eps)
//   layer_norm_std   the same with s = std(x_N) + eps (unbiased std)
//   rms_norm         norm(x) = x / s * w                    s = sqrt(mean(x_N^2) + eps)
//   no final norm    norm(x) = x
// so logit_t = sum over parts p of (centre(p) / s * w) . W_U[t]  +  b . W_U[t] + b_U[t],
// and the parts sum to the model's logit exactly but for float rounding: the
// model sums in float, the attribution in double (the bound: kAttributionTolerance).
// What it does not say: a part's effect through later layers (it reads the
// part's direct path only), nor what the norm's scale would be without it.
// In a post-LN model each layer norms its own sum, x = norm(x + f(x)): the
// stream after the last layer is not a sum of the parts, so there is no direct
// attribution to give; attribute() refuses it, saying so.
#pragma once

#include "models/text.h"
#include "models/transformer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

struct LensOptions {
    int64_t top = 5;                              // K >= 1 (at most the vocabulary is shown)
    std::optional<std::vector<int64_t>> target;   // std::nullopt: the greedy output
    std::optional<int64_t> attribute;             // a token id of the output vocabulary, or none
};

struct LensToken {
    int64_t id = 0;
    std::string label;
    double probability = 0.0;
};

// One layer at one position.
struct LensCell {
    std::vector<LensToken> top;     // the K most probable, best first
    int64_t answer_rank = 0;        // 1 + how many tokens have a larger logit than the answer's
    double answer_probability = 0.0;
};

struct AttributionPart {
    std::string name;   // "embed", "layers.1.self_attn.head2", "layers.1.self_attn.bias", "layers.1.ffn", "bias"
    double logit = 0.0; // its direct contribution to the token's logit
};

struct Attribution {
    int64_t token = 0;
    std::string label;
    int64_t position = 0;          // the answer position: the one that predicts the first output token
    double logit = 0.0;            // the model's logit of `token` there
    double sum = 0.0;              // the sum of the parts
    std::string norm;              // how the final norm was frozen: "layer_norm", "layer_norm_std", "rms_norm", "none"
    double scale = 1.0;            // s (1 without a final norm)
    std::vector<AttributionPart> parts;
};

// |sum - logit| <= kAttributionTolerance * (1 + sum over parts of |part|):
// float32 rounding of the model's own sums (a few ulps of the largest term).
constexpr double kAttributionTolerance = 1e-5;

struct LensReport {
    std::string stack;                        // "decoder" or "layers"
    std::string text, target;                 // the input and the target, as text (or ids)
    std::vector<std::string> layers;          // "embed", "{stack}.0", ...
    std::vector<int64_t> tokens;              // the tokens the stack reads, one per position
    std::vector<std::string> positions;       // their labels
    std::vector<int64_t> answers;             // the model's next token at each position (argmax of its logits)
    std::vector<std::string> answer_labels;
    int64_t answer_position = 0;              // the position predicting the first output token
    std::vector<std::vector<LensCell>> cells; // [layer][position]
    std::vector<std::vector<double>> norms;   // [layer][position]: ||x||_2 of the stream
    Tensor logits;                            // the model's logits [1, n, V]
    std::vector<Tensor> layer_logits;         // the lens's logits per layer [1, n, V]; the last equals `logits`
    std::optional<Attribution> attribution;
};

// One logits row [vocabulary] as the lens reports it: the `top` most probable
// tokens (ties: the lower id first, as argmax), and `answer`'s rank and
// probability (softmax in double). Also the patch view's top tokens (tools/explore/live.h).
LensCell lens_cell(const float* logits, int64_t vocabulary, int64_t answer, int64_t top, const ModelText& text);

// The lens over the model's input tokens (framed by model_input) and the
// target. Error for top < 1, a token to attribute outside the output
// vocabulary, or attribution in a post-LN model.
LensReport logit_lens(Model& model, const std::vector<int64_t>& tokens, const LensOptions& options = {});

}  // namespace tinyformer
