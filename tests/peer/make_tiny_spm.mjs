// Writes data/tokenizer/tiny-spm.safetensors: a tiny untrained decoder_only
// model (tests/peer/checkpoint.mjs) with a hand-made sentencepiece_bpe
// tokenizer laid out as llama2.c's tokenizer.bin is, for the docs'
// `tinyformer tokenize` examples (docs/TOKENIZERS.md).
//   node tests/peer/make_tiny_spm.mjs data/tokenizer/tiny-spm.safetensors
// Vocabulary: 0 <unk>, 1 <s>, 2 </s> (score 0; bos_id 1, eos_id 2), 3..258
// the byte pieces <0x00>..<0xFF> (id = byte + 3; score 0), then the single
// characters of CHARACTERS (score -100), then the pieces of MERGED with the
// scores -1, -2, ... in their order (the first merges first).
import { writeTokenizerCheckpoint } from "./checkpoint.mjs";

const CHARACTERS = [" ", "T", "a", "c", "e", "h", "m", "n", "o", "s", "t", ".", "é"];
const MERGED = [
  "at", "he", " t", " the", "The", " c", " cat", " s", " sat", "on", " on", " m", " mat", " The",
];

const vocab = ["<unk>", "<s>", "</s>"];
const scores = [0, 0, 0];
for (let byte = 0; byte < 256; ++byte) {
  vocab.push("<0x" + byte.toString(16).toUpperCase().padStart(2, "0") + ">");
  scores.push(0);
}
for (const character of CHARACTERS) {
  vocab.push(character);
  scores.push(-100);
}
MERGED.forEach((piece, i) => {
  vocab.push(piece);
  scores.push(-(i + 1));
});
const path = process.argv[2];
if (!path) {
  console.error("usage: node tests/peer/make_tiny_spm.mjs OUT.safetensors");
  process.exit(2);
}
writeTokenizerCheckpoint(path, { vocab, scores, tokenizer: "sentencepiece_bpe", bosId: 1, eosId: 2, maxLen: 64 });
