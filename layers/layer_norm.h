// LayerNorm — a normalisation over the last axis, in one of three forms
// (the config's "norm", docs/FORMAT.md):
//
//   layer_norm (nn.LayerNorm(D) at inference):
//     y = (x - mean) / sqrt(var + eps) * weight + bias
//     var = sum (x - mean)^2 / D             the biased variance, eps inside the root
//   layer_norm_std (the Annotated Transformer's LayerNorm, a_2 and b_2 there):
//     y = weight * (x - mean) / (std + eps) + bias
//     std = sqrt(sum (x - mean)^2 / (D - 1))  the UNBIASED std, eps outside the root
//                                             (D >= 2: the config refuses D = 1)
//   rms_norm (RMSNorm, Zhang & Sennrich; llama2.c's and Llama's RMSNorm):
//     y = x / sqrt(mean(x^2) + eps) * weight
//     mean(x^2) = sum x^2 / D                 no mean is subtracted, eps inside the root,
//                                             never a bias (the config's "norm_bias" is false)
//
//   x [..., D]   weight [D]   bias [D], or empty when the model has none
//   (the config's "norm_bias": false, nanoGPT's bias=False): then y has no "+ bias".
//   eps is the config's "layer_norm_eps" in all three (llama2.c's norm_eps).
#pragma once

#include "engine/ops.h"

#include <utility>

namespace tinyformer {

enum class NormKind { LayerNorm, LayerNormStd, RmsNorm };

struct LayerNorm {
    Tensor weight;  // [D], the gain (gamma)
    Tensor bias;    // [D], the shift (beta); empty: none
    float eps = 1e-5f;
    NormKind kind = NormKind::LayerNorm;
    Tensor forward(Tensor x) const {
        switch (kind) {
            case NormKind::LayerNorm: return layer_norm(std::move(x), weight, bias, eps);
            case NormKind::LayerNormStd: return layer_norm_std(std::move(x), weight, bias, eps);
            case NormKind::RmsNorm:
                if (!bias.empty()) fail("LayerNorm: an rms_norm has no bias, got one of ", shape_string(bias.shape()));
                return rms_norm(std::move(x), weight, eps);
        }
        fail("LayerNorm: unknown norm kind ", static_cast<int>(kind));
    }
};

}  // namespace tinyformer
