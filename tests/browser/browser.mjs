// Shared by the browser tests and the screenshot command: Debian's chromium
// driven by playwright-core (never a downloaded browser), every request that
// is not the page's own file aborted and counted, console errors collected.
import { chromium } from "playwright-core";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: run \`make deps-browser\``);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--metrics-recording-only"],
  });
}

// Opens FILE at 1280x800 offline. Returns {page, context, blocked, errors, url}:
// blocked lists every request that tried to leave the file, errors every
// console error and uncaught exception.
export async function openPage(browser, file, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, offline: true });
  const url = pathToFileURL(resolve(file)).href;
  const blocked = [];
  const errors = [];
  await context.route("**/*", (route) => {
    const target = route.request().url();
    if (target === url || (target.startsWith("file:") && target.split("#")[0] === url)) return route.continue();
    blocked.push(target);
    return route.abort();
  });
  const page = await context.newPage();
  page.on("console", (message) => { if (message.type() === "error") errors.push(message.text()); });
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("requestfailed", (request) => { if (request.url() !== url && !blocked.includes(request.url())) blocked.push(request.url()); });
  const started = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector("body[data-ready=true]", { timeout: 5000 });
  const loadMs = Date.now() - started;
  return { page, context, blocked, errors, url, loadMs };
}

// Opens a view by its tab.
export async function showView(page, view) {
  await page.click(`#tabs button[data-view="${view}"]`);
  await page.waitForSelector(`#view-${view}:not([hidden])`);
}
