// FeedForward — the position-wise FFN of nn.TransformerEncoderLayer /
// nn.TransformerDecoderLayer (dropout is the identity at inference):
//   FFN(x) = linear2(activation(linear1(x)))
//   x [B, T, D] -> linear1 [F, D] -> [B, T, F] -> activation -> linear2 [D, F] -> [B, T, D]
//   activation (the config's "activation", engine/ops.h):
//     relu       max(0, h)
//     gelu       h * 0.5 * (1 + erf(h / sqrt 2))                       the exact GELU
//     gelu_tanh  0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))       the tanh approximation
//                (GPT-2's gelu_new, minGPT's NewGELU, nn.GELU(approximate="tanh"))
//   linear1 and linear2 may have no bias (the config's "bias": false).
#pragma once

#include "layers/linear.h"
#include "layers/observer.h"

#include <string>

namespace tinyformer {

enum class Activation { Relu, Gelu, GeluTanh, Silu, SwiGlu };  // Silu, SwiGlu: issue #23 (not yet computed)

const char* activation_name(Activation activation);  // "relu", "gelu", "gelu_tanh", "silu", "swiglu"

struct FeedForward {
    Linear linear1;  // [F, D]
    Linear linear2;  // [D, F]
    Activation activation = Activation::Relu;
    // observer (wanting everything): "hidden" [B, T, F], after the activation.
    Tensor forward(const Tensor& x, Observer* observer = nullptr) const;
};

}  // namespace tinyformer
