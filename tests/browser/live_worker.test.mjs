// Browser tests of the engine off the page's main thread (tools/explore/engine.js
// runs it in a Web Worker made from the page's own text; make test-browser).
// The model never stops: tests/browser/endless_model.mjs makes it here from
// the ALiBi toy model without its eos_id, and `tinyformer explore` writes its
// live page, so a request for 2^20 new tokens runs until it is stopped.
// While such a request runs, the page must answer: a script evaluates, the
// tabs switch views, the status counts the seconds (a timer of the page's
// fires), and the request is still running after all of that (asserted, so
// the checks were made during it, whatever the machine's speed). Stop (the
// button, Escape, window.tinyformer.stop()) ends it, the page says so in
// words, and the next request gives the native engine's numbers, and its tokens
// at every step the logits decide (margin.mjs).
// Nothing is timed: each wait is for the page to show something.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { launch, openPage, showView } from "./browser.mjs";
import { endlessPage } from "./endless_model.mjs";
import { LOGITS_TOLERANCE, TOLERANCE, compareResult, describeChecks, nativeForward, nativeRun } from "./native.mjs";
import { disagreement, greedyDecided, predictingRows } from "./margin.mjs";

const NEVER_ENDS = 1 << 20;  // the most new tokens a request may ask for (docs/FORMAT.md section 4)
const { model, page: file } = endlessPage("build/browser");

// A greedy RESULT's logits and weights against `tinyformer forward --attention`
// on its forward_inputs; then its tokens against NATIVE (`run`'s) over the
// steps its logits decide (margin.mjs), at least ENOUGH of them (every new
// token: measured, each step of the endless model is decided).
function sameAsNative(result, what, native, enough) {
  const comparison = compareResult(result, nativeForward(model, result.forward_inputs), 0, result.forward_inputs);
  const [logits, ...weights] = comparison.checks;
  assert.ok(logits.worst <= LOGITS_TOLERANCE, `${what}: logits: ${describeChecks(comparison)}`);
  for (const c of weights) assert.ok(c.worst <= TOLERANCE, `${what}: ${c.name}: ${describeChecks(comparison)}`);
  const decided = greedyDecided(predictingRows(result));
  const problem = disagreement(decided, result.target_ids, native);
  assert.equal(problem, "", `${what}: ${problem}`);
  console.log(`# ${what}: ${decided.decided} of ${decided.steps} steps decided`);
  assert.ok(decided.decided >= enough, `${what}: only ${decided.decided} of ${decided.steps} steps decided, ${enough} asked`);
}

// Waits for body[data-live] to be one of STATES; returns it.
async function until(page, ...states) {
  await page.waitForFunction((states) => states.includes(document.body.dataset.live), states, { timeout: 60000 });
  return page.getAttribute("body", "data-live");
}

// Starts a generation that never ends through the page's controls and waits for it to run.
async function startEndless(page) {
  await page.selectOption("#live-decode-mode", "greedy");
  await page.fill("#live-max-new", String(NEVER_ENDS));
  await page.fill("#live-source", "abc");
  await page.press("#live-source", "Enter");
  await until(page, "running");
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

describe(`a model that never stops (${file})`, () => {
  let page, blocked, errors;
  before(async () => {
    ({ page, blocked, errors } = await openPage(browser, file));
    assert.equal(await until(page, "ready", "recorded"), "ready", await page.textContent("#live-status"));
  });
  after(async () => { await page?.context().close(); });

  test("the page answers while a generation runs; Stop ends it in words; the next request equals native", async () => {
    assert.equal(await page.isDisabled("#live-stop"), true, "Stop is off while nothing runs");
    // A result for the views to keep when the generation is stopped: "abc", 4 new tokens, run to the end
    // (without it the kept result was whichever keystroke's run had finished first: none, on a busy machine).
    await page.fill("#live-max-new", "4");
    await page.fill("#live-source", "abc");
    await page.press("#live-source", "Enter");
    assert.equal(await until(page, "ready", "error"), "ready", await page.textContent("#live-error"));
    await page.waitForFunction(() => window.tinyformer.last && window.tinyformer.last.target_ids.length === 4);
    await startEndless(page);
    assert.equal(await page.isDisabled("#live-stop"), false, "Stop is on while a request runs");
    assert.equal(await page.evaluate(() => window.tinyformer.running), true);
    // The page answers: a script runs, the tabs switch views, a timer of the page's fires.
    assert.equal(await page.evaluate(() => document.body.dataset.live), "running");
    await showView(page, "matrix");
    assert.equal(await page.getAttribute("body", "data-view"), "matrix");
    await showView(page, "decoding");
    assert.equal(await page.getAttribute("body", "data-view"), "decoding");
    await page.waitForFunction(() => /^running\u2026 \d+ s \(Stop or Escape ends it\)$/.test(document.getElementById("live-status").textContent),
      null, { timeout: 60000 });
    // ... all while the generation ran (it cannot have ended: the model never stops).
    assert.equal(await page.getAttribute("body", "data-live"), "running", "the generation was still running");

    await page.click("#live-stop");
    assert.equal(await until(page, "stopped", "error"), "stopped", await page.textContent("#live-error"));
    assert.match(await page.textContent("#live-status"),
      /^stopped: the run was ended after \d+\.\d s and the engine started again; the views show the last result$/);
    assert.equal(await page.textContent("#live-error"), "");
    assert.equal(await page.isDisabled("#live-stop"), true);
    assert.equal(await page.evaluate(() => window.tinyformer.running), false);
    assert.equal(await page.evaluate(() => window.tinyformer.last.page.input.text), "abc", "the views kept the last result");

    // The fresh engine: 12 tokens (the model never stops before the limit), native's tokens and numbers.
    await page.fill("#live-max-new", "12");
    await page.press("#live-source", "Enter");
    assert.equal(await until(page, "ready", "error"), "ready", await page.textContent("#live-error"));
    const result = await page.evaluate(() => window.tinyformer.last);
    assert.equal(result.target_ids.length, 12);
    sameAsNative(result, "after Stop", nativeRun(model, "abc", { mode: "greedy", max_new_tokens: 12 }), 12);
  });

  test("Escape stops a running generation too", async () => {
    await startEndless(page);
    await page.click("h1");
    await page.keyboard.press("Escape");
    assert.equal(await until(page, "stopped", "error"), "stopped", await page.textContent("#live-error"));
    await page.fill("#live-max-new", "");
    await page.press("#live-source", "Enter");
    assert.equal(await until(page, "ready", "error"), "ready", await page.textContent("#live-error"));
  });

  test("window.tinyformer.stop() ends the running request and those waiting (AbortError), then the engine answers as native", async () => {
    const outcome = await page.evaluate(async (never) => {
      const settle = (promise) => promise.then((r) => ({ ok: true, tokens: r.target_ids.length }), (e) => ({ ok: false, name: e.name, message: e.message }));
      const running = settle(window.tinyformer.run({ text: "abc", decode: { max_new_tokens: never } }));
      const waiting = settle(window.tinyformer.run({ text: "ab", decode: { max_new_tokens: 3 } }));
      while (!window.tinyformer.running) await new Promise((resolve) => setTimeout(resolve, 10));
      // The page's own timer fires during the run: the main thread is free.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const stillRunning = window.tinyformer.running;
      const info = await window.tinyformer.stop();
      return { running: await running, waiting: await waiting, info, stillRunning, after: window.tinyformer.running };
    }, NEVER_ENDS);
    assert.equal(outcome.stillRunning, true);
    assert.deepEqual(outcome.running, { ok: false, name: "AbortError", message: "stopped: the run was ended before it finished" });
    assert.deepEqual(outcome.waiting, { ok: false, name: "AbortError", message: "stopped before it ran" });
    assert.equal(outcome.info.name, "endless");
    assert.equal(outcome.info.arch, "decoder_only");
    assert.equal(outcome.after, false);
    const result = await page.evaluate(() => window.tinyformer.run({ text: "abc", decode: { max_new_tokens: 5 } }));
    sameAsNative(result, "after stop()", nativeRun(model, "abc", { mode: "greedy", max_new_tokens: 5 }), 5);
    // With nothing running, stop() ends nothing and the engine stays.
    assert.deepEqual(await page.evaluate(() => window.tinyformer.stop()), outcome.info);
    const again = await page.evaluate(() => window.tinyformer.run({ text: "abc", decode: { max_new_tokens: 5 } }));
    // The same engine on the same input: the same floats, the same tokens.
    assert.deepEqual(again.target_ids, result.target_ids);
  });

  test("no request left the page (the worker is made from its own text); no console error", async () => {
    assert.deepEqual(blocked, []);
    assert.deepEqual(errors, []);
  });
});
