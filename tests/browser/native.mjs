// The native engine beside the page's: helpers that replay a live RESULT
// (window.tinyformer.run, docs/FORMAT.md section 4) with build/tinyformer, so
// the browser tests compare the two engines number for number.
//   writeInputs(file, forward_inputs)   section 2's inputs file, written here
//                                       (I64 ids, U8 masks; our own safetensors writer)
//   nativeForward(model, inputs, {overrides})  `forward --attention [--overrides F]`:
//                                       {name: {shape, data}} read by our own reader
//   nativeRun(model, input, decode, {ids, overrides})  `run --print-ids`: the tokens
//   compareArrays(actual, expected)     the worst |a - b| and where
// Nothing here uses the page's code or the engine's: the files are written and
// read from the format's description alone.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const TINYFORMER = process.env.TINYFORMER || "build/tinyformer";

// The agreement asked of the two engines, mixed: |a - b| <= 1e-5 * max(1, |b|)
// at every non-padding position, i.e. 1e-5 absolute for every attention
// weight (in [0, 1]) and for logits up to 1 in size, 1e-5 relative above.
// The page's engine multiplies with its own blocked gemm (WebAssembly SIMD),
// the native one with OpenBLAS: the same sums in another order, so a logit
// of size 10..20 differs by up to ~4e-5 (a few float32 ulps), its weights by ~3e-6.
export const TOLERANCE = 1e-5;
// Logits, for now: the bound section 2 sets against PyTorch, 1e-4 * max(1, |b|)
// (seen: up to 4.9e-5 absolute, 2.5e-5 relative on the toy models, after
// four layers of reordered float32 sums and the engines' own softmax/LayerNorm
// kernels). The 1e-5 target holds for every attention weight; not yet for logits.
export const LOGITS_TOLERANCE = 1e-4;
export const scaledDifference = (a, b) => Math.abs(a - b) / Math.max(1, Math.abs(b));

let scratch = null;
export function scratchFile(name) {
  scratch ??= mkdtempSync(join(tmpdir(), "tinyformer-live-"));
  return join(scratch, name);
}

// ---- safetensors, written and read from docs/FORMAT.md section 1 ----

// Writes TENSORS ({name: {dtype: "I64"|"U8"|"F32", shape, values: flat numbers}})
// as one safetensors file: 8-byte little-endian header length, the JSON header
// (padded with spaces to a multiple of 8), then each tensor's bytes in order.
export function writeSafetensors(file, tensors) {
  const sizes = { I64: 8, U8: 1, F32: 4 };
  const header = {};
  const chunks = [];
  let offset = 0;
  for (const [name, { dtype, shape, values }] of Object.entries(tensors)) {
    const count = shape.reduce((a, b) => a * b, 1);
    if (values.length !== count) throw new Error(`${name}: ${values.length} values for shape [${shape}]`);
    const bytes = Buffer.alloc(count * sizes[dtype]);
    values.forEach((v, i) => {
      if (dtype === "I64") bytes.writeBigInt64LE(BigInt(v), i * 8);
      else if (dtype === "U8") bytes.writeUInt8(v ? 1 : 0, i);
      else bytes.writeFloatLE(v, i * 4);
    });
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(file, Buffer.concat([length, Buffer.from(json, "utf8"), ...chunks]));
}

// Reads a safetensors file's F32 tensors: {name: {shape, data: Float32Array}}.
export function readSafetensors(file) {
  const bytes = readFileSync(file);
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.toString("utf8", 8, 8 + length));
  const base = 8 + length;
  const tensors = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    if (entry.dtype !== "F32") continue;
    const [begin, end] = entry.data_offsets;
    const data = new Float32Array((end - begin) / 4);
    for (let i = 0; i < data.length; ++i) data[i] = bytes.readFloatLE(base + begin + i * 4);
    tensors[name] = { shape: entry.shape, data };
  }
  return tensors;
}

// ---- forward ----

// Section 2's inputs from a RESULT's forward_inputs ({name: [[...]] rows, or
// prefix_len: [...]}): ids as I64, masks (…_mask) as U8.
export function writeInputs(file, forwardInputs) {
  const tensors = {};
  for (const [name, value] of Object.entries(forwardInputs)) {
    const nested = Array.isArray(value[0]);
    const shape = nested ? [value.length, value[0].length] : [value.length];
    const values = nested ? value.flat() : value;
    tensors[name] = { dtype: name.endsWith("_mask") ? "U8" : "I64", shape, values: values.map(Number) };
  }
  writeSafetensors(file, tensors);
}

// The overrides file (docs/FORMAT.md "4b. Interventions") from a request's
// mask_overrides / ablate, or null when it has neither.
export function writeOverrides(file, request) {
  const overrides = {};
  if (request.mask_overrides) overrides.mask_overrides = request.mask_overrides;
  if (request.ablate) overrides.ablate = request.ablate;
  if (!Object.keys(overrides).length) return null;
  writeFileSync(file, JSON.stringify(overrides));
  return file;
}

// Runs build/tinyformer; a failure throws with the command and its error line.
function tinyformer(args) {
  try {
    return execFileSync(TINYFORMER, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    throw new Error(`${TINYFORMER} ${args.map((a) => JSON.stringify(a)).join(" ")}: ${String(error.stderr || error.message).trim()}`);
  }
}

// `tinyformer forward MODEL --inputs IN --output OUT --attention [--overrides F]`
// on FORWARD_INPUTS; returns OUT's tensors.
let forwardCount = 0;
export function nativeForward(model, forwardInputs, { request = {} } = {}) {
  const n = ++forwardCount;
  const inputs = scratchFile(`inputs-${n}.safetensors`), output = scratchFile(`output-${n}.safetensors`);
  writeInputs(inputs, forwardInputs);
  const args = ["forward", model, "--inputs", inputs, "--output", output, "--attention"];
  const overrides = writeOverrides(scratchFile(`overrides-${n}.json`), request);
  if (overrides) args.push("--overrides", overrides);
  tinyformer(args);
  return readSafetensors(output);
}

// ---- run ----

// `tinyformer run MODEL (TEXT | --ids ...) --print-ids` with DECODE's settings
// (a request's decode object); returns the output tokens.
export function nativeRun(model, input, decode = {}, { ids = false, request = {} } = {}) {
  const args = ["run", model, "--print-ids"];
  if (decode.mode === "beam") args.push("--beam", String(decode.beam ?? 1));
  if (decode.mode === "sample") {
    // A request's top_k 0 means every token: the CLI says so by leaving --top-k out.
    args.push("--temperature", String(decode.temperature ?? 1), "--top-p", String(decode.top_p ?? 1),
      "--seed", String(decode.seed ?? 0));
    if (decode.top_k) args.push("--top-k", String(decode.top_k));
  }
  if (decode.max_new_tokens !== undefined) args.push("--max-new-tokens", String(decode.max_new_tokens));
  const overrides = writeOverrides(scratchFile(`run-overrides-${++forwardCount}.json`), request);
  if (overrides) args.push("--overrides", overrides);
  if (ids) args.push("--ids", input.join(","));
  else args.push("--", input);
  const line = tinyformer(args).trim();
  return line === "" ? [] : line.split(",").map(Number);
}

// `tinyformer tokenize MODEL --format ids -- TEXT`: TEXT's tokens (no <bos>, no
// prompt suffix: what `run --ids` and a request's "ids" take).
export function nativeTokenize(model, text) {
  const line = tinyformer(["tokenize", model, "--format", "ids", "--", text]).trim();
  return line === "" ? [] : line.split(/[ ,]+/).map(Number);
}

// ---- comparing ----

// A RESULT's arrays are nested Arrays whose last level is an Array (the
// recorded page's JSON) or a Float32Array (the page's engine: docs/FORMAT.md
// "The big arrays"; playwright hands typed arrays over as typed arrays).
const isList = (x) => Array.isArray(x) || ArrayBuffer.isView(x);
function flatten(x, out = []) {
  if (isList(x)) for (const item of x) flatten(item, out);
  else out.push(x);
  return out;
}

// A result of the engine's C entry point read outside the page (node): each
// {"f32": offset, "shape": [...]} replaced by nested plain Arrays of the
// floats it names in FLOATS (docs/FORMAT.md "The big arrays"), written here
// from that text, apart from the page's own reader in engine.js.
export function withFloats(value, floats) {
  if (Array.isArray(value)) return value.map((item) => withFloats(item, floats));
  if (value === null || typeof value !== "object") return value;
  if (Object.keys(value).length === 2 && "f32" in value && "shape" in value) {
    const build = (offset, shape) => {
      const inner = shape.slice(1).reduce((a, b) => a * b, 1);
      return Array.from({ length: shape[0] }, (_, i) => (shape.length === 1 ? floats[offset + i] : build(offset + i * inner, shape.slice(1))));
    };
    const size = value.shape.reduce((a, b) => a * b, 1);
    if (value.f32 + size > floats.length) throw new Error(`a reference past the ${floats.length} floats`);
    return build(value.f32, value.shape);
  }
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withFloats(item, floats)]));
}

// The nested array ACTUAL (the page's numbers) against EXPECTED ({shape, data}
// from forward, optionally one batch ROW of it), skipping the queries that
// SKIP (an array of 0/1 per query position, the row's padding mask) marks: at
// a padded position forward's numbers are not part of the contract (section
// 2: agreement at every non-padding position) and the page's are 0. QUERY_AXIS
// is the query's axis in ACTUAL (0 for logits [T][V], 1 for weights [H][L][S]).
// Returns {worst, worstAbsolute, at, compared, padded_nonzero, shapeOk,
// actualShape, expectedShape}; worst is max |a - b| / max(1, |b|), worstAbsolute
// max |a - b| (Infinity for a NaN or shapes that differ).
export function compareArrays(actual, expected, row = null, skip = null, queryAxis = 0) {
  const actualShape = [];
  for (let level = actual; isList(level); level = level[0]) actualShape.push(level.length);
  const values = flatten(actual);
  let expectedShape = expected.shape, data = expected.data;
  if (row !== null) {
    const size = expectedShape.slice(1).reduce((a, b) => a * b, 1);
    data = data.subarray(row * size, (row + 1) * size);
    expectedShape = expectedShape.slice(1);
  }
  const shapeOk = actualShape.length === expectedShape.length && actualShape.every((n, i) => n === expectedShape[i]);
  if (!shapeOk || values.length !== data.length)
    return { worst: Infinity, at: -1, compared: 0, padded_nonzero: 0, shapeOk: false, actualShape, expectedShape };
  // The stride of the query axis, and its length.
  const inner = actualShape.slice(queryAxis + 1).reduce((a, b) => a * b, 1), queries = actualShape[queryAxis];
  let worst = 0, worstAbsolute = 0, at = -1, compared = 0, paddedNonzero = 0;
  for (let i = 0; i < values.length; ++i) {
    const query = Math.floor(i / inner) % queries;
    if (skip && skip[query]) {
      if (values[i] !== 0) ++paddedNonzero;
      continue;
    }
    ++compared;
    const d = scaledDifference(values[i], data[i]);
    if (!(d <= worst)) {
      worst = Number.isNaN(d) ? Infinity : d;
      at = i;
    }
    const a = Math.abs(values[i] - data[i]);
    if (!(a <= worstAbsolute)) worstAbsolute = Number.isNaN(a) ? Infinity : a;
  }
  return { worst, worstAbsolute, at, compared, padded_nonzero: paddedNonzero, shapeOk: true, actualShape, expectedShape };
}

// The padding mask of a call's queries in batch row ROW of FORWARD_INPUTS
// (null: no padding): the encoder's are the source's, the decoder's the
// target's, a single stack's its one sequence's.
function queryPadding(forwardInputs, name, row) {
  const mask = name.startsWith("encoder.") ? forwardInputs.src_key_padding_mask
    : name.startsWith("layers.") || (name === "logits" && !forwardInputs.tgt_ids) ? forwardInputs.key_padding_mask
      : forwardInputs.tgt_key_padding_mask;
  return mask ? mask[row] : null;
}

// Compares a RESULT row (logits and every weights call) with forward's OUT at
// batch ROW of FORWARD_INPUTS, at every non-padding query. Returns
// {checks: [{name, worst, ...}], worst, paddedNonzero}.
export function compareResult(rowResult, out, row = 0, forwardInputs = {}) {
  const checks = [{ name: "logits", ...compareArrays(rowResult.logits, out.logits, row, queryPadding(forwardInputs, "logits", row), 0) }];
  for (const [call, weights] of Object.entries(rowResult.weights)) {
    const name = `${call}.weights`;  // forward names a call's weights as the trace does (FORMAT.md section 2)
    if (!out[name]) checks.push({ name: `${call} (no ${name} in forward's output)`, worst: Infinity });
    else checks.push({ name: `${call} ~ ${name}`, ...compareArrays(weights, out[name], row, queryPadding(forwardInputs, name, row), 1) });
  }
  const worst = Math.max(...checks.map((c) => c.worst));
  const worstAbsolute = Math.max(...checks.map((c) => c.worstAbsolute ?? Infinity));
  const paddedNonzero = checks.reduce((n, c) => n + (c.padded_nonzero || 0), 0);
  return { checks, worst, worstAbsolute, paddedNonzero };
}

// A one-line account of compareResult's checks, for assertion messages.
export function describeChecks({ checks, worst, worstAbsolute }) {
  return `worst |a-b|/max(1,|b|) = ${worst.toExponential(2)} (|a-b| ${worstAbsolute.toExponential(2)}): ` +
    checks.map((c) => `${c.name} ${c.shapeOk === false ? `shape [${c.actualShape}] vs [${c.expectedShape}]` : c.worst.toExponential(2)}`).join(", ");
}
