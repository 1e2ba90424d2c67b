// Observer — the named intermediates of one forward pass, handed to whoever
// asked for them. A layer calls its observer (when it has one) with names
// relative to itself; the caller gives each layer a PrefixedObserver that
// puts the layer's place in front, so that a model's names read
//
//   decoder.1.cross_attn.scores      (stack . layer . attention . what)
//
// The names a layer gives (docs/FORMAT.md section 3 has the whole table):
//   MultiHeadAttention  q, k, v      [B,L,D], [B,S,D], [B,S,D] after the projections
//                       scores       [B,H,L,S]  Q K^T / sqrt(Dk), before the mask
//                       mask         [B,L,S]    U8, 1 = may attend
//                       weights      [B,H,L,S]  after softmax
//                       z            [B,L,D]    Concat(heads), before W_O
//                       output       [B,L,D]    after W_O
//   FeedForward         hidden       [B,L,F]    what goes into linear2: after the activation
//                                              (swiglu: silu(linear1 x) * linear3 x)
//   Encoder/DecoderLayer input, output [B,L,D]; self_attn.*, cross_attn.*, ffn.*
//
// An observer that wants only the attention weights (wants_everything()
// false) is given only `weights`; nothing else is computed for it. Asking
// for weights or scores makes attention take its materialized path. Layers
// and engine know nothing of files: models/study/trace.h keeps the record.
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <optional>
#include <string>

namespace tinyformer {

class Observer {
public:
    virtual ~Observer() = default;
    virtual bool wants_everything() const = 0;
    virtual void record(const std::string& name, const Tensor& value) = 0;
    virtual void record_mask(const std::string& name, const BoolTensor& allowed) = 0;
};

// Passes every name on to `parent` as prefix + name.
class PrefixedObserver final : public Observer {
public:
    PrefixedObserver(Observer& parent, std::string prefix) : parent_(parent), prefix_(std::move(prefix)) {}
    bool wants_everything() const override { return parent_.wants_everything(); }
    void record(const std::string& name, const Tensor& value) override { parent_.record(prefix_ + name, value); }
    void record_mask(const std::string& name, const BoolTensor& allowed) override {
        parent_.record_mask(prefix_ + name, allowed);
    }

private:
    Observer& parent_;
    std::string prefix_;
};

// The observer for a part named `prefix` ("ffn."), or nullptr when there is none.
inline std::optional<PrefixedObserver> observe_part(Observer* observer, const std::string& prefix) {
    if (!observer) return std::nullopt;
    return PrefixedObserver(*observer, prefix);
}

}  // namespace tinyformer
