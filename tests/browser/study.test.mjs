// Browser tests of the explore page's Patch and Lens views (tools/explore/study.js,
// make test-browser): each page in STUDY_PAGES (space-separated
// build/browser/live-NAME.html, NAME a toy model of data/models/ or a family
// model of data/families/; the Makefile's: reverse, dates, reverse-causal and
// the five families) is opened in Debian's chromium with the network
// shut, a clean input typed into the live panel, then:
//   - Patch: a corrupted input typed, "Patch every cell" pressed: every cell of
//     the grid the page draws (its number in the cell, its full value in
//     data-value) equals `tinyformer patch MODEL CLEAN CORRUPTED --what W
//     --output x.json` within the effect tolerance (below), with the same rows,
//     positions and answers; a click on a cell shows that cell's effect (within
//     the tolerance, and the grid's own number for it exactly, also after the
//     panel's target is edited) and the three runs' top tokens: the clean and corrupted
//     runs' first tokens are their answers, and where the code makes it exact
//     on the page's own engine (resid: the last layer's output patched at the
//     answer row) the effect is exactly 1 and the patched run's top tokens,
//     probabilities and LD are the clean run's, bit for bit;
//   - requests that overlap: a cell of the old grid clicked after "Patch" is
//     not drawn under the new grid, and Stop stays on while a request runs;
//   - Lens: the tab opened (the lens runs by itself): every cell's top token
//     and probability, and every norm, equal `tinyformer lens MODEL CLEAN
//     --output x.json` within LENS_P / LENS_NORM (a top token differing from
//     the CLI's only in a near tie, and then the CLI's second), each cell's
//     answer_rank equal and answer_p within LENS_P; a click on a cell lists its
//     top K tokens; with --attribute (reverse-causal, nanogpt-char: pre-LN),
//     each part of the direct logit attribution, their sum and the logit within
//     LOGITS_TOLERANCE;
//   - the Lens tab opened while a grid runs runs the lens after it;
//   - Stop ends a request asked and not yet run ("stopped before it ran") and a
//     head grid running in the worker ("stopped: the run was ended before it
//     finished"): the engine starts again, the last grid stays;
//   - no request leaves the page, no console error, a hostile input (as the
//     corruption, then as the lens's input: gpt2-tiny's byte-level BPE reads it)
//     is refused in words or shown as text, never run (window.pwned stays undefined).
// The worst page-vs-CLI differences per model are printed (diagnostics).
//
// The tolerances. The page's engine multiplies with its own gemm, the CLI with
// OpenBLAS (tests/browser/native.mjs): a logit differs by up to
// LOGITS_TOLERANCE * max(1, |logit|) = 1e-4 relative. LD is a difference of two
// logits and the effect a ratio of two LD differences,
//   effect = (LD_p - LD_c) / (LD_clean - LD_c),
// so an absolute error d in each LD moves the effect by at most
// (2d + 2d * |effect|) / |LD_clean - LD_c|. The logits themselves are not in
// the JSON (only the LDs and probabilities), so d cannot be derived here: the
// effect tolerance is a CHOSEN one, d = 8e-4 * M with M = max(1, |LD_clean|,
// |LD_c|, |LD_p|), i.e.
//   |effect_page - effect_cli| <= 1.6e-3 * M * (1 + |effect_cli|) / |LD_clean - LD_c|.
// The measurements sit far below it (printed per model as a share of it: at
// most 0.2% over the eight pages, 1.8e-6 absolute).
// The lens: softmax moves a probability by |dp| <= 2 p max_j |dz_j| for logit
// changes dz, so with LOGITS_TOLERANCE |dp| <= 2e-4 * max(1, max |z|); LENS_P =
// 1e-3 is that bound for logits up to 5 in size and stricter than it for
// larger ones (the lens JSON holds no logits to scale by; seen: at most
// 1.6e-6 over the eight pages). A top token may swap with the next only where
// their probabilities are within LENS_P (a near tie). Norms: 1e-4 relative
// (the stream's float32 sums in another order; seen: 8.4e-7).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { launch, openPage, showView } from "./browser.mjs";
import { LOGITS_TOLERANCE, TINYFORMER, scratchFile } from "./native.mjs";

const DEFAULT_PAGES = ["reverse", "dates", "reverse-causal", "nanogpt-char", "gpt2-tiny", "mingpt-sort", "annotated-copy", "llama2c-tiny"].map((name) => `build/browser/live-${name}.html`);
const pages = (process.env.STUDY_PAGES || "").split(/\s+/).filter(Boolean);
if (!pages.length) pages.push(...DEFAULT_PAGES);

// Per model: the clean input (typed into the live panel), its target (or ""
// for the CLI's default), a corruption of the same token length whose answer
// differs, and which activations to patch.
const CASES = {
  reverse: { clean: "hello", target: "", corrupted: "hallo", whats: ["resid", "attn_out", "head"] },
  dates: { clean: "thursday 3 may 1979", target: "", corrupted: "thursday 3 may 1971", whats: ["resid"] },
  "reverse-causal": { clean: "abc=", target: "", corrupted: "abd=", whats: ["resid", "mlp_out"], attribute: "c" },
  "nanogpt-char": { clean: "forty one, forty two, forty ", target: "", corrupted: "forty one, forty six, forty ", whats: ["resid"], attribute: "t" },
  "gpt2-tiny": { clean: "forty one is 41, forty two is", target: "", corrupted: "forty one is 41, forty six is", whats: ["resid"] },
  "mingpt-sort": { clean: "002002", target: "", corrupted: "222222", whats: ["resid"] },
  "annotated-copy": { clean: "1 5 9 7 2 8 8 1 1 10", target: "5 9 7 2 8 8 1 1 10", corrupted: "1 5 9 3 2 8 8 1 1 10", whats: ["resid"] },
  "llama2c-tiny": { clean: "forty one, forty two, forty", target: "", corrupted: "forty one, forty six, forty", whats: ["resid"] },
};

const HOSTILE = "<img src=x onerror=window.pwned=1>";
const LENS_P = 1e-3;
const LENS_NORM = 1e-4;
// The chosen effect tolerance above.
function effectBound(report, effect, patchedLd) {
  const M = Math.max(1, Math.abs(report.clean.logit_diff), Math.abs(report.corrupted.logit_diff), Math.abs(patchedLd ?? 0));
  return (1.6e-3 * M * (1 + Math.abs(effect))) / Math.abs(report.clean.logit_diff - report.corrupted.logit_diff);
}

function modelOf(page) {
  const name = basename(page, ".html").replace(/^live-/, "");
  for (const file of [`data/models/${name}.safetensors`, `data/families/${name}.safetensors`, `data/families/${name}/${name}.safetensors`])
    if (existsSync(file)) return { name, model: file };
  throw new Error(`${page}: no model file for ${name}`);
}

let fileCount = 0;
function cli(args) {
  const out = scratchFile(`study-${++fileCount}.json`);
  execFileSync(TINYFORMER, [...args, "--output", out], { stdio: ["ignore", "ignore", "pipe"] });
  return JSON.parse(readFileSync(out, "utf8"));
}

// The text a cell shows for a number, as study.js writes it (toFixed, a real minus sign).
const fixed = (x, digits) => x.toFixed(digits).replace(/^-/, "\u2212");

// Runs ACTION and waits until the page's count of finished study requests grows.
async function studied(page, action) {
  const before = await page.evaluate(() => Number(document.body.dataset.studyRuns || 0));
  await action();
  await page.waitForFunction((n) => Number(document.body.dataset.studyRuns || 0) > n, before, { timeout: 600000 });
}

const worst = {};

describe("the Patch and Lens views equal the CLI's patch and lens", () => {
  let browser;
  before(async () => { browser = await launch(); });
  after(async () => {
    await browser?.close();
    for (const [name, w] of Object.entries(worst))
      console.log(`study ${name}: worst |effect page - CLI| ${w.effect.toExponential(2)} (${(w.effectShare * 100).toFixed(1)}% of its bound), ` +
        `worst |p page - CLI| ${w.p.toExponential(2)}, worst norm relative ${w.norm.toExponential(2)}, ${(w.ms / 1000).toFixed(1)} s` +
        (w.attribution !== undefined ? `, worst |attribution part page - CLI| ${w.attribution.toExponential(2)}` : "") +
        `, ${w.identity ?? 0} exact last-layer patch(es)` +
        (w.hostileShown ? "; the hostile input ran and showed as text" : ""));
  });

  for (const file of pages) {
    const { name, model } = modelOf(file);
    const c = CASES[name];
    test(`${name}: patch grid, one cell, lens table and norms`, { skip: !c && `no case for ${name}` }, async () => {
      const started = Date.now();
      const w = (worst[name] = { effect: 0, effectShare: 0, p: 0, norm: 0, ms: 0 });
      const { page, context, blocked, errors } = await openPage(browser, file);
      try {
        await page.waitForSelector("body[data-study=ready]", { timeout: 120000 });
        // The live panel's input (live.js fills it when the engine is ready; set it after).
        await page.waitForSelector("body[data-live=ready]", { timeout: 120000 });
        await page.evaluate(({ clean, target }) => {
          document.querySelector("#live-ids").checked = false;
          document.querySelector("#live-source").value = clean;
          document.querySelector("#live-target").value = target;
        }, c);
        const targetArgs = c.target ? ["--target", c.target] : [];

        // ---- Patch ----
        await showView(page, "patch");
        for (const what of c.whats) {
          const expected = cli(["patch", model, c.clean, c.corrupted, "--what", what, ...targetArgs]);
          await page.fill("#patch-corrupted", c.corrupted);
          await page.selectOption("#patch-what", what);
          await studied(page, () => page.click("#patch-run"));
          const shown = await page.evaluate(() => ({
            status: document.querySelector("#patch-status").textContent,
            cells: Array.from(document.querySelectorAll("#patch-grid td[data-row]")).map((td) => ({
              row: td.dataset.row, position: Number(td.dataset.position), value: Number(td.dataset.value), text: td.textContent,
              background: td.style.background,
            })),
            report: window.tinyformerStudy.patch,
          }));
          assert.ok(shown.report, `${what}: no patch result (${shown.status})`);
          assert.deepEqual(shown.report.layers, expected.layers);
          assert.deepEqual(shown.report.positions, expected.positions);
          assert.deepEqual(shown.report.source_positions, expected.source_positions);
          assert.equal(shown.report.clean.answer, expected.clean.answer);
          assert.equal(shown.report.corrupted.answer, expected.corrupted.answer);
          assert.equal(shown.report.answer_row, expected.answer_row);
          const count = expected.effect.reduce((n, row) => n + row.length, 0);
          assert.equal(shown.cells.length, count, `${what}: the grid has ${shown.cells.length} cells, the CLI ${count}`);
          for (const cell of shown.cells) {
            const r = expected.layers.indexOf(cell.row);
            assert.ok(r >= 0, `${what}: a row ${cell.row} the CLI does not have`);
            const want = expected.effect[r][cell.position];
            const bound = effectBound(expected, want);
            const d = Math.abs(cell.value - want);
            w.effect = Math.max(w.effect, d);
            w.effectShare = Math.max(w.effectShare, d / bound);
            assert.ok(d <= bound, `${what} ${cell.row} @${cell.position}: page ${cell.value}, CLI ${want} (bound ${bound})`);
            assert.equal(cell.text, fixed(cell.value, 2), `${what} ${cell.row} @${cell.position}: the cell shows ${cell.text}`);
            assert.match(cell.background, /^rgb/);
          }
          // Zero is white, as in the PNG (heatmap.cpp: diverging(0.5) = 247,247,247).
          const zero = shown.cells.find((cell) => cell.value === 0);
          if (zero) assert.equal(zero.background, "rgb(247, 247, 247)");

          // One cell clicked: the cell whose CLI effect is largest in size, and the last row at the answer row.
          const picks = [];
          let best = null;
          expected.effect.forEach((row, r) => row.forEach((v, p) => { if (!best || Math.abs(v) > Math.abs(best.v)) best = { r, p, v }; }));
          picks.push(best);
          const last = expected.layers.length - 1;
          if (expected.effect[last].length > expected.answer_row) picks.push({ r: last, p: expected.answer_row, v: expected.effect[last][expected.answer_row] });
          for (const pick of picks) {
            const selector = `#patch-grid td[data-row="${expected.layers[pick.r]}"][data-position="${pick.p}"]`;
            // The panel's target edited after the grid: the cell is still its grid's experiment.
            await page.evaluate(() => { document.querySelector("#live-target").value = "1"; });
            await studied(page, () => page.click(selector));
            await page.evaluate((target) => { document.querySelector("#live-target").value = target; }, c.target);
            const cell = await page.evaluate(() => ({
              result: window.tinyformerStudy.cell,
              effectText: document.querySelector("#patch-cell .effect")?.textContent,
              runs: Array.from(document.querySelectorAll("#patch-cell table[data-run]")).map((t) => ({
                run: t.dataset.run, first: t.querySelector("tr:nth-of-type(2) td")?.textContent,
              })),
              picked: Array.from(document.querySelectorAll("#patch-grid td.picked")).map((td) => [td.dataset.row, Number(td.dataset.position)]),
            }));
            assert.ok(cell.result, `${what}: the click gave no cell (${await page.textContent("#patch-status")})`);
            // The same patched run as the grid's, on the same engine: the same bits.
            assert.equal(cell.result.effect, shown.report.effect[pick.r][pick.p]);
            assert.equal(cell.result.row, expected.layers[pick.r]);
            assert.equal(cell.result.position, pick.p);
            const bound = effectBound(expected, pick.v, cell.result.logit_diff);
            assert.ok(Math.abs(cell.result.effect - pick.v) <= bound, `${what} cell: page ${cell.result.effect}, CLI ${pick.v}`);
            assert.ok(cell.effectText && Math.abs(Number(cell.effectText.replace("\u2212", "-")) - cell.result.effect) <= 1e-5 * Math.max(1, Math.abs(cell.result.effect)),
              `the cell's effect shows as ${cell.effectText}`);
            assert.deepEqual(cell.runs.map((r) => r.run), ["clean", "corrupted", "patched"]);
            // Each run's top token at the answer row: clean and corrupted are their answers.
            assert.equal(cell.result.clean.top[0].token, expected.clean.answer);
            assert.equal(cell.result.corrupted.top[0].token, expected.corrupted.answer);
            // The last layer's output at the answer row patched: the final norm and the unembedding read
            // that row alone, so the patched run's answer row is the clean run's, bit for bit, on any engine.
            if (what === "resid" && pick.r === last && pick.p === expected.answer_row) {
              assert.equal(cell.result.effect, 1);
              assert.deepEqual(cell.result.patched, cell.result.clean);
              w.identity = (w.identity ?? 0) + 1;
            }
            assert.deepEqual(cell.picked, [[expected.layers[pick.r], pick.p]]);
          }
        }

        // A hostile corrupted input: refused or run, never executed; the status shows it as text.
        await page.fill("#patch-corrupted", HOSTILE);
        await studied(page, () => page.click("#patch-run"));
        assert.equal(await page.evaluate(() => window.pwned), undefined);
        assert.equal(await page.evaluate(() => document.querySelectorAll("#view-patch img, #view-patch svg").length), 0);

        // Requests that overlap. The engine answers them in order, so (a) a click on the old grid's cell
        // after "Patch" would come back after the new grid: it is not sent (nor drawn), and (b) a cell
        // clicked and then "Patch": the cell's reply comes first, while the grid still runs, and Stop
        // stays on then. Each status change is recorded with Stop's state at that moment.
        await page.fill("#patch-corrupted", c.corrupted);
        await page.selectOption("#patch-what", c.whats[0]);
        await studied(page, () => page.click("#patch-run"));
        const overlap = await page.evaluate(async () => {
          const drained = () => window.tinyformer.run({ text: "" }).catch(() => {}).then(() => new Promise((r) => setTimeout(r, 0)));
          const cellOf = () => document.querySelector("#patch-grid td[data-row]");
          const seen = [];
          const observer = new MutationObserver(() => seen.push({
            status: document.querySelector("#patch-status").textContent, stopDisabled: document.querySelector("#patch-stop").disabled,
          }));
          observer.observe(document.querySelector("#patch-status"), { childList: true, characterData: true, subtree: true });
          // (a)
          const old = cellOf();
          document.querySelector("#patch-run").click();
          old.click();
          const refusal = document.querySelector("#patch-status").textContent;
          await drained();
          const a = { refusal, cell: window.tinyformerStudy.cell, shown: document.querySelector("#patch-cell").textContent };
          // (b)
          seen.length = 0;
          cellOf().click();
          document.querySelector("#patch-run").click();
          await drained();
          observer.disconnect();
          return { a, b: { seen, cell: window.tinyformerStudy.cell, shown: document.querySelector("#patch-cell").textContent,
            stopDisabled: document.querySelector("#patch-stop").disabled } };
        });
        assert.match(overlap.a.refusal, /a new grid is on its way/);
        assert.equal(overlap.a.cell, null, "the old grid's cell was drawn under the new grid");
        assert.equal(overlap.a.shown, "");
        // The status counts the seconds from the first request on (live.js's counter).
        assert.match(overlap.b.seen[0]?.status ?? "", /^running\u2026 \d+ s \(Stop ends it\)$/);
        const firstDone = overlap.b.seen.find((x) => /^done in/.test(x.status));
        assert.ok(firstDone, JSON.stringify(overlap.b.seen));
        assert.equal(firstDone.stopDisabled, false, "the cell's reply turned Stop off while the grid still ran");
        assert.equal(overlap.b.cell, null, "a cell asked before the new grid is not drawn under it");
        assert.equal(overlap.b.stopDisabled, true);

        // Stop (a): a grid asked for and stopped at once never reaches the worker: "stopped before it ran",
        // the last grid stays, and the engine answers the next request.
        const before = await page.evaluate(() => window.tinyformerStudy.patch);
        await studied(page, () => page.evaluate(() => {
          document.querySelector("#patch-run").click();
          document.querySelector("#patch-stop").click();
        }));
        const stopped = await page.evaluate(() => ({
          status: document.querySelector("#patch-status").textContent,
          stopDisabled: document.querySelector("#patch-stop").disabled,
          same: window.tinyformerStudy.patch,
        }));
        assert.equal(stopped.status, "stopped before it ran; the view shows the last result");
        assert.equal(stopped.stopDisabled, true);
        assert.deepEqual(stopped.same, before);
        // Stop (b): a head grid running in the worker (window.tinyformer.running, checked in the same task
        // as the click, so its reply cannot have arrived): the worker is ended and started again.
        await page.selectOption("#patch-what", "head");
        const running = await page.evaluate(async () => {
          document.querySelector("#patch-run").click();
          while (!window.tinyformer.running) await new Promise((r) => setTimeout(r, 0));
          document.querySelector("#patch-stop").click();
          return true;
        });
        assert.ok(running);
        await page.waitForFunction(() => document.body.dataset.study !== "running", null, { timeout: 120000 });
        const ended = await page.evaluate(() => ({
          status: document.querySelector("#patch-status").textContent,
          stopDisabled: document.querySelector("#patch-stop").disabled,
          same: window.tinyformerStudy.patch,
        }));
        assert.equal(ended.status, "stopped: the run was ended before it finished; the view shows the last result");
        assert.equal(ended.stopDisabled, true);
        assert.deepEqual(ended.same, before);
        await page.selectOption("#patch-what", c.whats[0]);
        await studied(page, () => page.click("#patch-run"));
        assert.ok(await page.evaluate(() => window.tinyformerStudy.patch.what), "the engine answers after Stop");

        // ---- Lens ----
        // The Lens tab opened while a grid runs: the lens waits behind it (its status counting), then draws.
        const lens = cli(["lens", model, c.clean, ...targetArgs]);
        const runsBefore = await page.evaluate(() => Number(document.body.dataset.studyRuns || 0));
        const waiting = await page.evaluate(() => {
          document.querySelector("#patch-run").click();
          document.querySelector('#tabs button[data-view="lens"]').click();
          return document.querySelector("#lens-status").textContent;
        });
        assert.match(waiting, /^running\u2026/, "the Lens tab opened during a grid says nothing");
        await page.waitForFunction((n) => Number(document.body.dataset.studyRuns || 0) >= n + 2, runsBefore, { timeout: 600000 });
        await page.waitForSelector("#view-lens:not([hidden])");
        const table = await page.evaluate(() => ({
          status: document.querySelector("#lens-status").textContent,
          cells: Array.from(document.querySelectorAll("#lens-grid td[data-layer]")).map((td) => ({
            layer: td.dataset.layer, position: Number(td.dataset.position), token: td.dataset.token, p: Number(td.dataset.p),
            text: td.textContent,
          })),
          norms: Array.from(document.querySelectorAll("#lens-norms td[data-layer]")).map((td) => ({
            layer: td.dataset.layer, position: Number(td.dataset.position), norm: Number(td.dataset.norm),
          })),
          report: window.tinyformerStudy.lens,
        }));
        assert.ok(table.report, `no lens result (${table.status})`);
        assert.deepEqual(table.report.positions, lens.positions);
        assert.deepEqual(table.report.answers, lens.answers);
        assert.equal(table.report.target, lens.target);
        const layers = lens.layers.map((l) => l.layer);
        assert.equal(table.cells.length, layers.length * lens.positions.length);
        assert.equal(table.norms.length, layers.length * lens.positions.length);
        for (const cell of table.cells) {
          const want = lens.layers[layers.indexOf(cell.layer)].positions[cell.position];
          const d = Math.abs(cell.p - want.top[0].p);
          w.p = Math.max(w.p, d);
          assert.ok(d <= LENS_P, `${cell.layer} @${cell.position}: p ${cell.p} vs CLI ${want.top[0].p}`);
          // The same top token, unless the CLI's first two are a near tie: then the page's is the CLI's second.
          if (cell.token !== want.top[0].token) {
            assert.ok(want.top.length > 1 && want.top[0].p - want.top[1].p <= LENS_P, `${cell.layer} @${cell.position}: ${cell.token} vs ${want.top[0].token}`);
            assert.equal(cell.token, want.top[1].token, `${cell.layer} @${cell.position}: a near tie swapped with a third token`);
          }
          // The answer's rank and probability there (a rank may move by one only in a near tie with the next token).
          const mine = table.report.layers[layers.indexOf(cell.layer)].positions[cell.position];
          const dAnswer = Math.abs(mine.answer_p - want.answer_p);
          w.p = Math.max(w.p, dAnswer);
          assert.ok(dAnswer <= LENS_P, `${cell.layer} @${cell.position}: answer_p ${mine.answer_p} vs CLI ${want.answer_p}`);
          if (mine.answer_rank !== want.answer_rank) {
            // The CLI's token at the page's rank is the one it swapped with (beyond the top K: not listed).
            const neighbour = want.top[mine.answer_rank - 1];
            assert.ok(Math.abs(mine.answer_rank - want.answer_rank) === 1 && (!neighbour || Math.abs(neighbour.p - want.answer_p) <= LENS_P),
              `${cell.layer} @${cell.position}: answer_rank ${mine.answer_rank} vs CLI ${want.answer_rank}`);
          }
          assert.ok(cell.text.endsWith(" " + fixed(cell.p, 2)), `${cell.layer} @${cell.position} shows ${JSON.stringify(cell.text)}`);
        }
        for (const cell of table.norms) {
          const want = lens.layers[layers.indexOf(cell.layer)].norms[cell.position];
          const d = Math.abs(cell.norm - want) / Math.max(1, Math.abs(want));
          w.norm = Math.max(w.norm, d);
          assert.ok(d <= LENS_NORM, `norm ${cell.layer} @${cell.position}: ${cell.norm} vs CLI ${want}`);
        }
        // The direct logit attribution (pre-LN models): each part within LOGITS_TOLERANCE of the CLI's, one row each.
        if (c.attribute) {
          const expected = cli(["lens", model, c.clean, "--attribute", c.attribute, ...targetArgs]).attribution;
          await page.fill("#lens-attribute", c.attribute);
          await studied(page, () => page.click("#lens-run"));
          const shown = await page.evaluate(() => ({
            attribution: window.tinyformerStudy.lens.attribution,
            rows: Array.from(document.querySelectorAll("#lens-attribution tr")).map((tr) => tr.textContent),
          }));
          assert.ok(shown.attribution, "no attribution");
          assert.deepEqual(shown.attribution.parts.map((part) => part.part), expected.parts.map((part) => part.part));
          for (const [i, part] of expected.parts.entries()) {
            const d = Math.abs(shown.attribution.parts[i].logit - part.logit);
            w.attribution = Math.max(w.attribution ?? 0, d);
            assert.ok(d <= LOGITS_TOLERANCE * Math.max(1, Math.abs(part.logit)), `${part.part}: ${shown.attribution.parts[i].logit} vs CLI ${part.logit}`);
          }
          assert.ok(Math.abs(shown.attribution.logit - expected.logit) <= LOGITS_TOLERANCE * Math.max(1, Math.abs(expected.logit)));
          assert.ok(Math.abs(shown.attribution.sum - expected.sum) <= LOGITS_TOLERANCE * Math.max(1, Math.abs(expected.sum)),
            `the parts' sum: ${shown.attribution.sum} vs CLI ${expected.sum}`);
          assert.equal(shown.rows.length, expected.parts.length + 2);  // each part, the sum, the model's logit
          assert.equal(shown.rows[0], expected.parts[0].part + fixed(shown.attribution.parts[0].logit, 4));
          await page.fill("#lens-attribute", "");
        }

        // A click on a cell lists its top K (5) tokens.
        await page.click(`#lens-grid td[data-layer="${layers[0]}"][data-position="0"]`);
        const listed = await page.evaluate(() => document.querySelectorAll("#lens-cell table.lens-top tr").length - 1);
        assert.equal(listed, Math.min(5, lens.layers[0].positions[0].top.length));

        // A hostile input in the lens: refused in words, or (a byte-level BPE model, gpt2-tiny, reads
        // anything) run and shown as text, the caption holding the whole string; never executed.
        await page.evaluate((text) => { document.querySelector("#live-source").value = text; document.querySelector("#live-target").value = ""; }, HOSTILE);
        await studied(page, () => page.click("#lens-run"));
        const hostile = await page.evaluate(() => ({
          pwned: window.pwned,
          elements: document.querySelectorAll("main img, main svg image, main iframe, main script").length,
          caption: document.querySelector("#lens-grid caption")?.textContent ?? "",
          text: window.tinyformerStudy.lens.text,
          status: document.querySelector("#lens-status").textContent,
        }));
        assert.equal(hostile.pwned, undefined);
        assert.equal(hostile.elements, 0);
        if (/^error: /.test(hostile.status)) assert.ok(!hostile.caption.includes("<img"), "a refused input keeps the last table");
        else assert.ok(hostile.caption.includes(hostile.text), `the caption ${hostile.caption} shows ${hostile.text}`);
        w.hostileShown ||= hostile.text === HOSTILE;

        assert.deepEqual(blocked, [], "no request leaves the page");
        assert.deepEqual(errors, [], "no console error");
      } finally {
        w.ms = Date.now() - started;
        await context.close();
      }
    });
  }
});
