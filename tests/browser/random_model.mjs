// Random-weight checkpoints of real sizes, made by the test that opens them
// (never committed): docs/FORMAT.md section 1 written from its description
// alone (8-byte little-endian header length, the JSON header with the
// config and a vocabulary in "__metadata__", then the float32 tensors in
// order). The vocabulary is a "char" one of distinct CJK / Hangul / CJK
// extension B characters (one code point each), as many as the shape asks.
//   llamaShaped(sizes)  llama2.c's layer form: RMSNorm, SwiGLU, rotary, no biases,
//                       q/k/v separate, tied embedding (stories15M: dim 288,
//                       6 layers, 6 heads, hidden 768, vocab 32000, 256 positions)
//   gpt2Shaped(sizes)   GPT-2's: LayerNorm with biases, GELU (tanh), learned
//                       positions, fused qkv, tied embedding (124M: D768, 12
//                       layers, 12 heads, 3072, vocab 50257, 1024 positions)
//   writeRandomModel(file, model)  writes it; the weights are uniform in
//                       [-scale, scale] from a fixed xorshift32 seed, norms 1.
import { closeSync, openSync, writeSync } from "node:fs";

export const STORIES15M = { d_model: 288, num_layers: 6, nhead: 6, dim_feedforward: 768, vocab_size: 32000, max_len: 256 };
export const GPT2_124M = { d_model: 768, num_layers: 12, nhead: 12, dim_feedforward: 3072, vocab_size: 50257, max_len: 1024 };

function vocabulary(n) {
  const ranges = [[0x4E00, 0x9FFF], [0xAC00, 0xD7A3], [0x20000, 0x2A6DF]];
  const out = [];
  for (const [from, to] of ranges)
    for (let c = from; c <= to && out.length < n; ++c) out.push(String.fromCodePoint(c));
  if (out.length < n) throw new Error(`a char vocabulary of ${n} is more than these ranges hold`);
  return out;
}

export function llamaShaped(s) {
  const D = s.d_model, F = s.dim_feedforward;
  const tensors = [["embed.weight", [s.vocab_size, D]]];
  for (let i = 0; i < s.num_layers; ++i) {
    const p = `transformer.layers.${i}.`;
    tensors.push([p + "linear1.weight", [F, D]], [p + "linear2.weight", [D, F]], [p + "linear3.weight", [F, D]],
      [p + "norm1.weight", [D], 1], [p + "norm2.weight", [D], 1],
      [p + "self_attn.q_proj.weight", [D, D]], [p + "self_attn.k_proj.weight", [D, D]],
      [p + "self_attn.v_proj.weight", [D, D]], [p + "self_attn.out_proj.weight", [D, D]]);
  }
  tensors.push(["transformer.norm.weight", [D], 1]);
  const config = { activation: "swiglu", arch: "decoder_only", attention: "causal", bias: false, d_model: D,
    dim_feedforward: F, embed_scale: false, final_norm: true, format: "tinyformer/1", head_bias: false, layer_norm_eps: 1e-5,
    max_len: s.max_len, n_kv_heads: s.nhead, nhead: s.nhead, norm: "rms_norm", norm_bias: false, norm_first: true,
    num_layers: s.num_layers, pos_encoding: "rotary", qkv: "separate", rope_pairs: "adjacent", rope_theta: 10000.0,
    tie_embeddings: true, vocab_size: s.vocab_size };
  return { config, vocab: vocabulary(s.vocab_size), tensors };
}

export function gpt2Shaped(s) {
  const D = s.d_model, F = s.dim_feedforward;
  const tensors = [["embed.weight", [s.vocab_size, D]], ["pos_embed.weight", [s.max_len, D]]];
  for (let i = 0; i < s.num_layers; ++i) {
    const p = `transformer.layers.${i}.`;
    tensors.push([p + "linear1.bias", [F], 0], [p + "linear1.weight", [F, D]], [p + "linear2.bias", [D], 0],
      [p + "linear2.weight", [D, F]], [p + "norm1.bias", [D], 0], [p + "norm1.weight", [D], 1],
      [p + "norm2.bias", [D], 0], [p + "norm2.weight", [D], 1], [p + "self_attn.in_proj_bias", [3 * D], 0],
      [p + "self_attn.in_proj_weight", [3 * D, D]], [p + "self_attn.out_proj.bias", [D], 0],
      [p + "self_attn.out_proj.weight", [D, D]]);
  }
  tensors.push(["transformer.norm.bias", [D], 0], ["transformer.norm.weight", [D], 1]);
  const config = { activation: "gelu_tanh", arch: "decoder_only", attention: "causal", bias: true, d_model: D,
    dim_feedforward: F, embed_scale: false, final_norm: true, format: "tinyformer/1", head_bias: false, layer_norm_eps: 1e-5,
    max_len: s.max_len, nhead: s.nhead, norm_bias: true, norm_first: true, num_layers: s.num_layers,
    pos_encoding: "learned", tie_embeddings: true, vocab_size: s.vocab_size };
  return { config, vocab: vocabulary(s.vocab_size), tensors };
}

// Writes MODEL; returns its size in bytes. A tensor with a third entry is that constant.
export function writeRandomModel(file, { config, vocab, tensors }, scale = 0.05) {
  const header = { __metadata__: { config: JSON.stringify(config), tokenizer: "char", vocab: JSON.stringify(vocab) } };
  let offset = 0;
  for (const [name, shape] of tensors) {
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  text += " ".repeat((8 - (Buffer.byteLength(text) % 8)) % 8);
  const head = Buffer.alloc(8 + Buffer.byteLength(text));
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(text)), 0);
  head.write(text, 8, "utf8");
  const fd = openSync(file, "w");
  try {
    writeSync(fd, head);
    let state = 2463534242;
    for (const [, shape, constant] of tensors) {
      const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
      if (constant !== undefined) values.fill(constant);
      else for (let i = 0; i < values.length; ++i) {
        state ^= state << 13; state ^= state >>> 17; state ^= state << 5;
        values[i] = ((state >>> 0) / 4294967296 * 2 - 1) * scale;
      }
      writeSync(fd, new Uint8Array(values.buffer));
    }
  } finally {
    closeSync(fd);
  }
  return head.length + offset;
}
