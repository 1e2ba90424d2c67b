// Hooks — the places where a study instrument may change one pass of the
// model, and nothing else (models/study/interventions.h is their user; so
// are the next instruments: activation patching, the logit lens). The
// layers compute the lesson's formulas; a hook sees, and may change, what
// flows between two of their steps:
//
//   attention_mask    before softmax: the call's mask (the model's mask and,
//                     with ALiBi, its bias) may be replaced by another
//   attention_heads   after the heads, before W_O: z = Concat(heads) [B, L, D]
//                     may be changed in place (a head's Dh columns: merge_heads,
//                     engine/attention.h)
//   residual          an activation [B, L, D] at a named point, in place: the
//                     residual stream and what the sublayers add to it
//
// The points of `residual`, in the order the data flows (a post-LN layer
// norms after each add; "the stream after" is what the next step reads):
//
//   src_embed.output, tgt_embed.output, embed.output   the embedding: the stream before layer 0
//   {stack}.{i}.self_attn.output      self-attention's output (after W_O), before it is added
//   {stack}.{i}.after_self_attn       the stream after it: x + SA (pre-LN), norm1(x + SA) (post-LN)
//   {stack}.{i}.cross_attn.output     decoder only: cross-attention's output, before it is added
//   {stack}.{i}.after_cross_attn      the stream after it
//   {stack}.{i}.ffn.output            the FFN's output (after linear2), before it is added
//   {stack}.{i}.output                the stream after the FFN: the layer's output
//
// stack: encoder, decoder or layers. A layer's attention hooks fire inside
// its call, before that call's "output" point: for decoder layer i, the
// self-attention's mask and heads, decoder.i.self_attn.output,
// decoder.i.after_self_attn, the cross-attention's mask and heads, and so on.
// Where a point has a trace name (models/study/trace.h: the embeddings'
// outputs, {call}.output, {stack}.{i}.output) the trace records the tensor
// after the hook, the one that flows on: a trace of a hooked pass shows that
// pass. Likewise a trace's "mask" and "z" are the ones used.
//
// A hook call's `first` is the slot of its first query (or row): 0 in a
// whole pass, the self-attention cache's length before the step in a
// KV-cache decoding step (a decoder layer gives its cross-attention the same
// first slot). `whole_pass` says which.
//
// The hooks are given to the model (Model::set_hooks, or a HookScope for
// one scope: models/transformer.h), which hands them to every layer and
// attention module, so every pass honours them: a whole pass, a trace, and
// the decoding searches stepping over the KV cache (models/stepper.h). None
// by default: then no hook is called and nothing is copied. An Error that
// attention_mask or attention_heads throws starts with the module's name, as
// the call's own do (layers/multi_head_attention.h); one from `residual`
// reaches the caller as it was thrown.
//
// What a hook is given (AttentionCallInfo, ResidualPoint, their names
// included) is valid during that call only: copy what you keep.
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tinyformer {

// One attention call, as a hook sees it.
struct AttentionCallInfo {
    const std::string& name;  // the trace's call name: "decoder.1.cross_attn", "layers.2.self_attn"
    int64_t batch, heads;     // B, H
    int64_t queries, keys;    // L and S of the call's [L, S] matrix
    int64_t first;            // the slot of query 0 (see the top of this file)
    bool whole_pass;          // false: a KV-cache decoding step
};

// One residual point, as a hook sees it.
struct ResidualPoint {
    std::string name;         // "decoder.1.after_self_attn" (the list above)
    int64_t first;            // the slot of row 0 of the activation
    bool whole_pass;
};

class Hooks {
public:
    virtual ~Hooks() = default;
    // The mask to use instead of `mask` [B|1, H|1, L, S], or nothing to keep it.
    virtual std::optional<Mask> attention_mask(const AttentionCallInfo& /*call*/, const Mask& /*mask*/) const {
        return std::nullopt;
    }
    // z = Concat(heads) [B, L, D], before W_O.
    virtual void attention_heads(const AttentionCallInfo& /*call*/, Tensor& /*z*/) const {}
    // The activation x [B, L, D] at `point`.
    virtual void residual(const ResidualPoint& /*point*/, Tensor& /*x*/) const {}
};

// hooks->residual at the point `prefix` + `point` ("decoder.1" + ".output"),
// when there are hooks (the name is built only then).
inline void residual_hook(const Hooks* hooks, const std::string& prefix, const char* point, int64_t first,
                          bool whole_pass, Tensor& x) {
    if (hooks) hooks->residual({prefix.empty() ? point + 1 : prefix + point, first, whole_pass}, x);
}

}  // namespace tinyformer
