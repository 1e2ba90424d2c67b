// GPT-2 byte-level BPE — text to token ids the way GPT-2 tokenizes
// (docs/FORMAT.md, tokenizer "gpt2_bpe": metadata "vocab" and "merges").
// Three steps, each in one function below:
//
// 1. Pre-tokenizer (pretokenize): the text is cut into pieces by GPT-2's
//    pattern, read at each position as its first alternative that matches
//    (alternatives tried in this order, the longest run each time):
//      's 't 're 've 'm 'll 'd     a contraction (lower case, U+0027 only)
//      optional ' ' + letters      " the", "cat", " été"
//      optional ' ' + numbers      " 1979", "42"
//      optional ' ' + others       " ...", "!\"" (neither space, letter nor number)
//      a whitespace run not followed by a non-space:  a run at the end of the
//                                  text whole; a run of n >= 2 before a word
//                                  gives its first n-1 characters (the last
//                                  space goes with the word: "a  b" -> "a",
//                                  " ", " b")
//      a whitespace run            (a single whitespace before a non-space)
//    The pattern as a regular expression, for reference:
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//    Letter = \p{L}, number = \p{N}, space = JavaScript's \s, from the table
//    models/tokenizers/unicode_categories.inc (tools/python/make_unicode_table.py,
//    Unicode 14.0). Known differences from the peer test's gpt-3-encoder
//    (node 20, Unicode 17.0): the 13,916 code points that became letters and
//    the 133 that became numbers in Unicode 15.0-17.0 (e.g. CJK Extension H
//    and I) are "other" here; \s is the same set. GPT-2's own encoder (Python
//    `regex`) reads U+0085 as whitespace and U+FEFF as not; JavaScript, and
//    so this table, the other way round.
//
// 2. Bytes as characters (byte_character): every piece's UTF-8 bytes are
//    written one character per byte, so that a token is printable text:
//      the 188 bytes that are printable Latin-1 characters, '!'..'~' (0x21..0x7E),
//      0xA1..0xAC and 0xAE..0xFF, stand for themselves (byte 0x41 -> "A");
//      the other 68 bytes (0x00..0x20, 0x7F..0xA0, 0xAD), in increasing order,
//      stand for U+0100, U+0101, ... U+0143 (space 0x20 -> U+0120 "Ġ",
//      newline 0x0A -> U+010A "Ċ").
//    A token string of the vocabulary is the piece of text it stands for,
//    written this way: "Ġthe" = the bytes " the".
//
// 3. Merges (BytePairEncoder::encode): a piece starts as one symbol per byte;
//    the merges are ranked (their order in "merges", rank 0 first); while
//    two neighbouring symbols form a ranked pair, every occurrence of the
//    lowest-ranked pair present is merged into one symbol, left to right,
//    never overlapping ("a a a" with the merge "a a" -> "aa", "a"). The
//    symbols left are the piece's tokens. Cost: a heap of the neighbouring
//    pairs, O(n log n) for a piece of n bytes (a 100 kB word is fine).
//
// decode is the exact inverse: each id's token back to its bytes, joined.
// The bytes of a few tokens may be part of a UTF-8 character (GPT-2 splits
// rare characters into byte tokens); a view shows them through label().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tinyformer {

// The character that stands for `byte` (rule 2 above): 'A' for 0x41, U+0120 for 0x20.
char32_t byte_character(uint8_t byte);
// The byte a character stands for, or -1 when it stands for none: 'A' -> 0x41,
// U+0101 -> 0x01, U+0144 -> -1.
int byte_of_character(char32_t character);
// Bytes -> the token string (UTF-8); the token string -> bytes. The second
// returns false for a string that is not valid UTF-8 or holds a character
// that stands for no byte (then `bytes` is unspecified).
std::string bytes_as_token(std::string_view bytes);
bool token_as_bytes(std::string_view token, std::string& bytes);

// The character classes of the pre-tokenizer (the table's classes).
enum class UnicodeClass { Letter, Number, Space, Other };
UnicodeClass unicode_class(char32_t code_point);

// Rule 1: the pieces of `text`, as views into it, in order; together they
// are the whole text. Error for text that is not valid UTF-8 (naming the
// byte offset).
std::vector<std::string_view> pretokenize(std::string_view text);

// A token's bytes for a label (pictures, the explorer, tokenize): valid
// UTF-8 as it is, except space -> "␣" (U+2423), newline -> "↵" (U+21B5),
// tab -> "⇥" (U+21E5); any other control byte (C0, DEL) and each byte that
// is not part of a whole UTF-8 character -> "<0xNN>" (upper-case hex).
//   bytes_label(" the") == "␣the", bytes_label("\xE2\x80") == "<0xE2><0x80>"
std::string bytes_label(std::string_view bytes);

class BytePairEncoder {
public:
    // `vocab`: the token strings (index = id), obeying check_vocabulary for
    // gpt2_bpe; `merges`: "left right" in rank order (check_merges). Error
    // naming `where` for a merge that breaks a rule.
    BytePairEncoder(const std::vector<std::string>& vocab, const std::vector<std::string>& merges,
                    const std::string& where);

    // Text -> ids (rules 1-3). Error for invalid UTF-8, or a byte whose
    // one-byte token is not in the vocabulary (naming the byte and where).
    std::vector<int64_t> encode(std::string_view text) const;
    // One piece's bytes -> ids (rules 2-3 only).
    std::vector<int64_t> encode_piece(std::string_view piece) const;
    // The bytes token `id` stands for (id must be in range: the caller's check).
    const std::string& bytes(int64_t id) const { return bytes_[static_cast<size_t>(id)]; }

private:
    struct Merge {
        int32_t rank;
        int32_t merged;
    };
    static uint64_t pair_key(int64_t left, int64_t right) {
        return (static_cast<uint64_t>(left) << 32) | static_cast<uint64_t>(right);
    }
    std::vector<std::string> bytes_;               // id -> bytes
    std::vector<int64_t> byte_id_;                 // byte -> id of its one-byte token, -1 when none
    std::unordered_map<uint64_t, Merge> merges_;   // (left id, right id) -> rank, merged id
};

// The "merges" rules (docs/FORMAT.md, vocabulary rules), the one place they
// are applied: each entry is "left right" (exactly one space, both sides
// non-empty); both sides and their concatenation are tokens of `vocab`; no
// pair appears twice. Error naming `where`, the entry's index and the rule.
void check_merges(const std::vector<std::string>& merges, const std::vector<std::string>& vocab,
                  const std::string& where);

}  // namespace tinyformer
