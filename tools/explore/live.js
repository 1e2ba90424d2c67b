// tinyformer explore, live: the controls that run the engine inside the page.
// Plain JavaScript, no framework, no network. Every control builds one request
// for window.tinyformer.run (docs/FORMAT.md section 4, "The live engine"),
// awaits the result and gives result.page (the same explore document the page
// was written with) to page.js's setData, which renders every view again.
// A recorded page (no engine in it) says so in one line; its controls stay off.
// Every page with the engine has "Open model" (and takes a .safetensors file
// dropped on it): engine.open(file) loads it in the engine, the views are
// emptied for the new model, and the input in the box (if any) runs on it.
// A page written without weights starts there, its controls off until a
// model is open.
//
// What the controls compute (the lesson's words):
// - a matrix cell click overrides that call's mask at (query, key): a blocked
//   key gets weight exactly 0 and the row renormalises over the keys left; an
//   allowed one joins the softmax. Every later layer then sees the new z.
// - a knocked-out head (the x beside a head chip): that head's output z_h is
//   zero before W_O; its weights are still computed, but nothing reads them.
//   The effect on each output token is d log p = log p(token | head knocked
//   out) - log p(token | every head), both on the same target (teacher forced),
//   shown beside the head's largest weight in that row: a high weight is not an
//   explanation, the change in log p is the experiment.
(function () {
  "use strict";
  const P = window.tinyformerPage;
  const $ = (selector) => document.querySelector(selector);
  const panel = $("#live-panel");
  if (!panel) return;
  const body = document.body;
  if (!P) {
    $("#live-status").textContent = "recorded page: its data could not be read, so the live controls are off";
    body.dataset.live = "recorded";
    return;
  }
  const { el, clear, fmt, shown, quoted, viridis, inkOn, diverging, divergingInk } = P;

  // ---- the state of the interventions ----
  const live = {
    engine: null,
    overrides: {},     // CALL -> [[query, key, allowed 0/1], ...]
    ablate: [],        // [[CALL, head], ...]
    running: false, again: false,
    stopping: null,    // engine.stop()'s Promise once Stop is pressed during a run
    result: null,      // what the views show: run(request)
    baseline: null,    // without the knock-outs, and then with them on its target
    forced: null,
    compare: null, compareError: "",
  };
  // The run controls (not the Open model row, which works before any model is open).
  const controls = () => Array.from(panel.querySelectorAll("input, select, button")).filter((c) => !c.closest("#open-row"));
  const message = (e) => (e && e.message ? e.message : String(e));

  function recorded(reason) {
    // One line: the engine's reason says "recorded" itself when it is a recorded page.
    $("#live-status").textContent = (/recorded/i.test(reason) ? reason : "recorded page: " + reason) + "; the live controls are off";
    for (const c of controls()) c.disabled = true;
    body.dataset.live = "recorded";
  }

  function start() {
    const engine = window.tinyformer;
    if (!engine || typeof engine.run !== "function") {
      recorded("it was written without the engine (no WebAssembly engine next to the binary, or --recorded)");
      return;
    }
    if (typeof engine.open === "function" && !engine.embedded) {
      // No weights in the page: the reader opens a model first.
      waitForModel(engine);
      return;
    }
    body.dataset.live = "loading";
    $("#live-status").textContent = "loading the engine\u2026";
    Promise.resolve(engine.ready).then(() => { enable(engine); offerOpen(engine); }, (e) => recorded(message(e)));
  }

  // ---- Open model: a .safetensors file from disk, by the button or dropped on the page ----
  function waitForModel(engine) {
    for (const c of controls()) c.disabled = true;
    body.dataset.live = "no-model";
    const d = P.data();
    const was = d.input && d.model && d.model.name !== undefined ? " (this page's pass is of " + String(d.model.name) + ".safetensors)" : "";
    $("#live-status").textContent = "no model is open" + was + ": Open model, or drop a .safetensors file on the page";
    offerOpen(engine);
  }
  function offerOpen(engine) {
    const row = $("#open-row"), button = $("#open-model"), input = $("#open-file");
    if (!row || !button || !input || typeof engine.open !== "function") return;
    row.hidden = false;
    button.disabled = false;
    button.addEventListener("click", () => input.click());
    input.addEventListener("change", () => {
      const files = input.files;
      if (files && files.length) openFile(engine, files[0]);
      input.value = "";  // the same file chosen again opens again
    });
    // A file dropped anywhere on the page is opened (the browser would otherwise open it in place of the page).
    const wantsFiles = (event) => event.dataTransfer && Array.from(event.dataTransfer.types || []).includes("Files");
    document.addEventListener("dragover", (event) => {
      if (!wantsFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
    });
    document.addEventListener("drop", (event) => {
      if (!wantsFiles(event)) return;
      event.preventDefault();
      const files = event.dataTransfer.files;
      if (!files || !files.length) return;
      if (files.length > 1) {
        $("#live-error").textContent = "drop one model file at a time (" + files.length + " were dropped)";
        return;
      }
      openFile(engine, files[0]);
    });
  }
  let opening = false;
  async function openFile(engine, file) {
    if (opening || live.running) {
      $("#live-error").textContent = "wait for the " + (opening ? "model being opened" : "run") + " to end before opening another model";
      return;
    }
    opening = true;
    const started = performance.now();
    const hadModel = Boolean(live.engine);
    body.dataset.open = "opening";
    $("#open-status").textContent = "";
    // The file's name is the reader's: only ever text.
    $("#live-status").textContent = "opening " + quoted(String(file.name)) + " (" + mib(file.size) + ")\u2026";
    try {
      const info = await engine.open(file);
      const ms = Math.round(performance.now() - started);
      live.overrides = {};
      live.ablate = [];
      Object.assign(live, { result: null, baseline: null, forced: null, compare: null, compareError: "" });
      $("#live-error").textContent = "";
      // The views are of the model before: emptied until an input runs on this one.
      P.setData({ format: "tinyformer-explore/1", model: { name: info.name, arch: info.arch }, input: null,
        sequences: {}, ids: {}, padding: {}, attentions: [], decoding: { mode: "none", steps: [], hypotheses: [] } });
      if (!hadModel) enable(engine);
      $("#open-status").textContent = "opened " + shown(String(info.name)) + " (" + info.arch + ") in " + ms + " ms; the engine's memory: " + mib(info.memory_bytes);
      body.dataset.opened = String(Number(body.dataset.opened || 0) + 1);
      body.dataset.open = "opened";
      if ($("#live-source").value !== "") {
        runAll();
      } else {
        $("#live-status").textContent = "ready: type an input and press Enter";
        body.dataset.live = "ready";
      }
    } catch (e) {
      $("#live-error").textContent = message(e);
      $("#open-status").textContent = "not opened: " + (hadModel ? "the model before is still the one running" : "no model is open");
      if (!hadModel) $("#live-status").textContent = "no model is open: Open model, or drop a .safetensors file on the page";
      body.dataset.open = "refused";
    } finally {
      opening = false;
      body.dataset.opens = String(Number(body.dataset.opens || 0) + 1);  // for tests: opens finished
    }
  }
  function mib(bytes) {
    return Number.isFinite(bytes) ? (bytes / (1024 * 1024)).toFixed(1) + " MiB" : "unknown";
  }

  function enable(engine) {
    live.engine = engine;
    panel.classList.remove("recorded");
    for (const c of controls()) c.disabled = false;
    $("#live-stop").disabled = true;  // on only while a request runs
    const tab = $('#tabs button[data-view="live"]');
    if (tab) tab.hidden = false;
    const d = P.data();
    const input = d.input || {};
    $("#live-source").value = input.text === undefined ? "" : String(input.text);
    $("#live-target").value = input.target_given && input.target !== undefined && input.target !== null ? String(input.target) : "";
    // `explore --block/--allow/--ablate`: the recorded pass is intervened, and the controls start from it.
    const given = d.interventions || {};
    if (given.mask_overrides && typeof given.mask_overrides === "object") live.overrides = JSON.parse(JSON.stringify(given.mask_overrides));
    if (Array.isArray(given.ablate)) live.ablate = given.ablate.map((x) => x.slice());
    const dec = d.decoding || {};
    if (dec.mode === "greedy" || dec.mode === "beam" || dec.mode === "sample") $("#live-decode-mode").value = dec.mode;
    if (dec.mode === "beam" && dec.beam) $("#live-beam").value = String(dec.beam);
    if (dec.sampling) {
      $("#live-temperature").value = String(dec.sampling.temperature);
      $("#live-top-k").value = String(dec.sampling.top_k);
      $("#live-top-p").value = String(dec.sampling.top_p);
      $("#live-seed").value = String(dec.sampling.seed);
    }
    if (dec.max_new_tokens) $("#live-max-new").value = String(dec.max_new_tokens);
    modeChanged();
    P.hooks.override = overrideOf;
    P.hooks.cellClick = toggleCell;
    P.hooks.chip = ablateChip;
    P.hooks.rendered = renderLive;
    const note = $("#view-matrix .note");
    if (note) note.textContent = "Hover a cell for its numbers; click a cell to block or allow it (an override of this call's mask, outlined), click a row label to step through that query.";
    // Only the chips again (the knock-out buttons): the views stay as they are while someone reads them;
    // a page written with interventions is drawn again once, to outline its overridden cells.
    if (Object.keys(live.overrides).length) P.setData(P.data());
    else P.refreshControls();
    $("#live-status").textContent = "ready: edit an input and press Enter, click a matrix cell, knock out a head";
    body.dataset.live = "ready";
  }

  // ---- the request ----
  function parseIds(text, what) {
    const parts = text.split(/[\s,]+/).filter(Boolean);
    if (!parts.length) throw new Error(what + ": no ids (write them as 5,17,3)");
    return parts.map((p) => {
      if (!/^[+-]?\d+$/.test(p)) throw new Error(what + ": " + JSON.stringify(p) + " is not a whole number (write ids as 5,17,3)");
      return Number(p);
    });
  }
  function number(id, what, whole) {
    const node = $(id);
    const x = node.value.trim() === "" ? NaN : Number(node.value);
    if (!Number.isFinite(x)) throw new Error(what + ": " + JSON.stringify(node.value) + " is not a number");
    if (whole && !Number.isInteger(x)) throw new Error(what + ": " + x + " is not a whole number");
    return x;
  }
  function decodeSettings() {
    const mode = $("#live-decode-mode").value;
    const decode = { mode };
    if (mode === "beam") decode.beam = number("#live-beam", "beam", true);
    if (mode === "sample") {
      decode.temperature = number("#live-temperature", "temperature", false);
      decode.top_k = number("#live-top-k", "top-k", true);
      decode.top_p = number("#live-top-p", "top-p", false);
      decode.seed = number("#live-seed", "seed", true);
    }
    if ($("#live-max-new").value.trim() !== "") decode.max_new_tokens = number("#live-max-new", "max tokens", true);
    return decode;
  }
  // One input as the request writes it: {text} or {ids}.
  function sourceOf(text, what) {
    return $("#live-ids").checked ? { ids: parseIds(text, what + " ids") } : { text };
  }
  // The panel's input and target: a request's row 0 (study.js builds its requests on it too).
  function rowRequest() {
    const request = sourceOf($("#live-source").value, "source");
    const target = $("#live-target").value;
    if (target !== "") {
      if ($("#live-ids").checked) request.target_ids = parseIds(target, "target ids");
      else request.target = target;
    }
    return request;
  }
  function buildRequest() {
    const request = rowRequest();
    request.decode = decodeSettings();
    const second = $("#live-second").value;
    if (second !== "") {
      request.second = sourceOf(second, "second input");
      request.pad_side = $("#live-pad-side").value;
    }
    if (Object.keys(live.overrides).length) request.mask_overrides = JSON.parse(JSON.stringify(live.overrides));
    if (live.ablate.length) request.ablate = live.ablate.map((x) => x.slice());
    return request;
  }
  const without = (request, ...keys) => {
    const copy = Object.assign({}, request);
    for (const key of keys) delete copy[key];
    return copy;
  };

  // ---- running: one at a time; a change during a run runs again after it ----
  // The engine works beside the page (a Web Worker, engine.js), so the page
  // stays live while it runs: the status counts the seconds, and Stop (or
  // Escape) ends the run: the engine is started again and the views keep the
  // last result.
  async function runAll() {
    if (!live.engine) return;
    if (live.running) { live.again = true; return; }
    live.running = true;
    try {
      do {
        live.again = false;
        await runOnce();
        body.dataset.liveRuns = String(Number(body.dataset.liveRuns || 0) + 1);  // for tests: updates finished
      } while (live.again);
    } finally {
      live.running = false;
    }
  }
  const seconds = (ms) => (ms / 1000).toFixed(1) + " s";
  // The status of a run: "running… N s" and then SUFFIX(), each second from STARTED
  // (performance.now()) until the returned function is called.
  function counting(status, started, suffix) {
    const show = () => { status.textContent = "running\u2026 " + Math.round((performance.now() - started) / 1000) + " s" + suffix(); };
    show();
    const ticker = setInterval(show, 1000);
    return () => clearInterval(ticker);
  }
  async function runOnce() {
    const started = performance.now();
    body.dataset.live = "running";
    live.stopping = null;
    const stop = $("#live-stop");
    stop.disabled = typeof live.engine.stop !== "function";
    const done = counting($("#live-status"), started, () => (stop.disabled ? "" : " (Stop or Escape ends it)"));
    try {
      await runRequests(started);
    } finally {
      done();
      stop.disabled = true;
    }
  }
  async function runRequests(started) {
    const engine = live.engine;
    let runs = 0;
    const run = (request) => { ++runs; return engine.run(request); };
    try {
      const request = buildRequest();
      // What the views show: the request as it is (decoded with every intervention).
      const result = await run(request);
      let baseline = null, forced = null;
      if (request.ablate) {
        // The knock-out's effect: every head, then the heads knocked out on the same target.
        baseline = await run(without(request, "ablate"));
        const same = without(request, "target");
        same.target_ids = baseline.target_ids;
        if (request.second && baseline.second) same.second = Object.assign(without(request.second, "target"), { target_ids: baseline.second.target_ids });
        forced = await run(same);
      }
      let compare = null, compareError = "";
      const other = $("#live-compare").value;
      if (other !== "") {
        // The other input with the same settings and knock-outs (the mask overrides are cells of this input's matrices).
        try {
          compare = await run(Object.assign(without(request, "target", "target_ids", "text", "ids", "second", "pad_side", "mask_overrides"),
            sourceOf(other, "compare")));
        } catch (e) {
          if (e && e.name === "AbortError") throw e;  // Stop ends the whole update
          compareError = message(e);
        }
      }
      Object.assign(live, { result, baseline, forced, compare, compareError });
      engine.last = result;
      // The interventions this pass ran with, in its document as `explore --ablate` writes them (the step view reads them).
      result.page.interventions = { mask_overrides: request.mask_overrides || {}, ablate: request.ablate || [] };
      P.setData(result.page);
      $("#live-error").textContent = "";
      $("#live-status").textContent = "ready \u00b7 recomputed in " + Math.round(performance.now() - started) + " ms (" + runs + (runs === 1 ? " run)" : " runs)");
      body.dataset.live = "ready";
    } catch (e) {
      if (e && e.name === "AbortError") {
        await stopped(performance.now() - started);
        return;
      }
      // The engine's own words (or the page's, for ids and numbers it cannot read); the views keep the last result.
      $("#live-error").textContent = message(e);
      $("#live-status").textContent = "error: the views show the last result";
      body.dataset.live = "error";
    }
  }

  // After Stop: the run ended after `ms`; the page says so once the engine has started again
  // (window.tinyformer.stop() called from elsewhere: at once).
  async function stopped(ms) {
    const after = "stopped: the run was ended after " + seconds(ms);
    if (!live.stopping) {
      $("#live-status").textContent = after + "; the views show the last result";
      body.dataset.live = "stopped";
      return;
    }
    body.dataset.live = "stopping";
    $("#live-status").textContent = after + "; the engine is starting again\u2026";
    try {
      await live.stopping;
    } catch (e) {
      $("#live-error").textContent = "the engine did not start again: " + message(e);
      $("#live-status").textContent = after + "; the engine did not start again";
      body.dataset.live = "error";
      return;
    }
    $("#live-error").textContent = "";
    $("#live-status").textContent = after + " and the engine started again; the views show the last result";
    body.dataset.live = "stopped";
  }
  function stopRun() {
    if (!live.engine || !live.running || typeof live.engine.stop !== "function") return;
    live.again = false;  // what was asked during the run is not run after it either
    live.stopping = Promise.resolve(live.engine.stop());
    live.stopping.catch(() => {});  // read by stopped()
  }

  // ---- the hooks page.js calls ----
  function overrideOf(a, q, k) {
    const cells = live.overrides[a.name];
    if (!cells) return undefined;
    let found;
    for (const c of cells) if (c[0] === q && c[1] === k) found = !!c[2];
    return found;
  }
  // A click on a cell: no override yet -> the opposite of its mask now; an override -> removed.
  function toggleCell(a, h, q, k) {
    if (!live.engine) return false;
    const cells = live.overrides[a.name] || [];
    const at = cells.findIndex((c) => c[0] === q && c[1] === k);
    if (at >= 0) cells.splice(at, 1);
    else cells.push([q, k, a.mask[q][k] ? 0 : 1]);
    if (cells.length) live.overrides[a.name] = cells;
    else delete live.overrides[a.name];
    P.state.query = q;
    runAll();
    return true;
  }
  function ablated(name, h) {
    return live.ablate.some((x) => x[0] === name && x[1] === h);
  }
  function ablateChip(a, h) {
    if (!live.engine) return null;
    const on = ablated(a.name, h);
    return el("button", {
      type: "button", class: "ablate" + (on ? " on" : ""), "data-ablate": h, "aria-pressed": on ? "true" : "false", "aria-label": "knock out head " + h,
      title: (on ? "head " + h + " is knocked out (its z_h is zero before W_O): click to restore it" :
        "knock out head " + h + " of " + a.name + ": its output z_h becomes zero before W_O"),
      onclick: () => {
        if (on) live.ablate = live.ablate.filter((x) => !(x[0] === a.name && x[1] === h));
        else live.ablate.push([a.name, h]);
        runAll();
      },
    }, on ? "\u00d7 off" : "\u00d7");
  }

  // ---- the live views ----
  function renderLive() {
    renderInterventions();
    renderEffects();
    renderBatch();
    renderCompare();
  }
  function renderInterventions() {
    const root = clear($("#live-interventions"));
    const calls = Object.keys(live.overrides);
    const cells = calls.reduce((s, c) => s + live.overrides[c].length, 0);
    const parts = [];
    if (cells) parts.push("mask overrides: " + cells + (cells === 1 ? " cell in " : " cells in ") + calls.length + (calls.length === 1 ? " call" : " calls"));
    if (live.ablate.length) parts.push("knocked out: " + live.ablate.map((x) => x[0] + " head " + x[1]).join(", "));
    root.textContent = parts.join(" \u00b7 ");
  }

  // The output tokens of a result and, for each, the row of the sequence `seq` that predicts it:
  // the last N unpadded rows (N = token_log_p's length: each target token, then <eos>).
  function outputRows(page, n) {
    const seqName = page.sequences && page.sequences.target ? "target" : "source";
    const seq = (page.sequences || {})[seqName] || [];
    const pad = (page.padding || {})[seqName] || [];
    const rows = seq.map((_, i) => i).filter((i) => !pad[i]).slice(-n);
    return { seqName, rows, tokens: rows.map((r, i) => (i + 1 < rows.length ? String(seq[rows[i + 1]]) : "<eos>")) };
  }

  function renderEffects() {
    const root = clear($("#live-effects"));
    const { baseline, forced, result } = live;
    if (!live.ablate.length || !baseline || !forced) {
      root.appendChild(el("p", { class: "note", text: "No head is knocked out: use the \u00d7 beside a head chip (each call's chips are under its attention pick)." }));
      return;
    }
    root.appendChild(el("p", { id: "live-effects-outputs" }, [
      "output with every head: ", el("bdi", { class: "out", text: quoted(baseline.text) }),
      " \u00b7 with ", live.ablate.map((x) => x[0] + " head " + x[1]).join(", "), " knocked out: ",
      el("bdi", { class: "out", id: "live-ablated-output", text: quoted(result.text) }),
      baseline.text === result.text ? " (the same)" : " (changed)"]));
    const base = baseline.token_log_p || [], abl = forced.token_log_p || [];
    const { seqName, rows, tokens } = outputRows(baseline.page, base.length);
    const heads = live.ablate.map(([name, h]) => ({ name, h, a: (baseline.page.attentions || []).find((x) => x.name === name) }));
    const table = el("table", { class: "numbers", id: "live-effects-table" });
    table.appendChild(el("tr", {}, ["output token", "log p (every head)", "log p (knocked out)", "d log p"].map((t) => el("th", { text: t }))
      .concat(heads.map((x) => el("th", { text: x.name + " head " + x.h + ": its largest weight (key)" })))));
    base.forEach((lp, i) => {
      const d = abl[i] - lp;
      const row = el("tr", { "data-position": i }, [
        el("th", { class: "tokcell", text: i + " " + shown(tokens[i] === undefined ? "#" + i : tokens[i]) }),
        el("td", { text: fmt(lp, 5) }), el("td", { text: fmt(abl[i], 5) }),
        el("td", { class: "dlogp" + (d < -0.01 ? " down" : d > 0.01 ? " up" : ""), "data-dlogp": d, text: fmt(d, 4) }),
      ]);
      for (const x of heads) {
        if (!x.a || x.a.queries !== seqName || rows[i] === undefined) {
          row.appendChild(el("td", { class: "muted", text: "\u2014", title: "this call's queries are not the output positions" }));
          continue;
        }
        const w = x.a.weights[x.h][rows[i]];
        let best = 0;
        for (let k = 1; k < w.length; ++k) if (w[k] > w[best]) best = k;
        const keys = (baseline.page.sequences || {})[x.a.keys] || [];
        row.appendChild(el("td", { "data-weight": w[best], text: fmt(w[best], 3) + " (" + best + " " + shown(String(keys[best] === undefined ? "#" + best : keys[best])) + ")" }));
      }
      table.appendChild(row);
    });
    const sum = (xs) => xs.reduce((s, x) => s + x, 0);
    table.appendChild(el("tr", { class: "total" }, [el("th", { text: "sum" }), el("td", { text: fmt(sum(base), 5) }),
      el("td", { text: fmt(sum(abl), 5) }), el("td", { id: "live-effects-total", text: fmt(sum(abl) - sum(base), 4) })]));
    root.appendChild(el("div", { class: "scroll" }, table));
    root.appendChild(el("p", { class: "note", text: "d log p < 0: the token became less likely without the head. A head can put a large weight on a key and still change nothing: the weight says where it looks, the knock-out what it does." }));
  }

  // A small heatmap of one [L][S] weights matrix (or a difference, diverging colours).
  function mini(matrix, opts) {
    const o = opts || {};
    const table = el("table", { class: "matrix mini" + (o.diff ? " diff" : ""), id: o.id, "data-rows": matrix.length, "data-cols": matrix.length ? matrix[0].length : 0 });
    if (o.caption) table.appendChild(el("caption", { text: o.caption }));
    const head = el("tr", {}, [el("th", { text: "" })]);
    const cols = matrix.length ? matrix[0].length : 0;
    for (let k = 0; k < cols; ++k) head.appendChild(el("th", { class: "col" + (o.kPad && o.kPad[k] ? " pad" : ""), text: shown(o.kTokens && o.kTokens[k] !== undefined ? String(o.kTokens[k]) : String(k)) }));
    table.appendChild(head);
    matrix.forEach((row, q) => {
      const tr = el("tr", {}, [el("th", { class: "row" + (o.qPad && o.qPad[q] ? " pad" : ""), text: shown(o.qTokens && o.qTokens[q] !== undefined ? String(o.qTokens[q]) : String(q)) })]);
      row.forEach((w, k) => {
        const pad = (o.qPad && o.qPad[q]) || (o.kPad && o.kPad[k]);
        const masked = o.mask && !o.mask[q][k];
        const attrs = { class: "cell" + (pad ? " padding" : masked ? " masked" : ""), "data-q": q, "data-k": k, "data-value": w,
          title: "q" + q + " \u2192 k" + k + ": " + (o.diff ? "difference " : "weight ") + fmt(w, 6) + (pad ? " (padding)" : masked ? " (masked)" : "") };
        if (!pad && !masked) {
          if (o.diff) {
            const t = (1 + w / (o.scale || 1)) / 2;  // -scale .. scale -> 0 .. 1, white at 0
            attrs.style = { background: diverging(t), color: divergingInk(t) };
          } else {
            attrs.style = { background: viridis(w), color: inkOn(w) };
          }
        }
        tr.appendChild(el("td", attrs, pad || masked ? "" : w.toFixed(2)));
      });
      table.appendChild(tr);
    });
    return table;
  }
  // The padding of each position of `which` ("source" | "target") in batch row b, from forward_inputs
  // (true = padding, as PyTorch's key_padding_mask).
  function padRow(result, page, which, b) {
    const f = result.forward_inputs || {};
    const encdec = !!f.src_ids;
    const name = encdec ? (which === "target" ? "tgt_key_padding_mask" : "src_key_padding_mask") : "key_padding_mask";
    const rows = f[name];
    return rows && rows[b] ? rows[b].map((x) => !!x) : null;
  }
  function renderBatch() {
    const root = clear($("#live-batch"));
    const r = live.result;
    if (!r || !r.second) {
      root.appendChild(el("p", { class: "note", text: "One input: type a second input (the batch's row 1) to see padding and its masks." }));
      return;
    }
    const f = r.forward_inputs || {};
    root.appendChild(el("p", { class: "note", text: "The two rows run as one padded batch (" + $("#live-pad-side").value +
      " padding). Padding positions are hatched: a padding key is masked for every query (PyTorch's key_padding_mask: true = ignore this key), a padding query's row is all 0." }));
    const table = el("table", { class: "numbers", id: "live-batch-inputs" });
    for (const name of Object.keys(f)) {
      const rows = f[name];
      if (!Array.isArray(rows)) continue;
      rows.forEach((row, b) => {
        const cells = Array.isArray(row) ? row : [row];
        table.appendChild(el("tr", { "data-input": name, "data-row": b }, [el("th", { text: name + " [" + b + "]" })]
          .concat(cells.map((x) => el("td", { class: /padding_mask/.test(name) && x ? "pad" : "", text: typeof x === "boolean" ? (x ? "1" : "0") : String(x) })))));
      });
    }
    root.appendChild(el("div", { class: "scroll" }, table));
    root.appendChild(el("p", { id: "live-batch-texts" }, ["row 0: ", el("bdi", { text: quoted(r.text) }), " \u00b7 row 1: ", el("bdi", { text: quoted(r.second.text) })]));
    const a = P.current();
    if (!a) return;
    const h = P.state.head;
    const wrap = el("div", { class: "pair" });
    [[r, 0], [r.second, 1]].forEach(([row, b]) => {
      const w = row.weights && row.weights[a.name];
      if (!w || !w[h]) { wrap.appendChild(el("p", { class: "note", text: "row " + b + ": no weights of " + a.name })); return; }
      const qPad = padRow(r, r.page, a.queries, b), kPad = padRow(r, r.page, a.keys, b);
      // Row 0 without padding is the row the other views show (its tokens and its mask); else by position.
      const plain = b === 0 && w[h].length === a.L && (w[h][0] || []).length === a.S && !(qPad || []).some(Boolean) && !(kPad || []).some(Boolean);
      const labels = plain ? { qTokens: a.qTokens, kTokens: a.kTokens, mask: a.mask } : {};
      wrap.appendChild(mini(w[h], Object.assign({ id: "live-batch-row" + b, caption: "row " + b + ": " + a.name + ", head " + h, qPad, kPad }, labels)));
    });
    root.appendChild(wrap);
  }

  function renderCompare() {
    const root = clear($("#live-compare-view"));
    const r = live.result, c = live.compare;
    if ($("#live-compare").value === "" || !r) {
      root.appendChild(el("p", { class: "note", text: "Type an input to compare with: the chosen call and head of both, side by side, and their difference." }));
      return;
    }
    if (live.compareError) { root.appendChild(el("p", { class: "error", id: "live-compare-error", text: "the input to compare: " + live.compareError })); return; }
    if (!c) return;
    const a = P.current();
    if (!a) return;
    const h = P.state.head;
    // Both pages' own weights: each input alone (this one's result.weights is a padded batch row when there is a second input).
    const ca = (c.page.attentions || []).find((x) => x.name === a.name);
    const wa = a.weights, wb = ca && ca.weights;
    if (!wa || !wb || !ca) { root.appendChild(el("p", { class: "note", id: "live-compare-why", text: a.name + " is not in both results" })); return; }
    const seqs = c.page.sequences || {};
    const wrap = el("div", { class: "pair" });
    wrap.appendChild(mini(wa[h], { id: "live-compare-a", caption: "this input " + quoted($("#live-source").value) + ", head " + h, qTokens: a.qTokens, kTokens: a.kTokens, mask: a.mask }));
    wrap.appendChild(mini(wb[h], { id: "live-compare-b", caption: "compared " + quoted($("#live-compare").value) + ", head " + h, qTokens: seqs[ca.queries], kTokens: seqs[ca.keys], mask: ca.mask }));
    const L = wa[h].length, S = L ? wa[h][0].length : 0, L2 = wb[h].length, S2 = L2 ? wb[h][0].length : 0;
    if (L !== L2 || S !== S2) {
      root.appendChild(wrap);
      root.appendChild(el("p", { class: "note", id: "live-compare-why", text: "No cell-by-cell difference: the matrices are [" + L + ", " + S + "] and [" + L2 + ", " + S2 +
        "] (queries \u00d7 keys); inputs of the same length give matrices of the same shape." }));
      return;
    }
    // Plain Arrays in double (a live result's rows are Float32Arrays: their map() would round each difference to float32).
    const diffOf = (hh) => Array.from(wb[hh], (row, q) => Array.from(row, (x, k) => x - wa[hh][q][k]));
    const diff = diffOf(h);
    const largest = Math.max(1e-9, ...diff.flat().map(Math.abs));
    wrap.appendChild(mini(diff, { id: "live-compare-diff", caption: "difference (compared \u2212 this), largest |d| " + fmt(largest, 3), diff: true, scale: largest, qTokens: a.qTokens, kTokens: a.kTokens }));
    root.appendChild(wrap);
    const perHead = el("table", { class: "numbers", id: "live-compare-heads" });
    perHead.appendChild(el("tr", {}, ["head", "largest |difference|", "mean |difference|"].map((t) => el("th", { text: t }))));
    for (let hh = 0; hh < wa.length; ++hh) {
      const d = diffOf(hh).flat().map(Math.abs);
      perHead.appendChild(el("tr", { class: hh === h ? "current" : "", "data-head": hh }, [el("th", { text: "head " + hh }),
        el("td", { text: fmt(Math.max(...d), 4) }), el("td", { text: fmt(d.reduce((s, x) => s + x, 0) / Math.max(1, d.length), 4) })]));
    }
    root.appendChild(perHead);
  }

  // ---- wiring ----
  function modeChanged() {
    const mode = $("#live-decode-mode").value;
    if (!live.engine) return;
    $("#live-beam").disabled = mode !== "beam";
    for (const id of ["#live-temperature", "#live-top-k", "#live-top-p", "#live-seed"]) $(id).disabled = mode !== "sample";
  }
  $("#live-run").addEventListener("click", () => runAll());
  $("#live-stop").addEventListener("click", stopRun);
  $("#live-reset").addEventListener("click", () => { live.overrides = {}; live.ablate = []; runAll(); });
  $("#live-decode-mode").addEventListener("change", () => { modeChanged(); runAll(); });
  $("#live-pad-side").addEventListener("change", () => { if ($("#live-second").value !== "") runAll(); });
  $("#live-ids").addEventListener("change", () => runAll());
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target.tagName === "INPUT") { event.preventDefault(); runAll(); }
  });
  // Enter anywhere else on the page (not on a button or a link, which Enter clicks) runs too.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && live.running) { stopRun(); return; }
    const tag = event.target && event.target.tagName;
    if (event.key !== "Enter" || panel.contains(event.target) || tag === "BUTTON" || tag === "A" || tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA") return;
    if (live.engine) { event.preventDefault(); runAll(); }
  });
  // For study.js (the Patch and Lens views): the same row 0 and the same seconds counter.
  P.live = { sourceOf, rowRequest, counting };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
