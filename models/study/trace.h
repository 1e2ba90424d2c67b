// Trace — the named intermediates of one forward pass, kept (docs/FORMAT.md
// section 3 has the table of names and shapes). A Trace is the Observer
// (layers/observer.h) a model's forward pass is given:
//
//   Trace trace(Trace::Detail::Everything);
//   model.encoder_decoder->encode(source, padding, &trace);   // src_embed.output, encoder.0.input, ...
//
// Detail::Weights keeps only each attention call's per-head weights (what
// `forward --attention`, `attention` and `probe` need); Detail::Everything
// keeps the whole table (`tinyformer trace`, `tinyformer explore`).
//
// Names, in the order the pass records them:
//   src_embed.output, tgt_embed.output (encoder_decoder) / embed.output   [B,T,D]
//   {stack}.{i}.input / .output                                           [B,T,D]
//   {stack}.{i}.{attn}.q .k .v .scores .mask .weights .z .output          (layers/observer.h)
//   {stack}.{i}.ffn.hidden                                                [B,L,F]
//   encoder.norm.output, decoder.norm.output, layers.norm.output          [B,T,D]
//   logits                                                                [B,T,V]
// stack: encoder, decoder or layers; attn: self_attn or cross_attn.
// {stack}.{i}.{attn} is the attention call's one name (models/transformer.h):
// a call's per-head weights are "{call}.weights", here and in `forward --attention`.
#pragma once

#include "layers/observer.h"

#include <map>
#include <string>
#include <vector>

namespace tinyformer {

class Trace final : public Observer {
public:
    enum class Detail { Weights, Everything };
    explicit Trace(Detail detail) : detail_(detail) {}

    bool wants_everything() const override { return detail_ == Detail::Everything; }
    void record(const std::string& name, const Tensor& value) override;
    void record_mask(const std::string& name, const BoolTensor& allowed) override;

    const std::vector<std::string>& names() const { return names_; }  // in the order recorded
    bool has(const std::string& name) const { return tensors_.count(name) != 0; }
    const Tensor& tensor(const std::string& name) const;   // Error naming the known names if absent
    const std::map<std::string, BoolTensor>& masks() const { return masks_; }
    const std::map<std::string, Tensor>& tensors() const { return tensors_; }

private:
    Detail detail_;
    std::vector<std::string> names_;
    std::map<std::string, Tensor> tensors_;
    std::map<std::string, BoolTensor> masks_;
};

}  // namespace tinyformer
