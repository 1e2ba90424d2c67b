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

namespace {

// SwiGLU's hidden layer silu(x W1^T) * (x W3^T). At a decoding step the two
// float products go as one split of their rows between the threads
// (engine/matmul.h linear_pair); Q8_0 weights each take their own product (runq.c's).
Tensor swiglu_hidden(const Linear& gate, const Linear& up, const Tensor& x) {
    if (!gate.q8.empty() || !up.q8.empty()) return swiglu(gate.forward(x), up.forward(x));
    auto [gate_x, up_x] = linear_pair(x, gate.weight, gate.bias, up.weight, up.bias);
    return swiglu(std::move(gate_x), up_x);
}

}  // namespace

Tensor FeedForward::forward(const Tensor& x, Observer* observer) const {
    if ((activation == Activation::SwiGlu) == linear3.weight.empty())
        fail("FeedForward: activation \"", activation_name(activation), "\" ",
             activation == Activation::SwiGlu ? "needs linear3 (the up projection), which is empty"
                                              : "takes no linear3, but one is given");
    Tensor hidden;  // [B, T, F]
    switch (activation) {
        case Activation::Relu: hidden = relu(linear1.forward(x)); break;
        case Activation::Gelu: hidden = gelu(linear1.forward(x)); break;
        case Activation::GeluTanh: hidden = gelu_tanh(linear1.forward(x)); break;
        case Activation::Silu: hidden = silu(linear1.forward(x)); break;
        case Activation::SwiGlu: hidden = swiglu_hidden(linear1, linear3, x); break;  // silu(gate) * up
    }
    if (observer && observer->wants_everything()) observer->record("hidden", hidden);
    return linear2.forward(hidden);  // [B, T, D]
}

}  // namespace tinyformer
