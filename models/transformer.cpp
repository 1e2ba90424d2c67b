#include "models/transformer.h"

#include "engine/memory/available.h"
#include "models/cost.h"
#include "models/mask_policy.h"

#include <algorithm>
#include <cmath>

namespace tinyformer {

namespace {

// Loaders: one function per layer kind, taking tensors by PyTorch name. A
// tensor the config says is absent ("bias": false, ...) is not taken, so a
// file that holds it anyway is refused as holding an unknown tensor.

// prefix.weight [out, in] (float, or Q8_0: I8 with prefix.weight.scale), and prefix.bias [out] when `with_bias`.
Linear load_linear(Checkpoint& checkpoint, const std::string& prefix, int64_t out, int64_t in, bool with_bias) {
    Linear layer;
    layer.weight = checkpoint.take_weight(prefix + ".weight", {out, in}, layer.q8);
    if (with_bias) layer.bias = checkpoint.take(prefix + ".bias", {out});
    return layer;
}

// prefix.weight [D], and prefix.bias [D] when "norm_bias" (never for rms_norm: the
// config makes norm_bias false).
LayerNorm load_layer_norm(Checkpoint& checkpoint, const std::string& prefix, const ModelConfig& config) {
    return {checkpoint.take(prefix + ".weight", {config.d_model}),
            config.norm_bias ? checkpoint.take(prefix + ".bias", {config.d_model}) : Tensor(), config.layer_norm_eps,
            config.norm};
}

// Rows of `parts` one after another: [W_Q; W_K; W_V] [D + 2K, D] from [D, D],
// [K, D], [K, D] (or the biases into one [D + 2K]) — nn.MultiheadAttention's in_proj layout.
Tensor concatenate_rows(const std::vector<Tensor>& parts) {
    Shape shape = parts.front().shape();
    shape[0] = 0;
    std::vector<float> values;
    for (const Tensor& part : parts) {
        shape[0] += part.dim(0);
        values.insert(values.end(), part.data(), part.data() + part.numel());
    }
    return Tensor(shape, std::move(values));
}

// The Q8_0 q_proj, k_proj, v_proj fused as concatenate_rows fuses the float
// ones; all three float (an empty result) or all Q8_0 with one group size.
Q8Matrix concatenate_q8_rows(const std::vector<Q8Matrix>& parts, const std::string& prefix) {
    const auto quantized = std::count_if(parts.begin(), parts.end(), [](const Q8Matrix& m) { return !m.empty(); });
    if (quantized == 0) return {};
    if (quantized != 3 || parts[1].group() != parts[0].group() || parts[2].group() != parts[0].group())
        fail(prefix, ": q_proj, k_proj and v_proj must be all float or all Q8_0 with one group size (docs/FORMAT.md)");
    std::vector<int8_t> values;
    std::vector<float> scales;
    int64_t rows = 0;
    for (const Q8Matrix& part : parts) {
        const Q8View& view = part.view();
        values.insert(values.end(), view.values, view.values + view.rows * view.cols);
        scales.insert(scales.end(), view.scales, view.scales + view.rows * view.groups_per_row());
        rows += view.rows;
    }
    return Q8Matrix::from(prefix + ".in_proj (Q8_0)", rows, parts[0].cols(), parts[0].group(), std::move(values),
                          std::move(scales));
}

// "qkv": "fused" reads prefix.in_proj_weight [D + 2*K, D] (+ in_proj_bias [D + 2*K]);
// "separate" reads prefix.q_proj.weight [D, D], .k_proj.weight and .v_proj.weight
// [K, D] (+ .bias each) and fuses them here into the same layout, row for row.
// K = n_kv_heads * Dh is the key/value width (= D without grouped-query attention).
// `call` is the call's trace name ("decoder.1.cross_attn"), what hooks see.
MultiHeadAttention load_attention(Checkpoint& checkpoint, const std::string& prefix, const ModelConfig& config,
                                  const std::string& call) {
    const int64_t D = config.d_model, K = config.n_kv_heads * (config.d_model / config.nhead);
    MultiHeadAttentionWeights weights;
    if (config.qkv == QkvLayout::Fused) {
        weights.in_proj_weight = checkpoint.take_weight(prefix + ".in_proj_weight", {D + 2 * K, D}, weights.in_proj_q8);
        if (config.bias) weights.in_proj_bias = checkpoint.take(prefix + ".in_proj_bias", {D + 2 * K});
    } else {
        std::vector<Tensor> matrices, biases;
        std::vector<Q8Matrix> quantized(3);
        for (int p = 0; p < 3; ++p) {
            const std::string part = p == 0 ? ".q_proj" : p == 1 ? ".k_proj" : ".v_proj";
            matrices.push_back(checkpoint.take_weight(prefix + part + ".weight", {p == 0 ? D : K, D}, quantized[p]));
            if (config.bias) biases.push_back(checkpoint.take(prefix + part + ".bias", {p == 0 ? D : K}));
        }
        weights.in_proj_weight = concatenate_rows(matrices);
        if (config.bias) weights.in_proj_bias = concatenate_rows(biases);
        weights.in_proj_q8 = concatenate_q8_rows(quantized, prefix);
    }
    weights.out_proj_weight = checkpoint.take_weight(prefix + ".out_proj.weight", {D, D}, weights.out_proj_q8);
    if (config.bias) weights.out_proj_bias = checkpoint.take(prefix + ".out_proj.bias", {D});
    std::optional<RotaryEmbedding> rotary;  // the config refuses rotary for encoder_decoder: never cross-attention
    if (config.pos_encoding == PositionalEncoding::Rotary)
        rotary = RotaryEmbedding(config.d_model / config.nhead, config.rope_theta, config.rope_pairs);
    return MultiHeadAttention(weights, AttentionHeads{config.nhead, config.n_kv_heads}, prefix, config.mask_value,
                              rotary, call);
}

// The output head [V, D]: `name`.weight, or with "tie_embeddings" the token
// embedding `embedding_weight` itself (then `name`.weight must not be in the
// file); `name`.bias [V] when "head_bias".
Linear load_head(Checkpoint& checkpoint, const std::string& name, const Tensor& embedding_weight,
                 const ModelConfig& config) {
    const int64_t V = embedding_weight.dim(0), D = config.d_model;
    Linear head;
    if (!config.tie_embeddings) head.weight = checkpoint.take_weight(name + ".weight", {V, D}, head.q8);
    if (config.head_bias) head.bias = checkpoint.take(name + ".bias", {V});
    return head;
}

// linear1 [F, D], linear2 [D, F], and with "swiglu" linear3 [F, D] (each + .bias when "bias").
FeedForward load_feed_forward(Checkpoint& checkpoint, const std::string& prefix, const ModelConfig& config) {
    const int64_t D = config.d_model, F = config.dim_feedforward;
    FeedForward feed_forward{load_linear(checkpoint, prefix + ".linear1", F, D, config.bias),
                             load_linear(checkpoint, prefix + ".linear2", D, F, config.bias), config.activation};
    if (config.activation == Activation::SwiGlu)
        feed_forward.linear3 = load_linear(checkpoint, prefix + ".linear3", F, D, config.bias);
    return feed_forward;
}

// `name`: the layer's place in the trace ("encoder.0", "layers.2"), its hook points' prefix.
EncoderLayer load_encoder_layer(Checkpoint& checkpoint, const std::string& prefix, const ModelConfig& config,
                                const std::string& name) {
    return {load_attention(checkpoint, prefix + ".self_attn", config, name + ".self_attn"),
            load_feed_forward(checkpoint, prefix, config),
            load_layer_norm(checkpoint, prefix + ".norm1", config), load_layer_norm(checkpoint, prefix + ".norm2", config),
            config.norm_first, name};
}

DecoderLayer load_decoder_layer(Checkpoint& checkpoint, const std::string& prefix, const ModelConfig& config,
                                const std::string& name) {
    return {load_attention(checkpoint, prefix + ".self_attn", config, name + ".self_attn"),
            load_attention(checkpoint, prefix + ".multihead_attn", config, name + ".cross_attn"),
            load_feed_forward(checkpoint, prefix, config),
            load_layer_norm(checkpoint, prefix + ".norm1", config),
            load_layer_norm(checkpoint, prefix + ".norm2", config),
            load_layer_norm(checkpoint, prefix + ".norm3", config),
            config.norm_first, name};
}

// An embedding of `token_weight` with the config's positions: a learned
// table, or sinusoidal rows computed as a pass reads them (no [max_len, D]
// table: a 5 kB file may declare max_len 2^24).
Embedding load_embedding(Checkpoint& checkpoint, Tensor token_weight, const ModelConfig& config) {
    Embedding embedding{std::move(token_weight), Tensor(), config.embed_scale};
    if (config.pos_encoding == PositionalEncoding::Learned)
        embedding.position_table = checkpoint.take("pos_embed.weight", {config.max_len, config.d_model});
    if (config.pos_encoding == PositionalEncoding::Sinusoidal)
        embedding.sinusoidal = SinusoidalPositions(config.max_len, config.d_model);
    return embedding;
}

void check_padding(const char* what, const Padding& padding, const TokenIds& ids) {
    if (!padding.empty() && (padding.batch() != ids.batch || padding.length() != ids.length))
        fail(what, " padding is [", padding.batch(), ",", padding.length(), "] but the ids are [", ids.batch, ",",
             ids.length, "]");
}

// Finite weights can still overflow float32 on the way (weights near 3e38
// multiply to inf, inf - inf is NaN): refuse such logits by position rather
// than hand them on, naming the head (generator, lm_head). Every model
// output passes here.
void refuse_non_finite(const Tensor& logits, const char* head) {
    const int64_t T = logits.dim(1), V = logits.dim(2);
    for (int64_t i = 0; i < logits.numel(); ++i)
        if (!std::isfinite(logits.data()[i]))
            fail("model: the logits hold ", std::isnan(logits.data()[i]) ? "NaN" : "inf", " at [", i / (T * V), ",",
                 i / V % T, ",", i % V, "] (the output of ", head, "); the weights are finite, but on this input the "
                 "activations overflow float32 (weights too large?)");
}

// The observer of part `prefix` of the pass ("decoder.1."), or nullptr.
std::optional<PrefixedObserver> part(Observer* observer, const std::string& prefix) { return observe_part(observer, prefix); }

Observer* pointer(std::optional<PrefixedObserver>& observer) { return observer ? &*observer : nullptr; }

// name is a C string: the pass makes no std::string when nobody observes it.
void record_everything(Observer* observer, const char* name, const Tensor& value) {
    if (observer && observer->wants_everything()) observer->record(name, value);
}

// logits = h W^T (+ b) [B, n, V]: W is the head's own weight, or with tied
// embeddings (an empty head weight) the token embedding [V, D], read in place.
Tensor head_logits(const Linear& head, const Embedding& embedding, const Tensor& h) {
    return head.weight.empty() ? linear(h, embedding.token_weight, head.bias) : head.forward(h);
}

[[noreturn]] void unknown_attention(const std::string& name, const std::vector<NamedAttentionCall>& calls) {
    std::string known;
    for (const NamedAttentionCall& call : calls) known.append(known.empty() ? "" : ", ").append(call.name);
    fail("no attention named '", name, "'; this model's are ", known);
}

}  // namespace

// A file of token ids a megabyte long can otherwise ask for terabytes: the
// mask and the weights grow with L x S. Passes under 64 MiB are not checked:
// checking at every decoding step costs more than the step (docs/PERFORMANCE.md).
constexpr double kUncheckedPassBytes = 64.0 * 1024 * 1024;

void refuse_pass_beyond_memory(const char* what, const ModelConfig& config, int64_t batch, int64_t queries,
                               int64_t keys, int64_t attentions, bool recording, int64_t vocabulary,
                               bool fills_kv_cache) {
    const CostShape shape{batch, config.d_model, config.nhead, config.dim_feedforward};
    const bool bias = config.pos_encoding == PositionalEncoding::Alibi ||
                      config.pos_encoding == PositionalEncoding::RelativeBias;  // a [B,H,L,S] bias in the mask
    const int64_t cached_width = config.n_kv_heads * (config.d_model / config.nhead);  // K/V columns, Hkv*Dh
    const PassMemory memory = pass_memory(shape, queries, keys, attentions, recording, vocabulary, bias,
                                          fills_kv_cache ? attentions : 0, cached_width);
    // Asking the system (/proc/meminfo, cgroup files) costs more than a toy
    // decoding step, and a pass this small cannot be what exhausts memory.
    if (memory.total() < kUncheckedPassBytes) return;
    require_available(memory.total(), text_of(what, ": B=", batch, " sequences of ", queries, " tokens attending ",
                                              keys, " keys need about ", memory.total(), " bytes (mask ", memory.mask,
                                              ", recorded attention weights ", memory.recorded_weights,
                                              bias ? text_of(", position bias ", memory.bias) : std::string(),
                                              fills_kv_cache ? text_of(", KV cache ", memory.kv_cache) : std::string(),
                                              ")"));
}

EncoderDecoderModel::EncoderDecoderModel(const ModelConfig& config, Checkpoint& checkpoint) : config_(config) {
    if (config.arch != Architecture::EncoderDecoder)
        fail("EncoderDecoderModel: the config's arch is ", architecture_name(config.arch));
    const int64_t D = config.d_model;
    source_embedding_ = load_embedding(checkpoint, checkpoint.take("src_embed.weight", {config.src_vocab_size, D}), config);
    // One pos_embed.weight for both sides (taken once): the source's.
    target_embedding_ = {checkpoint.take("tgt_embed.weight", {config.tgt_vocab_size, D}),
                         source_embedding_.position_table, config.embed_scale, source_embedding_.sinusoidal};
    for (int64_t i = 0; i < config.num_encoder_layers; ++i)
        encoder_layers_.push_back(load_encoder_layer(checkpoint, "transformer.encoder.layers." + std::to_string(i), config,
                                                     "encoder." + std::to_string(i)));
    encoder_norm_ = load_layer_norm(checkpoint, "transformer.encoder.norm", config);
    for (int64_t i = 0; i < config.num_decoder_layers; ++i)
        decoder_layers_.push_back(load_decoder_layer(checkpoint, "transformer.decoder.layers." + std::to_string(i), config,
                                                     "decoder." + std::to_string(i)));
    decoder_norm_ = load_layer_norm(checkpoint, "transformer.decoder.norm", config);
    generator_ = load_head(checkpoint, "generator", target_embedding_.token_weight, config);
}

Tensor EncoderDecoderModel::encode(const TokenIds& source, const Padding& source_padding, Observer* observer) const {
    check_padding("source", source_padding, source);
    refuse_pass_beyond_memory("encode", config_, source.batch, source.length, source.length, config_.num_encoder_layers,
                         observer != nullptr, 0);
    MaskInputs inputs;
    inputs.batch = source.batch;
    inputs.length = source.length;
    inputs.source_length = source.length;
    inputs.source_padding = source_padding;
    const Mask mask = attention_mask(config_, AttentionCall::EncoderSelf, inputs);  // [B,1,1,S], models/mask_policy.h
    Tensor x = source_embedding_.forward(source);           // [B, S, D]
    residual_hook(hooks_, "src_embed", ".output", 0, true, x);
    record_everything(observer, "src_embed.output", x);
    for (size_t i = 0; i < encoder_layers_.size(); ++i) {
        auto layer = part(observer, "encoder." + std::to_string(i) + ".");
        x = encoder_layers_[i].forward(x, mask, source_padding, pointer(layer));
    }
    x = encoder_norm_.forward(std::move(x));
    zero_padded_queries(x, source_padding);  // the model's output: the residual, FFN and norm revived padded rows
    record_everything(observer, "encoder.norm.output", x);
    return x;
}

Tensor EncoderDecoderModel::decode(const TokenIds& target, const Tensor& memory, const Padding& target_padding,
                                   const Padding& source_padding, Observer* observer) const {
    check_padding("target", target_padding, target);
    return run_decoder(target, memory, target_padding, source_padding, observer, nullptr);
}

Tensor EncoderDecoderModel::decode_step(const TokenIds& target, const Tensor& memory, const Padding& source_padding,
                                        DecoderCache& cache) const {
    if (cache.layers.empty()) cache.layers.resize(decoder_layers_.size());
    return run_decoder(target, memory, Padding(), source_padding, nullptr, &cache);
}

Tensor EncoderDecoderModel::run_decoder(const TokenIds& target, const Tensor& memory, const Padding& target_padding,
                                        const Padding& source_padding, Observer* observer,
                                        DecoderCache* cache) const {
    if (memory.rank() != 3 || memory.dim(0) != target.batch || memory.dim(2) != config_.d_model)
        fail("decode: memory must be [B,S,D] = [", target.batch, ",S,", config_.d_model, "], got ",
             shape_string(memory.shape()));
    if (!source_padding.empty() && (source_padding.batch() != memory.dim(0) || source_padding.length() != memory.dim(1)))
        fail("decode: source padding is [", source_padding.batch(), ",", source_padding.length(), "] but memory is ",
             shape_string(memory.shape()));
    const int64_t first = cache ? cache->length : 0;  // position of target's first token
    refuse_pass_beyond_memory("decode", config_, target.batch, target.length,
                         std::max(first + target.length, memory.dim(1)), 2 * config_.num_decoder_layers,
                         observer != nullptr, config_.tgt_vocab_size);
    // Causal self-attention [B,1,n,T] and cross-attention [B,1,1,S]: decoding_step_masks
    // (models/mask_policy.h), which keeps a one-token step's in the cache.
    MaskInputs inputs;
    inputs.batch = target.batch;
    inputs.length = target.length;
    inputs.first = first;
    inputs.padding = target_padding;
    inputs.source_length = memory.dim(1);
    inputs.source_padding = source_padding;
    std::optional<DecodingMasks> pass_masks;
    if (!cache) pass_masks = decoding_step_masks(config_, inputs);
    const DecodingMasks& masks = cache ? decoding_step_masks(config_, inputs, cache->step_masks) : *pass_masks;
    Tensor x = target_embedding_.forward(target, first);  // [B, n, D]
    residual_hook(hooks_, "tgt_embed", ".output", first, !cache, x);
    record_everything(observer, "tgt_embed.output", x);
    for (size_t i = 0; i < decoder_layers_.size(); ++i) {
        auto layer = part(observer, "decoder." + std::to_string(i) + ".");
        x = decoder_layers_[i].forward(x, memory, masks.self, masks.cross, target_padding, pointer(layer),
                                       cache ? &cache->layers[i] : nullptr);
    }
    if (cache) cache->length += target.length;
    Tensor logits = unembed(std::move(x), observer);  // [B, n, V]
    zero_padded_queries(logits, target_padding);  // [B, n, V]: a padded position's logits are 0
    refuse_non_finite(logits, "generator");
    record_everything(observer, "logits", logits);
    return logits;
}

Tensor EncoderDecoderModel::unembed(Tensor x, Observer* observer) const {
    x = decoder_norm_.forward(std::move(x));
    record_everything(observer, "decoder.norm.output", x);
    return head_logits(generator_, target_embedding_, x);
}

HeadParts EncoderDecoderModel::head_parts() const {
    return {&decoder_norm_, generator_.weight.empty() ? target_embedding_.token_weight : generator_.weight,
            generator_.bias};
}

void EncoderDecoderModel::set_hooks(const Hooks* hooks) {
    hooks_ = hooks;
    for (EncoderLayer& layer : encoder_layers_) layer.set_hooks(hooks);
    for (DecoderLayer& layer : decoder_layers_) layer.set_hooks(hooks);
}

std::vector<NamedAttentionCall> EncoderDecoderModel::attention_calls() const {
    std::vector<NamedAttentionCall> calls;
    for (size_t i = 0; i < encoder_layers_.size(); ++i)
        calls.push_back({"encoder." + std::to_string(i) + ".self_attn", "encoder", static_cast<int64_t>(i), "self"});
    for (size_t i = 0; i < decoder_layers_.size(); ++i) {
        const std::string layer = "decoder." + std::to_string(i);
        calls.push_back({layer + ".self_attn", "decoder", static_cast<int64_t>(i), "self"});
        calls.push_back({layer + ".cross_attn", "decoder", static_cast<int64_t>(i), "cross"});
    }
    return calls;
}

MultiHeadAttention& EncoderDecoderModel::attention_module(const std::string& name) {
    for (size_t i = 0; i < encoder_layers_.size(); ++i)
        if (name == "encoder." + std::to_string(i) + ".self_attn") return encoder_layers_[i].self_attn;
    for (size_t i = 0; i < decoder_layers_.size(); ++i) {
        const std::string layer = "decoder." + std::to_string(i);
        if (name == layer + ".self_attn") return decoder_layers_[i].self_attn;
        if (name == layer + ".cross_attn") return decoder_layers_[i].multihead_attn;
    }
    unknown_attention(name, attention_calls());
}

SingleStackModel::SingleStackModel(const ModelConfig& config, Checkpoint& checkpoint)
    : config_(config), final_norm_(config.final_norm) {
    if (config.arch == Architecture::EncoderDecoder)
        fail("SingleStackModel: the config's arch is encoder_decoder");
    embedding_ = load_embedding(checkpoint, checkpoint.take("embed.weight", {config.vocab_size, config.d_model}), config);
    for (int64_t i = 0; i < config.num_layers; ++i)
        layers_.push_back(load_encoder_layer(checkpoint, "transformer.layers." + std::to_string(i), config,
                                             "layers." + std::to_string(i)));
    if (final_norm_) norm_ = load_layer_norm(checkpoint, "transformer.norm", config);
    lm_head_ = load_head(checkpoint, "lm_head", embedding_.token_weight, config);
    // T5's one table for the whole stack, held (as T5 holds it) by the first layer's attention.
    if (config.pos_encoding == PositionalEncoding::RelativeBias)
        relative_bias_ = checkpoint.take("transformer.layers.0.self_attn.relative_attention_bias.weight",
                                         {config.relative_buckets, config.nhead});
}

Tensor SingleStackModel::forward(const TokenIds& ids, const Padding& padding, const std::vector<int64_t>& prefix_lengths,
                                 Observer* observer) const {
    check_padding("input", padding, ids);
    if (ids.length < 1) fail("forward: the sequence is empty (ids [", ids.batch, ",", ids.length, "])");
    refuse_pass_beyond_memory("forward", config_, ids.batch, ids.length, ids.length, config_.num_layers, observer != nullptr,
                         config_.vocab_size);
    if (config_.attention == SelfAttentionKind::PrefixLm && static_cast<int64_t>(prefix_lengths.size()) != ids.batch)
        fail("forward: a prefix_lm model needs prefix_len [B] = [", ids.batch, "], got ", prefix_lengths.size(),
             " values");
    MaskInputs inputs;
    inputs.batch = ids.batch;
    inputs.length = ids.length;
    inputs.padding = padding;
    inputs.prefix_lengths = prefix_lengths;
    inputs.relative_bias = relative_bias_table();
    const Mask mask = attention_mask(config_, AttentionCall::Self, inputs);  // models/mask_policy.h
    return run(ids, std::vector<int64_t>(static_cast<size_t>(ids.batch), 0), mask, padding, observer, nullptr);
}

Tensor SingleStackModel::forward_step(const TokenIds& ids, const std::vector<int64_t>& first_positions,
                                      const Mask& mask, const Padding& query_padding, StackCache& cache) const {
    if (cache.layers.empty()) cache.layers.resize(layers_.size());
    return run(ids, first_positions, mask, query_padding, nullptr, &cache);
}

Tensor SingleStackModel::run(const TokenIds& ids, const std::vector<int64_t>& first_positions, const Mask& mask,
                             const Padding& padding, Observer* observer, StackCache* cache) const {
    Tensor x = embedding_.forward(ids, first_positions);  // [B, n, D]
    const int64_t first = cache && !cache->layers.empty() ? cache->layers[0].length() : 0;  // the slot of row 0
    residual_hook(hooks_, "embed", ".output", first, !cache, x);
    record_everything(observer, "embed.output", x);
    for (size_t i = 0; i < layers_.size(); ++i) {
        auto layer = part(observer, "layers." + std::to_string(i) + ".");
        // Each row's own positions (rotary turns q and k by them): first_positions[b] + 0..n-1.
        x = layers_[i].forward(x, mask, padding, pointer(layer), cache ? &cache->layers[i] : nullptr, first_positions);
    }
    Tensor logits = unembed(std::move(x), observer);  // [B, n, V]
    zero_padded_queries(logits, padding);  // [B, n, V]: a padded position's logits are 0
    refuse_non_finite(logits, "lm_head");
    record_everything(observer, "logits", logits);
    return logits;
}

Tensor SingleStackModel::unembed(Tensor x, Observer* observer) const {
    if (final_norm_) {
        x = norm_.forward(std::move(x));
        record_everything(observer, "layers.norm.output", x);
    }
    return head_logits(lm_head_, embedding_, x);
}

HeadParts SingleStackModel::head_parts() const {
    return {final_norm_ ? &norm_ : nullptr, lm_head_.weight.empty() ? embedding_.token_weight : lm_head_.weight,
            lm_head_.bias};
}

void SingleStackModel::set_hooks(const Hooks* hooks) {
    hooks_ = hooks;
    for (EncoderLayer& layer : layers_) layer.set_hooks(hooks);
}

std::vector<NamedAttentionCall> SingleStackModel::attention_calls() const {
    std::vector<NamedAttentionCall> calls;
    for (size_t i = 0; i < layers_.size(); ++i)
        calls.push_back({"layers." + std::to_string(i) + ".self_attn", "layers", static_cast<int64_t>(i), "self"});
    return calls;
}

MultiHeadAttention& SingleStackModel::attention_module(const std::string& name) {
    for (size_t i = 0; i < layers_.size(); ++i)
        if (name == "layers." + std::to_string(i) + ".self_attn") return layers_[i].self_attn;
    unknown_attention(name, attention_calls());
}

std::vector<NamedAttentionCall> Model::attention_calls() const {
    return encoder_decoder ? encoder_decoder->attention_calls() : single_stack->attention_calls();
}

std::vector<std::string> Model::attention_names() const {
    std::vector<std::string> names;
    for (const NamedAttentionCall& call : attention_calls()) names.push_back(call.name);
    return names;
}

MultiHeadAttention& Model::attention_module(const std::string& name) {
    return encoder_decoder ? encoder_decoder->attention_module(name) : single_stack->attention_module(name);
}

void Model::set_hooks(const Hooks* hooks) {
    if (encoder_decoder) encoder_decoder->set_hooks(hooks);
    if (single_stack) single_stack->set_hooks(hooks);
}

const Hooks* Model::hooks() const {
    if (encoder_decoder) return encoder_decoder->hooks();
    return single_stack ? single_stack->hooks() : nullptr;
}

HookScope::HookScope(Model& model, const Hooks* hooks) : model_(model), previous_(model.hooks()) {
    model_.set_hooks(hooks);
}

HookScope::~HookScope() { model_.set_hooks(previous_); }

namespace {

Model load_from(Checkpoint& checkpoint) {
    Model model;
    model.config = checkpoint.config();
    model.text = checkpoint.text();
    if (model.config.arch == Architecture::EncoderDecoder)
        model.encoder_decoder = std::make_unique<EncoderDecoderModel>(model.config, checkpoint);
    else
        model.single_stack = std::make_unique<SingleStackModel>(model.config, checkpoint);
    checkpoint.refuse_unknown();
    model.numbers = checkpoint.counts();
    return model;
}

}  // namespace

Model Model::load(const std::string& path, FileReading reading) {
    Checkpoint checkpoint = Checkpoint::open(path, reading);
    return load_from(checkpoint);
}

Model Model::load_q8_0(const std::string& path, int64_t group, FileReading reading) {
    Checkpoint checkpoint = Checkpoint::open(path, reading);
    checkpoint.quantize_weights(group);
    return load_from(checkpoint);
}

}  // namespace tinyformer
