// Timing an encoder layer as the model runs it — for `tinyformer cost --measure`.
//
// A model's pass calls EncoderLayer::forward for each layer (models/transformer.cpp).
// Timed here are the calls that forward makes (layers/encoder_layer.cpp), in its
// order, post-LN, no mask, no padding, each with a stopwatch around it:
//
//   self-attention  the layer's own call: [Q | K | V] = x in_proj_weight^T + b
//                   in one product, K and V kept for the pass, the core on the
//                   path the engine chooses (streaming: no weights are wanted),
//                   then W_O
//   other           x + self-attention(x), norm1; h + FFN(h), norm2
//   FFN             the layer's feed_forward.forward
//
// and apart, not part of the pass: the core alone, the same engine call on
// the same operands the layer hands it (Q a view of the fused product, K and
// V in a cache), so that its share can sit beside the counted one.
// layer_forward_timed returns what EncoderLayer::forward returns, bit for bit
// (tests/test_layer_timing.cpp checks it, and `cost --measure` says so).
#pragma once

#include "engine/random.h"
#include "layers/encoder_layer.h"
#include "models/cost.h"

#include <vector>

namespace tinyformer::measure {

// Seconds spent in each part of the timed forward, summed over layers.
struct PartTimes {
    double self_attention = 0, feed_forward = 0, other = 0;  // the pass: they add up to it
    double core = 0;                                         // the core alone, timed apart
    double total() const { return self_attention + feed_forward + other; }
};

// An encoder layer with random weights (post-LN, ReLU) of `shape`, and the
// attention weights it was built from, which the core-alone call projects with.
struct RandomLayer {
    EncoderLayer layer;
    MultiHeadAttentionWeights attention;
};
RandomLayer make_random_layer(Random& random, const CostShape& shape);

// What one timed forward gives back: the layer's output and the attention
// path its self-attention call ran.
struct TimedForward {
    Tensor output;  // [B, T, D]
    AttentionPath path;
};

// x [B, T, D] -> EncoderLayer::forward(x, Mask(), Padding()), each part's
// seconds added to `times`.
TimedForward layer_forward_timed(const RandomLayer& random_layer, const Tensor& x, PartTimes& times);

struct Timing {
    PartTimes per_pass;  // seconds per forward pass of the N-layer stack, each part its fastest pass
    int passes = 0;
};

// One warm-up pass, then passes until half a second has gone (at least 2, at
// most 50); each part's fastest, which a busy machine disturbs least.
// Progress goes to stderr, naming T = `length`.
Timing time_stack(const std::vector<RandomLayer>& layers, const Tensor& input, int64_t length);

// The timed steps against EncoderLayer::forward, once over the whole stack:
// the largest |difference| of the outputs (0 when they are the layer's calls)
// and the path the self-attention calls ran.
struct StackCheck {
    double largest_difference = 0;
    AttentionPath path = AttentionPath::Automatic;
};
StackCheck check_against_forward(const std::vector<RandomLayer>& layers, const Tensor& input);

}  // namespace tinyformer::measure
