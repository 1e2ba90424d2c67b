// LayerNorm — nn.LayerNorm(D) at inference, over the last axis:
//   y = (x - mean) / sqrt(var + eps) * weight + bias,  var biased (divide by D)
//   x [..., D]   weight [D]   bias [D]
#pragma once

#include "engine/ops.h"

#include <utility>

namespace tinyformer {

struct LayerNorm {
    Tensor weight;  // [D], the gain (gamma)
    Tensor bias;    // [D], the shift (beta)
    float eps = 1e-5f;
    Tensor forward(Tensor x) const { return layer_norm(std::move(x), weight, bias, eps); }
};

}  // namespace tinyformer
