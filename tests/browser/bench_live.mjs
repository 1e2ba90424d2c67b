// The engine in the page, timed (make bench-page): a benchmark, never a test;
// targets are printed beside the numbers and nothing is asserted.
//
//   node tests/browser/bench_live.mjs [PAGE.html ...]   default: the toy models' live pages
//
// Prints what it ran on (chromium, CPU, cores, load, the engine's BLAS), then
// per page: its size, page load to interactive (navigation start to
// window.tinyformer.ready resolved; median of 5 loads), the median of N full
// recomputes with a new text each (window.tinyformer.run: encode +
// teacher-forced pass + greedy decode of up to 32 tokens), the same through the
// page (Enter in #live-source to document.body.dataset.live "ready", views
// re-rendered), and one fixed request in the page against the native engine on
// the same request (`tinyformer-bench live MODEL REQUEST.json`), with the ratio.
// Then real sizes (the recompute budgets of docs/PERFORMANCE.md): a
// stories15M-shaped and a GPT-2-124M-shaped checkpoint with random weights
// (random_model.mjs, made here in a temporary folder and deleted after)
// opened in the page without weights (`tinyformer explore --html F`): a
// keystroke to redrawn views with one decoded token (Enter in #live-source,
// max tokens 1: the views of the typed input and its next token), and each
// decoded token: the same keystroke with max tokens 65, less the one with 1,
// over 64 (what each further token adds, its share of the recorded pass
// included). Then the main thread during a long generation: on a model that never stops
// (tests/browser/endless_model.mjs, made here), window.tinyformer.run of N
// greedy tokens while a 10 ms heartbeat (setInterval) and a long-task
// observer run in the page: the run's time, the longest gap between two
// heartbeats and the long tasks' total (what the tab was frozen for), and how
// long window.tinyformer.stop() takes to end a generation and have a fresh
// engine ready.
//   node tests/browser/bench_live.mjs --long   the long generation only (BENCH_LONG_TOKENS=256,1024: the lengths;
//                                              BENCH_LONG_PAGE=FILE.html: another page of that model, e.g. an older build's)
//   node tests/browser/bench_live.mjs --real   the real sizes only
// The last lines say whether the three budgets are met: toys < 50 ms a
// recompute; stories15M-shaped < 300 ms a keystroke and < 100 ms a decoded
// token; GPT-2-124M-shaped < 1 s a decoded token.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync, mkdtempSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { launch, openPage } from "./browser.mjs";
import { endlessPage } from "./endless_model.mjs";
import { GPT2_124M, STORIES15M, gpt2Shaped, llamaShaped, writeRandomModel } from "./random_model.mjs";

const RECOMPUTES = Number(process.env.BENCH_RECOMPUTES || 30);
const LOADS = 5;
const TARGET_RECOMPUTE_MS = 50, TARGET_LOAD_MS = 1000, TARGET_PAGE_BYTES = 3 * 1024 * 1024;
const BENCH = "build/tinyformer-bench";
const MODELS = ["reverse", "sort", "reverse-prefixlm", "reverse-causal", "dates", "reverse-rotary", "reverse-alibi"];

const LONG_TOKENS = (process.env.BENCH_LONG_TOKENS || "256,1024").split(",").map(Number);
const longOnly = process.argv[2] === "--long", realOnly = process.argv[2] === "--real";
const pages = longOnly || realOnly ? [] : process.argv.slice(2);
if (!pages.length && !longOnly && !realOnly) pages.push(...MODELS.map((name) => `build/browser/live-${name}.html`));
// The budgets, each {what, target, ms} once measured (printed at the end).
const budgets = [];

function modelOf(page) {
  const name = basename(page, ".html").replace(/^live-/, "");
  const toy = `data/models/${name}.safetensors`;
  return { name, model: existsSync(toy) ? toy : `data/families/${name}/${name}.safetensors` };
}

// Texts a reader might type, new for every recompute (a seeded generator: the
// same texts on every run of the benchmark).
function texts(name, count) {
  let state = 12345;
  const next = (n) => { state = (state * 1103515245 + 12345) % 2147483648; return state % n; };
  const months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
  const words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "hundred", "and"];
  return Array.from({ length: count }, () => {
    const length = 6 + next(9);  // 6..14 characters: inside every toy model's training lengths
    if (name === "sort") return Array.from({ length }, () => String(next(10))).join("");
    if (name === "dates") return `${1 + next(28)} ${months[next(12)]} ${1900 + next(200)}`;
    if (name === "llama2c-tiny") return Array.from({ length: 3 }, () => words[next(words.length)]).join(" ") + ",";
    return Array.from({ length }, () => String.fromCharCode(97 + next(26))).join("");
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (value) => `${value.toFixed(1)} ms`;
const against = (value, target, unit) => `${value <= target ? "within" : "ABOVE"} the target ${unit(target)}`;

function cpuModel() {
  const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("model name"));
  return line ? line.split(":")[1].trim() : "unknown (no model name in /proc/cpuinfo)";
}

// The whole machine's busy share between two /proc/stat samples (this
// benchmark's chromium included), and the busiest other processes now.
function cpuSample() {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3] + (fields[4] || 0);
  return { total: fields.reduce((a, b) => a + b, 0), idle };
}
const busyShare = (a, b) => (b.total > a.total ? 1 - (b.idle - a.idle) / (b.total - a.total) : NaN);
function otherProcesses() {
  try {
    const rows = execFileSync("ps", ["-eo", "pcpu=,comm=", "--sort=-pcpu"], { encoding: "utf8" }).trim().split("\n");
    return rows.map((r) => r.trim().split(/\s+/)).filter(([, comm]) => !/^(chrom|node|ps$)/.test(comm))
      .slice(0, 3).map(([pcpu, comm]) => `${comm} ${pcpu}%`).join(", ");
  } catch {
    return "unknown (ps failed)";
  }
}

// Page load to interactive: navigation start (performance.now() = 0) to the
// moment window.tinyformer.ready resolves, hooked by a script that runs
// before the page's own.
const READY_HOOK = `(() => {
  const hook = () => {
    if (window.tinyformer && window.tinyformer.ready && !window.__benchHooked) {
      window.__benchHooked = true;
      window.tinyformer.ready.then(() => { window.__benchReadyAt = performance.now(); }, () => { window.__benchReadyAt = -1; });
      return true;
    }
    return false;
  };
  const timer = setInterval(() => { if (hook()) clearInterval(timer); }, 0);
  document.addEventListener("DOMContentLoaded", hook);
})();`;

async function loadTime(browser, url) {
  const context = await browser.newContext({ offline: true });
  await context.route("**/*", (route) => (route.request().url() === url ? route.continue() : route.abort()));
  await context.addInitScript(READY_HOOK);
  const page = await context.newPage();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => window.__benchReadyAt !== undefined, null, { timeout: 30000 });
  const readyAt = await page.evaluate(() => window.__benchReadyAt);
  return { context, page, readyAt };
}

// N recomputes inside the page, timed there (no round trip to node counted).
async function engineRecomputes(page, requests) {
  return page.evaluate(async (requests) => {
    const times = [];
    for (const request of requests) {
      const start = performance.now();
      await window.tinyformer.run(request);
      times.push(performance.now() - start);
    }
    return times;
  }, requests);
}

// Through the page: Enter in #live-source to data-live "ready" with the
// page's update count (data-live-runs) grown: the views re-rendered; timed in
// the page from the keydown to the attribute change.
async function typedRecompute(page, text) {
  await page.fill("#live-source", text);
  await page.evaluate(() => {
    const runs = Number(document.body.dataset.liveRuns) || 0;
    window.__benchTyped = new Promise((resolve) => {
      let start = 0;
      document.getElementById("live-source").addEventListener("keydown", () => { start = performance.now(); }, { once: true, capture: true });
      const observer = new MutationObserver(() => {
        const state = document.body.dataset.live;
        if (start && Number(document.body.dataset.liveRuns) > runs && (state === "ready" || state === "error")) {
          observer.disconnect();
          resolve({ ms: performance.now() - start, state });
        }
      });
      observer.observe(document.body, { attributes: true, attributeFilter: ["data-live", "data-live-runs"] });
    });
  });
  await page.press("#live-source", "Enter");
  return page.evaluate(() => window.__benchTyped);
}

function nativeLive(model, request, count) {
  if (!existsSync(BENCH)) return { note: `${BENCH} not built (make build/tinyformer-bench)` };
  const file = join(mkdtempSync(join(tmpdir(), "tinyformer-bench-")), "request.json");
  writeFileSync(file, JSON.stringify(request));
  try {
    const output = execFileSync(BENCH, ["live", model, file, "--n", String(count)], { encoding: "utf8" });
    const match = output.match(/median\s+([\d.]+)\s*ms/);
    return match ? { ms: Number(match[1]), output } : { note: `no median in: ${output.trim().split("\n").pop()}` };
  } catch (error) {
    return { note: `tinyformer-bench live failed: ${String(error.stderr || error.message).trim().split("\n")[0]}` };
  }
}

const browser = await launch();
console.log("tinyformer page benchmark (make bench-page): the engine in the page, headless chromium");
console.log(`  chromium      ${browser.version()} (${process.env.CHROMIUM || "/usr/bin/chromium"})`);
console.log(`  cpu           ${cpuModel()}`);
console.log(`  logical CPUs  ${cpus().length}`);
console.log(`  load average  ${loadavg().map((v) => v.toFixed(2)).join(" ")} (1, 5, 15 min); busiest other processes: ${otherProcesses()}`);
console.log(`  recomputes    median of ${RECOMPUTES}, a new text each; loads: median of ${LOADS}`);
let infoPrinted = false;

for (const file of pages) {
  const { name, model } = modelOf(file);
  console.log(`\n== ${name}: ${file} ==`);
  if (!existsSync(file)) {
    console.log(`  missing: make ${file}`);
    continue;
  }
  const url = pathToFileURL(resolve(file)).href;
  const bytes = statSync(file).size;
  console.log(`  page size              ${(bytes / 1048576).toFixed(2)} MiB (${bytes} bytes), ${against(bytes, TARGET_PAGE_BYTES, (t) => `${t / 1048576} MiB`)}`);

  const loads = [];
  let opened = null;
  for (let i = 0; i < LOADS; ++i) {
    const attempt = await loadTime(browser, url);
    loads.push(attempt.readyAt);
    if (i === LOADS - 1) opened = attempt;
    else await attempt.context.close();
  }
  if (loads.some((t) => t < 0)) {
    console.log(`  window.tinyformer.ready rejected: ${await opened.page.evaluate(() => window.tinyformer.ready.catch((e) => String(e.message)))}`);
    await opened.context.close();
    continue;
  }
  console.log(`  load to interactive    ${ms(median(loads))} (loads: ${loads.map((t) => t.toFixed(0)).join(", ")} ms), ${against(median(loads), TARGET_LOAD_MS, ms)}`);
  const { page } = opened;
  if (!infoPrinted) {
    const info = await page.evaluate(async () => {
      const info = typeof window.tinyformer.info === "function" ? await window.tinyformer.info() : await window.tinyformer.info;
      return info ?? {};
    });
    console.log(`  engine                 ${info.blas_description ?? JSON.stringify(info)}`);
    infoPrinted = true;
  }

  const decode = { mode: "greedy", max_new_tokens: 32 };
  const inputs = texts(name, RECOMPUTES + 2);
  const before = cpuSample();
  await engineRecomputes(page, inputs.slice(0, 2).map((text) => ({ text, decode })));  // warm-up
  const times = await engineRecomputes(page, inputs.slice(2).map((text) => ({ text, decode })));
  const busy = busyShare(before, cpuSample());
  budgets.push({ what: `toy ${name}: a recompute (engine)`, target: TARGET_RECOMPUTE_MS, ms: median(times) });
  console.log(`  recompute (engine)     ${ms(median(times))} median, ${ms(Math.min(...times))} min, ${ms(Math.max(...times))} max ` +
    `over ${times.length} texts; ${against(median(times), TARGET_RECOMPUTE_MS, ms)}; machine busy ${(busy * 100).toFixed(0)}%`);

  const typed = [];
  let typedNote = "";
  try {
    for (const text of inputs.slice(2, 2 + Math.min(10, RECOMPUTES))) typed.push((await typedRecompute(page, text)).ms);
  } catch (error) {
    typedNote = String(error.message).split("\n")[0];
  }
  if (typed.length)
    console.log(`  recompute (page, Enter to rendered) ${ms(median(typed))} median of ${typed.length}, ${against(median(typed), TARGET_RECOMPUTE_MS, ms)}`);
  else console.log(`  recompute (page)       not measured: ${typedNote}`);

  // One request, the same in both engines.
  const request = { text: inputs[0], decode };
  const fixed = await engineRecomputes(page, Array.from({ length: RECOMPUTES }, () => request));
  const native = nativeLive(model, request, RECOMPUTES);
  const wasm = median(fixed);
  if (native.ms !== undefined)
    console.log(`  same request ${JSON.stringify(inputs[0])}: wasm ${ms(wasm)}, native ${native.ms.toFixed(2)} ms (live_run), wasm/native ${(wasm / native.ms).toFixed(1)}x`);
  else console.log(`  same request ${JSON.stringify(inputs[0])}: wasm ${ms(wasm)}; native: ${native.note}`);
  await opened.context.close();
}
// ---- the main thread during a long generation ----

// One run of REQUEST in the page with a 10 ms heartbeat and a long-task
// observer beside it: {ms, tokens, error, beats, longestGap, longTasks, longTaskMs, longestTask}.
async function heartbeatRun(page, request) {
  return page.evaluate(async (request) => {
    let lastBeat = performance.now(), longestGap = 0, beats = 0;
    const beat = () => { const now = performance.now(); longestGap = Math.max(longestGap, now - lastBeat); lastBeat = now; ++beats; };
    const timer = setInterval(beat, 10);
    const tasks = [];
    const observer = new PerformanceObserver((list) => { for (const entry of list.getEntries()) tasks.push(entry.duration); });
    observer.observe({ type: "longtask" });
    let tokens = 0, error = "";
    // Started by a task of the page's own (as a keystroke starts one), so a long one is reported as such.
    const start = await new Promise((resolve) => setTimeout(() => resolve(performance.now()), 0));
    const ran = window.tinyformer.run(request);
    try {
      tokens = (await ran).target_ids.length;
    } catch (e) {
      error = String(e && e.message);
    }
    const ms = performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 100));  // the heartbeat after the run, and its last long task
    beat();
    clearInterval(timer);
    for (const entry of observer.takeRecords()) tasks.push(entry.duration);
    observer.disconnect();
    return { ms, tokens, error, beats, longestGap, longTasks: tasks.length, longTaskMs: tasks.reduce((a, b) => a + b, 0),
      longestTask: Math.max(0, ...tasks) };
  }, request);
}

// window.tinyformer.stop() during a generation that would not end: the time
// from stop() to the fresh engine ready, and what the stopped run said.
async function stopRun(page) {
  return page.evaluate(async () => {
    if (typeof window.tinyformer.stop !== "function") return { note: "this page has no window.tinyformer.stop" };
    const running = window.tinyformer.run({ text: "abc", decode: { max_new_tokens: 1 << 20 } }).then(() => "finished", (e) => e.message);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const start = performance.now();
    await window.tinyformer.stop();
    const ms = performance.now() - start;
    return { ms, stopped: await running };
  });
}

async function longGeneration(browser) {
  const made = endlessPage("build/browser");
  const model = made.model, file = process.env.BENCH_LONG_PAGE || made.page;
  console.log(`\n== the main thread during a long generation: ${file} (${model}: reverse-alibi without eos_id) ==`);
  const url = pathToFileURL(resolve(file)).href;
  for (const tokens of LONG_TOKENS) {
    const { context, page } = await loadTime(browser, url);
    await page.evaluate(() => window.tinyformer.ready);
    const request = { text: "abc", decode: { mode: "greedy", max_new_tokens: tokens } };
    const r = await heartbeatRun(page, request);
    const native = nativeLive(model, request, 3);
    console.log(`  ${String(tokens).padStart(5)} tokens: run ${ms(r.ms)}${r.error ? ` (failed: ${r.error})` : ` (${r.tokens} tokens)`}; ` +
      `longest main-thread gap ${ms(r.longestGap)} (10 ms heartbeat, ${r.beats} beats); ` +
      `long tasks ${r.longTasks}, ${ms(r.longTaskMs)} in all, longest ${ms(r.longestTask)}` +
      (native.ms !== undefined ? `; native ${native.ms.toFixed(1)} ms` : `; native: ${native.note}`));
    await context.close();
  }
  const { context, page } = await loadTime(browser, url);
  await page.evaluate(() => window.tinyformer.ready);
  const stop = await stopRun(page);
  if (stop.note) console.log(`  stop: ${stop.note}`);
  else console.log(`  stop() 1 s into a generation of up to 2^20 tokens: ${ms(stop.ms)} to a fresh engine ready; the run said: ${stop.stopped}`);
  await context.close();
}

// ---- real sizes: checkpoints opened in the page without weights ----

const REAL = [
  { name: "stories15M-shaped", make: () => llamaShaped(STORIES15M), keystroke: 300, token: 100 },
  { name: "gpt2-124M-shaped", make: () => gpt2Shaped(GPT2_124M), keystroke: null, token: 1000 },
];
const REAL_KEYSTROKES = Number(process.env.BENCH_REAL_KEYSTROKES || 7), REAL_LONG = 65;

// A text of n characters of the random models' vocabulary (CJK from U+4E00), new for each seed.
const cjk = (n, seed) => Array.from({ length: n }, (_, i) => String.fromCodePoint(0x4e00 + ((seed * 7919 + i * 104729) % 20000))).join("");

async function realSizes(browser) {
  const folder = mkdtempSync(join(tmpdir(), "tinyformer-bench-real-"));
  const pageFile = join(folder, "no-model.html");
  execFileSync("build/tinyformer", ["explore", "--html", pageFile], { stdio: "pipe" });
  for (const real of REAL) {
    const file = join(folder, `${real.name}.safetensors`);
    const bytes = writeRandomModel(file, real.make());
    console.log(`\n== ${real.name}: random weights, ${(bytes / 1048576).toFixed(1)} MiB, opened in ${pageFile} ==`);
    const { context, page } = await openPage(browser, pageFile);
    try {
      await page.waitForFunction(() => document.body.dataset.live === "no-model", null, { timeout: 10000 });
      const started = Date.now();
      await page.setInputFiles("#open-file", file);
      await page.waitForFunction(() => Number(document.body.dataset.opens) > 0, null, { timeout: 300000 });
      const state = await page.evaluate(() => ({ open: document.body.dataset.open, error: document.getElementById("live-error").textContent,
        memory: window.tinyformer.info && window.tinyformer.info.memory_bytes }));
      if (state.open !== "opened") { console.log(`  not opened: ${state.error}`); continue; }
      console.log(`  open                   ${Date.now() - started} ms (wall); the engine's memory then ${(state.memory / 1048576).toFixed(0)} MiB (${(state.memory / bytes).toFixed(2)}x the file)`);
      const keystrokes = async (maxNew, count, seed) => {
        await page.fill("#live-max-new", String(maxNew));
        const times = [];
        for (let i = 0; i < count; ++i) {
          const typed = await typedRecompute(page, cjk(3 + ((seed + i) % 6), seed + i));
          if (typed.state !== "ready") throw new Error(`the page said ${typed.state}: ${await page.textContent("#live-error")}`);
          times.push(typed.ms);
        }
        return times;
      };
      const before = cpuSample();
      await keystrokes(1, 1, 0);  // warm-up
      const one = await keystrokes(1, REAL_KEYSTROKES, 1);
      const long = await keystrokes(REAL_LONG, 3, 100);
      const busy = busyShare(before, cpuSample());
      const perToken = (median(long) - median(one)) / (REAL_LONG - 1);
      console.log(`  keystroke to views, 1 token decoded      ${ms(median(one))} median of ${one.length} (${one.map((t) => t.toFixed(0)).join(", ")} ms)` +
        (real.keystroke ? `, ${against(median(one), real.keystroke, ms)}` : ""));
      console.log(`  keystroke to views, ${REAL_LONG} tokens decoded     ${ms(median(long))} median of ${long.length} (${long.map((t) => t.toFixed(0)).join(", ")} ms)`);
      console.log(`  each decoded token     ${ms(perToken)} ((${REAL_LONG} tokens - 1 token) / ${REAL_LONG - 1}), ${against(perToken, real.token, ms)}; ` +
        `machine busy ${(busy * 100).toFixed(0)}%, load ${loadavg()[0].toFixed(2)}`);
      if (real.keystroke) budgets.push({ what: `${real.name}: a keystroke to redrawn views`, target: real.keystroke, ms: median(one) });
      budgets.push({ what: `${real.name}: each decoded token`, target: real.token, ms: perToken });
    } catch (error) {
      console.log(`  not measured: ${String(error.message).split("\n")[0]}`);
      budgets.push({ what: `${real.name}: not measured`, target: 0, ms: NaN });
    } finally {
      await context.close();
      rmSync(file, { force: true });
    }
  }
  rmSync(folder, { recursive: true, force: true });
}

if (!longOnly) await realSizes(browser);
if (!realOnly) await longGeneration(browser);
if (budgets.length) {
  console.log("\nthe recompute budgets (docs/PERFORMANCE.md):");
  for (const b of budgets)
    console.log(`  ${b.what.padEnd(52)} ${Number.isNaN(b.ms) ? "-" : ms(b.ms)}${b.target ? ` / ${ms(b.target)}: ${b.ms <= b.target ? "met" : "NOT met"}` : ""}`);
  const toys = budgets.filter((b) => b.what.startsWith("toy "));
  const worstToy = toys.length ? Math.max(...toys.map((b) => b.ms)) : NaN;
  const rows = [["toys < 50 ms a recompute", toys.length ? worstToy <= TARGET_RECOMPUTE_MS : null]];
  for (const real of REAL) {
    const mine = budgets.filter((b) => b.what.startsWith(real.name + ":"));
    rows.push([`${real.name} ${real.keystroke ? `< ${real.keystroke} ms a keystroke, ` : ""}< ${real.token} ms a token`,
      mine.length ? mine.every((b) => b.ms <= b.target) : null]);
  }
  for (const [what, met] of rows) console.log(`  budget: ${what}: ${met === null ? "not measured" : met ? "met" : "NOT met"}`);
}
console.log(`\nload average at the end: ${loadavg().map((v) => v.toFixed(2)).join(" ")}`);
await browser.close();
