// A quick smoke test of a live explore page (no test runner): window.tinyformer.ready
// resolves on the page opened from file://, run({text}) answers, no request leaves the
// page (the engine runs in a Web Worker made from the page's own text and unpacks its module
// there: nothing is fetched), no console error.
//   node tests/browser/engine_smoke.mjs PAGE.html TEXT [EXPECTED_TARGET_TEXT]
import { launch, openPage } from "./browser.mjs";

const [file, text, expected] = process.argv.slice(2);
const browser = await launch();
try {
  const { page, blocked, errors } = await openPage(browser, file);
  const requests = [];
  page.on("request", (request) => requests.push(request.url()));
  const info = await page.evaluate(() => window.tinyformer.ready);
  const started = Date.now();
  const result = await page.evaluate((t) => window.tinyformer.run({ text: t }).then((r) => ({ text: r.text, log_p: r.log_p })), text);
  const ms = Date.now() - started;
  const failure = await page.evaluate(() => window.tinyformer.run({ text: 5 }).then(() => "", (e) => e.message));
  console.log(JSON.stringify({ info, result, ms, failure, blocked, requests, errors }));
  if (blocked.length || requests.length || errors.length) process.exitCode = 1;
  if (expected !== undefined && result.text !== expected) process.exitCode = 1;
  if (!failure) process.exitCode = 1;
} finally {
  await browser.close();
}
