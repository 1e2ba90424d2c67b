// Writes data/tokenizer/tiny-bpe.safetensors: a tiny untrained decoder_only
// model (tests/peer/checkpoint.mjs) with a hand-made gpt2_bpe tokenizer, for
// the docs' `tinyformer tokenize` examples and tests/test_gpt2_bpe.cpp.
//   node tests/peer/make_tiny_bpe.mjs data/tokenizer/tiny-bpe.safetensors
// Vocabulary: ids 0..255 are the 256 one-byte tokens in byte order (id = the
// byte: 32 is "Ġ", a space; 84 is "T"), then one token per merge, in merge
// order: 256 "Ġt", 257 "he", 258 "Ġthe", ... (the MERGES list below).
import { writeTokenizerCheckpoint } from "./checkpoint.mjs";

// GPT-2's byte -> character rule (models/tokenizers/gpt2_bpe.h, rule 2).
function byteCharacter(byte) {
  const itself = (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || byte >= 0xae;
  if (itself) return String.fromCharCode(byte);
  let other = 0;
  for (let b = 0; b < byte; ++b)
    if (!((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae)) ++other;
  return String.fromCharCode(0x100 + other);
}

const MERGES = [
  "Ġ t", "h e", "Ġt he", "T he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at", "o n", "Ġ on", "Ġ m", "Ġm at", "i n",
  "Ġ in", "Ġin to", "t o", "Ġ Ġ",
];

const vocab = [];
for (let byte = 0; byte < 256; ++byte) vocab.push(byteCharacter(byte));
for (const merge of MERGES) vocab.push(merge.replace(" ", ""));
const path = process.argv[2];
if (!path) {
  console.error("usage: node tests/peer/make_tiny_bpe.mjs OUT.safetensors");
  process.exit(2);
}
writeTokenizerCheckpoint(path, { vocab, merges: MERGES, maxLen: 64 });
