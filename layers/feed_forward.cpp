#include "layers/feed_forward.h"

#include "engine/ops.h"

#include <utility>

namespace tinyformer {

Tensor FeedForward::forward(const Tensor& x, Observer* observer) const {
    Tensor hidden = linear1.forward(x);  // [B, T, F]
    hidden = activation == Activation::Relu ? relu(std::move(hidden)) : gelu(std::move(hidden));
    if (observer && observer->wants_everything()) observer->record("hidden", hidden);
    return linear2.forward(hidden);  // [B, T, D]
}

}  // namespace tinyformer
