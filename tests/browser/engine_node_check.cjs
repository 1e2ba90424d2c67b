// A quick check of the built engine without a browser: node loads
// build/wasm/tinyformer-engine.js, writes a checkpoint to its in-memory file
// system, loads it and runs {text}; the target must be what `build/tinyformer run`
// prints for the same model and text. Prints one line per input and the time
// of one run (the first, and the mean of 3 more).
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
TinyformerEngine({ print() {}, printErr() {}, wasmBinary }).then((engine) => {
  const call = (name, arg) => {
    const reply = JSON.parse(engine.ccall(name, "string", ["string"], [arg]));
    if (!reply.ok) throw new Error(reply.error);
    return reply.result;
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
    const same = result.text === native;
    if (!same) failed++;
    console.log(`${same ? "ok  " : "DIFF"} ${path.basename(model)} ${JSON.stringify(text)}: engine ${JSON.stringify(result.text)}, run ${JSON.stringify(native)}; ${first} ms, then ${mean.toFixed(0)} ms`);
  }
  process.exitCode = failed ? 1 : 0;
});
