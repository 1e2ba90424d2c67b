// Browser tests of the explore page for position schemes that live inside
// attention (issue #23): ALiBi's bias as part of the additive mask (matrix
// view hover, step view chain) and rotary's q and k before and after rotation
// (step view). Run alone with
//   node --test tests/browser/positions.test.mjs
// after `make build/tinyformer` (Debian's chromium + playwright-core, as
// tests/browser/explore.test.mjs).
//
// ALiBi: a real page, `tinyformer explore` on the PyTorch reference case
// data/reference/do_alibi_pre_gelu_h6_pad (6 heads). The expected bias is
// worked out here by hand: H = 6 is not a power of two, so the slopes are the
// 4 of n = 4, 2^-2, 2^-4, 2^-6, 2^-8, then the slopes of 8 at even indices,
// 2^-1, 2^-3; bias = -slope_h * |i - j|.
// Rotary: a hand-made page (one attention call), q_unrotated / k_unrotated
// random, q and k turned here by the adjacent-pairs rule (layers/rotary.h),
// scores, weights and z computed from the turned ones.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launch, openPage, showView } from "./browser.mjs";
import { assemblePage } from "./make_sample_page.mjs";

const OUT = "build/browser";
mkdirSync(OUT, { recursive: true });
const near = (a, b, tol) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
const number = (text) => Number(text.replace("\u2212", "-"));

function readData(file) {
  const html = readFileSync(file, "utf8");
  return JSON.parse(html.match(/<script type="application\/json" id="tinyformer-data">([\s\S]*?)<\/script>/)[1]);
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { if (browser) await browser.close(); });

describe("ALiBi page (tinyformer explore on do_alibi_pre_gelu_h6_pad)", () => {
  const file = join(OUT, "explore-alibi.html");
  execFileSync("./build/tinyformer", ["explore", "data/reference/do_alibi_pre_gelu_h6_pad.model.safetensors",
    "--ids", "1,3,4,5,6,7", "--target-ids", "8,9", "--html", file]);
  const data = readData(file);
  const slopes = [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3];
  let page, errors;
  before(async () => { ({ page, errors } = await openPage(browser, file)); });
  after(async () => { if (page) await page.context().close(); });

  async function openMatrix(attention, head) {
    await showView(page, "model");
    await page.click(`#view-model .thumb[data-attention="${attention}"][data-head="${head}"]`);
    await page.waitForSelector(`#matrix[data-attention="${attention}"][data-head="${head}"]`);
  }

  test("the page data carries the bias per head: -slope_h * |i - j| on allowed cells, 0 on blocked ones", () => {
    assert.equal(data.model.pos_encoding, "alibi");
    const a = data.attentions.find((x) => x.name === "layers.1.self_attn");
    assert.equal(a.bias.length, 6);
    for (let h = 0; h < 6; ++h)
      for (let i = 0; i < a.mask.length; ++i)
        for (let j = 0; j < a.mask.length; ++j)
          assert.equal(a.bias[h][i][j] + 0, a.mask[i][j] ? Math.fround(-slopes[h] * Math.abs(i - j)) + 0 : 0, `h${h} q${i} k${j}`);  // + 0: -0 is 0
  });

  test("hovering a matrix cell shows its ALiBi bias as part of the additive mask", async () => {
    // Head 5 (slope 2^-3), query 5, key 1: -0.125 * 4 = -0.5. Head 0 (2^-2), query 3, key 0: -0.75.
    for (const [h, q, k, want] of [[5, 5, 1, -0.5], [0, 3, 0, -0.75], [3, 4, 4, 0]]) {
      await openMatrix("layers.1.self_attn", h);
      await page.hover(`#matrix td.cell[data-q="${q}"][data-k="${k}"]`);
      await page.waitForSelector(`#cell-info[data-q="${q}"][data-k="${k}"]`);
      const bias = await page.textContent("#cell-bias td");
      assert.equal(number(bias.split(" ")[0]), want, `head ${h} q${q} k${k}: ${bias}`);
      assert.match(bias, new RegExp(`slope \u00b7 \\|${q} \u2212 ${k}\\|`));
      const info = await page.textContent("#cell-info");
      assert.match(info, /additive float mask/);
      // The additive float mask of the cell is the bias (0.0 only on the diagonal).
      const additive = await page.$$eval("#cell-info tr", (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent])
        .find(([name]) => name === "additive float mask")[1]);
      assert.equal(number(additive), want);
      const score = data.attentions.find((x) => x.name === "layers.1.self_attn").scores[h][q][k];
      const input = await page.textContent("#cell-softmax-input td");
      assert.ok(near(number(input.split("= ").pop()), score + want, 1e-5), `softmax input ${input}, score ${score}`);
    }
    // A blocked cell: no bias, -inf.
    await openMatrix("layers.1.self_attn", 2);
    await page.hover(`#matrix td.cell[data-q="1"][data-k="4"]`);
    await page.waitForSelector(`#cell-info[data-q="1"][data-k="4"]`);
    assert.match(await page.textContent("#cell-bias td"), /blocked/);
  });

  test("the step view adds the bias in its chain and its softmax agrees with the engine's weights", async () => {
    await openMatrix("layers.0.self_attn", 4);
    // The row label steps through the query (on a live page a cell click edits the mask instead).
    await page.click(`#matrix th.row[data-q="6"]`);
    await page.waitForSelector("#view-step:not([hidden]) #step-chain");
    const biases = await page.$$eval("#step-chain td[data-bias]", (xs) => xs.map((x) => Number(x.dataset.bias)));
    assert.deepEqual(biases.slice(0, 7).map((x) => x + 0), [0, 1, 2, 3, 4, 5, 6].map((j) => Math.fround(-0.5 * (6 - j)) + 0));  // head 4: 2^-1
    assert.match(await page.textContent("#step-chain tr[data-k='2']"), /\+ \u22122 \(ALiBi\)/);
    assert.equal(await page.locator("#view-step .check.bad").count(), 0, "a recomputation disagrees with the engine");
    assert.ok(await page.locator("#step-chain .check.ok").count() > 0);
    assert.deepEqual(errors, []);
  });
});

// ---- rotary, hand-made ----
function rotate(x, pos, theta) {  // adjacent pairs (2i, 2i+1) by pos * theta^(-2i/dk)
  const out = x.slice();
  for (let i = 0; 2 * i < x.length; ++i) {
    const angle = pos * theta ** (-2 * i / x.length);
    out[2 * i] = x[2 * i] * Math.cos(angle) - x[2 * i + 1] * Math.sin(angle);
    out[2 * i + 1] = x[2 * i] * Math.sin(angle) + x[2 * i + 1] * Math.cos(angle);
  }
  return out;
}

function rotarySample() {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
  const H = 2, D = 8, dk = 4, L = 5, theta = 10000;
  const f = (x) => Math.fround(x);
  const vecs = (n) => Array.from({ length: n }, () => Array.from({ length: D }, () => f(rand())));
  const qu = vecs(L), ku = vecs(L), v = vecs(L);
  const turn = (rows) => rows.map((row, pos) => [0, 1].flatMap((h) => rotate(row.slice(h * dk, (h + 1) * dk), pos, theta).map(f)));
  const q = turn(qu), k = turn(ku);
  const mask = Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j <= i ? 1 : 0)));
  const scores = [], weights = [], z = Array.from({ length: L }, () => new Array(D).fill(0));
  for (let h = 0; h < H; ++h) {
    const sh = [], wh = [];
    for (let i = 0; i < L; ++i) {
      const row = range(L).map((j) => f(range(dk).reduce((s, c) => s + q[i][h * dk + c] * k[j][h * dk + c], 0) / Math.sqrt(dk)));
      const max = Math.max(...row.filter((_, j) => mask[i][j]));
      const e = row.map((x, j) => (mask[i][j] ? Math.exp(x - max) : 0));
      const sum = e.reduce((s, x) => s + x, 0);
      const w = e.map((x) => f(x / sum));
      for (let c = 0; c < dk; ++c) z[i][h * dk + c] = f(w.reduce((s, x, j) => s + x * v[j][h * dk + c], 0));
      sh.push(row); wh.push(w);
    }
    scores.push(sh); weights.push(wh);
  }
  const tokens = ["<bos>", "a", "b", "c", "d"];
  return {
    format: "tinyformer-explore/1",
    model: { name: "sample-rotary", arch: "decoder_only", d_model: D, nhead: H, head_dim: dk, norm_first: true, attention: "causal",
      pos_encoding: "rotary", n_kv_heads: H, rope_theta: theta, rope_pairs: "adjacent" },
    input: { text: "abcd", target: "", target_given: true },
    sequences: { source: tokens }, padding: { source: new Array(L).fill(false) },
    attentions: [{ name: "layers.0.self_attn", stack: "layers", layer: 0, attn: "self_attn", group: "self", queries: "source", keys: "source",
      mask_name: "causal", mask, dk, q, k, v, scores, weights, z, q_unrotated: qu, k_unrotated: ku }],
    decoding: { mode: "none", steps: [] },
  };
}
function range(n) { return Array.from({ length: n }, (_, i) => i); }

describe("rotary page (hand-made)", () => {
  const file = join(OUT, "sample-rotary.html");
  const data = rotarySample();
  writeFileSync(file, assemblePage(data));
  let page, errors;
  before(async () => { ({ page, errors } = await openPage(browser, file)); });
  after(async () => { if (page) await page.context().close(); });

  test("the step view shows q_h and every k_h before and after rotation, the rotation checked", async () => {
    await showView(page, "model");
    await page.click(`#view-model .thumb[data-attention="layers.0.self_attn"][data-head="1"]`);
    await page.waitForSelector(`#matrix[data-head="1"]`);
    await page.click(`#matrix td.cell[data-q="3"][data-k="0"]`);
    await page.waitForSelector("#view-step:not([hidden]) #step-q-rotated");
    const a = data.attentions[0];
    const cells = (selector) => page.$$eval(selector + " td", (xs) => xs.map((x) => Number(x.textContent.split(" ")[0].replace("\u2212", "-"))));
    const before = await cells("#step-q-unrotated");
    const afterRow = await cells("#step-q-rotated");
    a.q_unrotated[3].slice(4, 8).forEach((x, i) => assert.ok(near(before[i], x, 1e-3), `before[${i}]`));
    const turned = rotate(a.q_unrotated[3].slice(4, 8), 3, 10000);
    turned.forEach((x, i) => assert.ok(near(afterRow[i], x, 1e-3), `after[${i}] ${afterRow[i]} vs ${x}`));
    assert.ok(turned.some((x, i) => !near(x, a.q_unrotated[3][4 + i], 1e-2)), "position 3 does turn q");
    await page.click("#step-keys summary");
    assert.equal(await page.locator("#step-k tr.unrotated").count(), 5);
    assert.equal(await page.locator("#step-k tr.rotated").count(), 5);
    const key0 = await cells("#step-k tr.rotated[data-k='0']");
    a.k_unrotated[0].slice(4, 8).forEach((x, i) => assert.ok(near(key0[i], x, 1e-3), "position 0 does not turn k"));
    assert.equal(await page.locator("#view-step .check.bad").count(), 0, "a recomputation disagrees");
    assert.ok(await page.locator("#step-q-rotated .check.ok").count() === 4);
    assert.deepEqual(errors, []);
  });
});
