// FeedForward — the position-wise FFN of nn.TransformerEncoderLayer /
// nn.TransformerDecoderLayer (dropout is the identity at inference):
//   FFN(x) = linear2(activation(linear1(x)))
//   x [B, T, D] -> linear1 [F, D] -> [B, T, F] -> activation -> linear2 [D, F] -> [B, T, D]
//   activation: ReLU max(0, h), or exact GELU h * 0.5 * (1 + erf(h / sqrt 2))
#pragma once

#include "layers/linear.h"
#include "layers/observer.h"

#include <string>

namespace tinyformer {

enum class Activation { Relu, Gelu };

struct FeedForward {
    Linear linear1;  // [F, D]
    Linear linear2;  // [D, F]
    Activation activation = Activation::Relu;
    // observer (wanting everything): "hidden" [B, T, F], after the activation.
    Tensor forward(const Tensor& x, Observer* observer = nullptr) const;
};

}  // namespace tinyformer
