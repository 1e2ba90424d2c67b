// Tokens of the page's engine against the native CLI's, compared where the
// logits decide them (the JavaScript twin of tests/greedy_margin.h).
//
// The page's engine multiplies with the project's own blocked gemm
// (WebAssembly, -DTINYFORMER_OWN_GEMM), the native one with OpenBLAS, whose
// summation order depends on the CPU's core: their logits are not the same
// floats, so their tokens are equal only where no near tie can tip them.
//
// The reference A is the page's teacher-forced pass over its own decoded
// tokens (a live result's `logits`, docs/FORMAT.md section 4): the rows
// predicting each target token and then <eos>. The two decodings' step
// logits lie within b of A's row:
//   - native `run`'s step t, N_t: |N_t - A_t| <= |N_t - F_t| + |F_t - A_t|,
//     F the native `forward` on the same inputs. The first is the KV cache
//     against one whole pass, <= 1e-5 (tests/test_stepper.cpp asserts it);
//     the second <= LOGITS_TOLERANCE * max(1, |F|) (native.mjs), which the
//     caller asserts on this very result (`check`) before comparing tokens;
//   - the page's own step t, P_t: the same KV cache against the same
//     engine's whole pass, <= 1e-5.
// So b(x) = 1e-5 + LOGITS_TOLERANCE * max(1, |x|) (1 + LOGITS_TOLERANCE),
// the last factor turning |F| into |A|, with x the larger in size of the two
// logits that matter.
//
// Greedy: if A's largest logit leads its second by more than 2 b, every
// computation within b of A has A's argmax (the leader loses at most b, the
// runner-up gains at most b): the page and native pick A's argmax. Each
// choice is fed back, so step t is decided only when every step before it
// was; the tokens must agree over the decided steps, and in full when every
// step is decided.
//
// Sampling (models/decoding.h steps 1-7, uniforms replayed: a row decoded
// alone draws Random(seed)'s uniforms in turn): logits within b move each
// probability ratio by a factor within exp(+-2 b / T), each running sum of
// q and the edges of the drawn token's interval by at most
// slack = exp(2 b / T) - 1. A draw is decided when no other logit is within
// 2 b of the drawn token's (the order of step 3 keeps it in place), top-k's
// k-th and (k+1)-th logits are more than 2 b apart, no running sum of top-p's
// renormalised p lies within the slack of top_p, and u lies further than the
// slack from both edges of its interval.
import { LOGITS_TOLERANCE } from "./native.mjs";

export const CACHED_AGAINST_PASS = 1e-5;
export const bound = (x) => CACHED_AGAINST_PASS + LOGITS_TOLERANCE * Math.max(1, Math.abs(x)) * (1 + LOGITS_TOLERANCE);

// The rows of a B = 1 result's logits that predict each target token and
// then <eos>: the last target_ids.length + 1 positions of its sequence
// (decoder-only: input + target; encoder-decoder: [<bos>] + target).
export function predictingRows(rowResult) {
  const real = rowResult.logits;
  const steps = rowResult.target_ids.length + 1;
  if (real.length < steps) throw new Error(`${real.length} logits rows for ${steps} steps`);
  return real.slice(real.length - steps);
}

// The largest logit's index, and its lead over the second largest (Infinity for one logit).
function topTwo(row) {
  let first = 0, second = -1;
  for (let i = 1; i < row.length; ++i) {
    if (row[i] > row[first]) [second, first] = [first, i];
    else if (second < 0 || row[i] > row[second]) second = i;
  }
  return { token: first, gap: second < 0 ? Infinity : row[first] - row[second], runnerUp: second < 0 ? row[first] : row[second] };
}

// Greedy: {steps, decided, smallestMargin} over ROWS (predictingRows), and
// A's argmax at each decided step (`tokens`).
export function greedyDecided(rows) {
  const result = { steps: rows.length, decided: 0, smallestMargin: Infinity, tokens: [] };
  for (const row of rows) {
    const { token, gap, runnerUp } = topTwo(row);
    result.smallestMargin = Math.min(result.smallestMargin, gap);
    if (!(gap > 2 * bound(Math.max(Math.abs(row[token]), Math.abs(runnerUp))))) break;
    ++result.decided;
    result.tokens.push(token);
  }
  return result;
}

// engine/random.h's SplitMix64, its uniform in [0, 1): (next >> 11) * 2^-53.
export function* uniforms(seed) {
  const mask = (1n << 64n) - 1n;
  let state = BigInt(seed) & mask;
  for (;;) {
    state = (state + 0x9E3779B97F4A7C15n) & mask;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & mask;
    z ^= z >> 31n;
    yield Number(z >> 11n) * 2 ** -53;
  }
}

// Sampling with DECODE ({temperature, top_k, top_p, seed}) over ROWS, the
// draws replayed: {steps, decided, smallestMargin, tokens} as greedyDecided,
// tokens being the decided draws from A.
export function sampledDecided(rows, decode) {
  const T = decode.temperature ?? 1, topP = decode.top_p ?? 1;
  const result = { steps: rows.length, decided: 0, smallestMargin: Infinity, tokens: [] };
  const draws = uniforms(decode.seed ?? 0);
  for (const row of rows) {
    const u = draws.next().value;
    const V = row.length;
    const k = !decode.top_k ? V : Math.min(decode.top_k, V);
    // Steps 1-6: the order (largest first, equal logits by smaller id), top-k, p, top-p, q.
    const order = [...row.keys()].sort((a, b) => (row[a] !== row[b] ? row[b] - row[a] : a - b));
    const leader = row[order[0]];
    const p = order.map((i) => Math.exp((row[i] - leader) / T));
    const total = p.reduce((s, x) => s + x, 0);
    let kept = p.slice(0, k).map((x) => x / total);
    const keptMass = kept.reduce((s, x) => s + x, 0);
    let sameKept = k === V || row[order[k - 1]] - row[order[k]] > 2 * bound(Math.max(Math.abs(row[order[k - 1]]), Math.abs(row[order[k]]))),
      largest = Math.max(Math.abs(leader), Math.abs(row[order[V - 1]]));
    const b = bound(largest), slack = Math.expm1(2 * b / T) + 1e-12;
    if (topP < 1) {
      let running = 0, count = 0;
      for (const x of kept) if (Math.abs((running += x / keptMass) - topP) <= slack) sameKept = false;
      running = 0;
      while (count < kept.length) {
        running += kept[count++] / keptMass;
        if (running >= topP) break;
      }
      kept = kept.slice(0, count);
    }
    const mass = kept.reduce((s, x) => s + x, 0);
    const q = kept.map((x) => x / mass);
    // Step 7: the interval [before, before + q) holding u.
    let drawn = 0, before = 0;
    while (drawn + 1 < q.length && !(u < before + q[drawn])) before += q[drawn++];
    const token = order[drawn];
    const nearest = Math.min(...Array.from(row, (x, i) => (i === token ? Infinity : Math.abs(x - row[token]))));  // (a page row may be a Float32Array: its map would round to float32)
    const margin = Math.min(u - before, before + q[drawn] - u);
    result.smallestMargin = Math.min(result.smallestMargin, margin);
    if (!(margin > slack && nearest > 2 * b && sameKept)) break;
    ++result.decided;
    result.tokens.push(token);
  }
  return result;
}

// The decided tokens of DECIDED (greedyDecided / sampledDecided) against the
// page's (PAGE, its target_ids) and native's (NATIVE): each is A's choice at
// every decided step, and, when every step is decided, the two are equal in
// full. Returns a message for an assertion, or "" when they agree.
export function disagreement(decided, page, native) {
  // Step t chooses token t; step page.length chooses <eos> (or is past the limit).
  const n = Math.min(decided.decided, page.length);
  const a = decided.tokens.slice(0, n);
  const say = `${decided.decided} of ${decided.steps} steps decided (smallest margin ${decided.smallestMargin.toExponential(2)})`;
  if (JSON.stringify(page.slice(0, n)) !== JSON.stringify(a)) return `the page's tokens ${JSON.stringify(page)} are not A's decided ${JSON.stringify(a)}; ${say}`;
  if (JSON.stringify(native.slice(0, n)) !== JSON.stringify(a)) return `native ${JSON.stringify(native)} differs from the page's ${JSON.stringify(page)} at a decided step; ${say}`;
  if (decided.decided === decided.steps && JSON.stringify(native) !== JSON.stringify(page))
    return `native ${JSON.stringify(native)} differs from the page's ${JSON.stringify(page)} with every step decided; ${say}`;
  return "";
}

// A running count of decided and compared steps, for "enough were decided".
export class DecidedCount {
  constructor() { this.decided = 0; this.steps = 0; }
  add(decided) { this.decided += decided.decided; this.steps += decided.steps; return decided; }
  fraction() { return this.steps ? this.decided / this.steps : 0; }
  toString() { return `${this.decided} of ${this.steps} steps decided`; }
}
