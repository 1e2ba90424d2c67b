// Screenshots of the explore page's views, for docs/PICTURES.md:
//   node tests/browser/screenshots.mjs PAGE.html OUTDIR
// writes OUTDIR/model.png, head.png, matrix.png, step.png (and decoding.png),
// at 1280x800, each of the open view after picking the last cross-attention
// (or the last attention call) at head 0.
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
  if (blocked.length || errors.length) {
    console.error("requests:", blocked, "errors:", errors);
    process.exitCode = 1;
  }
  console.log(`screenshots of ${file} in ${out}/`);
} finally {
  await browser.close();
}
