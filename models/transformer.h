// The models of FORMAT.md, loaded from a Checkpoint by PyTorch names.
//
// EncoderDecoderModel — nn.Transformer with embeddings and a generator:
//   memory = encoder_norm(EncoderLayer^N(embed(src)))          [B, S, D]
//            self-attention mask: source key padding
//   h      = decoder_norm(DecoderLayer^N(embed(tgt), memory))  [B, T, D]
//            self: causal AND target key padding; cross: source key padding
//   logits = generator(h)                                      [B, T, V]
//            (with "tie_embeddings": h tgt_embed.weight^T (+ generator.bias))
//
// SingleStackModel — nn.TransformerEncoder of EncoderLayers, with lm_head:
//   decoder_only, "causal":     query i sees key j iff j <= i
//   decoder_only, "prefix_lm":  query i sees key j iff j < prefix_len[b] or j <= i
//   encoder_only:               every query sees every key
//   key padding applies on top (and a "sliding_window", and ALiBi's or T5's
//   relative bias: models/mask_policy.h); optional final norm; logits = lm_head(h)
//   (with "tie_embeddings": h embed.weight^T (+ lm_head.bias)).
//
// The config's layer-form keys (docs/FORMAT.md section 1) are read by the
// loaders in transformer.cpp, each in one place: "bias", "norm_bias" and
// "head_bias" leave the biases out (empty tensors: no "+ b"), "norm" and
// "activation" choose the LayerNorm and FFN forms (layers/layer_norm.h,
// layers/feed_forward.h), "qkv": "separate" is fused into in_proj at load,
// and "mask_value" goes to every attention module (engine/attention.h).
//
// Padded positions (true in a padding mask) are padded queries too: their
// logits and attention-weight rows are exactly 0. With an `observer`
// (models/study/trace.h), the pass hands out its intermediates by name: every
// attention call's per-head weights, or the whole table of the trace.
//
// Hooks (layers/hooks.h): set_hooks hands them to every layer and attention
// module, so that every pass of the model — whole, traced, or a decoding
// step over the KV cache — calls them; a HookScope sets them for one scope.
// They are how study instruments change a pass (models/study/interventions.h).
//
// An attention call has one name, the trace's prefix for it (layers/observer.h):
// "encoder.0.self_attn", "decoder.1.cross_attn", "layers.2.self_attn". It
// names the call's tensors in a trace ("decoder.1.cross_attn.weights", also
// `forward --attention`'s output), its pictures, the page's data, the hooks
// and the interventions. attention_calls() lists the calls in the order they
// run; attention_module(name) reaches one call's module.
#pragma once

#include "layers/decoder_layer.h"
#include "layers/embedding.h"
#include "layers/encoder_layer.h"
#include "layers/hooks.h"
#include "layers/linear.h"
#include "layers/observer.h"
#include "models/checkpoint.h"
#include "models/mask_policy.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tinyformer {

// The check every whole-sequence pass makes before it allocates: Error
// naming `what` when B sequences of `queries` tokens attending `keys` keys
// through `attentions` attention calls (their weights recorded or not, with
// `vocabulary` logits per token) would not fit in the available memory
// (models/cost.h's pass_memory; passes under 64 MiB are not checked).
// `fills_kv_cache`: the pass is a decoding's prefill, which also keeps every
// layer's keys and values (the stepper's; models/stepper.h).
// Callers that know a pass is coming ask it first, before other work.
void refuse_pass_beyond_memory(const char* what, const ModelConfig& config, int64_t batch, int64_t queries,
                               int64_t keys, int64_t attentions, bool recording, int64_t vocabulary,
                               bool fills_kv_cache = false);

// One attention call of a model: its name and where it sits.
struct NamedAttentionCall {
    std::string name;   // "decoder.1.cross_attn"
    std::string stack;  // "encoder", "decoder" or "layers" (single-stack)
    int64_t layer = 0;
    std::string kind;   // "self" or "cross"
};

// The parts of a model's head, read-only (direct logit attribution,
// models/study/lens.h): the final norm or nullptr, the unembedding W_U [V, D]
// (the head's weight, or the tied embedding) and its bias [V] (or empty).
struct HeadParts {
    const LayerNorm* final_norm;
    const Tensor& weight;
    const Tensor& bias;
};

// Keys and values of every decoder layer, kept between decoding steps.
struct DecoderCache {
    std::vector<DecoderLayerCache> layers;
    int64_t length = 0;  // target positions cached so far
    StepMasks step_masks;  // a one-token step's masks, kept between steps (models/mask_policy.h)
};

// Keys and values of every layer of a single-stack model.
struct StackCache {
    std::vector<KVCache> layers;
};

class EncoderDecoderModel {
public:
    EncoderDecoderModel(const ModelConfig& config, Checkpoint& checkpoint);

    Tensor encode(const TokenIds& source, const Padding& source_padding, Observer* observer = nullptr) const;
    Tensor decode(const TokenIds& target, const Tensor& memory, const Padding& target_padding,
                  const Padding& source_padding, Observer* observer = nullptr) const;
    // Incremental decoding: `target` [B, n] holds the tokens at positions
    // cache.length .. cache.length+n-1; returns their logits [B, n, V] and
    // extends the cache. Same numbers as decode() on the whole prefix.
    Tensor decode_step(const TokenIds& target, const Tensor& memory, const Padding& source_padding,
                       DecoderCache& cache) const;

    const ModelConfig& config() const { return config_; }
    std::vector<NamedAttentionCall> attention_calls() const;
    MultiHeadAttention& attention_module(const std::string& name);  // Error listing the names if unknown
    void set_hooks(const Hooks* hooks);  // none: nullptr
    const Hooks* hooks() const { return hooks_; }
    // The model's head on any stream x [B, n, D] of its last stack: the final
    // norm (when the model has one), then the unembedding (the head's weight,
    // or the tied embedding). The one code the passes run after their last
    // layer, so the logit lens (models/study/lens.h) reads the model's own
    // head; `observer` records the norm's output as the pass does.
    Tensor unembed(Tensor x, Observer* observer = nullptr) const;
    HeadParts head_parts() const;  // its parts, read-only

private:
    Tensor run_decoder(const TokenIds& target, const Tensor& memory, const Padding& target_padding,
                       const Padding& source_padding, Observer* observer, DecoderCache* cache) const;

    ModelConfig config_;
    Embedding source_embedding_, target_embedding_;
    std::vector<EncoderLayer> encoder_layers_;
    std::vector<DecoderLayer> decoder_layers_;
    LayerNorm encoder_norm_, decoder_norm_;
    Linear generator_;  // weight empty when tied to tgt_embed.weight
    const Hooks* hooks_ = nullptr;
};

class SingleStackModel {
public:
    SingleStackModel(const ModelConfig& config, Checkpoint& checkpoint);

    // prefix_lengths: one per batch row for "prefix_lm" models, else empty.
    Tensor forward(const TokenIds& ids, const Padding& padding, const std::vector<int64_t>& prefix_lengths,
                   Observer* observer = nullptr) const;
    // Incremental decoding: row b of ids [B, n] holds positions
    // first_positions[b] .. +n-1; keys and values are appended to `cache`, and
    // `mask` (broadcast to [B, H, n, S], S = cache length after appending)
    // says what the new queries see. Returns logits [B, n, V].
    Tensor forward_step(const TokenIds& ids, const std::vector<int64_t>& first_positions, const Mask& mask,
                        const Padding& query_padding, StackCache& cache) const;

    const ModelConfig& config() const { return config_; }
    // pos_encoding "relative_bias": the stack's table [relative_buckets, H]
    // (what MaskInputs::relative_bias takes); otherwise nullptr.
    const Tensor* relative_bias_table() const { return relative_bias_.empty() ? nullptr : &relative_bias_; }
    std::vector<NamedAttentionCall> attention_calls() const;
    MultiHeadAttention& attention_module(const std::string& name);  // Error listing the names if unknown
    void set_hooks(const Hooks* hooks);  // none: nullptr
    const Hooks* hooks() const { return hooks_; }
    // The model's head on any stream x [B, n, D] of its last stack: the final
    // norm (when the model has one), then the unembedding (the head's weight,
    // or the tied embedding). The one code the passes run after their last
    // layer, so the logit lens (models/study/lens.h) reads the model's own
    // head; `observer` records the norm's output as the pass does.
    Tensor unembed(Tensor x, Observer* observer = nullptr) const;
    HeadParts head_parts() const;  // its parts, read-only

private:
    Tensor run(const TokenIds& ids, const std::vector<int64_t>& first_positions, const Mask& mask,
               const Padding& padding, Observer* observer, StackCache* cache) const;

    ModelConfig config_;
    Embedding embedding_;
    std::vector<EncoderLayer> layers_;
    bool final_norm_;
    LayerNorm norm_;
    Linear lm_head_;  // weight empty when tied to embed.weight
    Tensor relative_bias_;  // relative_bias: [relative_buckets, H]; else empty
    const Hooks* hooks_ = nullptr;
};

// A model file, loaded: exactly one of the two models is set, by config.arch.
struct Model {
    ModelConfig config;
    TextMetadata text;  // vocabularies, tokenizer, prompt suffix (models/text.h reads text with it)
    std::unique_ptr<EncoderDecoderModel> encoder_decoder;
    std::unique_ptr<SingleStackModel> single_stack;

    WeightCounts numbers;  // what its tensors hold: float32, int8 and Q8_0 scales (models/checkpoint.h)

    static Model load(const std::string& path, FileReading reading = default_file_reading());
    // The same model with every float32 weight that Checkpoint::take_weight
    // reads — the linear layers' (attention's in_proj and out_proj, the FFN's)
    // and the head's, unless it is tied to the embedding — quantized to Q8_0
    // in groups of `group` as it is read (engine/quant/q8_0.h), in memory: its
    // products run in int8 as runq.c's. Embeddings, norms and biases stay
    // float32. Error naming the first weight whose input axis `group` does not divide.
    static Model load_q8_0(const std::string& path, int64_t group, FileReading reading = default_file_reading());

    // The loaded model's, whichever it is.
    std::vector<NamedAttentionCall> attention_calls() const;
    std::vector<std::string> attention_names() const;  // the calls' names, in the order they run
    MultiHeadAttention& attention_module(const std::string& name);
    // The hooks every pass calls (layers/hooks.h), or none (nullptr, the default).
    void set_hooks(const Hooks* hooks);
    const Hooks* hooks() const;
};

// Sets the model's hooks for as long as it lives; the ones set before come
// back after, also when an Error unwinds the scope.
class HookScope {
public:
    HookScope(Model& model, const Hooks* hooks);
    ~HookScope();
    HookScope(const HookScope&) = delete;
    HookScope& operator=(const HookScope&) = delete;

private:
    Model& model_;
    const Hooks* previous_;
};

}  // namespace tinyformer
