// Linear — nn.Linear at inference: y = x W^T + b.
//   x [..., in]   weight [out, in] (PyTorch layout)   bias [out]   y [..., out]
#pragma once

#include "engine/matmul.h"

namespace tinyformer {

struct Linear {
    Tensor weight;  // [out, in]
    Tensor bias;    // [out]
    Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
};

}  // namespace tinyformer
