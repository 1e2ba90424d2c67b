#include "layers/feed_forward.h"

#include "engine/ops.h"

namespace tinyformer {

Tensor FeedForward::forward(const Tensor& x) const {
    const Tensor hidden = linear1.forward(x);  // [B, T, F]
    return linear2.forward(activation == Activation::Relu ? relu(hidden) : gelu(hidden));  // [B, T, D]
}

}  // namespace tinyformer
