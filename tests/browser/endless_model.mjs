// A model that never stops, made inside the test from a toy checkpoint: the
// decoder-only ALiBi model (data/models/reverse-alibi.safetensors, no position
// table) with its config's eos_id taken out and max_len raised, so a greedy
// decoding ends only at the request's max_new_tokens (models/decoding.h).
// The browser tests (live_worker.test.mjs) and the page benchmark
// (bench_live.mjs) run long generations on it; nothing large is committed.
//   endlessModel(path)  writes the checkpoint to PATH; returns PATH
//   endlessPage(dir)    writes DIR/endless.safetensors and its live page
//                       DIR/live-endless.html (build/tinyformer explore); returns both paths
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const ENDLESS_SOURCE = "data/models/reverse-alibi.safetensors";
export const ENDLESS_MAX_LEN = 1 << 20;

export function endlessModel(path) {
  const bytes = readFileSync(ENDLESS_SOURCE);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8"));
  const config = JSON.parse(header.__metadata__.config);
  if (config.pos_encoding !== "alibi" || config.eos_id === undefined)
    throw new Error(`${ENDLESS_SOURCE}: expected an ALiBi model with an eos_id, got ${header.__metadata__.config}`);
  delete config.eos_id;
  config.max_len = ENDLESS_MAX_LEN;
  header.__metadata__.config = JSON.stringify(config);
  // The header padded with spaces to a multiple of 8, as a writer aligns it.
  let text = Buffer.from(JSON.stringify(header), "utf8");
  text = Buffer.concat([text, Buffer.alloc((8 - (text.length % 8)) % 8, " ")]);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(text.length));
  writeFileSync(path, Buffer.concat([length, text, bytes.subarray(8 + headerLength)]));
  return path;
}

export function endlessPage(dir) {
  mkdirSync(dir, { recursive: true });
  const model = endlessModel(join(dir, "endless.safetensors"));
  const page = join(dir, "live-endless.html");
  execFileSync("build/tinyformer", ["explore", model, "abc", "--html", page], { stdio: ["ignore", "ignore", "pipe"] });
  return { model, page };
}
