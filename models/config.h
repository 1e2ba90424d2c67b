// ModelConfig — the "config" object of a checkpoint's metadata (docs/FORMAT.md).
// Key names follow the PyTorch constructor arguments. parse_config refuses,
// naming the key: a missing required key (with its type), a wrong type, an
// unknown key, an unknown arch / activation / pos_encoding / attention value
// (with the allowed values), sizes outside 1..2^24, d_model % nhead != 0, and
// keys that do not belong to the arch, a "norm": "layer_norm_std" with
// d_model 1 (no unbiased std of one number), and a "mask_value" that is not a
// negative float32, "norm_bias": true with "rms_norm" (RMSNorm has no
// bias), "rope_theta" / "rope_pairs" without rotary, an odd head size with
// rotary, rotary, alibi or relative_bias for encoder_decoder, an "n_kv_heads"
// that does not divide "nhead", "relative_buckets" / "relative_max_distance"
// without relative_bias, relative_buckets < 4 or relative_max_distance <
// relative_buckets, a "sliding_window" < 1 or in a model that is not
// decoder_only with "attention": "causal". It checks the whole config and throws
// one Error listing every problem, on one line: "config: <problem>", or
// "config: 3 problems: <problem>; <problem>; <problem>". With the arch missing
// or bad, the keys of every arch are checked where present.
#pragma once

#include "layers/embedding.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/rotary.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tinyformer {

enum class Architecture { EncoderDecoder, DecoderOnly, EncoderOnly };
enum class SelfAttentionKind { Causal, PrefixLm, Bidirectional };
// How the attention's input projections are stored: one in_proj_weight [3D, D]
// (nn.MultiheadAttention), or q_proj / k_proj / v_proj [D, D] each.
enum class QkvLayout { Fused, Separate };

struct ModelConfig {
    Architecture arch = Architecture::EncoderDecoder;
    int64_t d_model = 0, nhead = 0, dim_feedforward = 0;
    int64_t num_encoder_layers = 0, num_decoder_layers = 0;  // encoder_decoder
    int64_t num_layers = 0;                                  // decoder_only / encoder_only
    Activation activation = Activation::Relu;
    bool norm_first = false;
    float layer_norm_eps = 1e-5f;
    bool final_norm = true;  // single-stack; encoder_decoder always has both norms
    int64_t src_vocab_size = 0, tgt_vocab_size = 0;  // encoder_decoder
    int64_t vocab_size = 0;                          // single-stack
    int64_t max_len = 0;
    PositionalEncoding pos_encoding = PositionalEncoding::Sinusoidal;
    bool embed_scale = false;
    SelfAttentionKind attention = SelfAttentionKind::Causal;  // single-stack
    int64_t pad_id = -1, bos_id = -1, eos_id = -1;            // -1: not given
    // Optional keys whose defaults are the PyTorch nn.Transformer layout (docs/FORMAT.md, section 1):
    NormKind norm = NormKind::LayerNorm;  // "norm": "layer_norm" | "layer_norm_std" (layers/layer_norm.h)
    bool bias = true;            // the stack's Linear layers (attention in/out, linear1/2) have biases
    bool norm_bias = true;       // the LayerNorms have biases
    bool head_bias = true;       // lm_head.bias / generator.bias exists
    bool tie_embeddings = false; // the head's weight is embed.weight (tgt_embed.weight): no head weight in the file
    QkvLayout qkv = QkvLayout::Fused;
    std::optional<float> mask_value;  // absent: blocked scores are -inf; else replaced by it (engine/attention.h)
    // Positions and attention heads of section 10.4 (docs/FORMAT.md, section 1):
    float rope_theta = 10000.0f;                // "rope_theta", rotary only
    RopePairs rope_pairs = RopePairs::Adjacent;  // "rope_pairs", rotary only (layers/rotary.h)
    int64_t n_kv_heads = 0;                     // "n_kv_heads" (GQA, MQA when 1); parse_config sets nhead when absent
    int64_t relative_buckets = 32;              // "relative_buckets", relative_bias only (engine/mask.h)
    int64_t relative_max_distance = 128;        // "relative_max_distance", relative_bias only
    int64_t sliding_window = 0;                 // "sliding_window" W (decoder_only, causal); 0: absent
};

ModelConfig parse_config(const std::string& json_text);

const char* architecture_name(Architecture arch);       // "encoder_decoder", ...
const char* attention_kind_name(SelfAttentionKind kind);  // "causal", "prefix_lm", "bidirectional"
const char* norm_name(NormKind kind);                       // "layer_norm", "layer_norm_std", "rms_norm"
const char* qkv_layout_name(QkvLayout layout);              // "fused", "separate"

}  // namespace tinyformer
