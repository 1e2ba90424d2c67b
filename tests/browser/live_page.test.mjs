// Browser tests of the explore page's live controls (tools/explore/live.js),
// make test-browser: each page in LIVE_PAGES (space-separated; default
// build/browser/live-reverse.html, written by `tinyformer explore` with the
// engine in it) is opened in Debian's chromium with the network shut, and
// each control is used as a person would: typing + Enter, a matrix cell click,
// a head knock-out, the decoding settings, a second input, a comparison, bad
// input, hostile strings. The numbers themselves are the engine's (the
// engine's own tests compare them with the native CLI); these tests check that
// the page asks for them and shows them. A recorded sample page (no engine)
// must say so in one line and keep working.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launch, openPage, showView } from "./browser.mjs";
import { assemblePage, encoderDecoderSample } from "./make_sample_page.mjs";

const SHOTS = "build/browser";
mkdirSync(SHOTS, { recursive: true });
const pages = (process.env.LIVE_PAGES || join(SHOTS, "live-reverse.html")).split(/\s+/).filter(Boolean);

let browser;
before(async () => { browser = await launch(); });
after(async () => { if (browser) await browser.close(); });

// Waits for the update that `action` starts to end (body[data-live-runs] counts them);
// returns body[data-live]: "ready" or "error".
async function ran(page, action) {
  const before = Number(await page.getAttribute("body", "data-live-runs")) || 0;
  await action();
  await page.waitForFunction((n) => Number(document.body.dataset.liveRuns) > n &&
    (document.body.dataset.live === "ready" || document.body.dataset.live === "error"), before, { timeout: 30000 });
  return page.getAttribute("body", "data-live");
}
async function type(page, selector, text) {
  return ran(page, async () => { await page.fill(selector, text); await page.press(selector, "Enter"); });
}
const last = (page) => page.evaluate(() => window.tinyformer.last);

for (const file of pages) {
  describe(file, () => {
    let page, blocked, errors;
    before(async () => {
      ({ page, blocked, errors } = await openPage(browser, file));
      await page.waitForFunction(() => ["ready", "recorded"].includes(document.body.dataset.live), null, { timeout: 30000 });
      assert.equal(await page.getAttribute("body", "data-live"), "ready", await page.textContent("#live-status"));
    });
    after(async () => { if (page) await page.context().close(); });

    test("the live page opens on the recorded data, ready, offline, without console errors", async () => {
      assert.deepEqual(blocked, []);
      assert.deepEqual(errors, []);
      assert.match(await page.textContent("#live-status"), /^ready/);
      assert.equal(await page.textContent("#live-error"), "");
      assert.equal(await page.isDisabled("#live-source"), false);
      assert.ok((await page.inputValue("#live-source")).length > 0, "the recorded input fills the source box");
    });

    test("typing a new input and pressing Enter reruns every view on it", async () => {
      assert.equal(await type(page, "#live-source", "abc"), "ready");
      const result = await last(page);
      assert.equal(result.page.input.text, "abc");
      assert.equal(await page.textContent("#input-text"), JSON.stringify("abc"));
      await showView(page, "model");
      const thumbs = await page.locator("#view-model .thumb").count();
      assert.equal(thumbs, result.page.attentions.reduce((s, a) => s + a.weights.length, 0));
      assert.match(await page.textContent("#live-status"), /recomputed in \d+ ms/);
      // The Run button does the same.
      assert.equal(await ran(page, () => page.click("#live-run")), "ready");
    });

    test("Enter on the page (not in a box) runs; the arrows still pick heads", async () => {
      await page.click("h1");
      assert.equal(await ran(page, () => page.keyboard.press("Enter")), "ready");
      await showView(page, "matrix");
      await page.click("h1");
      const head = Number(await page.getAttribute("body", "data-head"));
      await page.keyboard.press(head > 0 ? "ArrowLeft" : "ArrowRight");
      assert.equal(Number(await page.getAttribute("body", "data-head")), head > 0 ? head - 1 : head + 1);
    });

    test("clicking a matrix cell blocks it: weight exactly 0, the row renormalises, later layers change; again: back", async () => {
      const result = await last(page);
      const names = result.page.attentions.map((a) => a.name);
      // The first call whose row 1 has two allowed keys, so one can be blocked.
      const a = result.page.attentions.find((x) => x.mask.length > 1 && x.mask[1].filter(Boolean).length >= 2);
      assert.ok(a, "a call with a row of two allowed keys");
      const k = a.mask[1].findIndex(Boolean);
      await showView(page, "matrix");
      await page.selectOption("#pick-attention", String(names.indexOf(a.name)));
      const cell = `#matrix td.cell[data-q="1"][data-k="${k}"]`;
      const weight = Number(await page.getAttribute(cell, "data-weight"));
      assert.equal(await ran(page, () => page.click(cell)), "ready");
      assert.equal(await page.getAttribute("body", "data-view"), "matrix", "a cell click stays in the matrix view");
      assert.equal(await page.getAttribute(cell, "data-mask"), "0");
      assert.equal(Number(await page.getAttribute(cell, "data-weight")), 0);
      assert.equal(await page.getAttribute(cell, "data-override"), "blocked");
      assert.match(await page.getAttribute(cell, "title"), /blocked by you/);
      assert.match(await page.getAttribute(cell, "class"), /override/);
      const row = await page.$$eval('#matrix td.cell[data-q="1"]', (xs) => xs.map((x) => Number(x.dataset.weight)));
      assert.ok(Math.abs(row.reduce((s, x) => s + x, 0) - 1) < 1e-5, `row sums to ${row.reduce((s, x) => s + x, 0)}`);
      const blocked = await last(page);
      const later = names.slice(names.indexOf(a.name) + 1);
      if (later.length) {
        const changed = later.some((n) => JSON.stringify(blocked.weights[n]) !== JSON.stringify(result.weights[n]));
        assert.ok(changed, "some later call's weights change");
      }
      assert.match(await page.textContent("#live-interventions"), /1 cell in 1 call/);
      assert.equal(await ran(page, () => page.click(cell)), "ready");
      assert.equal(await page.getAttribute(cell, "data-override"), null);
      assert.ok(Math.abs(Number(await page.getAttribute(cell, "data-weight")) - weight) < 1e-6);
      // Reset clears an override.
      assert.equal(await ran(page, () => page.click(cell)), "ready");
      assert.equal(await ran(page, () => page.click("#live-reset")), "ready");
      assert.equal(await page.textContent("#live-interventions"), "");
      assert.equal(await page.locator("#matrix td.cell.override").count(), 0);
    });

    test("knocking out a head shows each output token's d log p beside the head's weights, and the output without it", async () => {
      await showView(page, "matrix");
      const result = await last(page);
      const decoderCall = result.page.attentions.find((a) => a.queries === (result.page.sequences.target ? "target" : "source") && a.stack !== "encoder");
      await page.selectOption("#pick-attention", String(result.page.attentions.indexOf(decoderCall)));
      assert.equal(await ran(page, () => page.click('#head-chips [data-ablate="0"]')), "ready");
      assert.equal(await page.getAttribute('#head-chips [data-ablate="0"]', "aria-pressed"), "true");
      await showView(page, "live");
      const rows = await page.$$eval("#live-effects-table tr[data-position]", (xs) => xs.map((x) => Number(x.querySelector("td.dlogp").dataset.dlogp)));
      assert.equal(rows.length, result.token_log_p.length, "one row per target token and <eos>");
      assert.ok(rows.every(Number.isFinite));
      const weights = await page.$$eval("#live-effects-table tr[data-position] td[data-weight]", (xs) => xs.map((x) => Number(x.dataset.weight)));
      assert.equal(weights.length, rows.length, "the head's largest weight in each output row");
      assert.ok(weights.every((w) => w >= 0 && w <= 1));
      assert.ok((await page.textContent("#live-ablated-output")).length >= 2);
      // The step view of the knocked-out head says so, and does not call the engine's zero z_h a difference.
      await showView(page, "model");
      await page.click(`#view-model .thumb[data-attention="${decoderCall.name}"][data-head="0"]`);
      await page.waitForSelector(`#matrix[data-attention="${decoderCall.name}"][data-head="0"]`);
      await showView(page, "step");
      assert.match(await page.textContent("#step-z th"), /knocked out, set to 0/);
      assert.equal(await page.locator("#step-z .check.bad").count(), 0);
      assert.ok((await page.$$eval("#step-z td[data-z]", (xs) => xs.map((x) => Number(x.dataset.z)))).every((z) => z === 0));
      const request = await page.evaluate(() => window.tinyformer.last.page.input);
      assert.ok(request);
      assert.equal(await ran(page, () => page.click("#live-reset")), "ready");
      assert.match(await page.textContent("#live-effects"), /No head is knocked out/);
    });

    test("decoding: sampling with a seed, and beam search, reach the engine and the decoding view", async () => {
      await ran(page, () => page.selectOption("#live-decode-mode", "sample"));
      await page.fill("#live-temperature", "0.7");
      await page.fill("#live-top-k", "3");
      await page.fill("#live-top-p", "0.9");
      assert.equal(await type(page, "#live-seed", "7"), "ready");
      let d = (await last(page)).page.decoding;
      assert.equal(d.mode, "sample");
      assert.deepEqual([d.sampling.temperature, d.sampling.top_k, d.sampling.top_p, d.sampling.seed].map(Number), [0.7, 3, 0.9, 7]);
      await ran(page, () => page.selectOption("#live-decode-mode", "beam"));
      assert.equal(await page.isDisabled("#live-temperature"), true);
      assert.equal(await type(page, "#live-beam", "2"), "ready");
      d = (await last(page)).page.decoding;
      assert.equal(d.mode, "beam");
      assert.equal(d.beam, 2);
      await showView(page, "decoding");
      assert.ok(await page.locator("#decoding-steps").count());
      await ran(page, () => page.selectOption("#live-decode-mode", "greedy"));
      assert.equal((await last(page)).page.decoding.mode, "greedy");
    });

    test("a second input runs in the same batch: its padding is shown, right or left", async () => {
      assert.equal(await type(page, "#live-second", "ab"), "ready");
      const result = await last(page);
      assert.ok(result.second, "the result has the second row");
      await showView(page, "live");
      assert.ok(await page.locator("#live-batch-inputs").count());
      const right = await page.$$eval("#live-batch-inputs tr[data-row='1']", (xs) => xs.filter((x) => /padding_mask/.test(x.dataset.input))
        .map((x) => Array.from(x.querySelectorAll("td")).map((c) => c.textContent)));
      assert.ok(right.length && right[0].at(-1) === "1" && right[0][0] === "0", `right padding: ${JSON.stringify(right)}`);
      assert.equal(await ran(page, () => page.selectOption("#live-pad-side", "left")), "ready");
      const left = await page.$$eval("#live-batch-inputs tr[data-row='1']", (xs) => xs.filter((x) => /padding_mask/.test(x.dataset.input))
        .map((x) => Array.from(x.querySelectorAll("td")).map((c) => c.textContent)));
      assert.ok(left.length && left[0][0] === "1", `left padding: ${JSON.stringify(left)}`);
      assert.ok(await page.locator("#live-batch-row1 td.padding").count() > 0, "row 1's padding hatched in its matrix");
      await ran(page, () => page.selectOption("#live-pad-side", "right"));
      assert.equal(await type(page, "#live-second", ""), "ready");
      assert.equal((await last(page)).second, undefined);
    });

    test("comparing two inputs: the same shape shows the difference per head, another shape says why", async () => {
      await type(page, "#live-source", "abc");
      assert.equal(await type(page, "#live-compare", "cab"), "ready");
      await showView(page, "live");
      assert.ok(await page.locator("#live-compare-diff").count(), await page.textContent("#live-compare-view"));
      const heads = await page.locator("#live-compare-heads tr[data-head]").count();
      assert.equal(heads, (await last(page)).page.attentions[0].weights.length);
      assert.equal(await type(page, "#live-compare", "abcdef"), "ready");
      assert.match(await page.textContent("#live-compare-why"), /No cell-by-cell difference/);
      assert.equal(await type(page, "#live-compare", ""), "ready");
    });

    test("bad input is shown in words in #live-error and the views keep the last result", async () => {
      const before = (await last(page)).page.input.text;
      assert.equal(await type(page, "#live-source", "ABC%"), "error");
      const words = await page.textContent("#live-error");
      assert.ok(words.length > 10 && !/undefined|\[object/.test(words), words);
      assert.equal((await last(page)).page.input.text, before);
      await ran(page, () => page.check("#live-ids"));
      assert.equal(await type(page, "#live-source", "5,x"), "error");
      assert.match(await page.textContent("#live-error"), /"x" is not a whole number/);
      await ran(page, () => page.uncheck("#live-ids"));
      assert.equal(await type(page, "#live-source", "abc"), "ready");
      assert.equal(await page.textContent("#live-error"), "");
    });

    test("hostile typed strings stay text: in the boxes, the error, the summary and the title", async () => {
      const hostile = "<img src=x onerror=\"window.__pwned=1\"></script><b id=evil>\u202eab";
      await type(page, "#live-source", hostile);
      await type(page, "#live-target", hostile);
      await type(page, "#live-compare", hostile);
      await type(page, "#live-second", hostile);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
      assert.equal(await page.locator("img, #evil").count(), 0);
      await page.fill("#live-target", "");
      await page.fill("#live-compare", "");
      await page.fill("#live-second", "");
      assert.equal(await type(page, "#live-source", "abc"), "ready");
      assert.deepEqual(errors, [], "console errors");
      assert.deepEqual(blocked, [], "requests");
    });
  });
}

describe("a recorded page (no engine)", () => {
  test("says so in one line, its live controls are off, and the views work as before", async () => {
    const file = join(SHOTS, "live-recorded-sample.html");
    writeFileSync(file, assemblePage(encoderDecoderSample()));
    const { page, blocked, errors } = await openPage(browser, file);
    try {
      await page.waitForFunction(() => document.body.dataset.live === "recorded");
      assert.match(await page.textContent("#live-status"), /^[^\n]*recorded[^\n]*; the live controls are off$/);
      assert.equal(await page.isDisabled("#live-source"), true);
      assert.equal(await page.isVisible("#live-source"), false);
      assert.equal(await page.locator("#head-chips [data-ablate]").count(), 0);
      assert.equal(await page.isVisible('#tabs button[data-view="live"]'), false);
      await page.keyboard.press("Enter");
      await showView(page, "matrix");
      await page.click('#matrix td.cell[data-q="1"][data-k="1"]');
      assert.equal(await page.getAttribute("body", "data-view"), "step", "a cell click steps through its query, as before");
      assert.deepEqual(errors, []);
      assert.deepEqual(blocked, []);
    } finally {
      await page.context().close();
    }
  });
});
