#include "tools/measure/layer_timing.h"

#include "engine/ops.h"
#include "layers/kv_cache.h"
#include "tools/measure/measure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tinyformer::measure {

namespace {

template <typename Run>
auto timed(double& seconds, Run&& run) {
    const Clock::time_point start = Clock::now();
    auto result = run();
    seconds += seconds_since(start);
    return result;
}

// The core alone, on the operands the layer's self-attention hands the engine:
// Q, K, V from one product [B, T, 3D], Q read in place, K and V in a cache.
void time_core_alone(const RandomLayer& random_layer, const Tensor& x, double& seconds) {
    const MultiHeadAttention& attention = random_layer.layer.self_attn;
    const Tensor qkv = linear(x, random_layer.attention.in_proj_weight, random_layer.attention.in_proj_bias);
    const int64_t B = x.dim(0), T = x.dim(1), D = attention.d_model();
    const auto part = [&](int64_t p) { return ConstBatchView{qkv.data() + p * D, B, T, D, T * 3 * D, 3 * D}; };
    KVCache cache;
    cache.append(part(1), part(2));
    timed(seconds, [&] {
        return multi_head_scaled_dot_product_attention(part(0), cache.keys(), cache.values(), attention.heads(), Mask(),
                                                       attention_options(Padding()));
    });
}

// The smaller of two timings, part by part: the pass least disturbed by other work.
PartTimes fastest(const PartTimes& a, const PartTimes& b) {
    return {std::min(a.self_attention, b.self_attention), std::min(a.feed_forward, b.feed_forward),
            std::min(a.other, b.other), std::min(a.core, b.core)};
}

}  // namespace

RandomLayer make_random_layer(Random& random, const CostShape& shape) {
    const int64_t D = shape.d_model, F = shape.ff;
    const float d_scale = 1.0f / std::sqrt(static_cast<float>(D)), f_scale = 1.0f / std::sqrt(static_cast<float>(F));
    MultiHeadAttentionWeights attention{random.normal_tensor({3 * D, D}, d_scale), random.normal_tensor({3 * D}, 0.02f),
                                        random.normal_tensor({D, D}, d_scale), random.normal_tensor({D}, 0.02f)};
    FeedForward feed_forward{Linear{random.normal_tensor({F, D}, d_scale), random.normal_tensor({F}, 0.02f)},
                             Linear{random.normal_tensor({D, F}, f_scale), random.normal_tensor({D}, 0.02f)},
                             Activation::Relu};
    LayerNorm norm{Tensor::filled({D}, 1.0f), Tensor({D}), 1e-5f};
    return {EncoderLayer{MultiHeadAttention(attention, shape.heads), std::move(feed_forward), norm, norm, false},
            std::move(attention)};
}

// EncoderLayer::forward's calls with norm_first = false and no observer:
// x = norm1(x + self_attn(x)), x = norm2(x + FFN(x)).
TimedForward layer_forward_timed(const RandomLayer& random_layer, const Tensor& x, PartTimes& times) {
    const EncoderLayer& layer = random_layer.layer;
    const Mask mask;
    const Padding padding;
    KVCache whole_sequence;  // as the layer's, in a pass without a cache: the keys and values of x alone
    AttentionResult attended = timed(times.self_attention, [&] {  // [B, T, D]
        return layer.self_attn.forward_appending(x, whole_sequence, mask, attention_options(padding));
    });
    const Tensor h = timed(times.other, [&] { return layer.norm1.forward(add(std::move(attended.output), x)); });
    Tensor transformed = timed(times.feed_forward, [&] { return layer.feed_forward.forward(h); });  // [B, T, D]
    Tensor output = timed(times.other, [&] { return layer.norm2.forward(add(std::move(transformed), h)); });
    time_core_alone(random_layer, x, times.core);
    return {std::move(output), attended.path};
}

Timing time_stack(const std::vector<RandomLayer>& layers, const Tensor& input, int64_t length) {
    const auto pass = [&] {
        PartTimes times;
        Tensor x = input;
        for (const RandomLayer& layer : layers) x = layer_forward_timed(layer, x, times).output;
        return times;
    };
    std::fprintf(stderr, "tinyformer cost: T=%lld: warm-up pass\n", static_cast<long long>(length));
    const PartTimes warm_up = pass();
    std::fprintf(stderr, "tinyformer cost: T=%lld: timing passes (%.2f s each)\n", static_cast<long long>(length),
                 warm_up.total() + warm_up.core);
    Timing timing;
    const Clock::time_point start = Clock::now();
    while (timing.passes < 2 || (timing.passes < 50 && seconds_since(start) < 0.5)) {
        const PartTimes times = pass();
        timing.per_pass = timing.passes == 0 ? times : fastest(timing.per_pass, times);
        ++timing.passes;
    }
    return timing;
}

StackCheck check_against_forward(const std::vector<RandomLayer>& layers, const Tensor& input) {
    StackCheck check;
    PartTimes ignored;
    Tensor stepwise = input, reference = input;
    for (const RandomLayer& one : layers) {
        TimedForward timed_forward = layer_forward_timed(one, stepwise, ignored);
        stepwise = std::move(timed_forward.output);
        check.path = timed_forward.path;
        reference = one.layer.forward(reference, Mask(), Padding());
    }
    for (int64_t i = 0; i < stepwise.numel(); ++i)
        check.largest_difference = std::max(
            check.largest_difference, static_cast<double>(std::fabs(stepwise.data()[i] - reference.data()[i])));
    return check;
}

}  // namespace tinyformer::measure
