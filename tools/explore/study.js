// tinyformer explore, study: the Patch and Lens views (issue #34), on the
// engine in the page. Plain JavaScript, no framework, no network. Each view
// builds one request for window.tinyformer.run (docs/FORMAT.md section 4, the
// keys "patch", "patch_cell" and "lens", with "page": false) from the live
// panel's input and target (live.js's rowRequest, window.tinyformerPage.live),
// without the panel's interventions (as the CLI's patch and lens), and draws
// the result: the same JSON as `tinyformer patch --output
// F.json` and `tinyformer lens --output F.json` (sections 4c and 4d).
// Everything the model or the user wrote goes into the page as text (never as
// HTML), bidi-isolated by page.js's shown().
//
// For tests: window.tinyformerStudy holds the last results drawn (patch,
// cell, lens); document.body.dataset.studyRuns counts the finished requests.
(function () {
  "use strict";
  const P = window.tinyformerPage;
  const $ = (selector) => document.querySelector(selector);
  if (!P || !P.live || !$("#view-patch") || !$("#view-lens")) return;
  const { el, clear, fmt, fixed, shown, viridis, inkOn, diverging, divergingInk } = P;
  const body = document.body;
  const study = { patch: null, patchRequest: null, patchSerial: 0, cell: null, lens: null };
  window.tinyformerStudy = study;
  const message = (e) => (e && e.message ? e.message : String(e));

  // ---- the engine: on a live page only ----
  function start() {
    const engine = window.tinyformer;
    if (!engine || typeof engine.run !== "function" || !engine.ready) return;  // a recorded page: the tabs stay hidden
    Promise.resolve(engine.ready).then(enable, () => {});
  }
  function enable() {
    for (const view of ["patch", "lens"]) {
      const tab = $('#tabs button[data-view="' + view + '"]');
      if (tab) tab.hidden = false;
      for (const c of document.querySelectorAll("#view-" + view + " input, #view-" + view + " select, #view-" + view + " button"))
        c.disabled = c.id === view + "-stop";  // Stop: on only while the view's request runs
    }
    body.dataset.study = "ready";
  }

  // One request of VIEW ("patch" or "lens"), built by BUILD (on the live panel's row 0,
  // live.js's rowRequest, or a cell on its grid's request) without the page pass
  // ("page": false: the views read only their own key). Requests queue in the engine, one after the other; the view's
  // status counts the seconds while any of them runs, and its Stop stays on until
  // the last has finished. Stop is engine.js's stop(): it ends every request asked
  // of the engine (the live panel's too) and starts the engine again. Resolves to
  // {request, result}, or null on an error or a stop.
  const active = { patch: 0, lens: 0 };
  const counters = { patch: null, lens: null };
  function settled() {
    body.dataset.study = active.patch + active.lens ? "running" : body.dataset.studyLast || "ready";
  }
  async function run(build, view) {
    const status = $("#" + view + "-status"), stop = $("#" + view + "-stop");
    let request;
    try {
      request = Object.assign(build(), { page: false });
    } catch (e) {
      status.textContent = message(e);
      return null;
    }
    const started = performance.now();
    if (!active[view]++) {
      stop.disabled = typeof window.tinyformer.stop !== "function";
      counters[view] = P.live.counting(status, started, () => (stop.disabled ? "" : " (Stop ends it)"));
    }
    body.dataset.study = "running";
    let outcome = "ready", done = null;
    try {
      done = { request, result: await window.tinyformer.run(request) };
      status.textContent = "done in " + ((performance.now() - started) / 1000).toFixed(1) + " s";
    } catch (e) {
      const words = e && e.name === "AbortError" ? message(e) + "; the view shows the last result" : "error: " + message(e);
      status.textContent = words;
      outcome = e && e.name === "AbortError" ? "stopped" : "error";
    } finally {
      if (!--active[view]) {
        counters[view]();
        stop.disabled = true;
      }
      body.dataset.studyLast = outcome;
      settled();
      body.dataset.studyRuns = String(Number(body.dataset.studyRuns || 0) + 1);
    }
    return done;
  }

  // ---- the Patch view ----
  // Grids are numbered as they are asked for: a grid's reply is drawn only if no
  // later grid was asked, and a cell's only if its grid is still the one drawn and
  // no other grid was asked since the click (the cell of an old grid must not be
  // shown under a new one). While a grid is on its way, clicks on cells wait for it.
  let gridsAsked = 0;
  function patchRequest() {
    const corrupted = $("#patch-corrupted").value;
    if (corrupted === "") throw new Error("type a corrupted input with as many tokens as the input above");
    return Object.assign(P.live.rowRequest(), { patch: { corrupted: P.live.sourceOf(corrupted, "corrupted"), what: $("#patch-what").value } });
  }
  async function runPatch() {
    const serial = ++gridsAsked;
    const done = await run(patchRequest, "patch");
    if (serial !== gridsAsked) return;  // a later grid was asked for: this one is not drawn
    if (!done) {
      gridsAsked = study.patchSerial;   // no new grid: the one drawn stays clickable
      return;
    }
    study.patch = done.result.patch;
    study.patchRequest = done.request;
    study.patchSerial = serial;
    study.cell = null;
    clear($("#patch-cell"));
    renderPatch();
  }

  function answerLine(report) {
    const p = report;
    return [
      "clean ", el("b", { text: shown(p.clean.input) }), " answers ", el("b", { text: shown(p.clean.answer) }),
      ", corrupted ", el("b", { text: shown(p.corrupted.input) }), " answers ", el("b", { text: shown(p.corrupted.answer) }),
      " at row " + p.answer_row + (p.target !== "" ? " of the target " : ""), p.target !== "" ? el("b", { text: shown(p.target) }) : "",
      "; LD_clean " + fixed(p.clean.logit_diff, 3) + ", LD_corrupted " + fixed(p.corrupted.logit_diff, 3) + ".",
    ];
  }

  function renderPatch() {
    const p = study.patch;
    const summary = clear($("#patch-summary")), grid = clear($("#patch-grid"));
    if (!p) return;
    summary.appendChild(el("p", null, answerLine(p)));
    let largest = 1;  // the scale symmetric about 0, at least -1..1 (as the PNG's)
    for (const row of p.effect) for (const v of row) if (Number.isFinite(v)) largest = Math.max(largest, Math.abs(v));
    summary.appendChild(el("p", { class: "note", text: "colour scale: \u2212" + fmt(largest, 3) + " (blue) .. 0 (white) .. " + fmt(largest, 3) + " (red)" }));
    const sourceRows = p.layer_source || p.layers.map(() => false);
    for (const source of [true, false]) {
      const rows = p.layers.map((name, r) => r).filter((r) => sourceRows[r] === source);
      if (!rows.length) continue;
      const labels = source ? p.source_positions : p.positions;
      const table = el("table", { class: "study-grid patch-grid", "data-stack": source ? "source" : "stream" });
      table.appendChild(el("caption", { text: source ? "encoder rows (source positions)" : p.source_positions ? "decoder rows (<bos> + target)" : "positions (input + target)" }));
      table.appendChild(el("tr", null, [el("th", { text: "patched activation" }), ...labels.map((label, i) => el("th", { title: "position " + i, text: shown(label) }))]));
      for (const r of rows) {
        const cells = p.effect[r].map((v, i) => {
          const t = (v + largest) / (2 * largest);
          return el("td", {
            "data-row": p.layers[r], "data-position": i, "data-value": String(v),
            class: study.cell && study.cell.row === p.layers[r] && study.cell.position === i ? "picked" : null,
            title: p.layers[r] + " at position " + i + " (" + shown(labels[i]) + "): effect " + fmt(v, 6) + "; click to patch it alone",
            style: { background: diverging(t), color: divergingInk(t) },
            text: fixed(v, 2),
            onclick: () => runCell(p.layers[r], i),
          });
        });
        table.appendChild(el("tr", null, [el("th", { class: "row-name", text: p.layers[r] }), ...cells]));
      }
      grid.appendChild(table);
    }
  }

  async function runCell(row, position) {
    const grid = study.patchSerial, asked = study.patchRequest;
    if (!asked) return;
    if (gridsAsked !== grid) {
      $("#patch-status").textContent = "a new grid is on its way: click a cell once it is drawn";
      return;
    }
    const done = await run(() => {
      const request = Object.assign({}, asked);
      delete request.patch;
      request.patch_cell = Object.assign({}, asked.patch, { row, position });
      return request;
    }, "patch");
    if (!done) return;
    if (study.patchSerial !== grid || gridsAsked !== grid) return;  // its grid is gone (or going): not shown
    study.cell = done.result.patch_cell;
    renderPatch();
    renderCell();
  }

  function topTable(title, side, c) {
    const table = el("table", { class: "top-tokens", "data-run": title });
    table.appendChild(el("caption", { text: title + ": LD " + fixed(side.logit_diff, 3) }));
    table.appendChild(el("tr", null, [el("th", { text: "token" }), el("th", { text: "p" })]));
    for (const t of side.top) {
      const mark = t.token === c.clean_answer ? "clean-answer" : t.token === c.corrupted_answer ? "corrupted-answer" : null;
      table.appendChild(el("tr", { class: mark }, [el("td", { text: shown(t.token) }), el("td", { text: fixed(t.p, 4) })]));
    }
    table.appendChild(el("tr", null, [el("td", { text: "p(" + shown(c.clean_answer) + ")" }), el("td", { text: fixed(side.p_clean_answer, 4) })]));
    table.appendChild(el("tr", null, [el("td", { text: "p(" + shown(c.corrupted_answer) + ")" }), el("td", { text: fixed(side.p_corrupted_answer, 4) })]));
    return table;
  }

  function renderCell() {
    const c = study.cell, box = clear($("#patch-cell"));
    if (!c) return;
    box.appendChild(el("p", { class: "cell-effect" }, [
      "Patched ", el("b", { text: c.row }), " at position " + c.position + " (", el("b", { text: shown(c.position_token) }),
      "): effect ", el("b", { class: "effect", text: fmt(c.effect, 6) }),
      " (LD_patched " + fixed(c.logit_diff, 4) + "). The answer row's top tokens:",
    ]));
    box.appendChild(el("div", { class: "top-runs" }, [topTable("clean", c.clean, c), topTable("corrupted", c.corrupted, c), topTable("patched", c.patched, c)]));
  }

  // ---- the Lens view ----
  let lensAsked = 0;
  async function runLens() {
    const serial = ++lensAsked;
    const done = await run(() => {
      const request = P.live.rowRequest();
      const top = Number($("#lens-top").value);
      if (!Number.isInteger(top)) throw new Error("top: " + JSON.stringify($("#lens-top").value) + " is not a whole number");
      request.lens = { top };
      // The ids box ticked: the token to attribute as an id, as `lens --attribute-id` (a model without a vocabulary).
      const attribute = $("#lens-attribute").value;
      if (attribute !== "" && $("#live-ids").checked) {
        const ids = P.live.sourceOf(attribute, "attribute").ids;
        if (ids.length !== 1) throw new Error("attribute: one token id, got " + ids.length);
        request.lens.attribute_id = ids[0];
      } else if (attribute !== "") request.lens.attribute = attribute;
      return request;
    }, "lens");
    if (!done || serial !== lensAsked) return;  // a later lens was asked for: only its table is drawn
    study.lens = done.result.lens;
    renderLens();
  }

  function renderLens() {
    const lens = study.lens;
    const grid = clear($("#lens-grid")), norms = clear($("#lens-norms"));
    clear($("#lens-cell"));
    clear($("#lens-attribution"));
    if (!lens) return;
    const header = () => el("tr", null, [el("th", { text: "layer" }), ...lens.positions.map((label, i) =>
      el("th", { title: "position " + i + "; the model answers " + shown(lens.answer_tokens[i]), text: i + " " + shown(label) }))]);
    const table = el("table", { class: "study-grid lens-grid" });
    table.appendChild(el("caption", { text: shown(lens.text) + " \u2192 " + shown(lens.target) + " (the stack " + lens.stack + ")" }));
    table.appendChild(header());
    for (const layer of lens.layers) {
      const cells = layer.positions.map((cell, i) => {
        const top = cell.top[0];
        const answer = cell.answer_rank === 1;
        return el("td", {
          "data-layer": layer.layer, "data-position": i, "data-token": top.token, "data-p": String(top.p),
          class: answer ? "answer" : null,
          title: layer.layer + ", position " + i + ": " + shown(top.token) + " " + fixed(top.p, 4) + "; the answer " +
            shown(lens.answer_tokens[i]) + " has rank " + cell.answer_rank + ", p " + fixed(cell.answer_p, 4),
          style: { background: viridis(cell.answer_p), color: inkOn(cell.answer_p) },
          onmouseenter: () => renderLensCell(layer, i),
          onclick: () => renderLensCell(layer, i),
        }, [el("span", { class: "token", text: shown(top.token) }), " ", el("span", { class: "p", text: fixed(top.p, 2) })]);
      });
      table.appendChild(el("tr", null, [el("th", { class: "row-name", text: layer.layer }), ...cells]));
    }
    grid.appendChild(table);

    let largest = 0;
    for (const layer of lens.layers) for (const v of layer.norms) largest = Math.max(largest, v);
    const normTable = el("table", { class: "study-grid lens-norms" });
    normTable.appendChild(header());
    for (const layer of lens.layers) {
      normTable.appendChild(el("tr", null, [el("th", { class: "row-name", text: layer.layer }), ...layer.norms.map((v, i) => {
        const t = largest > 0 ? v / largest : 0;
        return el("td", { "data-layer": layer.layer, "data-position": i, "data-norm": String(v), style: { background: viridis(t), color: inkOn(t) }, text: fmt(v, 4) });
      })]));
    }
    norms.appendChild(normTable);
    norms.appendChild(el("p", { class: "note", text: "shaded by the norm / the largest (" + fmt(largest, 4) + ")" }));

    if (lens.attribution) {
      const a = lens.attribution;
      const parts = el("table", { class: "attribution" });
      parts.appendChild(el("caption", { text: "direct logit attribution of " + shown(a.token) + " at position " + a.position + " (final norm " + a.norm + " frozen at s = " + fmt(a.scale, 4) + ")" }));
      for (const part of a.parts) parts.appendChild(el("tr", null, [el("td", { text: part.part }), el("td", { text: fixed(part.logit, 4) })]));
      parts.appendChild(el("tr", null, [el("th", { text: "sum of the parts" }), el("th", { text: fixed(a.sum, 4) })]));
      parts.appendChild(el("tr", null, [el("th", { text: "the model's logit" }), el("th", { text: fixed(a.logit, 4) })]));
      $("#lens-attribution").appendChild(parts);
    }
  }

  function renderLensCell(layer, i) {
    const lens = study.lens, cell = layer.positions[i];
    const box = clear($("#lens-cell"));
    box.appendChild(el("p", null, [el("b", { text: layer.layer }), " at position " + i + " (reads ", el("b", { text: shown(lens.positions[i]) }),
      "); the model answers ", el("b", { text: shown(lens.answer_tokens[i]) }), ": rank " + cell.answer_rank + ", p " + fixed(cell.answer_p, 4)]));
    const table = el("table", { class: "top-tokens lens-top", "data-layer": layer.layer, "data-position": i });
    table.appendChild(el("tr", null, [el("th", { text: "token" }), el("th", { text: "p" })]));
    for (const t of cell.top) table.appendChild(el("tr", null, [el("td", { text: shown(t.token) }), el("td", { text: fixed(t.p, 4) })]));
    box.appendChild(table);
  }

  // ---- the controls ----
  $("#patch-run").addEventListener("click", runPatch);
  $("#patch-corrupted").addEventListener("keydown", (event) => { if (event.key === "Enter") runPatch(); });
  $("#lens-run").addEventListener("click", runLens);
  for (const view of ["patch", "lens"]) $("#" + view + "-stop").addEventListener("click", () => window.tinyformer.stop());
  for (const id of ["#lens-top", "#lens-attribute"]) $(id).addEventListener("keydown", (event) => { if (event.key === "Enter") runLens(); });
  // The lens runs by itself the first time its tab opens.
  // (While a patch runs it waits in the engine's queue behind it, its status counting.)
  $('#tabs button[data-view="lens"]').addEventListener("click", () => { if (!study.lens && body.dataset.study && !active.lens) runLens(); });
  start();
})();
