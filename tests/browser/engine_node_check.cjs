// A quick check of the built engine without a browser: node loads
// build/wasm/tinyformer-engine.js, writes a checkpoint to its in-memory file
// system, loads it and runs {text}; the target's tokens must be what
// `build/tinyformer run --print-ids` prints for the same model and text at
// every step the engine's logits decide (margin.mjs: the engine's own gemm and
// OpenBLAS sum in other orders), its logits must be within LOGITS_TOLERANCE
// of `tinyformer forward`'s (the bound margin.mjs builds on), and every step
// must be decided for an "ok". Prints one line per input and the time of one run (the
// first, and the mean of 3 more).
//   node tests/browser/engine_node_check.cjs MODEL.safetensors TEXT...
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const root = path.resolve(__dirname, "../..");
const enginePath = path.join(root, "build/wasm/tinyformer-engine.js");
// The engine is a script for a page (MODULARIZE: it defines TinyformerEngine); here it is
// evaluated as one, with node's require for emscripten's node branch.
const code = fs.readFileSync(enginePath, "utf8");
// The file ends with the module, gzipped in base64 (TinyformerEngineWasmGzip): node's
// zlib unpacks it where the page uses DecompressionStream (tools/explore/engine.js).
const [TinyformerEngine, wasmGzip] = new Function("require", "__filename", "__dirname", "module", "exports",
  code + "\nreturn [TinyformerEngine, TinyformerEngineWasmGzip];")(require, enginePath, path.dirname(enginePath), {}, undefined);
const wasmBinary = require("zlib").gunzipSync(Buffer.from(wasmGzip, "base64"));

const [model, ...texts] = process.argv.slice(2);
Promise.all([TinyformerEngine({ print() {}, printErr() {}, wasmBinary }), import("./margin.mjs"), import("./native.mjs")])
  .then(([engine, { greedyDecided, predictingRows, disagreement }, { LOGITS_TOLERANCE, compareResult, nativeForward, nativeRun, withFloats }]) => {
  // A run's big arrays (docs/FORMAT.md "The big arrays"), copied out of the module one after another.
  const floats = () => {
    const parts = Array.from({ length: engine._tinyformer_array_count() >>> 0 }, (_, i) =>
      Float32Array.from(new Float32Array(engine.HEAP8.buffer, engine._tinyformer_array(i) >>> 0, engine._tinyformer_array_size(i) >>> 0)));
    return parts.flatMap((part) => Array.from(part));
  };
  const call = (name, arg) => {
    const reply = JSON.parse(engine.ccall(name, "string", ["string"], [arg]));
    if (!reply.ok) throw new Error(reply.error);
    return name === "tinyformer_run" ? withFloats(reply.result, floats()) : reply.result;
  };
  engine.FS.writeFile("/" + path.basename(model), fs.readFileSync(model));
  call("tinyformer_load", "/" + path.basename(model));
  let failed = 0;
  for (const text of texts) {
    const request = JSON.stringify({ text });
    let started = Date.now();
    const result = call("tinyformer_run", request);
    const first = Date.now() - started;
    started = Date.now();
    for (let i = 0; i < 3; i++) call("tinyformer_run", request);
    const mean = (Date.now() - started) / 3;
    const native = execFileSync(path.join(root, "build/tinyformer"), ["run", model, text], { encoding: "utf8" }).trimEnd();
    const logits = compareResult(result, nativeForward(model, result.forward_inputs), 0, result.forward_inputs).checks[0];
    const decided = greedyDecided(predictingRows(result));
    const problem = (logits.worst <= LOGITS_TOLERANCE ? "" : `logits differ from forward's by ${logits.worst.toExponential(2)}`) ||
      disagreement(decided, result.target_ids, nativeRun(model, text)) ||
      (decided.decided < decided.steps ? `only ${decided.decided} of ${decided.steps} steps decided` : "");
    if (problem) failed++;
    console.log(`${problem ? "DIFF" : "ok  "} ${path.basename(model)} ${JSON.stringify(text)}: engine ${JSON.stringify(result.text)}, run ${JSON.stringify(native)}` +
      `${problem ? ` (${problem})` : ""}; ${first} ms, then ${mean.toFixed(0)} ms`);
  }
  process.exitCode = failed ? 1 : 0;
});
