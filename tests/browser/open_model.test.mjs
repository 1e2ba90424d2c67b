// Browser tests of the page without weights (make test-browser): the page
// `tinyformer explore --html F` writes without a model is opened in Debian's
// chromium with the network shut, and a committed checkpoint is opened in it
// as a reader would: chosen with "Open model" (playwright's setInputFiles on
// the page's file input) or dropped on the page (a drop event carrying the
// file). Then:
//   - typed inputs give the native engine's numbers: logits and every call's
//     weights against `tinyformer forward --attention` (native.mjs's
//     tolerances), greedy tokens against `tinyformer run` where the logits
//     decide them (margin.mjs), as live_engine.test.mjs checks embedded pages;
//   - a bad file (truncated, not a safetensors file, a PNG, one with a hostile
//     name) is refused with the CLI's own message for that file, as text
//     (`tinyformer run NAME` in the file's folder prints it after
//     "tinyformer: error: "), and the model before keeps running;
//   - no request leaves the page, no console error, nothing typed or named runs;
//   - real sizes: a stories15M-shaped (llama2.c form, 61 MB) and a
//     GPT-2-124M-shaped (498 MB) checkpoint with random weights, made here by
//     random_model.mjs (never committed), open in a fresh page without weights,
//     the engine's memory then below 1.5x the file (the weights held once),
//     and give forward's numbers on a short input (two decoded tokens).
// The load time and the engine's memory after each open are printed (measured,
// not asserted).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, basename } from "node:path";
import { launch, openPage } from "./browser.mjs";
import { LOGITS_TOLERANCE, TINYFORMER, TOLERANCE, compareResult, describeChecks, nativeForward, nativeRun, scratchFile } from "./native.mjs";
import { DecidedCount, disagreement, greedyDecided, predictingRows } from "./margin.mjs";
import { GPT2_124M, STORIES15M, gpt2Shaped, llamaShaped, writeRandomModel } from "./random_model.mjs";

const MODELS = [
  { name: "reverse", file: "data/models/reverse.safetensors", inputs: ["hello", "attention"], how: "input" },
  { name: "nanogpt-char", file: "data/families/nanogpt-char.safetensors", inputs: ["forty one, forty two, "], how: "drop" },
  { name: "reverse-causal", file: "data/models/reverse-causal.safetensors", inputs: ["transformer"], how: "drop" },
];

// The CLI's message for a model file, loaded as `run` loads it in the file's own folder.
function cliError(file) {
  const out = spawnSync(TINYFORMER.startsWith("/") ? TINYFORMER : `${process.cwd()}/${TINYFORMER}`, ["run", basename(file), "hello"],
    { cwd: dirname(file), encoding: "utf8" });
  assert.equal(out.status, 1, `tinyformer run ${file}: exit ${out.status}, stderr ${out.stderr}`);
  const prefix = "tinyformer: error: ";
  assert.ok(out.stderr.startsWith(prefix), out.stderr);
  return out.stderr.slice(prefix.length).replace(/\n$/, "");
}

// Opens FILE in the page (by the file input, or a drop event on the page) and
// waits for the open to end. Returns {state, error, status, ms, info}.
async function openModel(page, file, how) {
  const before = await page.evaluate(() => Number(document.body.dataset.opens) || 0);
  const started = Date.now();
  if (how === "input") {
    await page.setInputFiles("#open-file", file);
  } else {
    // A drop as the browser makes one: a DataTransfer holding the File (its bytes built in the page from the test's copy).
    const transfer = await page.evaluateHandle(({ base64, name }) => {
      const binary = atob(base64);
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      const data = new DataTransfer();
      data.items.add(new File([bytes], name));
      return data;
    }, { base64: readFileSync(file).toString("base64"), name: basename(file) });
    await page.dispatchEvent("body", "dragover", { dataTransfer: transfer });
    await page.dispatchEvent("body", "drop", { dataTransfer: transfer });
  }
  await page.waitForFunction((n) => Number(document.body.dataset.opens) > n, before, { timeout: 120000 });
  const ms = Date.now() - started;
  return page.evaluate((ms) => ({
    state: document.body.dataset.open,
    error: document.getElementById("live-error").textContent,
    status: document.getElementById("open-status").textContent,
    info: window.tinyformer.info,
    ms,
  }), ms);
}

async function typeAndRun(page, text) {
  const before = await page.evaluate(() => Number(document.body.dataset.liveRuns) || 0);
  await page.fill("#live-source", text);
  await page.press("#live-source", "Enter");
  await page.waitForFunction((n) => Number(document.body.dataset.liveRuns) > n &&
    ["ready", "error"].includes(document.body.dataset.live), before, { timeout: 60000 });
  return page.evaluate(() => ({ state: document.body.dataset.live, last: window.tinyformer.last,
    error: document.getElementById("live-error").textContent }));
}

const measured = [];
let browser, pageFile;
before(async () => {
  browser = await launch();
  pageFile = scratchFile("no-model.html");
  const made = spawnSync(TINYFORMER, ["explore", "--html", pageFile], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
});
after(async () => {
  await browser?.close();
  for (const line of measured) console.log(`# ${line}`);
});

describe("the page without weights", () => {
  let opened, requests = [];
  before(async () => {
    opened = await openPage(browser, pageFile);
    opened.page.on("request", (request) => { if (request.url() !== opened.url) requests.push(request.url()); });
  });
  after(async () => { await opened?.context.close(); });

  test("opens at 'no model is open', its run controls off, Open model on", async () => {
    const { page } = opened;
    await page.waitForFunction(() => document.body.dataset.live === "no-model", null, { timeout: 10000 });
    assert.match(await page.textContent("#live-status"), /^no model is open: Open model, or drop a \.safetensors file on the page$/);
    assert.equal(await page.isVisible("#open-model"), true);
    assert.equal(await page.isEnabled("#open-model"), true);
    assert.equal(await page.isDisabled("#live-source"), true);
    assert.match(await page.textContent("#open-note"), /2 GiB/);
    // A run before any model is refused in words, never left waiting.
    const early = await page.evaluate(() => window.tinyformer.run({ text: "a" }).then(() => "ran", (e) => e.message));
    assert.match(early, /^no model is open/);
  });

  for (const m of MODELS) {
    test(`${m.name} opened (${m.how === "input" ? "Open model" : "dropped"}) gives the native engine's numbers`, async () => {
      const { page } = opened;
      const result = await openModel(page, m.file, m.how);
      assert.equal(result.state, "opened", `${m.file}: ${result.error}`);
      assert.equal(result.info.name, m.name);
      measured.push(`${m.name}: ${readFileSync(m.file).length} bytes opened in ${result.ms} ms (wall, load ${loadAverage()}); ` +
        `the engine's memory then ${result.info.memory_bytes} bytes`);
      assert.equal(await page.isEnabled("#live-source"), true);
      const count = new DecidedCount();
      for (const text of m.inputs) {
        const typed = await typeAndRun(page, text);
        assert.equal(typed.state, "ready", `${m.name}, ${JSON.stringify(text)}: ${typed.error}`);
        const comparison = compareResult(typed.last, nativeForward(m.file, typed.last.forward_inputs), 0, typed.last.forward_inputs);
        const [logits, ...weights] = comparison.checks;
        assert.ok(logits.worst <= LOGITS_TOLERANCE, `${m.name}: logits: ${describeChecks(comparison)}`);
        for (const c of weights) assert.ok(c.worst <= TOLERANCE, `${m.name}: ${c.name}: ${describeChecks(comparison)}`);
        const decided = count.add(greedyDecided(predictingRows(typed.last)));
        assert.equal(disagreement(decided, typed.last.target_ids, nativeRun(m.file, text)), "");
        assert.equal(await page.textContent("#model-summary bdi"), m.name);
      }
      assert.ok(count.steps > 0, `${m.name}: no token compared`);
    });
  }

  test("bad files are refused with the CLI's words, as text, and the model before keeps running", async () => {
    const { page } = opened;
    const good = readFileSync("data/models/reverse.safetensors");
    const png = readFileSync("docs/reverse/decoder.0.cross_attn.heads.png", { encoding: null });
    const bad = [
      ["truncated.safetensors", good.subarray(0, 1000)],
      ["truncated-data.safetensors", good.subarray(0, good.length - 100)],
      ["notes.safetensors", Buffer.from("these are not the weights you are looking for\n")],
      ["picture.png", png],
      ["<img src=x onerror=window.pwned=1>.safetensors", good.subarray(0, 20)],
      ["\u202Eevil\u001b[31m.safetensors", Buffer.from("x")],
    ];
    for (const [name, bytes] of bad) {
      const file = scratchFile(name);
      writeFileSync(file, bytes);
      const expected = cliError(file);
      const result = await openModel(page, file, "input");
      assert.equal(result.state, "refused", name);
      assert.equal(result.error, expected, `${JSON.stringify(name)}: the page's words differ from the CLI's`);
      assert.equal(result.status, "not opened: the model before is still the one running");
      assert.equal(result.info.name, "reverse-causal");  // the last one opened above
    }
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.equal(await page.locator("#live-error img, #open-status img").count(), 0);
    const still = await typeAndRun(page, "abc");
    assert.equal(still.state, "ready", still.error);
    const decided = new DecidedCount().add(greedyDecided(predictingRows(still.last)));
    assert.equal(disagreement(decided, still.last.target_ids, nativeRun("data/models/reverse-causal.safetensors", "abc")), "");
  });

  test("no request left the page and nothing failed in it", async () => {
    assert.deepEqual(opened.blocked, []);
    assert.deepEqual(requests, []);
    assert.deepEqual(opened.errors, []);
  });
});

describe("real-size checkpoints with random weights, opened in the page", () => {
  for (const [name, make] of [["stories15M-shaped", () => llamaShaped(STORIES15M)], ["gpt2-124M-shaped", () => gpt2Shaped(GPT2_124M)]]) {
    test(name, async () => {
      const file = scratchFile(`${name}.safetensors`);
      const bytes = writeRandomModel(file, make());
      const opened = await openPage(browser, pageFile);
      try {
        const { page } = opened;
        await page.waitForFunction(() => document.body.dataset.live === "no-model", null, { timeout: 10000 });
        const result = await openModel(page, file, "input");
        assert.equal(result.state, "opened", `${name}: ${result.error}`);
        measured.push(`${name}: ${bytes} bytes opened in ${result.ms} ms (wall, load ${loadAverage()}); ` +
          `the engine's memory then ${result.info.memory_bytes} bytes (${(result.info.memory_bytes / bytes).toFixed(2)}x the file)`);
        // The weights are held once (read in place in the module's memory, FileReading::Read): the file plus the
        // module's own 16 MiB and its growth steps, well below the two copies a load made before (2.08x, 2.48x).
        assert.ok(result.info.memory_bytes < 1.5 * bytes, `${name}: the engine holds ${result.info.memory_bytes} bytes after the open, ` +
          `${(result.info.memory_bytes / bytes).toFixed(2)}x the ${bytes}-byte file`);
        // Three characters of the made-up vocabulary, two tokens decoded: forward's numbers.
        const text = "\u4e00\u4e01\u4e03";
        const started = Date.now();
        const answer = await page.evaluate((text) => window.tinyformer.run({ text, decode: { mode: "greedy", max_new_tokens: 2 } })
          .then((r) => ({ ok: true, r }), (e) => ({ ok: false, error: e.message })), text);
        assert.ok(answer.ok, answer.error);
        measured.push(`${name}: one request (3 tokens, 2 decoded) ${Date.now() - started} ms (wall)`);
        const comparison = compareResult(answer.r, nativeForward(file, answer.r.forward_inputs), 0, answer.r.forward_inputs);
        const [logits, ...weights] = comparison.checks;
        assert.ok(logits.worst <= LOGITS_TOLERANCE, `${name}: logits: ${describeChecks(comparison)}`);
        for (const c of weights) assert.ok(c.worst <= TOLERANCE, `${name}: ${c.name}: ${describeChecks(comparison)}`);
        assert.equal(answer.r.target_ids.length, 2);
        assert.deepEqual(opened.blocked, []);
        assert.deepEqual(opened.errors, []);
      } finally {
        await opened.context.close();
      }
    });
  }
});

function loadAverage() {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}
