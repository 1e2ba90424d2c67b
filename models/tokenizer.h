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
// kind Whitespace (word level): the text is split on runs of whitespace.
//   encode("the cat") -> the ids of "the", "cat"
//   decode(ids)       -> the tokens joined with single spaces: "the cat"
//   A word outside the vocabulary becomes <unk> when the vocabulary has it
//   (counted in unknown_count), else it is an Error naming the word and its
//   position (its index among the words).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tinyformer {

enum class TokenizerKind { Char, Whitespace };

// "char" / "whitespace"; Error listing both for anything else.
TokenizerKind tokenizer_kind(const std::string& name);
const char* tokenizer_kind_name(TokenizerKind kind);

// "<" + one or more of [a-z0-9_] + ">".
bool is_special_token(const std::string& token);

// docs/FORMAT.md's vocabulary rules, the one place they are applied: at least
// one entry; no entry empty; no two equal; valid UTF-8 without a control
// character (C0 U+0000..U+001F, DEL, C1 U+0080..U+009F); kind Char: every
// non-special entry one code point; kind Whitespace: no non-special entry
// holds whitespace (space, tab, newline, CR, VT, FF: what encode splits on).
// Error for the first entry that breaks one, naming `where` (e.g.
// "model.safetensors: __metadata__ \"vocab\""), the entry's index, the rule,
// and the entry itself unless it holds a control character or invalid UTF-8
// (then the offending byte's offset and code point).
void check_vocabulary(const std::vector<std::string>& vocab, TokenizerKind kind, const std::string& where);

class Tokenizer {
public:
    // Error (check_vocabulary) for a vocabulary that breaks a rule.
    explicit Tokenizer(std::vector<std::string> vocab, TokenizerKind kind = TokenizerKind::Char);

    std::vector<int64_t> encode(const std::string& text, bool map_unknown = false, int64_t* unknown_count = nullptr) const;
    // Every character (Char) or word (Whitespace) must be an ordinary token:
    // never <unk>, even for a word-level vocabulary that has it (the prompt
    // suffix is read this way). Error naming the first that is not.
    std::vector<int64_t> encode_exactly(const std::string& text) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    const std::string& token(int64_t id) const;
    int64_t id_of(const std::string& token) const;  // Error if absent
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    int64_t size() const { return static_cast<int64_t>(vocab_.size()); }
    TokenizerKind kind() const { return kind_; }

private:
    std::vector<int64_t> encode_words(const std::string& text, bool exactly, int64_t* unknown_count) const;

    std::vector<std::string> vocab_;
    TokenizerKind kind_;
    std::map<std::string, int64_t> ids_;
};

}  // namespace tinyformer
