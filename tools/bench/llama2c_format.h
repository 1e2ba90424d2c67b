// tools/bench — a llama2.c-shaped model with random weights, written two ways:
// as llama2.c's own legacy ("v0") model.bin with a tokenizer.bin its run.c
// reads, and as a tinyformer checkpoint holding the same numbers. The bench
// runs both programs on them (bench_llama.cpp).
//
// The v0 model.bin (what llama2.c's export.py writes with --version 0 and
// run.c reads), all little-endian:
//   header   7 x int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//            vocab_size, max_seq_len. A positive vocab_size means the
//            classifier IS the token embedding (tied); negative: a separate
//            classifier follows at the very end.
//   then float32 arrays, one after another, each layer's in layer order:
//     token_embedding  [vocab, dim]
//     rms_att          n_layers x [dim]
//     wq               n_layers x [n_heads*Dh, dim]      (Dh = dim / n_heads)
//     wk, wv           n_layers x [n_kv_heads*Dh, dim] each
//     wo               n_layers x [dim, n_heads*Dh]
//     rms_ffn          n_layers x [dim]
//     w1               n_layers x [hidden, dim]
//     w2               n_layers x [dim, hidden]
//     w3               n_layers x [hidden, dim]
//     rms_final        [dim]
//     freq_cos, freq_sin  [max_seq_len, Dh/2] each: cos and sin of
//                      pos * 10000^(-2i/Dh) (run.c skips them and recomputes)
//     (classifier      [vocab, dim], only when untied)
//   Every matrix is row-major [out, in], as torch's nn.Linear stores it.
//
// The tokenizer.bin: int32 max_token_length, then per id: float32 score,
// int32 byte length, the piece's bytes (no terminator). The vocabulary count
// is not in the file: run.c takes it from the model header.
//
// The same model in tinyformer's names (docs/FORMAT.md): embed.weight;
// transformer.layers.{i}.norm1.weight (rms_att), self_attn.q_proj/k_proj/
// v_proj/out_proj.weight (wq/wk/wv/wo), norm2.weight (rms_ffn), linear1/
// linear3/linear2.weight (w1/w3/w2); transformer.norm.weight (rms_final);
// no lm_head (tie_embeddings). Config: decoder_only, causal, pre-norm
// rms_norm with eps 1e-5, swiglu, no biases, rotary with adjacent pairs and
// theta 10000 (or "none", to measure what rotary costs), n_kv_heads.
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer::bench {

struct Llama2cShape {
    int64_t dim = 288;
    int64_t hidden_dim = 768;
    int64_t n_layers = 6;
    int64_t n_heads = 6;
    int64_t n_kv_heads = 6;
    int64_t vocab_size = 32000;
    int64_t max_seq_len = 256;

    int64_t head_size() const { return dim / n_heads; }
    int64_t kv_dim() const { return n_kv_heads * head_size(); }
};

// One layer's tensors, llama2.c's names, [out, in] matrices.
struct Llama2cLayer {
    Tensor rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
};

struct Llama2cWeights {
    Llama2cShape shape;
    Tensor token_embedding;  // [vocab, dim]; also the classifier (tied)
    std::vector<Llama2cLayer> layers;
    Tensor rms_final;  // [dim]
};

// Random weights from `seed`: matrices N(0, 1/fan_in), RMSNorm gains
// 1 + N(0, 0.1^2), the token embedding N(0, 0.02^2) (llama2.c's own
// initialisation; with N(0, 1) a token's own row dominates the tied
// classifier and greedy decoding repeats its first token forever). The embedding row of id 1 (BOS) is
// scaled by 0.001 so that the tied classifier never picks BOS: run.c stops
// generating at a BOS, and both programs must produce the same count.
// Error when the shape is not a valid llama2.c model.
Llama2cWeights random_llama2c_weights(const Llama2cShape& shape, uint64_t seed);

// Bytes of float32 weights one decoding step reads (B=1): every layer's
// matrices and norm gains, the final gain, one embedding row, and the tied
// classifier [vocab, dim]. The KV cache is not counted.
double llama2c_weight_bytes_per_token(const Llama2cShape& shape);
// The same for the int8 form (Q8_0 in groups of `group`): each matrix number one
// byte plus a float32 scale per group; the gains and the embedding row float32.
double llama2c_q8_bytes_per_token(const Llama2cShape& shape, int64_t group);

// The [out, in] shapes a decoding step multiplies by, in its order: per layer
// the fused Q/K/V [dim + 2*kv_dim, dim] (tinyformer stacks q/k/v_proj on
// load), wo [dim, dim], w1 and w3 [hidden, dim], w2 [dim, hidden]; then the
// classifier [vocab, dim].
std::vector<std::pair<int64_t, int64_t>> llama2c_step_shapes(const Llama2cShape& shape);

// llama2.c's legacy v0 model.bin (layout above), written through OutputFile.
void write_llama2c_v0(const std::string& path, const Llama2cWeights& weights);

// A made-up tokenizer.bin of `vocab_size` pieces: id 0 "<unk>", 1 "\n<s>\n",
// 2 "\n</s>\n" (as llama2.c's), every other id i the piece " " + the decimal
// digits of i (" 3", " 4", ...), score -i. Since no piece is a "<0xXX>" byte
// piece, run.c prints each generated id as its own number: its text output
// reads back as ids (parse_llama2c_output). vocab_size >= 3.
void write_llama2c_tokenizer(const std::string& path, int64_t vocab_size);

// The ids in run.c's printed text when it used write_llama2c_tokenizer's
// vocabulary: the whitespace-separated numbers, in order. A "</s>" piece
// reads back as 2; anything else that is not a number stops the reading.
std::vector<int64_t> parse_llama2c_output(const std::string& text);

// The same weights as a tinyformer checkpoint (header comment) with
// pos_encoding `pos_encoding` ("rotary" or "none").
// With group > 0 the matrices are Q8_0 in groups of `group` (docs/FORMAT.md;
// the engine's rule, engine/quant/q8_0.h), as runq.c computes: the embedding
// is the int8 table's numbers q * s in float32 and the head (lm_head, untied)
// that int8 table, as runq.c's shared classifier.
void write_tinyformer_llama(const std::string& path, const Llama2cWeights& weights, const std::string& pos_encoding,
                            int64_t group = 0);
// llama2.c's v2 model.bin (export.py --version 2, what runq.c reads): a
// 256-byte header (uint32 magic 0x616b3432 "ak42", int32 version 2, the 7
// int32 of v0, uint8 shared_classifier = 1, int32 group size, zeros), the
// float32 RMSNorm gains (every layer's rms_att, every layer's rms_ffn,
// rms_final), then each matrix as its int8 values and then its float32 scales,
// quantized here by the engine's rule: the token embedding (also the
// classifier), then wq, wk, wv, wo, w1, w2, w3, each kind for every layer.
void write_llama2c_v2(const std::string& path, const Llama2cWeights& weights, int64_t group);

}  // namespace tinyformer::bench
