// Tokenizer — text to token ids over a checkpoint's vocabulary
// (docs/FORMAT.md metadata "vocab": index = id; "tokenizer": the kind).
// Special tokens are written in angle brackets (<pad>, <bos>, <eos>, <unk>)
// and are never produced from text.
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

class Tokenizer {
public:
    explicit Tokenizer(std::vector<std::string> vocab, TokenizerKind kind = TokenizerKind::Char);

    std::vector<int64_t> encode(const std::string& text, bool map_unknown = false, int64_t* unknown_count = nullptr) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    const std::string& token(int64_t id) const;
    int64_t id_of(const std::string& token) const;  // Error if absent
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    int64_t size() const { return static_cast<int64_t>(vocab_.size()); }
    TokenizerKind kind() const { return kind_; }

private:
    std::vector<int64_t> encode_words(const std::string& text, int64_t* unknown_count) const;

    std::vector<std::string> vocab_;
    TokenizerKind kind_;
    std::map<std::string, int64_t> ids_;
};

}  // namespace tinyformer
