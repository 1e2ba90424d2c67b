// Linear — nn.Linear at inference: y = x W^T + b, or y = x W^T when the layer
// has no bias (nn.Linear(bias=False); the config's "bias" / "head_bias": false).
//   x [..., in]   weight [out, in] (PyTorch layout)   bias [out], or empty: none   y [..., out]
#pragma once

#include "engine/matmul.h"
#include "engine/quant/q8_0.h"

namespace tinyformer {

//   With a Q8_0 weight (engine/quant/q8_0.h; docs/FORMAT.md) the product is
//   runq.c's int8 one, and `weight` holds the same numbers dequantized.
struct Linear {
    Tensor weight;  // [out, in]
    Tensor bias;    // [out]; empty: no bias
    Q8Matrix q8{};  // [out, in] int8 in groups with scales, or empty: the product reads `weight`
    Tensor forward(const Tensor& x) const {
        if (q8.empty()) return linear(x, weight, bias);
        return linear_q8(x, q8.view(), bias.empty() ? nullptr : bias.data());
    }
};

}  // namespace tinyformer
