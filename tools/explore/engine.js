// The engine in the page: window.tinyformer, the one entry point the page's
// controls and the browser tests call (docs/FORMAT.md section 4, "The live engine").
//   ready    a Promise: resolves (with info) once the engine has started: the
//            WebAssembly module instantiated and the checkpoint embedded in
//            <script type="application/octet-stream" id="tinyformer-model">
//            (base64) written to the module's in-memory file system and
//            loaded; on a page without weights (`explore --html F` without a
//            model, or --no-embed) once open() has loaded the first model;
//            rejects with the reason on a recorded page (no engine)
//   open(f)  loads the checkpoint in the File (or Blob) f the user chose or
//            dropped: a Promise of info once the engine holds it, or rejected
//            with the engine's one line (the CLI's loader and its words); the
//            model loaded before stays until f has loaded, and stays when f
//            is refused. The bytes never pass through the page: the File (a
//            handle) goes to the worker, which reads it, writes it to the
//            module's file system, loads it into the module's memory and
//            deletes the file, so the weights are held once.
//   embedded true when the page holds its checkpoint (false: open() gives one)
//   run(r)   a Promise of the RESULT of request r; calls run one after the
//            other, never together; rejects with an Error whose message is the
//            engine's one line (name "AbortError" when stop() ended it)
//   stop()   ends the request running and those waiting (each rejects with an
//            AbortError) and starts the engine again; a Promise of info once
//            the fresh engine is ready (at once when nothing runs)
//   running  true from a request's start to its end
//   info     {name, arch, blas_description, memory_bytes} of the loaded model
//            and the engine's matrix product, and the module's memory after
//            the load (null until ready)
//   last     the last RESULT (null until one), for tests
// A RESULT's big arrays (logits, weights, q, k, v, scores, z: docs/FORMAT.md
// section 4, "The big arrays") come from the engine as one Float32Array beside
// its JSON text, never as decimals: in the RESULT each is nested arrays whose
// last level is a Float32Array view of it (rows read as result.logits[t][v]).
//
// Off the main thread: the engine runs in a dedicated Web Worker, so a long
// generation (a model that never emits <eos> decodes up to max_new_tokens)
// never freezes the page, and Stop can end it: a WebAssembly call cannot be
// interrupted, so stop() terminates the worker and starts a fresh one.
// The worker is made from the page's own text, nothing is fetched: the
// engine, build/wasm/tinyformer-engine.js (emscripten's glue, TinyformerEngine,
// and the module gzipped in base64, TinyformerEngineWasmGzip), sits inert in
// <script type="text/plain" id="tinyformer-engine"> (the page never runs it);
// its text followed by engineWorker below becomes a Blob, whose blob: URL
// (the page's own, same origin even from file://) is the worker's script.
(function () {
  "use strict";
  const api = { ready: null, open: null, run: null, stop: null, running: false, info: null, last: null, embedded: false };
  window.tinyformer = api;

  // The worker's code, run inside the worker after the engine's glue (so
  // TinyformerEngine and TinyformerEngineWasmGzip are its globals). It reads
  // nothing of this file around it: its text alone goes into the Blob.
  // Messages in: {kind: "load", model: base64 | null, file: File | null, path} once, then {kind: "run",
  // request: JSON text}, one at a time. Messages out: {kind: "loaded", reply}
  // (and memory: the module's memory in bytes after it)
  // or {kind: "failed", error} for the load; {kind: "reply", reply, floats} for a run
  // (floats: a copy of the result's big arrays, a Float32Array handed over, not copied again),
  // or {kind: "failed", error} when the module itself broke (it is not used again).
  // A reply is the engine's JSON text: {"ok":true,"result":...} | {"ok":false,"error":"..."}.
  function engineWorker() {
    "use strict";
    let module = null;

    function base64Bytes(text) {
      const binary = atob(text.replace(/\s+/g, ""));
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      return bytes;
    }

    // Calls the engine's entry point `name` with `text` in the module's heap
    // (ccall's "string" would copy it onto the 5 MB stack, which a long pasted
    // input overflows, killing the module). Returns the engine's reply text.
    function call(name, text) {
      const size = module.lengthBytesUTF8(text) + 1;
      const pointer = module._malloc(size);
      if (!pointer) return JSON.stringify({ ok: false, error: "the request is too large for the engine's memory" });
      try {
        module.stringToUTF8(text, pointer, size);
        return module.ccall(name, "string", ["number"], [pointer]);
      } finally {
        module._free(pointer);
      }
    }

    // The last result's big arrays copied out of the module's memory, one
    // after another, into one Float32Array (the module frees them at its next
    // request). (>>> 0: the module's pointers and sizes are unsigned 32-bit.)
    function resultArrays(reply) {
      if (!reply.startsWith('{"ok":true')) return new Float32Array(0);
      const count = module._tinyformer_array_count() >>> 0;
      let total = 0;
      for (let i = 0; i < count; ++i) total += module._tinyformer_array_size(i) >>> 0;
      const floats = new Float32Array(total);
      for (let i = 0, offset = 0; i < count; ++i) {
        const size = module._tinyformer_array_size(i) >>> 0;
        floats.set(new Float32Array(module.HEAP8.buffer, module._tinyformer_array(i) >>> 0, size), offset);
        offset += size;
      }
      return floats;
    }

    // The module's bytes (base64 -> gzip -> wasm), instantiated; the model
    // written to its file system and loaded. A module that does not unpack or
    // instantiate fails the load (through the race) instead of leaving it pending.
    async function load(message) {
      if (typeof TinyformerEngine !== "function" || typeof TinyformerEngineWasmGzip !== "string")
        throw new Error("the engine script did not load in this browser");
      if (typeof DecompressionStream !== "function")
        throw new Error("this browser has no DecompressionStream to unpack the engine");
      const gzipped = new Blob([base64Bytes(TinyformerEngineWasmGzip)]);
      const wasmBytes = new Response(gzipped.stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
      let failed = null;
      const failure = new Promise((resolve, reject) => { failed = reject; });
      const instantiateWasm = (imports, receive) => {
        wasmBytes.then((bytes) => WebAssembly.instantiate(bytes, imports))
          .then((made) => receive(made.instance), (error) => failed(new Error("the engine did not start: " + error.message)));
        return {}; // the exports arrive through receive
      };
      module = await Promise.race([TinyformerEngine({ print: () => {}, printErr: () => {}, instantiateWasm }), failure]);
      // The checkpoint's bytes: the user's File read here (the page never holds
      // them), or the embedded base64. canOwn: the file system keeps this very
      // array (no copy); the engine then reads it into the module's memory and
      // the file is deleted, so the array is dropped and the weights are held
      // once, in the module. path: the file's own name in the file system's
      // current folder "/", so the engine's words name it as the CLI's do
      // when run beside it.
      const bytes = message.file ? new Uint8Array(await message.file.arrayBuffer()) : base64Bytes(message.model);
      module.FS.writeFile(message.path, bytes, { canOwn: true });
      try {
        return call("tinyformer_load", message.path);
      } finally {
        module.FS.unlink(message.path);
      }
    }

    self.onmessage = (event) => {
      const message = event.data;
      if (message.kind === "load") {
        load(message).then((reply) => self.postMessage({ kind: "loaded", reply, memory: module.HEAP8.length }),
          (error) => self.postMessage({ kind: "failed", error: String(error && error.message ? error.message : error) }));
      } else if (message.kind === "run") {
        let reply;
        try {
          reply = call("tinyformer_run", message.request);
        } catch (error) {
          // Not the engine's refusal (that is a reply) but the module stopping (a trap, out of memory);
          // emscripten's advice to its developers is left out of the line.
          const what = String(error && error.message ? error.message : error).replace(/\.?\s*Build with -s ASSERTIONS=1 for more info\.?/, "");
          self.postMessage({ kind: "failed", error: "the engine stopped: " + what + "; the next request starts it again" });
          return;
        }
        const floats = resultArrays(reply);
        self.postMessage({ kind: "reply", reply, floats }, [floats.buffer]);
      }
    };
  }

  function statusOfPage() {
    const element = document.getElementById("tinyformer-engine-status");
    try {
      return JSON.parse(element ? element.textContent : "");
    } catch (error) {
      return { live: false, reason: "the page holds no engine status" };
    }
  }

  // The engine's answer {"ok":true,"result":...} | {"ok":false,"error":"..."},
  // its references to the big arrays {"f32": offset, "shape": [...]} read in FLOATS.
  function answer(text, floats) {
    const reply = JSON.parse(text);
    if (!reply.ok) throw new Error(reply.error);
    return floats ? withArrays(reply.result, floats) : reply.result;
  }
  // Each {"f32": offset, "shape": [n, ..., m]} in VALUE becomes nested arrays of
  // Float32Array rows of m, views of FLOATS from offset (no number is copied).
  function withArrays(value, floats) {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; ++i) value[i] = withArrays(value[i], floats);
    } else if (value !== null && typeof value === "object") {
      if (typeof value.f32 === "number" && Array.isArray(value.shape) && Object.keys(value).length === 2)
        return nested(floats, value.f32, value.shape);
      for (const key of Object.keys(value)) value[key] = withArrays(value[key], floats);
    }
    return value;
  }
  function nested(floats, offset, shape) {
    if (shape.length === 1) {
      if (offset + shape[0] > floats.length) throw new Error("the engine's result points past its arrays");
      return floats.subarray(offset, offset + shape[0]);
    }
    const inner = shape.slice(1), size = inner.reduce((a, b) => a * b, 1);
    return Array.from({ length: shape[0] }, (_, i) => nested(floats, offset + i * size, inner));
  }

  function stopped(what) {
    const error = new Error(what);
    error.name = "AbortError";
    return error;
  }

  // ---- the worker: one at a time; `engine` is the current one ----
  // engine: {worker, started: Promise of info, pending: {resolve, reject} of the
  // request it runs, or null}.
  let engine = null;
  // The checkpoint each fresh engine loads: the embedded base64 text, or the File opened.
  let workerUrl = null, modelText = "", modelFile = null, modelPath = "";

  function startEngine() {
    const worker = new Worker(workerUrl);
    const current = { worker, started: null, pending: null };
    let loaded = null, notLoaded = null;
    current.started = new Promise((resolve, reject) => { loaded = resolve; notLoaded = reject; });
    current.started.catch(() => {}); // read by whoever waits on it
    // A module that broke (or a worker that failed) is not used again: the next request gets a fresh one.
    const broken = (error) => {
      if (engine === current) {
        worker.terminate();
        engine = null;
      }
      notLoaded(error);
      if (current.pending) current.pending.reject(error);
      current.pending = null;
    };
    worker.onmessage = (event) => {
      const message = event.data;
      if (message.kind === "loaded") {
        try {
          loaded(Object.assign(answer(message.reply), { memory_bytes: message.memory }));
        } catch (error) {
          broken(error);
        }
      } else if (message.kind === "reply" && current.pending) {
        const pending = current.pending;
        current.pending = null;
        pending.resolve(message);
      } else if (message.kind === "failed") {
        broken(new Error(message.error));
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      broken(new Error("the engine's worker failed: " + (event.message || "no reason given")));
    };
    worker.postMessage({ kind: "load", model: modelFile ? null : modelText, file: modelFile, path: modelPath });
    engine = current;
    return current;
  }

  // The name a checkpoint gets in the module's file system: the file's own
  // name when it is one plain name (a File's name never holds "/"; NUL and a
  // name the file system cannot hold are refused there), else a fixed one.
  function fileName(name) {
    const text = String(name || "");
    return text && text !== "." && text !== ".." && text.length <= 200 && !/[\/\0]/.test(text) ? text : "model.safetensors";
  }
  let firstOpened = null;

  const status = statusOfPage();
  if (!status.live) {
    api.ready = Promise.reject(new Error(status.reason || "this page is recorded: it holds no engine"));
  } else if (typeof Worker !== "function" || typeof Blob !== "function" || typeof URL.createObjectURL !== "function") {
    api.ready = Promise.reject(new Error("this browser cannot run the engine beside the page (no Web Worker)"));
  } else {
    const glue = document.getElementById("tinyformer-engine");
    const model = document.getElementById("tinyformer-model");
    modelText = model ? model.textContent.trim() : "";
    workerUrl = URL.createObjectURL(new Blob([glue ? glue.textContent : "", "\n;(", engineWorker.toString(), ")();\n"],
      { type: "text/javascript" }));
    api.embedded = Boolean(status.model_file && modelText);
    if (api.embedded) {
      modelPath = fileName(status.model_file);
      try {
        api.ready = startEngine().started.then((info) => { api.info = info; return info; });
      } catch (error) {
        api.ready = Promise.reject(new Error("this browser refused the engine's worker: " + error.message));
      }
    } else {
      // No weights in the page: ready once the user's first model has loaded.
      api.ready = new Promise((resolve) => { firstOpened = resolve; });
    }
  }
  api.ready.catch(() => {}); // a recorded page's rejection is read by whoever asks, not reported

  // A request's JSON text beyond this is refused before it reaches the engine
  // (no model here reads a text near that long: the engine refuses far less).
  const kRequestLimit = 1 << 20;

  // Every stop() ends the requests made before it: each request remembers
  // the count of stops when it was made.
  let stops = 0;
  let queue = Promise.resolve();
  api.run = function (request) {
    const madeAfter = stops;
    const work = queue.then(() => {
      if (firstOpened) throw new Error("no model is open: open a .safetensors file (Open model, or drop one on the page)");
      return api.ready;
    }).then(() => {
      if (stops !== madeAfter) throw stopped("stopped before it ran");
      const text = JSON.stringify(request);
      if (text === undefined) throw new Error("request: expected a JSON object");
      if (text.length > kRequestLimit)
        throw new Error("request: " + text.length + " characters, above the " + kRequestLimit + " the page's engine takes");
      const current = engine || startEngine();
      return current.started.then(() => {
        if (stops !== madeAfter) throw stopped("stopped before it ran");
        api.running = true;
        return new Promise((resolve, reject) => {
          current.pending = { resolve, reject };
          current.worker.postMessage({ kind: "run", request: text });
        });
      });
    }).then((message) => {
      api.running = false;
      const result = answer(message.reply, message.floats);
      api.last = result;
      return result;
    }, (error) => {
      api.running = false;
      throw error;
    });
    queue = work.catch(() => {});
    return work;
  };

  api.open = function (file) {
    const work = queue.then(() => {
      if (!status.live || !workerUrl) return api.ready.then(() => { throw new Error("this page has no engine to open a model in"); });
      if (!file || typeof file.arrayBuffer !== "function") throw new Error("open: expected a file (a File or Blob)");
      // The model loaded before keeps running until this one has loaded: a refused file changes nothing.
      const before = { engine, modelText, modelFile, modelPath };
      modelFile = file;
      modelPath = fileName(file.name);
      const current = startEngine();
      return current.started.then((info) => {
        if (before.engine) before.engine.worker.terminate();
        modelText = "";
        api.embedded = false;
        api.info = info;
        api.last = null;
        if (firstOpened) {
          firstOpened(info);
          firstOpened = null;
        }
        return info;
      }, (error) => {
        current.worker.terminate();
        ({ engine, modelText, modelFile, modelPath } = before);
        throw error;
      });
    });
    queue = work.catch(() => {});
    return work;
  };

  api.stop = function () {
    ++stops; // the requests waiting do not run
    if (!engine || !api.running) return engine ? engine.started : api.ready;
    const old = engine;
    old.worker.terminate();
    engine = null;
    if (old.pending) old.pending.reject(stopped("stopped: the run was ended before it finished"));
    old.pending = null;
    return startEngine().started;
  };
})();
