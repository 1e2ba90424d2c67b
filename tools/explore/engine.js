// The engine in the page: window.tinyformer, the one entry point the page's
// controls and the browser tests call (docs/FORMAT.md section 4, "The live engine").
//   ready    a Promise: resolves (with info) once the WebAssembly module is
//            instantiated and the checkpoint embedded in
//            <script type="application/octet-stream" id="tinyformer-model">
//            (base64) is written to the module's in-memory file system and
//            loaded; rejects with the reason on a recorded page (no engine)
//   run(r)   a Promise of the RESULT of request r; calls run one after the
//            other, never together; rejects with an Error whose message is the
//            engine's one line
//   info     {name, arch, blas_description} of the loaded model and the
//            engine's matrix product (null until ready)
//   last     the last RESULT (null until one), for tests
// The engine itself is build/wasm/tinyformer-engine.js, inlined before this
// script by `tinyformer explore`: emscripten's glue (TinyformerEngine) and the
// WebAssembly module gzipped in base64 (TinyformerEngineWasmGzip), which this
// script unpacks with the browser's DecompressionStream and hands to the glue
// (instantiateWasm), so nothing is fetched.
(function () {
  "use strict";
  const api = { ready: null, run: null, info: null, last: null };
  window.tinyformer = api;

  function statusOfPage() {
    const element = document.getElementById("tinyformer-engine-status");
    try {
      return JSON.parse(element ? element.textContent : "");
    } catch (error) {
      return { live: false, reason: "the page holds no engine status" };
    }
  }

  function base64Bytes(text) {
    const binary = atob(text.replace(/\s+/g, ""));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  // Calls the engine's entry point `name` with `text` in the module's heap
  // (ccall's "string" would copy it onto the 5 MB stack, which a long pasted
  // input overflows, killing the module). Returns the engine's reply text.
  function call(module, name, text) {
    const size = module.lengthBytesUTF8(text) + 1;
    const pointer = module._malloc(size);
    if (!pointer) throw new Error("the request is too large for the engine's memory");
    try {
      module.stringToUTF8(text, pointer, size);
      return module.ccall(name, "string", ["number"], [pointer]);
    } finally {
      module._free(pointer);
    }
  }

  // The engine's answer {"ok":true,"result":...} | {"ok":false,"error":"..."}.
  function answer(text) {
    const reply = JSON.parse(text);
    if (!reply.ok) throw new Error(reply.error);
    return reply.result;
  }

  const status = statusOfPage();
  let engine = null;
  if (!status.live) {
    api.ready = Promise.reject(new Error(status.reason || "this page is recorded: it holds no engine"));
  } else if (typeof TinyformerEngine !== "function" || typeof TinyformerEngineWasmGzip !== "string") {
    api.ready = Promise.reject(new Error("the engine script did not load in this browser"));
  } else if (typeof DecompressionStream !== "function") {
    api.ready = Promise.reject(new Error("this browser has no DecompressionStream to unpack the engine"));
  } else {
    // The module's bytes: base64 -> gzip -> wasm.
    const gzipped = new Blob([base64Bytes(TinyformerEngineWasmGzip)]);
    const wasmBytes = new Response(gzipped.stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
    // A module that does not unpack or instantiate rejects `ready` (through
    // the race below) instead of leaving it pending.
    let failed = null;
    const failure = new Promise((resolve, reject) => { failed = reject; });
    const instantiateWasm = (imports, receive) => {
      wasmBytes.then((bytes) => WebAssembly.instantiate(bytes, imports))
        .then((made) => receive(made.instance), (error) => failed(new Error("the engine did not start: " + error.message)));
      return {}; // the exports arrive through receive
    };
    const started = TinyformerEngine({ print: () => {}, printErr: () => {}, instantiateWasm });
    api.ready = Promise.race([started, failure]).then((module) => {
      const path = "/" + status.model_file;
      module.FS.writeFile(path, base64Bytes(document.getElementById("tinyformer-model").textContent));
      api.info = answer(call(module, "tinyformer_load", path));
      engine = module;
      return api.info;
    });
  }
  api.ready.catch(() => {}); // a recorded page's rejection is read by whoever asks, not reported

  // A request's JSON text beyond this is refused before it reaches the engine
  // (no model here reads a text near that long: the engine refuses far less).
  const kRequestLimit = 1 << 20;

  let queue = Promise.resolve();
  api.run = function (request) {
    const work = queue.then(() => api.ready).then(() => {
      const text = JSON.stringify(request);
      if (text === undefined) throw new Error("request: expected a JSON object");
      if (text.length > kRequestLimit)
        throw new Error("request: " + text.length + " characters, above the " + kRequestLimit + " the page's engine takes");
      const result = answer(call(engine, "tinyformer_run", text));
      api.last = result;
      return result;
    });
    queue = work.catch(() => {});
    return work;
  };
})();
