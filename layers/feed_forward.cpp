#include "layers/feed_forward.h"

#include "engine/ops.h"

#include <utility>

namespace tinyformer {

const char* activation_name(Activation activation) {
    switch (activation) {
        case Activation::Relu: return "relu";
        case Activation::Gelu: return "gelu";
        case Activation::GeluTanh: return "gelu_tanh";
        case Activation::Silu: return "silu";
        case Activation::SwiGlu: return "swiglu";
    }
    return "unknown";
}

Tensor FeedForward::forward(const Tensor& x, Observer* observer) const {
    if ((activation == Activation::SwiGlu) == linear3.weight.empty())
        fail("FeedForward: activation \"", activation_name(activation), "\" ",
             activation == Activation::SwiGlu ? "needs linear3 (the up projection), which is empty"
                                              : "takes no linear3, but one is given");
    if (activation == Activation::SwiGlu) {
        // gate and up together: at a decoding step, one split of both float
        // products' rows between the threads (engine/matmul.h linear_pair);
        // Q8_0 weights each through their own product (Linear::forward, runq.c's).
        const bool quantized = !linear1.q8.empty() || !linear3.q8.empty();
        auto [gate, up] = quantized ? std::pair{linear1.forward(x), linear3.forward(x)}
                                    : linear_pair(x, linear1.weight, linear1.bias, linear3.weight, linear3.bias);  // [B, T, F]
        Tensor hidden = swiglu(std::move(gate), up);  // silu(gate) * up
        if (observer && observer->wants_everything()) observer->record("hidden", hidden);
        return linear2.forward(hidden);  // [B, T, D]
    }
    Tensor hidden = linear1.forward(x);  // [B, T, F]
    switch (activation) {
        case Activation::Relu: hidden = relu(std::move(hidden)); break;
        case Activation::Gelu: hidden = gelu(std::move(hidden)); break;
        case Activation::GeluTanh: hidden = gelu_tanh(std::move(hidden)); break;
        case Activation::Silu: hidden = silu(std::move(hidden)); break;
        case Activation::SwiGlu: break;  // above
    }
    if (observer && observer->wants_everything()) observer->record("hidden", hidden);
    return linear2.forward(hidden);  // [B, T, D]
}

}  // namespace tinyformer
