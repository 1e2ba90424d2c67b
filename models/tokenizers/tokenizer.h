// Tokenizer — text to token ids over a checkpoint's vocabulary
// (docs/FORMAT.md metadata "vocab": index = id; "tokenizer": the kind).
// A special token is exactly "<" + one or more of [a-z0-9_] + ">" (<pad>,
// <bos>, <eos>, <unk>, <sep>) and is never produced from text; nothing else
// is special ("<", "<3", "<=" are ordinary tokens, typed as they are).
// Every vocabulary obeys docs/FORMAT.md's "Vocabulary rules", applied by one
// function, check_vocabulary (the checkpoint loader and the constructor).
//
// kind Char (the default): every ordinary token is one (UTF-8) character.
//   encode("abc")     -> the ids of 'a', 'b', 'c'
//   decode(ids)       -> the tokens' strings joined, e.g. "cba" or "ab<unk>"
//   A character outside the vocabulary is an Error naming it and its
//   position, or, with map_unknown, becomes <unk> (counted in unknown_count).
//   A newline and a tab may be tokens of their own ("\n", "\t": a text's
//   characters, as in nanoGPT's shakespeare_char vocabulary; no other control
//   character may be a token), read and decoded as themselves. A control
//   character the vocabulary lacks is read as its picture from Unicode's
//   Control Pictures block when the vocabulary has that: "\n" -> the token
//   "\u240A", DEL -> "\u2421" (how `--visible-controls` stores a nanoGPT
//   vocabulary's "\n", and how files converted before "\n" was allowed
//   hold it: docs/FAMILIES.md); decode gives that picture back as it is.
// kind Whitespace (word level): the text is split on runs of whitespace.
//   encode("the cat") -> the ids of "the", "cat"
//   decode(ids)       -> the tokens joined with single spaces: "the cat"
//   A word outside the vocabulary becomes <unk> when the vocabulary has it
//   (counted in unknown_count), else it is an Error naming the word and its
//   position (its index among the words).
// kind Gpt2Bpe (GPT-2's byte-level BPE, models/tokenizers/gpt2_bpe.h): the vocabulary's
//   strings are byte-level tokens ("Ġthe" = the bytes " the") and `merges`
//   ("left right", rank order) say how bytes join into tokens.
//   encode("The cat") -> GPT-2's ids, e.g. 464 3797 with GPT-2's vocabulary
//   decode(ids)       -> the tokens' bytes joined: the exact text back (a
//                        cut in the middle of a character leaves a partial
//                        UTF-8 sequence: show it through label or the
//                        terminal text rule). No token is special, none
//                        unknown: a byte without its one-byte token is an Error.
// label(id) is how every view shows a token (pictures, the explorer, tables):
//   Char / Whitespace: the token as it is, a char vocabulary's "\n" and
//   "\t" as "↵" and "⇥" (a label is one line; bytes_label's signs);
//   Gpt2Bpe: its bytes, with a space
//   as "␣", a newline as "↵", a tab as "⇥" and a byte that is no whole UTF-8
//   character (or a control) as "<0xE2>" (bytes_label, models/tokenizers/gpt2_bpe.h);
//   SentencePieceBpe: a byte piece as it is ("<0xE2>"), any other piece by
//   bytes_label (" the" -> "␣the").
// kind SentencePieceBpe (llama2.c's tokenizer.bin, models/tokenizers/sentencepiece_bpe.h):
//   the vocabulary's strings are text pieces (" the", with a real space) and
//   byte pieces ("<0xE2>"); `scores` (one per piece) say which neighbours
//   merge first, the highest score.
//   encode("Hello") -> a dummy " " in front, then merges: " Hello" (one id
//                      with llama2.c's vocabulary, 15043)
//   decode(ids)       -> the pieces joined, byte pieces as raw bytes, the bos
//                        id (the config's bos_id) as nothing and the piece
//                        after it without its leading space. A character
//                        with neither a piece nor byte pieces is an Error, or
//                        <unk> with map_unknown when the vocabulary has it.
#pragma once

#include "models/tokenizers/gpt2_bpe.h"
#include "models/tokenizers/sentencepiece_bpe.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tinyformer {

enum class TokenizerKind { Char, Whitespace, Gpt2Bpe, SentencePieceBpe };

// "char" / "whitespace" / "gpt2_bpe" / "sentencepiece_bpe"; Error listing them for anything else.
TokenizerKind tokenizer_kind(const std::string& name);
const char* tokenizer_kind_name(TokenizerKind kind);

// "<" + one or more of [a-z0-9_] + ">".
bool is_special_token(const std::string& token);

// docs/FORMAT.md's vocabulary rules, the one place they are applied: at least
// one entry; no entry empty; no two equal; valid UTF-8 without a control
// character (C0 U+0000..U+001F, DEL, C1 U+0080..U+009F; kind Char's
// entries "\n" and "\t", a newline and a tab as tokens, excepted; kind
// SentencePieceBpe excepted: its pieces are text as tokenizer.bin has it,
// and llama2.c's holds "\n<s>\n", pieces ending in "\r" and C1 controls); kind Char: every
// non-special entry one code point; kind Whitespace: no non-special entry
// holds whitespace (space, tab, newline, CR, VT, FF: what encode splits on);
// kind Gpt2Bpe: every entry is made of characters that stand for bytes
// (models/tokenizers/gpt2_bpe.h, rule 2), and so no two entries stand for the same bytes.
// Error for the first entry that breaks one, naming `where` (e.g.
// "model.safetensors: __metadata__ \"vocab\""), the entry's index, the rule,
// and the entry itself unless it holds a control character or invalid UTF-8
// (then the offending byte's offset and code point).
void check_vocabulary(const std::vector<std::string>& vocab, TokenizerKind kind, const std::string& where);

class Tokenizer {
public:
    // Error (check_vocabulary) for a vocabulary that breaks a rule, or
    // (check_merges) merges that do, or (check_scores) scores that do;
    // merges only for kind Gpt2Bpe, scores (required) and bos_id (the id
    // decode treats as BOS, -1 for none) only for kind SentencePieceBpe.
    explicit Tokenizer(std::vector<std::string> vocab, TokenizerKind kind = TokenizerKind::Char,
                       const std::vector<std::string>& merges = {}, const std::vector<float>& scores = {},
                       int64_t bos_id = -1);

    std::vector<int64_t> encode(const std::string& text, bool map_unknown = false, int64_t* unknown_count = nullptr) const;
    // Every character (Char) or word (Whitespace) must be an ordinary token:
    // never <unk>, even for a word-level vocabulary that has it (the prompt
    // suffix is read this way). Error naming the first that is not.
    std::vector<int64_t> encode_exactly(const std::string& text) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    // Appends to `out` the text ids[i] adds to decode(ids[0..i]): decode(ids)
    // is these pieces for i = 0, 1, ... joined (decode is that loop), so text
    // made a token at a time is the same text. Error for an id out of range.
    void decode_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const;
    const std::string& token(int64_t id) const;
    // The token as a view shows it (above); Error for an id outside the vocabulary.
    std::string label(int64_t id) const;
    int64_t id_of(const std::string& token) const;  // Error if absent
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    int64_t size() const { return static_cast<int64_t>(vocab_.size()); }
    TokenizerKind kind() const { return kind_; }

private:
    std::vector<int64_t> encode_words(const std::string& text, bool exactly, int64_t* unknown_count) const;

    std::vector<std::string> vocab_;
    TokenizerKind kind_;
    std::map<std::string, int64_t> ids_;
    std::shared_ptr<const BytePairEncoder> bpe_;  // kind Gpt2Bpe only
    std::shared_ptr<const SentencePieceBpe> spm_;  // kind SentencePieceBpe only
};

}  // namespace tinyformer
