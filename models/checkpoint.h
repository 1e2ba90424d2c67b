// Checkpoint — a model's .safetensors file (FORMAT.md section 1).
//   metadata "config": the ModelConfig as a JSON string (required)
//   metadata "vocab":  a JSON array of token strings, index = id (optional)
//   tensors: PyTorch state_dict names, F32 (F16 / BF16 widened on load)
// Loading takes every expected tensor by name and refuses, naming the file
// and the tensor: a missing tensor, a wrong shape or dtype, a non-finite
// value, and (refuse_unknown) any tensor that the model does not use.
#pragma once

#include "engine/safetensors.h"
#include "models/config.h"

#include <set>
#include <string>
#include <vector>

namespace tinyformer {

class Checkpoint {
public:
    static Checkpoint open(const std::string& path);

    const ModelConfig& config() const { return config_; }
    const std::vector<std::string>& vocab() const { return vocab_; }
    const SafetensorsFile& file() const { return file_; }

    // The tensor `name`, checked against `expected` and for finiteness.
    Tensor take(const std::string& name, const Shape& expected);
    // Every tensor not taken is an unknown extra tensor: Error naming it.
    void refuse_unknown() const;

private:
    SafetensorsFile file_;
    ModelConfig config_;
    std::vector<std::string> vocab_;
    std::set<std::string> taken_;
};

}  // namespace tinyformer
