// Browser tests of `tinyformer explore` pages (make test-browser): each page in
// EXPLORE_PAGES (space-separated; default: the sample pages that
// make_sample_page.mjs builds from hand-made data) is opened in Debian's
// chromium with the network shut: every request that is not the page's own
// file is aborted and counted. Screenshots go to build/browser/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { inflateSync } from "node:zlib";
import { launch, openPage, showView } from "./browser.mjs";
import { assemblePage, decoderOnlySample, encoderDecoderSample, longSample } from "./make_sample_page.mjs";

const SHOTS = "build/browser";
mkdirSync(SHOTS, { recursive: true });

let pages = (process.env.EXPLORE_PAGES || "").split(/\s+/).filter(Boolean);
if (!pages.length) {
  pages = [join(SHOTS, "sample-encdec.html"), join(SHOTS, "sample-decoder.html"), join(SHOTS, "sample-long.html")];
  writeFileSync(pages[0], assemblePage(encoderDecoderSample()));
  writeFileSync(pages[1], assemblePage(decoderOnlySample()));
  writeFileSync(pages[2], assemblePage(longSample()));
}

// The data as the file holds it, read without the page's own code.
function readData(file) {
  const html = readFileSync(file, "utf8");
  const match = html.match(/<script type="application\/json" id="tinyformer-data">([\s\S]*?)<\/script>/);
  assert.ok(match, `${file}: no #tinyformer-data script`);
  return JSON.parse(match[1]);
}

// A small PNG reader (8-bit RGB/RGBA, not interlaced: what Chromium writes):
// the number of distinct colours, to tell a picture from a blank.
function distinctColours(png) {
  assert.equal(png.readUInt32BE(12), 0x49484452, "PNG without IHDR");
  const width = png.readUInt32BE(16), height = png.readUInt32BE(20);
  const depth = png[24], type = png[25], interlace = png[28];
  assert.equal(depth, 8);
  assert.equal(interlace, 0);
  const channels = { 2: 3, 6: 4 }[type];
  assert.ok(channels, `PNG colour type ${type}`);
  const idat = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at), kind = png.toString("latin1", at + 4, at + 8);
    if (kind === "IDAT") idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  let prev = Buffer.alloc(stride), colours = new Set();
  for (let y = 0; y < height; ++y) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; ++i) {
      const a = i >= channels ? line[i - channels] : 0, b = prev[i], c = i >= channels ? prev[i - channels] : 0;
      let add = 0;
      if (filter === 1) add = a;
      else if (filter === 2) add = b;
      else if (filter === 3) add = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        add = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + add) & 255;
    }
    for (let x = 0; x < width && colours.size < 1000; x += 1) {
      colours.add((line[x * channels] << 16) | (line[x * channels + 1] << 8) | line[x * channels + 2]);
    }
    prev = line;
  }
  return colours.size;
}

const near = (a, b, tol) => Math.abs(a - b) <= tol;

let browser;
before(async () => { browser = await launch(); });
after(async () => { if (browser) await browser.close(); });

for (const file of pages) {
  const name = basename(file, ".html");
  describe(name, () => {
    let page, blocked, errors, loadMs;
    const data = readData(file);
    const atts = data.attentions;
    const byName = (n) => atts.find((a) => a.name === n);

    before(async () => {
      ({ page, blocked, errors, loadMs } = await openPage(browser, file));
    });
    after(async () => { if (page) await page.context().close(); });

    // Open one head of one attention call by clicking its thumbnail.
    async function open(attention, head) {
      await showView(page, "model");
      await page.click(`#view-model .thumb[data-attention="${attention}"][data-head="${head}"]`);
      await page.waitForSelector(`#matrix[data-attention="${attention}"][data-head="${head}"]`);
    }
    // The query to test with: the middle one that is not padding.
    function someQuery(a) {
      const pad = data.padding[a.queries] || [];
      const free = a.mask.map((_, i) => i).filter((i) => !pad[i]);
      return free[Math.floor(free.length / 2)];
    }

    test("the file is self-contained, < 2 MB, and renders offline without errors in under a second", async (t) => {
      assert.ok(statSync(file).size < 2 * 1024 * 1024, `${file} is ${statSync(file).size} bytes`);
      assert.equal(data.format, "tinyformer-explore/1");
      assert.deepEqual(blocked, [], "requests that tried to leave the file");
      assert.deepEqual(errors, [], "console errors");
      const renderMs = await page.evaluate(() => Number(document.body.dataset.renderMs));
      t.diagnostic(`${statSync(file).size} bytes, rendered ${renderMs} ms after navigation (load event ${loadMs} ms)`);
      assert.ok(renderMs < 1000, `rendered in ${renderMs} ms (load ${loadMs} ms)`);
      const external = await page.evaluate(() => Array.from(document.querySelectorAll("[src],[href],link,iframe,img"))
        .map((x) => x.outerHTML.slice(0, 80)));
      assert.deepEqual(external, [], "elements that load something");
    });

    test("each view renders", async () => {
      await showView(page, "model");
      const H = atts.map((a) => a.weights.length);
      assert.equal(await page.locator("#view-model .thumb canvas").count(), H.reduce((s, x) => s + x, 0));
      const groups = [...new Set(atts.map((a) => a.group))];
      assert.deepEqual(await page.$$eval("#view-model table.thumbs", (xs) => xs.map((x) => x.dataset.group)), groups);
      await showView(page, "head");
      assert.ok((await page.locator("#head-svg line.link").count()) > 0, "head view draws lines");
      await showView(page, "matrix");
      const a = atts[0];
      assert.equal(await page.locator("#matrix td.cell").count(), a.mask.length * a.mask[0].length);
      await showView(page, "step");
      assert.equal(await page.locator("#step-chain td.weight").count(), a.mask[0].length);
      await showView(page, "decoding");
      const steps = (data.decoding && data.decoding.steps) || [];
      if (data.decoding && data.decoding.mode !== "none" && steps.length) {
        assert.equal(await page.locator("#decoding-steps tr[data-position]").count(), steps.length);
        for (const s of steps) {
          const chosen = page.locator(`#decoding-steps tr[data-position="${s.position}"] td.chosen`);
          assert.equal(await chosen.count(), 1, `step ${s.position}: one chosen candidate`);
          assert.equal(Number(await chosen.getAttribute("data-id")), s.chosen);
        }
        if ((data.decoding.hypotheses || []).length) {
          assert.equal(await page.locator("#decoding-hypotheses tr.chosen").count(), data.decoding.hypotheses.filter((x) => x.best).length);
        }
      } else {
        assert.equal(await page.locator("#decoding-none").count(), 1);
      }
    });

    test("token labels are one line each, never one letter per line", async () => {
      for (const view of ["matrix", "head", "step", "decoding"]) {
        await showView(page, view);
        const wrapped = await page.evaluate((v) => {
          const bad = [];
          const labels = document.querySelectorAll(`#view-${v} th span, #view-${v} th, #view-${v} .ctok, #view-${v} .path .tok`);
          for (const label of labels) {
            for (const node of label.childNodes) {
              if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
              const range = document.createRange();
              range.selectNodeContents(node);
              const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(getComputedStyle(label).writingMode.startsWith("vertical") ? r.left : r.top)));
              if (lines.size > 1) bad.push(node.textContent);
            }
          }
          return bad;
        }, view);
        assert.deepEqual(wrapped, [], `${view}: labels broken over lines`);
      }
    });

    test("clicking a thumbnail (decoder layer 1 cross, head 2 where there is one) shows that head's weights", async () => {
      const a = byName("decoder.1.cross_attn") || atts[atts.length - 1];
      const h = Math.min(2, a.weights.length - 1);
      await open(a.name, h);
      assert.equal(await page.getAttribute("body", "data-view"), "matrix");
      assert.equal(await page.getAttribute("body", "data-attention"), a.name);
      assert.equal(await page.getAttribute("body", "data-head"), String(h));
      const cells = await page.$$eval("#matrix td.cell", (xs) => xs.map((x) => [Number(x.dataset.q), Number(x.dataset.k), Number(x.dataset.weight)]));
      assert.equal(cells.length, a.mask.length * a.mask[0].length);
      for (const [q, k, w] of cells) assert.ok(near(w, a.weights[h][q][k], 1e-6), `matrix q${q} k${k}: ${w} vs ${a.weights[h][q][k]}`);
      // The printed numbers (big matrices show two digits) agree too.
      for (const [q, k, text] of await page.$$eval("#matrix td.cell.allowed", (xs) => xs.map((x) => [Number(x.dataset.q), Number(x.dataset.k), x.textContent]))) {
        if (text) assert.ok(near(Number(text), a.weights[h][q][k], 0.006), `printed ${text} vs ${a.weights[h][q][k]}`);
      }
      // The head view shows the same head: lines and its table.
      await showView(page, "head");
      const lines = await page.$$eval("#head-svg line.link", (xs) => xs.map((x) => [Number(x.dataset.head), Number(x.dataset.q), Number(x.dataset.k), Number(x.dataset.weight)]));
      assert.ok(lines.length > 0);
      for (const [lh, q, k, w] of lines) {
        assert.equal(lh, h);
        assert.ok(near(w, a.weights[h][q][k], 1e-6));
        assert.equal(a.mask[q][k], 1, `a line for the masked pair q${q} k${k}`);
      }
      const table = await page.$$eval("#head-weights td[data-weight]", (xs) => xs.map((x) => [Number(x.dataset.head), Number(x.dataset.k), Number(x.dataset.weight)]));
      const q = Number(await page.getAttribute("body", "data-query"));
      for (const [th, k, w] of table) assert.ok(th === h && near(w, a.weights[h][q][k], 1e-6));
    });

    test("masked cells are shown as masked, never as weight 0", async () => {
      for (const a of atts) {
        if (!a.mask.some((row) => row.includes(0))) continue;
        await open(a.name, 0);
        const cells = await page.$$eval("#matrix td.cell", (xs) => xs.map((x) => [Number(x.dataset.q), Number(x.dataset.k), x.className, x.textContent, x.title]));
        for (const [q, k, cls, text, title] of cells) {
          if (a.mask[q][k]) continue;
          assert.ok(/masked|padding/.test(cls), `q${q} k${k} class ${cls}`);
          assert.ok(!/\d/.test(text), `masked cell q${q} k${k} shows ${text}`);
          assert.match(title, /masked/);
        }
        await page.hover(`#matrix td.cell[data-mask="0"]`);
        assert.match(await page.textContent("#cell-info"), /blocked/);
        assert.match(await page.textContent("#cell-info"), /-inf/);
        return;
      }
    });

    test("hovering a token in the head view keeps only its lines", async () => {
      const a = atts[atts.length - 1];
      await open(a.name, 0);
      await showView(page, "head");
      await page.click('#head-chips [data-head-chip="all"]');
      const H = a.weights.length;
      const total = await page.locator("#head-svg line.link").count();
      const q = someQuery(a);
      await page.hover(`#head-svg g.tok[data-side="q"][data-i="${q}"]`);
      const visible = await page.$$eval("#head-svg line.link", (xs) => xs.filter((x) => getComputedStyle(x).display !== "none")
        .map((x) => [Number(x.dataset.q), Number(x.dataset.k), Number(x.dataset.head)]));
      const allowed = a.mask[q].filter((m) => m).length;
      assert.equal(visible.length, allowed * H, `query ${q}: ${allowed} allowed keys x ${H} heads`);
      assert.ok(visible.every(([vq]) => vq === q));
      assert.ok(total > visible.length);
      for (let k = 0; k < a.mask[q].length; ++k) {
        if (a.mask[q][k]) continue;
        assert.match(await page.textContent(`#head-svg g.tok[data-side="k"][data-i="${k}"] text.tag`), /masked/);
      }
      const k = 0;
      await page.hover(`#head-svg g.tok[data-side="k"][data-i="${k}"]`);
      const keyLines = await page.$$eval("#head-svg line.link", (xs) => xs.filter((x) => getComputedStyle(x).display !== "none").map((x) => Number(x.dataset.k)));
      assert.ok(keyLines.length > 0 && keyLines.every((x) => x === k));
      await page.mouse.move(1, 1);
      assert.equal(await page.$$eval("#head-svg line.link", (xs) => xs.filter((x) => getComputedStyle(x).display !== "none").length), total);
    });

    test("head colour chips show one, several or all heads; padding is marked", async () => {
      const a = atts[atts.length - 1];
      const H = a.weights.length;
      await open(a.name, 0);
      await showView(page, "head");
      const headsDrawn = () => page.$$eval("#head-svg line.link", (xs) => [...new Set(xs.map((x) => Number(x.dataset.head)))].sort());
      await page.click('#head-chips [data-head-chip="1"]');
      assert.deepEqual(await headsDrawn(), [1]);
      await page.click(`#head-chips [data-head-chip="${H - 1}"]`, { modifiers: ["Shift"] });
      assert.deepEqual(await headsDrawn(), [1, H - 1]);
      await page.click('#head-chips [data-head-chip="all"]');
      assert.deepEqual(await headsDrawn(), [...Array(H).keys()]);
      assert.equal(await page.locator("#head-weights tr:first-child th").count(), H + 1, "one column per head in the table");
      for (const [side, seq] of [["q", a.queries], ["k", a.keys]]) {
        const pad = data.padding[seq] || [];
        const marked = await page.$$eval(`#head-svg g.tok[data-side="${side}"]`, (xs) => xs.map((x) => x.classList.contains("pad")));
        assert.deepEqual(marked, a.mask.length && side === "q" ? a.mask.map((_, i) => pad[i] === true) : a.mask[0].map((_, j) => pad[j] === true));
      }
    });

    test("the step view's weights sum to 1, equal the matrix row and the engine's, with every check passing", async () => {
      const a = byName("decoder.1.cross_attn") || atts[atts.length - 1];
      const h = Math.min(2, a.weights.length - 1);
      await open(a.name, h);
      const q = someQuery(a);
      const row = await page.$$eval(`#matrix td.cell[data-q="${q}"]`, (xs) => xs.map((x) => Number(x.dataset.weight)));
      await page.click(`#matrix th.row[data-q="${q}"]`);
      await page.waitForSelector("#view-step:not([hidden])");
      assert.equal(await page.getAttribute("body", "data-query"), String(q));
      const weights = await page.$$eval("#step-chain td.weight", (xs) => xs.map((x) => Number(x.dataset.weight)));
      assert.equal(weights.length, row.length);
      assert.ok(near(weights.reduce((s, x) => s + x, 0), 1, 1e-5), `sum ${weights.reduce((s, x) => s + x, 0)}`);
      weights.forEach((w, k) => {
        assert.equal(w, row[k]);
        assert.ok(near(w, a.weights[h][q][k], 1e-6));
      });
      const dk = a.dk;
      const z = await page.$$eval("#step-z td[data-z]", (xs) => xs.map((x) => Number(x.dataset.z)));
      assert.equal(z.length, dk);
      z.forEach((x, i) => assert.ok(near(x, a.z[q][h * dk + i], 1e-6)));
      assert.ok((await page.locator("#view-step .check.ok").count()) >= 2 * row.length + dk);
      assert.equal(await page.locator("#view-step .check.bad").count(), 0, "a recomputation disagrees with the engine");
    });

    test("arrow keys move between heads (left/right) and layers (up/down)", async () => {
      const group = atts.filter((a) => a.group === atts[atts.length - 1].group).sort((x, y) => x.layer - y.layer);
      const first = group[0];
      await open(first.name, 0);
      await showView(page, "matrix");
      await page.keyboard.press("ArrowRight");
      assert.equal(await page.getAttribute("body", "data-head"), "1");
      assert.equal(await page.getAttribute("#matrix", "data-head"), "1");
      await page.keyboard.press("ArrowLeft");
      assert.equal(await page.getAttribute("body", "data-head"), "0");
      await page.keyboard.press("ArrowLeft");
      assert.equal(await page.getAttribute("body", "data-head"), "0", "stays at head 0");
      if (group.length > 1) {
        await page.keyboard.press("ArrowDown");
        assert.equal(await page.getAttribute("body", "data-attention"), group[1].name);
        assert.equal(await page.getAttribute("#matrix", "data-attention"), group[1].name);
        await page.keyboard.press("ArrowUp");
        assert.equal(await page.getAttribute("body", "data-attention"), first.name);
      }
    });

    test("a screenshot of each view is not blank", async () => {
      const a = byName("decoder.1.cross_attn") || atts[atts.length - 1];
      await open(a.name, 0);
      for (const view of ["model", "head", "matrix", "step", "decoding"]) {
        await showView(page, view);
        const path = join(SHOTS, `${name}-${view}.png`);
        const png = await page.locator(`#view-${view}`).screenshot({ path });
        assert.ok(distinctColours(png) > 8, `${path} is (nearly) one colour`);
      }
    });

    test("after everything: no console error, no request left the file", () => {
      assert.deepEqual(blocked, [], "requests that tried to leave the file");
      assert.deepEqual(errors, [], "console errors");
    });
  });
}
