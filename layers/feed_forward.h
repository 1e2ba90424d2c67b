// FeedForward — the position-wise FFN of nn.TransformerEncoderLayer /
// nn.TransformerDecoderLayer (dropout is the identity at inference), in two shapes
// (the config's "activation", formulas in engine/ops.h):
//
//   plain:  FFN(x) = linear2(activation(linear1(x)))
//     x [B, T, D] -> linear1 [F, D] -> [B, T, F] -> activation -> linear2 [D, F] -> [B, T, D]
//     activation:
//       relu       max(0, h)
//       gelu       h * 0.5 * (1 + erf(h / sqrt 2))                       the exact GELU
//       gelu_tanh  0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))       the tanh approximation
//                  (GPT-2's gelu_new, minGPT's NewGELU, nn.GELU(approximate="tanh"))
//       silu       h * sigmoid(h) = h / (1 + exp(-h))                    (nn.SiLU, "swish")
//
//   gated, swiglu (Shazeer 2020; llama2.c's w2(silu(w1 x) * w3 x)):
//     FFN(x) = linear2(silu(linear1(x)) * linear3(x))
//     x [B, T, D] -> linear1 [F, D] -> gate [B, T, F] -> silu --.
//                                                               * -> [B, T, F] -> linear2 [D, F] -> [B, T, D]
//     x [B, T, D] -> linear3 [F, D] -> up   [B, T, F] ---------'
//     (three matrices of F x D numbers instead of two: llama2.c picks F about 8/3 D
//     so that the FFN keeps the weight count of a plain 4D one)
//
//   linear1, linear2 (and linear3) may have no bias (the config's "bias": false).
//   linear3 is empty unless the activation is swiglu.
#pragma once

#include "layers/linear.h"
#include "layers/observer.h"

#include <string>

namespace tinyformer {

enum class Activation { Relu, Gelu, GeluTanh, Silu, SwiGlu };

const char* activation_name(Activation activation);  // "relu", "gelu", "gelu_tanh", "silu", "swiglu"

struct FeedForward {
    Linear linear1;  // [F, D]
    Linear linear2;  // [D, F]
    Activation activation = Activation::Relu;
    Linear linear3{};  // [F, D], swiglu only (the "up" projection, llama2.c's w3); empty otherwise
    // observer (wanting everything): "hidden" [B, T, F], what goes into linear2 (after
    // the activation; for swiglu the product silu(linear1 x) * linear3 x).
    Tensor forward(const Tensor& x, Observer* observer = nullptr) const;
};

}  // namespace tinyformer
