// Screenshots of the explore page's views, for docs/PICTURES.md:
//   node tests/browser/screenshots.mjs PAGE.html OUTDIR
// writes OUTDIR/model.png, head.png, matrix.png, step.png (and decoding.png),
// at 1280x800, each of the open view after picking the last cross-attention
// (or the last attention call) at head 0. A live page (the engine in it) also
// gives OUTDIR/live-mask.png: the matrix view of the first causal self-attention
// (or the picked call) after two cell clicks, one key allowed and one blocked.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launch, openPage, showView } from "./browser.mjs";

const [file, out] = process.argv.slice(2);
if (!file || !out) {
  console.error("usage: node tests/browser/screenshots.mjs PAGE.html OUTDIR");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const browser = await launch();
try {
  const { page, blocked, errors } = await openPage(browser, file);
  await page.screenshot({ path: join(out, "model.png") });
  const names = await page.$$eval("#view-model .thumb[data-head='0']", (xs) => xs.map((x) => x.dataset.attention));
  const pick = names.filter((n) => n.includes("cross")).pop() || names.pop();
  if (pick) await page.click(`#view-model .thumb[data-attention="${pick}"][data-head="0"]`);
  for (const view of ["head", "matrix", "step", "decoding"]) {
    await showView(page, view);
    if (view === "head") await page.hover("#head-svg g.tok[data-side=q][data-i='1']");
    if (view === "matrix") await page.hover("#matrix td.cell[data-q='1'][data-k='1']");
    await page.screenshot({ path: join(out, `${view}.png`) });
  }
  await page.waitForFunction(() => ["ready", "recorded"].includes(document.body.dataset.live), null, { timeout: 30000 });
  if (await page.getAttribute("body", "data-live") === "ready") {
    const calls = await page.evaluate(() => JSON.parse(document.getElementById("tinyformer-data").textContent).attentions
      .map((a) => ({ name: a.name, causal: /causal/.test(a.mask_name), mask: a.mask })));
    const call = calls.find((a) => a.causal && a.mask.length >= 4) || calls.find((a) => a.name === pick) || calls[0];
    await showView(page, "matrix");
    await page.selectOption("#pick-attention", String(calls.indexOf(call)));
    const update = async (selector) => {
      const before = Number(await page.getAttribute("body", "data-live-runs")) || 0;
      await page.click(selector);
      await page.waitForFunction((n) => Number(document.body.dataset.liveRuns) > n, before);
    };
    // Allow a blocked key (a future token, for a causal mask) and block an allowed one.
    const blockedCell = call.mask.flatMap((row, q) => row.map((m, k) => [q, k, m])).find(([q, , m]) => q >= 1 && !m);
    const allowedCell = call.mask.flatMap((row, q) => row.map((m, k) => [q, k, m])).find(([q, k, m]) => q >= 2 && k === 0 && m);
    for (const cell of [blockedCell, allowedCell]) if (cell) await update(`#matrix td.cell[data-q="${cell[0]}"][data-k="${cell[1]}"]`);
    const hover = allowedCell || blockedCell;
    if (hover) await page.hover(`#matrix td.cell[data-q="${hover[0]}"][data-k="${hover[1]}"]`);
    await page.screenshot({ path: join(out, "live-mask.png") });
  }
  if (blocked.length || errors.length) {
    console.error("requests:", blocked, "errors:", errors);
    process.exitCode = 1;
  }
  console.log(`screenshots of ${file} in ${out}/`);
} finally {
  await browser.close();
}
