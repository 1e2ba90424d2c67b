// tinyformer explore: the page's behaviour. Plain JavaScript, no framework,
// no network: everything comes from the JSON in #tinyformer-data (schema
// "tinyformer-explore/1", written by tools/cli/explore.cpp).
//
// Views: model (every attention call as layers x heads thumbnails), head
// (query tokens -> key tokens, line opacity = weight), matrix (heatmap with
// the numbers behind each cell), step (one query of one head, from q_h to
// z), decoding (the search that made the tokens, top-5 candidates per
// generated step, beam hypotheses).
// The numbers shown as results are the engine's (scores, weights, z); the
// page recomputes q.k, the softmax chain and the weighted sum only to show a
// check mark where they agree.
// An additive mask term (ALiBi's -slope_h * |i - j|, "bias" per head) is
// part of the mask: the matrix view's cell shows it, the step chain adds it.
// Rotary models also carry q and k before rotation ("q_unrotated",
// "k_unrotated"): the step view shows both, and recomputes the rotation.
(function () {
  "use strict";

  // ---- viridis: matplotlib's table, 256 entries, as tools/pictures/heatmap.cpp ----
  const VIRIDIS_HEX =
    "44015444025645045745055946075a46085c460a5d460b5e470d60470e61471063471164471365481467481668481769" +
    "48186a481a6c481b6d481c6e481d6f481f70482071482173482374482475482576482677482878482979472a7a472c7a" +
    "472d7b472e7c472f7d46307e46327e46337f463480453581453781453882443983443a83443b84433d84433e85423f85" +
    "4240864241864142874144874045884046883f47883f48893e49893e4a893e4c8a3d4d8a3d4e8a3c4f8a3c508b3b518b" +
    "3b528b3a538b3a548c39558c39568c38588c38598c375a8c375b8d365c8d365d8d355e8d355f8d34608d34618d33628d" +
    "33638d32648e32658e31668e31678e31688e30698e306a8e2f6b8e2f6c8e2e6d8e2e6e8e2e6f8e2d708e2d718e2c718e" +
    "2c728e2c738e2b748e2b758e2a768e2a778e2a788e29798e297a8e297b8e287c8e287d8e277e8e277f8e27808e26818e" +
    "26828e26828e25838e25848e25858e24868e24878e23888e23898e238a8d228b8d228c8d228d8d218e8d218f8d21908d" +
    "21918c20928c20928c20938c1f948c1f958b1f968b1f978b1f988b1f998a1f9a8a1e9b8a1e9c891e9d891f9e891f9f88" +
    "1fa0881fa1881fa1871fa28720a38620a48621a58521a68522a78522a88423a98324aa8325ab8225ac8226ad8127ad81" +
    "28ae8029af7f2ab07f2cb17e2db27d2eb37c2fb47c31b57b32b67a34b67935b77937b87838b9773aba763bbb753dbc74" +
    "3fbc7340bd7242be7144bf7046c06f48c16e4ac16d4cc26c4ec36b50c46a52c56954c56856c66758c7655ac8645cc863" +
    "5ec96260ca6063cb5f65cb5e67cc5c69cd5b6ccd5a6ece5870cf5773d05675d05477d1537ad1517cd2507fd34e81d34d" +
    "84d44b86d54989d5488bd6468ed64590d74393d74195d84098d83e9bd93c9dd93ba0da39a2da37a5db36a8db34aadc32" +
    "addc30b0dd2fb2dd2db5de2bb8de29bade28bddf26c0df25c2df23c5e021c8e020cae11fcde11dd0e11cd2e21bd5e21a" +
    "d8e219dae319dde318dfe318e2e418e5e419e7e419eae51aece51befe51cf1e51df4e61ef6e620f8e621fbe723fde725";
  const VIRIDIS = [];
  for (let i = 0; i < 256; ++i) {
    VIRIDIS.push([0, 2, 4].map((o) => parseInt(VIRIDIS_HEX.substr(i * 6 + o, 2), 16)));
  }
  function viridisRgb(t) {
    const x = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
    return VIRIDIS[Math.round(x * 255)];
  }
  function viridis(t) {
    const c = viridisRgb(t);
    return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
  }
  // Text on a viridis cell: dark on the light (yellow-green) end.
  function inkOn(t) {
    return t > 0.6 ? "#141414" : "#ffffff";
  }
  // The diverging palette of the PNG pictures (tools/pictures/heatmap.cpp diverging()):
  // blue (t = 0) through near-white (t = 0.5) to red (t = 1), each half a straight line.
  // diverging(t) is the CSS colour, divergingInk(t) the text on it.
  const BLUE = [33, 102, 172], WHITE = [247, 247, 247], RED = [178, 24, 43];
  function divergingRgb(t) {
    if (!Number.isFinite(t)) return WHITE;
    const x = Math.min(1, Math.max(0, t));
    const [from, to, u] = x < 0.5 ? [BLUE, WHITE, x * 2] : [WHITE, RED, (x - 0.5) * 2];
    return from.map((a, i) => Math.round(a + (to[i] - a) * u));
  }
  function diverging(t) {
    const c = divergingRgb(t);
    return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
  }
  function divergingInk(t) {
    const c = divergingRgb(t);
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 140 ? "#ffffff" : "#141414";
  }
  // Masked and padded cells are hatched as in the PNG pictures (tools/pictures/heatmap.cpp):
  // light grey with black lines 2 px wide every 8 px, "/" for masked, "/" and "\" for padding.
  const HATCH_BG = "rgb(240,240,240)"; // kMaskedColour, kPaddingColour
  const HATCH_INK = "rgb(0,0,0)";      // kMaskedHatchColour, kPaddingHatchColour
  const HATCH_PERIOD = 8, HATCH_LINE = 2;
  const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  function headColour(h) {
    return HEAD_COLOURS[h % HEAD_COLOURS.length];
  }
  const SVG_NS = "http://www.w3.org/2000/svg"; // a namespace name, not a request

  // ---- small DOM helpers (text always through textContent) ----
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (const key of Object.keys(attrs)) {
      const value = attrs[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.setAttribute("class", value);
      else if (key === "style" && typeof value === "object") {
        // setProperty: custom properties (--cell, --chip) cannot be assigned as fields
        for (const name of Object.keys(value)) node.style.setProperty(name.startsWith("--") ? name : name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase()), value[name]);
      }
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  function append(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  const $ = (selector) => document.querySelector(selector);

  // ---- numbers ----
  function fmt(x, digits) {
    if (x === Number.NEGATIVE_INFINITY) return "\u2212\u221e";
    if (x === Number.POSITIVE_INFINITY) return "+\u221e";
    if (!Number.isFinite(x)) return "NaN";
    const p = digits || 4;
    let s = Number(x.toPrecision(p)).toString();
    if (s.startsWith("-")) s = "\u2212" + s.slice(1);
    return s;
  }
  // A fixed number of decimals (the grids' cells and the top-token tables), with a real minus sign.
  function fixed(x, digits) {
    return Number.isFinite(x) ? x.toFixed(digits).replace(/^-/, "\u2212") : fmt(x);
  }
  // Agreement of the page's recomputation with the engine's number: relative
  // 1e-4, against the larger of the two or `scale` (the size of the terms that
  // were summed, so that cancellation does not make float32 rounding fail).
  function agrees(mine, engine, scale) {
    if (mine === engine) return true;
    if (!Number.isFinite(mine) || !Number.isFinite(engine)) return false;
    const size = Math.max(Math.abs(mine), Math.abs(engine), scale || 0, 1e-30);
    return Math.abs(mine - engine) <= 1e-4 * size;
  }
  function check(mine, engine, scale) {
    const ok = agrees(mine, engine, scale);
    return el("span", {
      class: ok ? "check ok" : "check bad",
      title: (ok ? "agrees with the engine's " : "DIFFERS from the engine's ") + fmt(engine, 9) +
        " (page: " + fmt(mine, 9) + ")",
      text: ok ? "\u2713" : "\u2717",
    });
  }

  // ---- the data ----
  // The page renders one data object: first the recorded one embedded in
  // #tinyformer-data, then (a live page, tools/explore/live.js) each result.page
  // of the engine, through setData() below.
  let initial;
  const errors = [];
  try {
    initial = JSON.parse(document.getElementById("tinyformer-data").textContent);
  } catch (e) {
    errors.push("the page's data is not valid JSON: " + e.message);
  }
  if (initial && initial.format !== "tinyformer-explore/1") {
    errors.push("unknown data format " + JSON.stringify(initial.format) + " (this page reads tinyformer-explore/1)");
  }
  if (errors.length) {
    document.body.insertBefore(el("p", { class: "error", id: "data-error", text: errors.join("; ") }), document.body.firstChild);
    return;
  }

  let data, model, sequences, padding, attentions, groups;
  function load(d) {
    data = d;
    model = d.model || {};
    sequences = d.sequences || {};
    padding = d.padding || {};
    attentions = (d.attentions || []).map(prepare);
    // Groups in forward order; inside a group, by layer.
    groups = [];
    for (const a of attentions) {
      let g = groups.find((x) => x.name === a.group);
      if (!g) groups.push((g = { name: a.group, members: [] }));
      g.members.push(a);
    }
    for (const g of groups) g.members.sort((x, y) => x.layer - y.layer);
  }
  load(initial);
  // What a live page adds (tools/explore/live.js sets them): the override of a
  // matrix cell (true = allowed, false = blocked, undefined = none), a cell
  // click (returns true when it took it), a node after each head chip, and a
  // call after every render.
  const hooks = { override: null, cellClick: null, chip: null, rendered: null };

  function prepare(a, index) {
    const H = a.weights.length;
    const L = a.mask.length;
    const S = L ? a.mask[0].length : 0;
    const dk = a.dk || (a.q.length ? a.q[0].length / H : 0);
    const qs = sequences[a.queries] || [];
    const ks = sequences[a.keys] || [];
    const qpad = padding[a.queries] || [];
    const kpad = padding[a.keys] || [];
    return Object.assign({}, a, {
      index, H, L, S, dk,
      qTokens: range(L).map((i) => (i < qs.length ? String(qs[i]) : "#" + i)),
      kTokens: range(S).map((j) => (j < ks.length ? String(ks[j]) : "#" + j)),
      qPad: range(L).map((i) => qpad[i] === true),
      kPad: range(S).map((j) => kpad[j] === true),
    });
  }
  function range(n) {
    return Array.from({ length: n }, (_, i) => i);
  }
  // A model's or a user's string inside text: bidi-isolated (U+2068 FIRST
  // STRONG ISOLATE ... U+2069 POP DIRECTIONAL ISOLATE), so that a U+202E or
  // a right-to-left token never reorders the text around it: labels, tables,
  // tooltips, <option>s, SVG and the title (plain text, no <bdi> possible).
  function iso(text) {
    return "\u2068" + text + "\u2069";
  }
  // A token as a label: whitespace made visible, isolated; never wraps (CSS white-space: nowrap).
  function bare(token) {
    if (token === " ") return "\u2423";
    if (token === "") return "\u2205";
    return token.replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
  }
  function shown(token) {
    return iso(bare(token));
  }
  // A string quoted, as JSON writes it, and isolated.
  function quoted(text) {
    return iso(JSON.stringify(text === undefined ? "" : text));
  }
  // A token's label, with "(pad)" when it is padding and does not say so.
  function padLabel(token, pad) {
    return shown(token) + (pad && !/pad/i.test(token) ? " (pad)" : "");
  }
  // Head h's dk numbers of a row, as a plain Array (a live result's rows are Float32Arrays, whose map() would keep float32).
  function headSlice(vector, h, dk) {
    return Array.from(vector.slice(h * dk, (h + 1) * dk));
  }
  // The K/V head query head h reads: h / (H / Hkv), Hkv = the width of k / dk (GQA; Hkv = H otherwise).
  function kvHead(a, h) {
    const width = a.k.length ? a.k[0].length : a.H * a.dk;
    const kvHeads = Math.max(1, Math.round(width / a.dk));
    return Math.floor(h / Math.max(1, Math.floor(a.H / kvHeads)));
  }
  // The additive mask term of head h at (q, k): ALiBi's bias, 0 without one (and at blocked cells).
  // Head h of call a knocked out in the pass shown (docs/FORMAT.md 4b): the
  // document's "interventions" (`explore --ablate`; the live panel sets them
  // on each result it shows).
  function knockedOut(a, h) {
    const list = (data.interventions && data.interventions.ablate) || [];
    return list.some((x) => x[0] === a.name && x[1] === h);
  }
  function biasOf(a, h, q, k) {
    return a.bias && a.mask[q][k] ? a.bias[h][q][k] : 0;
  }
  // RoPE of one head's vector x at position pos (layers/rotary.h): the pairs (2i, 2i+1)
  // ("adjacent") or (i, i + dk/2) ("half") turn by pos * theta^(-2i/dk), i = 0..dk/2-1.
  function rotate(x, pos, theta, pairs) {
    const dk = x.length, out = x.slice(), half = dk / 2;
    for (let i = 0; i < half; ++i) {
      const a = pairs === "half" ? i : 2 * i, b = pairs === "half" ? i + half : 2 * i + 1;
      const angle = pos * Math.pow(theta, -2 * i / dk);
      const c = Math.cos(angle), sn = Math.sin(angle);
      out[a] = x[a] * c - x[b] * sn;
      out[b] = x[a] * sn + x[b] * c;
    }
    return out;
  }

  const groupOf = (a) => groups.find((g) => g.name === a.group);

  // ---- state ----
  const state = {
    view: "model",
    att: 0,
    head: 0,
    heads: new Set([0]), // the heads the head view draws
    query: 0,
    hover: null,         // head view: {side: "q"|"k", i}
  };
  const current = () => attentions[state.att];

  function select(changes) {
    Object.assign(state, changes);
    const a = current();
    if (!a) return;
    state.head = Math.min(Math.max(0, state.head), a.H - 1);
    state.query = Math.min(Math.max(0, state.query), Math.max(0, a.L - 1));
    if (!changes.heads) {
      if (changes.head !== undefined || changes.att !== undefined) state.heads = new Set([state.head]);
    }
    for (const h of Array.from(state.heads)) if (h >= a.H) state.heads.delete(h);
    if (state.heads.size === 0) state.heads.add(state.head);
    state.hover = null;
    renderAll();
  }
  function showView(view) {
    state.view = view;
    for (const section of document.querySelectorAll("main > section")) {
      section.hidden = section.dataset.view !== view;
    }
    for (const button of document.querySelectorAll("#tabs button")) {
      button.classList.toggle("active", button.dataset.view === view);
      button.setAttribute("aria-pressed", button.dataset.view === view ? "true" : "false");
    }
    $("#controls").classList.toggle("off", view === "model" || view === "decoding" || view === "patch" || view === "lens");
    document.body.dataset.view = view;
  }

  // ---- header ----
  function renderHeader() {
    // A page without a model (explore --html F alone) has none of these until one is opened.
    const parts = [model.name === undefined || model.name === null ? "(no model open)" : model.name, model.arch];
    if (model.d_model !== undefined) parts.push("D=" + model.d_model, "H=" + model.nhead, "dk=" + model.head_dim);
    if (model.norm_first !== undefined) parts.push(model.norm_first ? "pre-LN" : "post-LN");
    if (model.attention) parts.push(model.attention + " mask");
    const summary = clear($("#model-summary"));
    parts.filter((p) => p !== undefined).forEach((p, i) => {
      if (i) summary.appendChild(document.createTextNode(" \u00b7 "));
      summary.appendChild(i === 0 ? el("bdi", { text: String(p) }) : document.createTextNode(String(p)));
    });
    const input = data.input || {};
    const line = clear($("#input-summary"));
    line.appendChild(document.createTextNode("input: "));
    line.appendChild(el("bdi", { id: "input-text", text: JSON.stringify(input.text === undefined ? "" : input.text) }));
    if (input.target !== undefined && input.target !== null) {
      line.appendChild(document.createTextNode("   target: "));
      line.appendChild(el("bdi", { id: "input-target", text: JSON.stringify(input.target) }));
      line.appendChild(document.createTextNode(input.target_given ? " (given)" : " (generated)"));
    }
    document.title = "tinyformer explore \u2014 " + iso(model.name || "model") + ": " + iso(input.text === undefined ? "" : input.text);
  }

  function renderControls() {
    const a = current();
    const pickAttention = $("#pick-attention");
    const names = attentions.map((x) => x.name + " (" + x.group + ")");
    if (Array.from(pickAttention.options).map((o) => o.textContent).join("\n") !== names.join("\n")) {
      clear(pickAttention);
      for (const x of attentions) {
        pickAttention.appendChild(el("option", { value: x.index, text: x.name + " (" + x.group + ")" }));
      }
    }
    pickAttention.value = String(state.att);
    const pickQuery = clear($("#pick-query"));
    for (let i = 0; i < a.L; ++i) {
      pickQuery.appendChild(el("option", { value: i, text: i + ": " + shown(a.qTokens[i]) + (a.qPad[i] ? " (padding)" : "") }));
    }
    pickQuery.value = String(state.query);
    const chips = clear($("#head-chips"));
    for (let h = 0; h < a.H; ++h) {
      const on = state.heads.has(h);
      chips.appendChild(el("button", {
        type: "button", class: "chip" + (on ? " on" : "") + (h === state.head ? " current" : ""),
        "data-head-chip": h, "aria-pressed": on ? "true" : "false",
        title: "head " + h + ": click to show only it, shift/ctrl-click to add or remove it",
        style: { "--chip": headColour(h) },
        onclick: (event) => {
          if (event.shiftKey || event.ctrlKey || event.metaKey) {
            const heads = new Set(state.heads);
            if (heads.has(h) && heads.size > 1) heads.delete(h); else heads.add(h);
            select({ heads, head: heads.has(h) ? h : Math.min(...heads) });
          } else {
            select({ heads: new Set([h]), head: h });
          }
        },
      }, "head " + h));
      if (hooks.chip) append(chips, hooks.chip(a, h));
    }
    chips.appendChild(el("button", {
      type: "button", class: "chip all" + (state.heads.size === a.H ? " on" : ""), "data-head-chip": "all",
      title: "show every head", onclick: () => select({ heads: new Set(range(a.H)) }),
    }, "all"));
    const summary = $("#selection-summary");
    summary.textContent = a.name + " \u00b7 head " + state.head + " \u00b7 query " + state.query +
      " " + quoted(a.qTokens[state.query]) + " \u00b7 mask: " + a.mask_name;
    document.body.dataset.attention = a.name;
    document.body.dataset.head = String(state.head);
    document.body.dataset.query = String(state.query);
    for (const which of document.querySelectorAll(".which")) {
      which.textContent = "\u2014 " + a.name + ", head " + state.head + " (" + a.group + ", mask: " + a.mask_name + ")";
    }
  }

  // ---- legend: viridis 0..1, masked, padding ----
  function legend() {
    const bar = el("canvas", { width: 200, height: 12, class: "legend-bar" });
    const ctx = bar.getContext("2d");
    for (let x = 0; x < 200; ++x) {
      ctx.fillStyle = viridis(x / 199);
      ctx.fillRect(x, 0, 1, 12);
    }
    const hatch = el("canvas", { width: 14, height: 14, class: "swatch" });
    fillHatch(hatch.getContext("2d"), 0, 0, 14, 14, "padding");
    const maskedHatch = el("canvas", { width: 14, height: 14, class: "swatch" });
    fillHatch(maskedHatch.getContext("2d"), 0, 0, 14, 14, "masked");
    return el("div", { class: "legend" }, [
      el("span", { class: "legend-scale" }, [
        el("span", { text: "weight 0" }), bar, el("span", { text: "1" }),
      ]),
      el("span", { class: "legend-ticks", "aria-hidden": "true" }, [el("span", { text: "0" }), el("span", { text: "0.5" }), el("span", { text: "1" })]),
      el("span", { class: "legend-item" }, [maskedHatch, "masked (blocked: \u2212\u221e, never weight 0)"]),
      el("span", { class: "legend-item" }, [hatch, "padding"]),
    ]);
  }
  // The PNG's hatch in canvas coordinates (continuous across neighbouring cells).
  function fillHatch(ctx, x0, y0, w, h, kind) {
    ctx.fillStyle = HATCH_BG;
    ctx.fillRect(x0, y0, w, h);
    ctx.fillStyle = HATCH_INK;
    for (let y = y0; y < y0 + h; ++y) {
      for (let x = x0; x < x0 + w; ++x) {
        const rising = (x + y) % HATCH_PERIOD < HATCH_LINE;
        const falling = (((x - y) % HATCH_PERIOD) + HATCH_PERIOD) % HATCH_PERIOD < HATCH_LINE;
        if (rising || (kind === "padding" && falling)) ctx.fillRect(x, y, 1, 1);
      }
    }
  }
  function cellKind(a, q, k) {
    if (a.qPad[q] || a.kPad[k]) return "padding";
    return a.mask[q][k] ? "allowed" : "masked";
  }

  // ---- model view ----
  function drawThumbnail(canvas, a, h, px) {
    const ctx = canvas.getContext("2d");
    const w = a.weights[h];
    for (let q = 0; q < a.L; ++q) {
      for (let k = 0; k < a.S; ++k) {
        const kind = cellKind(a, q, k);
        if (kind !== "allowed") {
          fillHatch(ctx, k * px, q * px, px, px, kind);
          continue;
        }
        ctx.fillStyle = viridis(w[q][k]);
        ctx.fillRect(k * px, q * px, px, px);
      }
    }
  }
  function renderModel() {
    const root = clear($("#model-groups"));
    for (const g of groups) {
      const first = g.members[0];
      const masks = Array.from(new Set(g.members.map((a) => a.mask_name))).join(", ");
      const H = Math.max(...g.members.map((a) => a.H));
      const table = el("table", { class: "thumbs", "data-group": g.name });
      const head = el("tr", {}, [el("th", { text: "" })]);
      for (let h = 0; h < H; ++h) head.appendChild(el("th", { scope: "col" }, [el("span", { class: "dot", style: { background: headColour(h) } }), "head " + h]));
      table.appendChild(el("thead", {}, head));
      const body = el("tbody");
      for (const a of g.members) {
        const row = el("tr", {}, [el("th", { scope: "row", title: a.name, text: (a.stack === "layers" ? "layer " : a.stack + " layer ") + a.layer })]);
        const px = Math.max(2, Math.min(12, Math.floor(112 / Math.max(a.L, a.S, 1))));
        for (let h = 0; h < a.H; ++h) {
          const canvas = el("canvas", { width: a.S * px, height: a.L * px, "aria-hidden": "true" });
          drawThumbnail(canvas, a, h, px);
          const button = el("button", {
            type: "button", class: "thumb", "data-attention": a.name, "data-head": h,
            title: a.name + ", head " + h + " \u2014 click to open",
            onclick: () => { select({ att: a.index, head: h }); showView("matrix"); },
          }, canvas);
          row.appendChild(el("td", {}, button));
        }
        body.appendChild(row);
      }
      table.appendChild(body);
      root.appendChild(el("div", { class: "group" }, [
        el("h3", {}, [g.name, el("span", { class: "sub", text: "  queries: " + first.queries + " (" + first.L + ") \u00d7 keys: " + first.keys + " (" + first.S + ") \u00b7 mask: " + masks })]),
        table,
      ]));
    }
    if (!groups.length) root.appendChild(el("p", { text: "This page has no attention calls." }));
  }
  function markSelectedThumb() {
    const a = current();
    for (const t of document.querySelectorAll("#view-model .thumb")) {
      t.classList.toggle("selected", t.dataset.attention === a.name && Number(t.dataset.head) === state.head);
    }
  }

  // ---- head view ----
  function renderHead() {
    const a = current();
    const root = clear($("#head-graph"));
    const rows = Math.max(a.L, a.S);
    const rowH = rows > 20 ? 18 : 24, top = 34, leftEdge = 180, rightEdge = 460, lineL = leftEdge + 8, lineR = rightEdge - 8;
    const width = 640, height = top + rows * rowH + 10;
    const yQ = (i) => top + i * rowH + rowH / 2;
    const yK = (j) => top + j * rowH + rowH / 2;
    const graph = svg("svg", { width, height, viewBox: "0 0 " + width + " " + height, id: "head-svg", role: "img", class: rowH < 24 ? "dense" : "",
      "aria-label": "attention lines of " + a.name });
    const defs = svg("defs");
    const pattern = svg("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, [
      svg("rect", { width: 6, height: 6, fill: HATCH_BG }), svg("rect", { width: 1.5, height: 6, fill: HATCH_INK }),
      svg("rect", { width: 6, height: 1.5, fill: HATCH_INK }),
    ]);
    defs.appendChild(pattern);
    graph.appendChild(defs);
    graph.appendChild(svg("text", { x: leftEdge, y: 16, "text-anchor": "end", class: "col-title" }, "queries (" + a.queries + ")"));
    graph.appendChild(svg("text", { x: rightEdge, y: 16, "text-anchor": "start", class: "col-title" }, "keys (" + a.keys + ")"));
    const lines = svg("g", { class: "lines" });
    for (const h of Array.from(state.heads).sort()) {
      for (let q = 0; q < a.L; ++q) {
        if (a.qPad[q]) continue; // a padding query attends to nothing
        for (let k = 0; k < a.S; ++k) {
          if (!a.mask[q][k]) continue; // masked: never drawn as a weight-0 line
          const w = a.weights[h][q][k];
          lines.appendChild(svg("line", {
            class: "link", x1: lineL, y1: yQ(q), x2: lineR, y2: yK(k),
            stroke: headColour(h), "stroke-opacity": Math.max(0, Math.min(1, w)), "stroke-width": 3,
            "data-q": q, "data-k": k, "data-head": h, "data-weight": w,
          }));
        }
      }
    }
    graph.appendChild(lines);
    const token = (side, i) => {
      const isQ = side === "q";
      const tok = isQ ? a.qTokens[i] : a.kTokens[i];
      const pad = isQ ? a.qPad[i] : a.kPad[i];
      const y = isQ ? yQ(i) : yK(i);
      const x = isQ ? leftEdge : rightEdge;
      const g = svg("g", { class: "tok" + (pad ? " pad" : ""), "data-side": side, "data-i": i, tabindex: 0 });
      g.appendChild(svg("rect", { x: isQ ? x - 110 : x, y: y - rowH / 2 + 2, width: 110, height: rowH - 4, rx: 3,
        fill: pad ? "url(#hatch)" : "transparent", class: "hit" }));
      g.appendChild(svg("text", { x: isQ ? x - 6 : x + 6, y: y + 4, "text-anchor": isQ ? "end" : "start", class: "label" },
        padLabel(tok, pad)));
      g.appendChild(svg("text", { x: isQ ? x - 116 : x + 116, y: y + 4, "text-anchor": isQ ? "end" : "start", class: "tag" }, ""));
      g.appendChild(svg("title", {}, (isQ ? "query " : "key ") + i + ": " + iso(tok) + (pad ? " (padding)" : "")));
      g.addEventListener("mouseenter", () => hoverToken(side, i));
      g.addEventListener("focus", () => hoverToken(side, i));
      g.addEventListener("mouseleave", () => hoverToken(null));
      g.addEventListener("blur", () => hoverToken(null));
      if (isQ) g.addEventListener("click", () => select({ query: i, heads: state.heads }));
      return g;
    };
    for (let q = 0; q < a.L; ++q) graph.appendChild(token("q", q));
    for (let k = 0; k < a.S; ++k) graph.appendChild(token("k", k));
    root.appendChild(graph);
    renderHeadDetail(state.query);
  }
  function hoverToken(side, i) {
    const a = current();
    state.hover = side ? { side, i } : null;
    const graph = $("#head-svg");
    if (!graph) return;
    graph.classList.toggle("isolating", !!side);
    for (const line of graph.querySelectorAll("line.link")) {
      const keep = !side || Number(side === "q" ? line.dataset.q : line.dataset.k) === i;
      line.classList.toggle("off", !keep);
    }
    for (const g of graph.querySelectorAll("g.tok")) {
      const other = g.dataset.side;
      const j = Number(g.dataset.i);
      let tag = "";
      if (side && other !== side) {
        const q = side === "q" ? i : j, k = side === "q" ? j : i;
        if (!a.mask[q][k]) tag = "masked";
        else if (a.qPad[q] || a.kPad[k]) tag = "padding";
        else if (state.heads.size === 1) tag = fmt(a.weights[Array.from(state.heads)[0]][q][k], 3);
      }
      g.classList.toggle("active", !!side && other === side && j === i);
      g.querySelector("text.tag").textContent = tag;
      g.classList.toggle("masked", tag === "masked");
    }
    renderHeadDetail(side === "q" ? i : state.query);
  }
  function renderHeadDetail(q) {
    const a = current();
    const root = clear($("#head-detail"));
    if (!a.L) return;
    const heads = Array.from(state.heads).sort();
    root.appendChild(el("h3", { text: "query " + q + " " + quoted(a.qTokens[q]) + (a.qPad[q] ? " (padding: attends to nothing, row all 0)" : "") }));
    const table = el("table", { class: "numbers", id: "head-weights" });
    table.appendChild(el("tr", {}, [el("th", { text: "key" })].concat(heads.map((h) =>
      el("th", {}, [el("span", { class: "dot", style: { background: headColour(h) } }), "head " + h])))));
    for (let k = 0; k < a.S; ++k) {
      const row = el("tr", {}, [el("th", { class: "tokcell", text: k + " " + padLabel(a.kTokens[k], a.kPad[k]) })]);
      for (const h of heads) {
        const w = a.weights[h][q][k];
        if (!a.mask[q][k]) row.appendChild(el("td", { class: "masked", "data-head": h, "data-k": k, text: "masked" + (a.kPad[k] ? " (pad key)" : "") }));
        else if (a.qPad[q]) row.appendChild(el("td", { class: "padding", "data-head": h, "data-k": k, text: "padding query" }));
        else row.appendChild(el("td", { "data-head": h, "data-k": k, "data-weight": w, text: fmt(w, 6) + (a.kPad[k] ? " (pad key)" : "") }));
      }
      table.appendChild(row);
    }
    root.appendChild(table);
  }

  // ---- matrix view ----
  function renderMatrix() {
    const a = current();
    const h = state.head;
    const wrap = clear($("#matrix-wrap"));
    // Cells as large as the width allows (34 px at most, 16 at least), so a
    // long sequence's matrix still fills the screen; numbers in cells of 28 px or more.
    // (The window's width: a hidden view has none of its own.)
    const room = Math.max(320, document.documentElement.clientWidth - 32 - 360 - 140);
    const cell = Math.max(16, Math.min(34, Math.floor(room / Math.max(a.S, 1))));
    const big = cell >= 28;
    const table = el("table", { class: "matrix" + (big ? " big" : " small"), id: "matrix", "data-attention": a.name, "data-head": h,
      "data-cell": cell, style: { "--cell": cell + "px" } });
    const headRow = el("tr", {}, [el("th", { class: "corner", text: "query \\ key" })]);
    for (let k = 0; k < a.S; ++k) {
      const label = shown(a.kTokens[k]);
      const sideways = [...bare(a.kTokens[k])].length > (big ? 3 : 1);
      headRow.appendChild(el("th", { class: "col" + (a.kPad[k] ? " pad" : ""), scope: "col", "data-k": k, title: "key " + k + ": " + iso(a.kTokens[k]) },
        el("span", { class: sideways ? "sideways" : "upright", text: label })));
    }
    table.appendChild(el("thead", {}, headRow));
    const body = el("tbody");
    for (let q = 0; q < a.L; ++q) {
      const row = el("tr", { class: q === state.query ? "current" : "" }, [
        el("th", { class: "row" + (a.qPad[q] ? " pad" : ""), scope: "row", "data-q": q, title: "query " + q + ": " + iso(a.qTokens[q]) + " \u2014 click to step through",
          onclick: () => { select({ query: q, head: h }); showView("step"); } }, q + " " + shown(a.qTokens[q])),
      ]);
      for (let k = 0; k < a.S; ++k) {
        const kind = cellKind(a, q, k);
        const w = a.weights[h][q][k];
        const what = a.mask[q][k] ? "weight " + fmt(w, 6) + (a.bias ? ", bias " + fmt(a.bias[h][q][k], 6) : "") : "masked";
        const override = hooks.override ? hooks.override(a, q, k) : undefined;
        const overrideText = override === undefined ? "" : override ? " (override: allowed by you)" : " (override: blocked by you)";
        const attrs = { "data-q": q, "data-k": k, "data-weight": w, "data-mask": a.mask[q][k] ? 1 : 0,
          class: "cell " + kind + (override === undefined ? "" : " override"), "data-override": override === undefined ? undefined : override ? "allowed" : "blocked",
          title: "q" + q + " " + iso(a.qTokens[q]) + " \u2192 k" + k + " " + iso(a.kTokens[k]) + ": " + what + (kind === "padding" ? " (padding)" : "") + overrideText };
        if (kind === "allowed") attrs.style = { background: viridis(w), color: inkOn(w) };
        if (a.bias) attrs["data-bias"] = biasOf(a, h, q, k);
        // One format for every weight: two decimals, 0.00 .. 1.00 (the exact number on hover).
        row.appendChild(el("td", attrs, big && kind === "allowed" ? w.toFixed(2) : ""));
      }
      body.appendChild(row);
    }
    table.appendChild(body);
    table.addEventListener("mouseover", (event) => {
      const cell = event.target.closest("td.cell");
      if (cell) matrixDetail(Number(cell.dataset.q), Number(cell.dataset.k));
    });
    table.addEventListener("click", (event) => {
      const cell = event.target.closest("td.cell");
      if (!cell) return;
      if (hooks.cellClick && hooks.cellClick(a, h, Number(cell.dataset.q), Number(cell.dataset.k))) return;
      select({ query: Number(cell.dataset.q), head: h }); showView("step");
    });
    wrap.appendChild(table);
    matrixDetail(null, null);
  }
  function matrixDetail(q, k) {
    const a = current();
    const h = state.head;
    const root = clear($("#matrix-detail"));
    if (q === null) {
      root.appendChild(el("p", { class: "note", text: "Hover a cell: its weight, q\u00b7k, the scaled score, the mask, and the same cell in PyTorch's three mask conventions." }));
      return;
    }
    const kind = cellKind(a, q, k);
    const allowed = a.mask[q][k] ? 1 : 0;
    const qh = headSlice(a.q[q], h, a.dk), kh = headSlice(a.k[k], kvHead(a, h), a.dk);
    let dot = 0, scale = 0;
    for (let i = 0; i < a.dk; ++i) { dot += qh[i] * kh[i]; scale += Math.abs(qh[i] * kh[i]); }
    const score = a.scores[h][q][k];
    const w = a.weights[h][q][k];
    const bias = biasOf(a, h, q, k);
    const biasText = fmt(bias, 6);
    const rows = [
      ["cell", "query " + q + " " + quoted(a.qTokens[q]) + " \u2192 key " + k + " " + quoted(a.kTokens[k])],
      ["weight (engine)", a.qPad[q] ? fmt(w, 6) + " (padding query: row all 0)" : allowed ? fmt(w, 6) : "masked (" + fmt(w, 6) + " after softmax)"],
      ["raw score q\u00b7k", [fmt(dot, 6), " ", check(dot / Math.sqrt(a.dk), score, scale / Math.sqrt(a.dk))]],
      ["scaled score q\u00b7k/\u221a" + a.dk + " (engine)", fmt(score, 6)],
      ["mask value", allowed ? (a.bias ? "1 = allowed (adds its bias)" : "1 = allowed (adds 0)") : "0 = blocked (adds \u2212\u221e)"],
    ];
    if (a.bias) {
      rows.push(["ALiBi bias of head " + h + " (part of the additive mask)",
        allowed ? biasText + " = \u2212slope \u00b7 |" + q + " \u2212 " + k + "|" : "none: the key is blocked"]);
    }
    rows.push(
      ["softmax input", allowed ? (a.bias ? fmt(score, 6) + " + " + biasText + " = " + fmt(score + bias, 6) : fmt(score, 6)) : "\u2212\u221e"],
      ["PyTorch nn.MultiheadAttention Boolean attn_mask (True = blocked)", allowed ? "False" : "True"],
      ["PyTorch F.scaled_dot_product_attention Boolean attn_mask (True = allowed)", allowed ? "True" : "False"],
      ["additive float mask", allowed ? (a.bias ? biasText : "0.0") : "-inf"]);
    const override = hooks.override ? hooks.override(a, q, k) : undefined;
    if (override !== undefined) rows.push(["override (yours)", override ? "allowed: this cell joins the softmax (click again to remove)" : "blocked: weight exactly 0, the row renormalises over the other keys (click again to remove)"]);
    if (kind === "padding") rows.push(["padding", (a.qPad[q] ? "the query" : "") + (a.qPad[q] && a.kPad[k] ? " and " : "") + (a.kPad[k] ? "the key" : "") + " is padding"]);
    const table = el("table", { class: "kv", id: "cell-info", "data-q": q, "data-k": k });
    for (const [name, value] of rows) {
      const id = name.startsWith("ALiBi bias") ? "cell-bias" : name === "softmax input" ? "cell-softmax-input" : null;
      table.appendChild(el("tr", id ? { id } : {}, [el("th", { text: name }), el("td", {}, value)]));
    }
    root.appendChild(table);
  }

  // ---- step view ----
  function vectorCells(values, attrs) {
    return values.map((x, i) => el("td", Object.assign({ "data-i": i }, attrs || {}), fmt(x, 4)));
  }
  function renderStep() {
    const a = current();
    const h = state.head, q = state.query, dk = a.dk;
    const root = clear($("#step-body"));
    if (!a.L) return;
    root.appendChild(el("p", { class: "note" }, [
      "Head " + h + " of " + a.name + ", query " + q + " " + quoted(a.qTokens[q]) + " (" + a.queries + "), against " + a.S +
      " keys (" + a.keys + "); dk = " + dk + ", mask: " + a.mask_name + ". The results are the engine's numbers; ",
      el("span", { class: "check ok", text: "\u2713" }), " marks where this page's recomputation agrees to 1e-4 (relative)."]));
    if (a.qPad[q]) {
      root.appendChild(el("p", { class: "warn", text: "This query is padding: the softmax below is what its scores would give, but the engine writes its weights row as all 0, so its z is 0 and is not used." }));
    }
    const qh = headSlice(a.q[q], h, dk);
    const kvh = kvHead(a, h);
    // Rotary: q and k before rotation too; the page turns them itself (positions 0.. of the pass) for a check.
    const rotary = !!(a.q_unrotated && a.k_unrotated);
    const theta = model.rope_theta || 10000, pairs = model.rope_pairs || "adjacent";
    // The engine's rotated numbers, each with a check against the page's own rotation of `before`.
    const checkedCells = (before, pos, engine) => {
      const mine = rotate(before, pos, theta, pairs);
      const size = Math.max(...before.map(Math.abs));
      return engine.map((x, i) => el("td", { "data-i": i, "data-value": x }, [fmt(x, 4), " ", check(mine[i], x, size)]));
    };
    // q_h
    const qTable = el("table", { class: "numbers vec", id: "step-q" });
    qTable.appendChild(el("tr", {}, [el("th", { text: "" })].concat(range(dk).map((i) => el("th", { text: String(i) })))));
    if (rotary) {
      const before = headSlice(a.q_unrotated[q], h, dk);
      qTable.appendChild(el("tr", { id: "step-q-unrotated" }, [el("th", { text: "q_h before rotation" })].concat(vectorCells(before))));
      qTable.appendChild(el("tr", { id: "step-q-rotated" }, [el("th", { text: "q_h after rotation (position " + q + ")" })].concat(
        checkedCells(before, q, qh))));
    } else {
      qTable.appendChild(el("tr", {}, [el("th", { text: "q_h (query " + q + ")" })].concat(vectorCells(qh))));
    }
    root.appendChild(el("h3", { text: "1. q_h: columns " + h * dk + ".." + ((h + 1) * dk - 1) + " of q" +
      (rotary ? ", before and after rotary turns its pairs (" + pairs + ", theta " + theta + ") by the query's position" : "") }));
    root.appendChild(el("div", { class: "scroll" }, qTable));
    // k_h
    const kTable = el("table", { class: "numbers vec", id: "step-k" });
    kTable.appendChild(el("tr", {}, [el("th", { text: "key" })].concat(range(dk).map((i) => el("th", { text: String(i) })))));
    for (let k = 0; k < a.S; ++k) {
      const cls = a.mask[q][k] ? "" : "masked-row";
      const label = k + " " + padLabel(a.kTokens[k], a.kPad[k]);
      const kh = headSlice(a.k[k], kvh, dk);
      if (rotary) {
        const before = headSlice(a.k_unrotated[k], kvh, dk);
        kTable.appendChild(el("tr", { class: cls + " unrotated", "data-k": k }, [el("th", { class: "tokcell", text: label + " before" })].concat(vectorCells(before))));
        kTable.appendChild(el("tr", { class: cls + " rotated", "data-k": k }, [el("th", { class: "tokcell", text: label + " after" })].concat(
          checkedCells(before, k, kh))));
      } else {
        kTable.appendChild(el("tr", { class: cls }, [el("th", { class: "tokcell", text: label })].concat(vectorCells(kh))));
      }
    }
    root.appendChild(el("details", { id: "step-keys" }, [
      el("summary", {}, el("h3", { text: "2. every k_h (" + a.S + " keys" + (kvh !== h ? ", K/V head " + kvh : "") +
        (rotary ? ", before and after rotation" : "") + "): click to show" })),
      el("div", { class: "scroll" }, kTable)]));

    // the chain
    const scores = a.scores[h][q], weights = a.weights[h][q];
    const dots = [], scales = [];
    for (let k = 0; k < a.S; ++k) {
      const kh = headSlice(a.k[k], kvh, dk);
      let d = 0, s = 0;
      for (let i = 0; i < dk; ++i) { d += qh[i] * kh[i]; s += Math.abs(qh[i] * kh[i]); }
      dots.push(d); scales.push(s);
    }
    const masked = range(a.S).map((k) => (a.mask[q][k] ? scores[k] + biasOf(a, h, q, k) : Number.NEGATIVE_INFINITY));
    const rowMax = Math.max(...masked);
    const shifted = masked.map((x) => (x === Number.NEGATIVE_INFINITY ? x : x - rowMax));
    const exps = shifted.map((x) => Math.exp(x));
    const sum = exps.reduce((s, x) => s + x, 0);
    const softmax = exps.map((x) => (sum > 0 ? x / sum : 0));
    // The engine writes a padding query's row as all 0.
    const mine = softmax.map((x) => (a.qPad[q] ? 0 : x));
    const chain = el("table", { class: "numbers chain", id: "step-chain" });
    chain.appendChild(el("tr", {}, ["key", "q\u00b7k", "\u00f7 \u221a" + dk + " = score (engine)", a.bias ? "+ mask (ALiBi bias)" : "+ mask", "\u2212 row max", "exp", "\u00f7 sum", "weight (engine)"].map((t) => el("th", { text: t }))));
    for (let k = 0; k < a.S; ++k) {
      const allowed = !!a.mask[q][k];
      chain.appendChild(el("tr", { class: allowed ? "" : "masked-row", "data-k": k }, [
        el("th", { class: "tokcell", text: k + " " + padLabel(a.kTokens[k], a.kPad[k]) }),
        el("td", { text: fmt(dots[k], 6) }),
        el("td", {}, [fmt(scores[k], 6), " ", check(dots[k] / Math.sqrt(dk), scores[k], scales[k] / Math.sqrt(dk))]),
        el("td", { class: allowed ? (a.bias ? "bias" : "") : "masked", "data-bias": biasOf(a, h, q, k) },
          allowed ? (a.bias ? "+ " + fmt(biasOf(a, h, q, k), 6) + " (ALiBi)" : "+0") + " \u2192 " + fmt(masked[k], 6) : "masked: \u2212\u221e"),
        el("td", { text: fmt(shifted[k], 6) }),
        el("td", { text: fmt(exps[k], 6) }),
        el("td", { text: fmt(softmax[k], 6) }),
        el("td", { class: "weight" + (allowed ? "" : " masked"), "data-k": k, "data-weight": weights[k] },
          [allowed ? fmt(weights[k], 6) : "0 (masked)", " ", check(mine[k], weights[k], 1e-3)]),
      ]));
    }
    const wSum = weights.reduce((s, x) => s + x, 0);
    chain.appendChild(el("tr", { class: "total" }, [
      el("th", { text: "row" }), el("td", { text: "" }), el("td", { text: "max " + fmt(rowMax, 6) }), el("td", { text: "" }),
      el("td", { text: "" }), el("td", { text: "sum " + fmt(sum, 6) }), el("td", { text: "\u03a3 " + fmt(softmax.reduce((s, x) => s + x, 0), 6) }),
      el("td", { id: "step-weight-sum", "data-sum": wSum, text: "\u03a3 " + fmt(wSum, 7) }),
    ]));
    root.appendChild(el("h3", { text: "3. q\u00b7k, \u00f7 \u221adk, + mask, \u2212 row maximum, exp, \u00f7 sum: the weights" }));
    root.appendChild(el("div", { class: "scroll" }, chain));

    // weighted sum of v_h
    const vTable = el("table", { class: "numbers vec", id: "step-v" });
    vTable.appendChild(el("tr", {}, [el("th", { text: "key" }), el("th", { text: "weight" })].concat(range(dk).map((i) => el("th", { text: "v_h[" + i + "]" })))));
    const zMine = new Array(dk).fill(0), zScale = new Array(dk).fill(0);
    for (let k = 0; k < a.S; ++k) {
      const vh = headSlice(a.v[k], kvh, dk);
      for (let i = 0; i < dk; ++i) { zMine[i] += weights[k] * vh[i]; zScale[i] += Math.abs(weights[k] * vh[i]); }
      vTable.appendChild(el("tr", { class: a.mask[q][k] ? "" : "masked-row" }, [
        el("th", { class: "tokcell", text: k + " " + shown(a.kTokens[k]) }),
        el("td", { text: a.mask[q][k] ? fmt(weights[k], 4) : "masked" }),
      ].concat(vectorCells(vh))));
    }
    const zEngine = headSlice(a.z[q], h, dk);
    vTable.appendChild(el("tr", { class: "total" }, [el("th", { text: "\u03a3 weight \u00b7 v_h" }), el("td", { text: "" })].concat(vectorCells(zMine))));
    // A knocked-out head's z_h is zero by the intervention: the sum above is what it would have been.
    const out = knockedOut(a, h);
    vTable.appendChild(el("tr", { class: "total", id: "step-z" }, [el("th", { text: out ? "z_h (engine): knocked out, set to 0" : "z_h (engine)" }),
      el("td", { text: "" })].concat(zEngine.map((x, i) => el("td", { "data-i": i, "data-z": x }, [fmt(x, 4), " ",
      out ? el("span", { class: "check", title: "this head is knocked out: the engine sets its z_h to 0 before W_O", text: "\u2014" }) : check(zMine[i], x, zScale[i])])))));
    root.appendChild(el("h3", { text: "4. the weighted sum of v_h \u2192 this head's slice of z (columns " + h * dk + ".." + ((h + 1) * dk - 1) + ")" }));
    root.appendChild(el("div", { class: "scroll" }, vTable));
  }

  // ---- decoding view ----
  // Which search made the tokens: greedy, beam search of width K, or
  // sampling with its settings and seed (models/decoding.h has the steps).
  function searchText(d) {
    const limit = d.max_new_tokens ? ", at most " + d.max_new_tokens + " new tokens" : "";
    if (d.mode === "beam") return "Beam search, width " + d.beam + limit + ": the steps of the best hypothesis";
    if (d.mode === "sample" && d.sampling) {
      const s = d.sampling;
      return "Sampling (temperature " + s.temperature + ", top-k " + (s.top_k ? s.top_k : "all") + ", top-p " + s.top_p +
        ", seed " + s.seed + limit + "): each token drawn from softmax(logits / T) restricted to the top-k, then the top-p tokens, renormalised";
    }
    return "Greedy decoding" + limit;
  }

  // Why the decoding ended (the record's "stop", models/decoding.h's StopReason).
  // Only "eos" has an <eos> step: a decoding cut short never chose it.
  function stopText(d) {
    if (d.stop === "eos") return "Stopped: the model chose <eos>.";
    if (d.stop === "max_new_tokens")
      return "Stopped: " + (d.max_new_tokens ? d.max_new_tokens + " new tokens" : "the new-token limit") +
        " reached (max new tokens); the model did not choose <eos>.";
    if (d.stop === "max_len") return "Stopped: the sequence filled the model's max_len positions; the model did not choose <eos>.";
    return "";
  }

  function renderDecoding() {
    const root = clear($("#decoding-body"));
    const d = data.decoding || { mode: "none", steps: [] };
    const steps = d.steps || [];
    if (d.mode === "none" || !steps.length) {
      root.appendChild(el("p", { class: "note", id: "decoding-none", text: "No decoding on this page" + (data.input && data.input.target_given ? " (the target was given)." : ".") }));
    } else {
      root.appendChild(el("p", { class: "note", id: "decoding-search", text: searchText(d) +
        ": at each generated position the five most likely next tokens (the model's softmax, T = 1); the chosen one is highlighted." }));
      const path = steps.map((s) => {
        const c = (s.candidates || []).find((x) => x.id === s.chosen);
        return c ? c.token : s.chosen_token !== undefined ? s.chosen_token : "#" + s.chosen;
      });
      if (stopText(d)) root.appendChild(el("p", { class: "note", id: "decoding-stop", text: stopText(d) }));
      root.appendChild(el("p", { class: "path", id: "decoding-path" }, ["chosen path: "].concat(path.map((t) => el("span", { class: "tok chosen", text: shown(String(t)) })))));
      const table = el("table", { class: "numbers decoding", id: "decoding-steps" });
      // A sampled token can lie outside the top 5: it gets a cell of its own, in a "drawn" column.
      const outside = (s) => !(s.candidates || []).slice(0, 5).some((c) => c.id === s.chosen);
      const heads = ["position", "1", "2", "3", "4", "5"].concat(steps.some(outside) ? ["drawn"] : []);
      table.appendChild(el("tr", {}, heads.map((t) => el("th", { text: t }))));
      const cell = (id, token, p, chosen, title) =>
        el("td", { class: "cand" + (chosen ? " chosen" : ""), "data-id": id, "data-p": p, title: title }, [
          el("span", { class: "ctok", text: shown(String(token)) }),
          el("span", { class: "bar", style: { width: Math.round(60 * Math.max(0, Math.min(1, p))) + "px" } }),
          el("span", { class: "p", text: fmt(p, 3) }),
        ]);
      for (const s of steps) {
        const row = el("tr", { "data-position": s.position }, [el("th", { text: String(s.position) })]);
        const top = (s.candidates || []).slice(0, 5);
        for (const c of top) row.appendChild(cell(c.id, c.token, c.p, c.id === s.chosen, "id " + c.id + ", p = " + c.p));
        if (outside(s)) {
          for (let i = top.length; i < 5; ++i) row.appendChild(el("td", {}));
          row.appendChild(cell(s.chosen, s.chosen_token, s.chosen_p, true, "id " + s.chosen + ", p = " + s.chosen_p + ": drawn outside the top 5"));
        }
        table.appendChild(row);
      }
      root.appendChild(el("div", { class: "scroll" }, table));
    }
    const hyps = d.hypotheses || [];
    if (hyps.length) {
      root.appendChild(el("h3", { text: "hypotheses" }));
      const table = el("table", { class: "numbers", id: "decoding-hypotheses" });
      table.appendChild(el("tr", {}, ["", "tokens", "log p", "score"].map((t) => el("th", { text: t }))));
      hyps.forEach((x, i) => {
        table.appendChild(el("tr", { class: x.best ? "chosen" : "" }, [
          el("th", { text: x.best ? "best" : String(i + 1) }),
          el("td", { class: "toks", text: (x.tokens || []).map((t) => shown(String(t))).join(" ") }),
          el("td", { text: fmt(x.log_p, 5) }), el("td", { text: fmt(x.score, 5) }),
        ]));
      });
      root.appendChild(table);
    }
  }

  // ---- keyboard: Left/Right heads, Up/Down layers within the group ----
  document.addEventListener("keydown", (event) => {
    const tag = event.target && event.target.tagName;
    if (tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA" || event.altKey || event.ctrlKey || event.metaKey) return;
    const a = current();
    if (!a) return;
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      const head = state.head + (event.key === "ArrowRight" ? 1 : -1);
      if (head >= 0 && head < a.H) select({ head });
      event.preventDefault();
    } else if (event.key === "ArrowUp" || event.key === "ArrowDown") {
      const members = groupOf(a).members;
      const at = members.indexOf(a) + (event.key === "ArrowDown" ? 1 : -1);
      if (at >= 0 && at < members.length) select({ att: members[at].index, head: state.head });
      event.preventDefault();
    }
  });

  // ---- wiring ----
  function renderAll() {
    if (!attentions.length) return;
    renderControls();
    markSelectedThumb();
    renderHead();
    renderMatrix();
    renderStep();
    if (hooks.rendered) hooks.rendered();
  }
  // A new data object (a live result's page): every view again, keeping the
  // view, the attention call (by name), the head, the heads and the query when they still exist.
  function setData(d) {
    const name = current() ? current().name : null;
    load(d);
    const at = attentions.findIndex((a) => a.name === name);
    state.att = at >= 0 ? at : Math.max(0, Math.min(state.att, attentions.length - 1));
    renderHeader();
    renderModel();
    renderDecoding();
    if (attentions.length) select({ heads: state.heads });
    else if (hooks.rendered) hooks.rendered();
    showView(attentions.length || state.view === "live" ? state.view : "decoding");
  }
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => showView(button.dataset.view));
  }
  $("#pick-attention").addEventListener("change", (event) => select({ att: Number(event.target.value), head: state.head }));
  $("#pick-query").addEventListener("change", (event) => select({ query: Number(event.target.value), heads: state.heads }));
  window.addEventListener("resize", () => { if (attentions.length) renderMatrix(); });
  for (const slot of document.querySelectorAll(".legend-slot")) slot.appendChild(legend());
  renderHeader();
  renderModel();
  renderDecoding();
  renderAll();
  showView(attentions.length ? "model" : "decoding");
  // For tools/explore/live.js (the same page, no network): the renderer and its state.
  window.tinyformerPage = {
    setData, hooks, state, select, showView, refreshControls: () => { if (attentions.length) renderControls(); },
    data: () => data, current, attentions: () => attentions,
    el, clear, append, fmt, fixed, shown, quoted, iso, viridis, inkOn, diverging, divergingInk, headColour,
  };
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "true";
})();
