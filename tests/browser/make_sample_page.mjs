// Builds explore pages from hand-made data, assembled from
// tools/explore/page.{html,css,js}, live.js and study.js exactly as `tinyformer explore` does:
// each placeholder line replaced once, every `<` in the JSON written as `\u003c`.
//
//   node tests/browser/make_sample_page.mjs OUT.html [encdec|decoder|long|bidi]
//
// encdec (default): an encoder-decoder, 2+2 layers, 4 heads, D=16, source
// "hello", target "olleh", greedy decoding. decoder: a decoder-only model,
// 2 layers, prefix-LM mask, two padding positions, beam search, and text
// containing "</script>" (the escaping must hold). long: the encoder-decoder
// at the size limit of the issue, 32 source tokens, 33 target tokens, D=64. bidi: the
// encoder-decoder on "ab\u202ecd\u05d0" (a U+202E RIGHT-TO-LEFT OVERRIDE token and a Hebrew
// letter), from a model named with a U+202E too: the page must isolate them. q, k, v are random
// (seeded); scores, weights and z are computed from them as the engine does
// (float32 values, masked softmax, padded query rows all 0).
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export function assemblePage(data, dir = join(root, "tools", "explore")) {
  const html = readFileSync(join(dir, "page.html"), "utf8");
  const css = readFileSync(join(dir, "page.css"), "utf8");
  const js = readFileSync(join(dir, "page.js"), "utf8");
  const live = readFileSync(join(dir, "live.js"), "utf8");
  const study = readFileSync(join(dir, "study.js"), "utf8");
  const json = JSON.stringify(data).replaceAll("<", "\\u003c");
  let page = html;
  for (const [placeholder, text] of [["/*TINYFORMER_CSS*/", css], ["/*TINYFORMER_JS*/", js], ["/*TINYFORMER_LIVE_JS*/", live], ["/*TINYFORMER_STUDY_JS*/", study], ["/*TINYFORMER_DATA*/", json]]) {
    const at = page.indexOf(placeholder);
    if (at < 0 || page.indexOf(placeholder, at + 1) >= 0) throw new Error(placeholder + " must occur exactly once in page.html");
    page = page.slice(0, at) + text + page.slice(at + placeholder.length);
  }
  return page;
}

// mulberry32: a small seeded generator, so the sample is the same every time.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const f32 = (x) => Number(Math.fround(x).toPrecision(9));

function matrix(rand, rows, cols, scale) {
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => f32((rand() * 2 - 1) * scale)));
}

// One attention call, engine-consistent: scores = q_h.k_h / sqrt(dk) (finite
// everywhere, before the mask), weights = softmax over allowed keys (masked
// cells exactly 0; a padded query's row all 0), z = weights . v_h.
function attention(rand, spec) {
  const { name, stack, layer, attn, group, queries, keys, maskName, mask, qPad, H, D } = spec;
  const L = mask.length, S = mask[0].length, dk = D / H;
  const q = matrix(rand, L, D, 1.6), k = matrix(rand, S, D, 1.6), v = matrix(rand, S, D, 1.0);
  const scores = [], weights = [];
  const z = Array.from({ length: L }, () => new Array(D).fill(0));
  for (let h = 0; h < H; ++h) {
    const sh = [], wh = [];
    for (let i = 0; i < L; ++i) {
      const row = [];
      for (let j = 0; j < S; ++j) {
        let dot = 0;
        for (let c = h * dk; c < (h + 1) * dk; ++c) dot += q[i][c] * k[j][c];
        row.push(f32(dot / Math.sqrt(dk)));
      }
      sh.push(row);
      let w = new Array(S).fill(0);
      if (!qPad[i]) {
        const max = Math.max(...row.filter((_, j) => mask[i][j]));
        const e = row.map((x, j) => (mask[i][j] ? Math.exp(x - max) : 0));
        const sum = e.reduce((s, x) => s + x, 0);
        w = e.map((x) => f32(x / sum));
      }
      wh.push(w);
      for (let c = h * dk; c < (h + 1) * dk; ++c) {
        let acc = 0;
        for (let j = 0; j < S; ++j) acc += w[j] * v[j][c];
        z[i][c] = f32(acc);
      }
    }
    scores.push(sh);
    weights.push(wh);
  }
  return { name, stack, layer, attn, group, queries, keys, mask_name: maskName, mask, dk, q, k, v, scores, weights, z };
}

function candidates(rand, chosenId, chosenToken, vocab) {
  const ps = [0.6 + 0.39 * rand()];
  let rest = 1 - ps[0];
  for (let i = 0; i < 4; ++i) { const p = rest * (0.3 + 0.4 * rand()); ps.push(p); rest -= p; }
  const others = vocab.filter((t) => t !== chosenToken);
  const list = [{ id: chosenId, token: chosenToken, p: f32(ps[0]) }];
  for (let i = 1; i < 5; ++i) {
    const token = others[(i * 7 + Math.floor(rand() * 5)) % others.length];
    if (list.some((c) => c.token === token)) { list.push({ id: 100 + i, token: "#" + (100 + i), p: f32(ps[i]) }); continue; }
    list.push({ id: vocab.indexOf(token), token, p: f32(ps[i]) });
  }
  return list;
}

export function encoderDecoderSample(text = "hello", D = 16, seed = 12) {
  const rand = generator(seed);
  const H = 4;
  const source = [...text];
  const reversed = [...text].reverse();
  const target = ["<bos>", ...reversed];
  const Ls = source.length, Lt = target.length;
  const full = (L, S) => Array.from({ length: L }, () => new Array(S).fill(1));
  const causal = (L) => Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j <= i ? 1 : 0)));
  const noPad = (n) => new Array(n).fill(false);
  const attentions = [];
  for (let l = 0; l < 2; ++l) {
    attentions.push(attention(rand, { name: `encoder.${l}.self_attn`, stack: "encoder", layer: l, attn: "self_attn", group: "encoder self",
      queries: "source", keys: "source", maskName: "none (bidirectional)", mask: full(Ls, Ls), qPad: noPad(Ls), H, D }));
  }
  for (let l = 0; l < 2; ++l) {
    attentions.push(attention(rand, { name: `decoder.${l}.self_attn`, stack: "decoder", layer: l, attn: "self_attn", group: "decoder self",
      queries: "target", keys: "target", maskName: "causal", mask: causal(Lt), qPad: noPad(Lt), H, D }));
    attentions.push(attention(rand, { name: `decoder.${l}.cross_attn`, stack: "decoder", layer: l, attn: "cross_attn", group: "cross",
      queries: "target", keys: "source", maskName: "none (bidirectional)", mask: full(Lt, Ls), qPad: noPad(Lt), H, D }));
  }
  const vocab = ["<pad>", "<bos>", "<eos>", "<unk>", ..."abcdefghijklmnopqrstuvwxyz", ...source.filter((t) => !/[a-z]/.test(t))];
  const generated = [...reversed, "<eos>"];
  return {
    format: "tinyformer-explore/1",
    model: { name: Ls > 16 ? "sample-reverse-long" : "sample-reverse", arch: "encoder_decoder", d_model: D, nhead: H, head_dim: D / H, norm_first: true, attention: null },
    input: { text, target: reversed.join(""), target_given: false },
    sequences: { source, target },
    padding: { source: noPad(Ls), target: noPad(Lt) },
    attentions,
    decoding: {
      mode: "greedy", beam: 1,
      steps: generated.map((t, position) => ({ position, candidates: candidates(rand, vocab.indexOf(t), t, vocab), chosen: vocab.indexOf(t) })),
      hypotheses: [{ tokens: reversed, log_p: -0.0123, score: -0.00205, best: true }],
    },
  };
}

export function bidiSample() {
  const data = encoderDecoderSample("ab\u202ecd\u05d0", 16, 78);
  data.model.name = "sample-\u202ebidi";
  return data;
}

export function longSample() {
  return encoderDecoderSample("attentionisallyouneedtransformer", 64, 56);
}

export function decoderOnlySample() {
  const rand = generator(34);
  const H = 4, D = 16;
  const text = "x</script>=";
  const tokens = [...text, "<pad>", "<pad>"];
  const n = tokens.length, prefix = text.length;
  const pad = tokens.map((t) => t === "<pad>");
  const mask = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (!pad[j] && (j < prefix || j <= i) ? 1 : 0)));
  const attentions = [];
  for (let l = 0; l < 2; ++l) {
    attentions.push(attention(rand, { name: `layers.${l}.self_attn`, stack: "layers", layer: l, attn: "self_attn", group: "self",
      queries: "source", keys: "source", maskName: `prefix-LM (prefix ${prefix})`, mask, qPad: pad, H, D }));
  }
  const vocab = ["<pad>", "<bos>", "<eos>", "<unk>", ..."</=>abcdeiprstx"];
  const out = ["=", ">", "t", "p", "<eos>"];
  return {
    format: "tinyformer-explore/1",
    model: { name: "sample-prefixlm", arch: "decoder_only", d_model: D, nhead: H, head_dim: D / H, norm_first: true, attention: "prefix_lm" },
    input: { text, target: null, target_given: false },
    sequences: { source: tokens },
    padding: { source: pad },
    attentions,
    decoding: {
      mode: "beam", beam: 2,
      steps: out.map((t, position) => ({ position, candidates: candidates(rand, vocab.indexOf(t), t, vocab), chosen: vocab.indexOf(t) })),
      hypotheses: [
        { tokens: out.slice(0, 4), log_p: -0.41, score: -0.1025, best: true },
        { tokens: ["=", ">", "t", "s"], log_p: -1.7, score: -0.425, best: false },
      ],
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  const kind = process.argv[3] || "encdec";
  if (!out || !["encdec", "decoder", "long", "bidi"].includes(kind)) {
    console.error("usage: node tests/browser/make_sample_page.mjs OUT.html [encdec|decoder|long|bidi]");
    process.exit(2);
  }
  const samples = { encdec: encoderDecoderSample, decoder: decoderOnlySample, long: longSample, bidi: bidiSample };
  const data = samples[kind]();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, assemblePage(data));
  console.log(`wrote ${out} (${kind})`);
}
