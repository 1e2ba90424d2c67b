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

}  // namespace tinyformer
