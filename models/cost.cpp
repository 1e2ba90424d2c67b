#include "models/cost.h"

#include "engine/error.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace tinyformer {

namespace {

// Products and sums that fail instead of wrapping around.
int64_t product(std::initializer_list<int64_t> factors) {
    int64_t result = 1;
    for (int64_t factor : factors)
        if (__builtin_mul_overflow(result, factor, &result))
            fail("cost: a count overflows 64 bits; use smaller sizes");
    return result;
}

int64_t sum(std::initializer_list<int64_t> terms) {
    int64_t result = 0;
    for (int64_t term : terms)
        if (__builtin_add_overflow(result, term, &result)) fail("cost: a count overflows 64 bits; use smaller sizes");
    return result;
}

constexpr int64_t kFloatBytes = 4;

// A projection y = x W^T + b of `rows` = B*L (or B*S) positions, D -> out (D, or W for K and V).
PartCost projection(const char* name, int64_t D, int64_t rows, int64_t out) {
    const int64_t read = product({rows, D}), written = product({rows, out});  // x read, y written
    return {name, product({rows, D, out}), 0, product({kFloatBytes, sum({product({D, out}), out, read, written})})};
}

void check_length(int64_t length, const char* what) {
    if (length < 1) fail("cost: ", what, " must be >= 1, got ", length);
}

void add_to(std::vector<CostGroup>& groups, const std::string& name, int64_t macs, int64_t bytes) {
    for (CostGroup& group : groups)
        if (group.name == name) {
            group.macs = sum({group.macs, macs});
            group.bytes = sum({group.bytes, bytes});
            return;
        }
    groups.push_back({name, macs, bytes});
}

// The names of the groups whose `value` is the largest, joined by " = ".
template <typename Value>
std::string largest(const std::vector<CostGroup>& groups, Value value) {
    int64_t best = 0;
    for (const CostGroup& group : groups) best = std::max(best, value(group));
    std::string names;
    for (const CostGroup& group : groups)
        if (value(group) == best) {
            if (!names.empty()) names.append(" = ");
            names.append(group.name);
        }
    return names;
}

}  // namespace

void check_cost_shape(const CostShape& shape) {
    if (shape.batch < 1) fail("cost: batch B must be >= 1, got ", shape.batch);
    if (shape.d_model < 1) fail("cost: d_model D must be >= 1, got ", shape.d_model);
    if (shape.heads < 1) fail("cost: heads H must be >= 1, got ", shape.heads);
    if (shape.ff < 1) fail("cost: feed-forward dimension F must be >= 1, got ", shape.ff);
    if (shape.d_model % shape.heads != 0)
        fail("cost: d_model D=", shape.d_model, " is not divisible by heads H=", shape.heads,
             " (each head takes Dh = D/H columns)");
    if (shape.kv_heads < 0 || shape.heads % shape.key_value_heads() != 0)
        fail("cost: key/value heads Hkv=", shape.kv_heads, " must divide heads H=", shape.heads,
             " (each group of H/Hkv query heads shares one K/V head)");
}

std::vector<PartCost> AttentionCost::parts() const {
    return {query_projection, key_projection, value_projection, output_projection, scores, softmax, weights_values};
}

int64_t AttentionCost::projection_macs() const {
    return sum({query_projection.macs, key_projection.macs, value_projection.macs, output_projection.macs});
}

int64_t AttentionCost::core_macs() const { return sum({scores.macs, softmax.macs, weights_values.macs}); }

int64_t AttentionCost::core_bytes() const { return sum({scores.bytes, softmax.bytes, weights_values.bytes}); }

AttentionCost attention_cost(const CostShape& shape, int64_t queries, int64_t keys, const std::string& label) {
    check_cost_shape(shape);
    check_length(queries, "the number of queries L");
    check_length(keys, "the number of keys S");
    const int64_t B = shape.batch, D = shape.d_model, H = shape.heads, L = queries, S = keys;
    const int64_t W = shape.key_value_width();  // K and V columns: Hkv*Dh
    const int64_t BLD = product({B, L, D}), BSW = product({B, S, W}), BHLS = product({B, H, L, S});
    AttentionCost cost;
    cost.label = label;
    cost.queries = L;
    cost.keys = S;
    cost.query_projection = projection("Q projection", D, product({B, L}), D);
    cost.key_projection = projection("K projection", D, product({B, S}), W);
    cost.value_projection = projection("V projection", D, product({B, S}), W);
    cost.output_projection = projection("output projection", D, product({B, L}), D);
    // H heads of [L,Dh] x [Dh,S]: B*H*L*S*Dh = B*L*S*D (a shared K/V head is read by each of its query heads).
    cost.scores = {"scores Q K^T", product({B, L, S, D}), 0, product({kFloatBytes, sum({BLD, BSW, BHLS})})};
    cost.softmax = {"softmax", 0, BHLS, product({kFloatBytes, 2, BHLS})};
    cost.weights_values = {"weights x V", product({B, L, S, D}), 0, product({kFloatBytes, sum({BHLS, BSW, BLD})})};
    cost.score_bytes = product({kFloatBytes, BHLS});
    cost.kv_cache_bytes = product({kFloatBytes, 2, BSW});
    const int64_t query_block = AttentionOptions{}.query_block;
    const int64_t blocks = (L + query_block - 1) / query_block;
    cost.streaming_core_bytes = product({kFloatBytes, sum({product({2, BLD}), product({blocks, 2, BSW})})});
    return cost;
}

int64_t kv_cache_bytes_per_position(const CostShape& shape) {
    check_cost_shape(shape);
    return product({kFloatBytes, 2, shape.key_value_width()});
}

int64_t LayerCost::macs() const {
    int64_t total = sum({self_attention.projection_macs(), self_attention.core_macs(), feed_forward.macs});
    if (cross_attention) total = sum({total, cross_attention->projection_macs(), cross_attention->core_macs()});
    return total;
}

int64_t LayerCost::bytes() const {
    int64_t total = feed_forward.bytes;
    for (const PartCost& part : self_attention.parts()) total = sum({total, part.bytes});
    if (cross_attention)
        for (const PartCost& part : cross_attention->parts()) total = sum({total, part.bytes});
    return total;
}

int64_t LayerCost::quadratic_macs() const { return self_attention.core_macs(); }

int64_t LayerCost::linear_macs() const { return macs() - quadratic_macs(); }

std::vector<CostGroup> LayerCost::groups() const {
    std::vector<CostGroup> groups;
    const auto add_attention = [&](const AttentionCost& attention) {
        for (const PartCost* part : {&attention.query_projection, &attention.key_projection,
                                     &attention.value_projection, &attention.output_projection})
            add_to(groups, "projections", part->macs, part->bytes);
        add_to(groups, attention.label + " core", attention.core_macs(), attention.core_bytes());
    };
    add_attention(self_attention);
    if (cross_attention) add_attention(*cross_attention);
    add_to(groups, "FFN", feed_forward.macs, feed_forward.bytes);
    return groups;
}

namespace {

// The parts every layer has: self-attention over T and the FFN.
LayerCost layer_cost(const CostShape& shape, int64_t length) {
    check_cost_shape(shape);
    check_length(length, "the sequence length T");
    const int64_t B = shape.batch, D = shape.d_model, F = shape.ff, T = length;
    const int64_t BTD = product({B, T, D}), BTF = product({B, T, F});
    LayerCost layer;
    layer.length = T;
    layer.self_attention = attention_cost(shape, T, T, "self-attention");
    layer.feed_forward = {"FFN", product({2, B, T, D, F}), 0,
                          product({kFloatBytes, sum({product({2, D, F}), F, D, product({2, BTD}), product({4, BTF})})})};
    layer.activation_bytes = product({kFloatBytes, BTD});
    layer.hidden_bytes = product({kFloatBytes, BTF});
    return layer;
}

// W_Q, W_O [D, D] and W_K, W_V [W, D], with their biases.
int64_t attention_parameters(int64_t D, int64_t W) {
    return sum({product({2, D, D}), product({2, W, D}), product({2, D}), product({2, W})});
}
int64_t feed_forward_parameters(int64_t D, int64_t F) { return sum({product({2, D, F}), F, D}); }

}  // namespace

LayerCost encoder_layer_cost(const CostShape& shape, int64_t length) {
    LayerCost layer = layer_cost(shape, length);
    const int64_t D = shape.d_model;
    layer.parameter_count = sum({attention_parameters(D, shape.key_value_width()), feed_forward_parameters(D, shape.ff),
                                 product({2, 2, D})});
    return layer;
}

LayerCost decoder_layer_cost(const CostShape& shape, int64_t target_length, int64_t source_length) {
    LayerCost layer = layer_cost(shape, target_length);
    check_length(source_length, "the source length S");
    layer.cross_attention = attention_cost(shape, target_length, source_length, "cross-attention");
    const int64_t D = shape.d_model;
    layer.parameter_count = sum({product({2, attention_parameters(D, shape.key_value_width())}),
                                 feed_forward_parameters(D, shape.ff), product({3, 2, D})});
    return layer;
}

std::string dominant_by_macs(const LayerCost& layer) {
    return largest(layer.groups(), [](const CostGroup& group) { return group.macs; });
}

std::string dominant_by_bytes(const LayerCost& layer) {
    return largest(layer.groups(), [](const CostGroup& group) { return group.bytes; });
}

int64_t encoder_crossover_length(const CostShape& shape) {
    check_cost_shape(shape);
    return sum({shape.d_model, shape.key_value_width(), shape.ff});  // D + W + F (2D + F when W = D)
}

double decoder_crossover_length(const CostShape& shape, int64_t source_length) {
    check_cost_shape(shape);
    check_length(source_length, "the source length S");
    const double D = static_cast<double>(shape.d_model), F = static_cast<double>(shape.ff);
    const double S = static_cast<double>(source_length);
    const double W = static_cast<double>(shape.key_value_width());
    const double b = 2 * D + W + F + S;  // T^2 - b T - S W = 0, the positive root
    return (b + std::sqrt(b * b + 4 * S * W)) / 2;
}

AttentionPathBytes attention_path_bytes(const CostShape& shape, int64_t queries, int64_t keys,
                                        const AttentionOptions& options) {
    check_cost_shape(shape);
    check_length(queries, "the number of queries L");
    check_length(keys, "the number of keys S");
    if (options.query_block < 1 || options.key_tile < 1)
        fail("cost: query_block and key_tile must be >= 1, got ", options.query_block, " and ", options.key_tile);
    const AttentionPath path = resolve_path(options, "cost");
    const int64_t B = shape.batch, D = shape.d_model, H = shape.heads, L = queries, S = keys;
    AttentionPathBytes bytes;
    bytes.output = product({kFloatBytes, B, L, D});
    if (options.want_weights) bytes.weights = product({kFloatBytes, B, H, L, S});
    if (path == AttentionPath::Materialized) {
        if (!options.want_weights) bytes.scratch = product({kFloatBytes, L, S});
    } else {
        const int64_t block = std::min(options.query_block, L), tile = std::min(options.key_tile, S);
        bytes.scratch = product({kFloatBytes, sum({product({block, tile}), product({2, block})})});
    }
    return bytes;
}

PassMemory pass_memory(const CostShape& shape, int64_t queries, int64_t keys, int64_t attentions, bool recording,
                       int64_t vocabulary, bool additive_bias, int64_t cached_layers, int64_t cached_width) {
    const double B = static_cast<double>(shape.batch), L = static_cast<double>(queries),
                 S = static_cast<double>(keys), H = static_cast<double>(shape.heads);
    const double width = static_cast<double>(std::max(shape.d_model, shape.ff));
    PassMemory memory;
    memory.mask = 2 * B * L * S;
    memory.recorded_weights = recording ? (static_cast<double>(attentions) + 1) * 4 * B * H * L * S : 0;
    memory.scores = 4 * B * H * std::min(L, 256.0) * S;
    memory.activations = 12 * 4 * B * L * width;
    memory.logits = 4 * B * L * static_cast<double>(vocabulary);
    memory.bias = additive_bias ? 10 * B * H * L * S : 0;
    memory.kv_cache = 4 * 2 * B * S * static_cast<double>(cached_width) * static_cast<double>(cached_layers);
    return memory;
}

}  // namespace tinyformer
