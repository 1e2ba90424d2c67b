// Browser test of the decoding view's stop line (make test-browser): three
// recorded pages written here by `tinyformer explore`, one per way a decoding
// ends, each with its lengths chosen so that the reason is known beforehand:
//   eos             reverse on "hello": five letters, then <eos> chosen
//   max_new_tokens  reverse on "hello" with --max-new-tokens 3: cut after "oll"
//   max_len         reverse-causal (max_len 40) on 30 letters: <bos> + 30 + "="
//                   leaves 8 positions, all filled
// The view says which, in words, and its path and steps hold no <eos> the
// model did not choose (it used to show <eos> with p = 1e-11 when cut).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { launch, openPage, showView } from "./browser.mjs";
import { TINYFORMER, scratchFile } from "./native.mjs";

const CASES = [
  { name: "eos", args: ["data/models/reverse.safetensors", "hello"], steps: 6, eos: true,
    stop: "Stopped: the model chose <eos>." },
  { name: "max_new_tokens", args: ["data/models/reverse.safetensors", "hello", "--max-new-tokens", "3"], steps: 3, eos: false,
    stop: "Stopped: 3 new tokens reached (max new tokens); the model did not choose <eos>." },
  { name: "max_len", args: ["data/models/reverse-causal.safetensors", "abcdefghijklmnopqrstuvwxyzabcd"], steps: 8, eos: false,
    stop: "Stopped: the sequence filled the model's max_len positions; the model did not choose <eos>." },
];

describe("the decoding view says why generation stopped", () => {
  let browser;
  before(async () => { browser = await launch(); });
  after(async () => { await browser?.close(); });

  for (const c of CASES) {
    test(c.name, async () => {
      const file = scratchFile(`stop-${c.name}.html`);
      execFileSync(TINYFORMER, ["explore", ...c.args, "--recorded", "--html", file], { stdio: ["ignore", "ignore", "ignore"] });
      const { page, context, blocked, errors } = await openPage(browser, file);
      try {
        await showView(page, "decoding");
        assert.equal(await page.locator("#decoding-stop").count(), 1, "no stop line in the decoding view");
        assert.equal(await page.textContent("#decoding-stop"), c.stop);
        assert.equal(await page.locator("#decoding-steps tr[data-position]").count(), c.steps);
        // (Each token is shown bidi-isolated, U+2068 ... U+2069: page.js's iso.)
        const bare = (texts) => texts.map((t) => t.replace(/[\u2066-\u2069]/g, ""));
        const path = bare(await page.locator("#decoding-path span.tok").allTextContents());
        assert.equal(path.length, c.steps);
        assert.equal(path.includes("<eos>"), c.eos);
        if (c.eos) assert.equal(path[path.length - 1], "<eos>");
        const chosen = bare(await page.locator("#decoding-steps td.chosen .ctok").allTextContents());
        assert.equal(chosen.includes("<eos>"), c.eos);
        assert.deepEqual(blocked, []);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });
  }
});
