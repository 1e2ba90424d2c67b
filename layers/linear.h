// Linear — nn.Linear at inference: y = x W^T + b, or y = x W^T when the layer
// has no bias (nn.Linear(bias=False); the config's "bias" / "head_bias": false).
//   x [..., in]   weight [out, in] (PyTorch layout)   bias [out], or empty: none   y [..., out]
#pragma once

#include "engine/matmul.h"

namespace tinyformer {

struct Linear {
    Tensor weight;  // [out, in]
    Tensor bias;    // [out]; empty: no bias
    Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
};

}  // namespace tinyformer
