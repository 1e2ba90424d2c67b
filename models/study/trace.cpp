#include "models/study/trace.h"

#include "engine/error.h"

namespace tinyformer {

void Trace::record(const std::string& name, const Tensor& value) {
    if (!tensors_.count(name) && !masks_.count(name)) names_.push_back(name);
    tensors_[name] = value;
}

void Trace::record_mask(const std::string& name, const BoolTensor& allowed) {
    if (!tensors_.count(name) && !masks_.count(name)) names_.push_back(name);
    masks_[name] = allowed;
}

const Tensor& Trace::tensor(const std::string& name) const {
    auto found = tensors_.find(name);
    if (found == tensors_.end()) fail("trace: no tensor named '", name, "' was recorded");
    return found->second;
}

std::string attention_output_name(const std::string& trace_prefix) {
    // stack.layer.attn
    const size_t first = trace_prefix.find('.'), second = trace_prefix.find('.', first + 1);
    if (first == std::string::npos || second == std::string::npos)
        fail("trace: '", trace_prefix, "' is not an attention call (stack.layer.self_attn|cross_attn)");
    const std::string stack = trace_prefix.substr(0, first), layer = trace_prefix.substr(first + 1, second - first - 1);
    const std::string attn = trace_prefix.substr(second + 1);
    std::string name = "attention." + stack + "." + layer;
    if (stack == "decoder") name += attn == "cross_attn" ? ".cross" : ".self";
    return name;
}

AttentionRecord Trace::attention_weights() const {
    const std::string suffix = ".weights";
    AttentionRecord record;
    for (const auto& [name, value] : tensors_)
        if (name.ends_with(suffix)) record[attention_output_name(name.substr(0, name.size() - suffix.size()))] = value;
    return record;
}

}  // namespace tinyformer
