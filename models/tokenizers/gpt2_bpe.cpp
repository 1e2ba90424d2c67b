#include "models/tokenizers/gpt2_bpe.h"

#include "engine/error.h"
#include "engine/io/utf8.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <queue>

namespace tinyformer {

namespace {

// --- rule 2: bytes as characters -------------------------------------------

// A byte that is a printable Latin-1 character stands for itself.
bool stands_for_itself(int byte) { return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE; }

// byte -> character, built once by the rule: the others count up from U+0100.
const std::array<char32_t, 256>& byte_table() {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> built{};
        char32_t next_other = 0x100;
        for (int byte = 0; byte < 256; ++byte)
            built[static_cast<size_t>(byte)] = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next_other++;
        return built;
    }();
    return table;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

// --- rule 1: the character classes -------------------------------------------

struct ClassRange {
    char32_t first, last;
    UnicodeClass kind;
};

constexpr ClassRange kClassRanges[] = {
#include "models/tokenizers/unicode_categories.inc"
};

// One decoded character of the text: its class and where it starts.
struct Character {
    UnicodeClass kind;
    char32_t code_point;
    size_t at;
};

}  // namespace

char32_t byte_character(uint8_t byte) { return byte_table()[byte]; }

int byte_of_character(char32_t character) {
    if (character < 0x100 && stands_for_itself(static_cast<int>(character))) return static_cast<int>(character);
    if (character < 0x100 || character >= 0x100 + 68) return -1;
    const auto& table = byte_table();
    for (int byte = 0; byte < 256; ++byte)
        if (table[static_cast<size_t>(byte)] == character) return byte;
    return -1;
}

std::string bytes_as_token(std::string_view bytes) {
    std::string token;
    for (char byte : bytes) append_utf8(token, byte_character(static_cast<uint8_t>(byte)));
    return token;
}

bool token_as_bytes(std::string_view token, std::string& bytes) {
    bytes.clear();
    for (size_t at = 0; at < token.size();) {
        const Utf8Character c = utf8_character(token, at);
        if (c.length == 0) return false;
        const int byte = byte_of_character(c.code_point);
        if (byte < 0) return false;
        bytes.push_back(static_cast<char>(byte));
        at += c.length;
    }
    return true;
}

UnicodeClass unicode_class(char32_t code_point) {
    // The last range that starts at or before the code point (binary search).
    const auto* end = std::end(kClassRanges);
    const auto* after = std::upper_bound(std::begin(kClassRanges), end, code_point,
                                         [](char32_t c, const ClassRange& range) { return c < range.first; });
    if (after == std::begin(kClassRanges)) return UnicodeClass::Other;
    const ClassRange& range = *(after - 1);
    return code_point <= range.last ? range.kind : UnicodeClass::Other;
}

std::vector<std::string_view> pretokenize(std::string_view text) {
    std::vector<Character> chars;
    for (size_t at = 0; at < text.size();) {
        const Utf8Character c = utf8_character(text, at);
        if (c.length == 0)
            fail("gpt2_bpe: the text is not valid UTF-8 at byte ", at, " of ", text.size(),
                 "; the GPT-2 tokenizer reads UTF-8 text");
        chars.push_back({unicode_class(c.code_point), c.code_point, at});
        at += c.length;
    }
    const size_t n = chars.size();
    auto kind = [&](size_t i) { return i < n ? chars[i].kind : UnicodeClass::Other; };
    auto is = [&](size_t i, char32_t c) { return i < n && chars[i].code_point == c; };
    // The end of the run of class `k` that starts at i.
    auto run_end = [&](size_t i, UnicodeClass k) {
        while (i < n && chars[i].kind == k) ++i;
        return i;
    };
    std::vector<std::string_view> pieces;
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        if (is(i, '\'') && (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd'))) {
            end = i + 2;  // 's 't 'm 'd
        } else if (is(i, '\'') && ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) ||
                                   (is(i + 1, 'l') && is(i + 2, 'l')))) {
            end = i + 3;  // 're 've 'll
        } else {
            // " ?X+" for X = letter, number, other: the space only when X follows it.
            const size_t start = is(i, ' ') && kind(i + 1) != UnicodeClass::Space ? i + 1 : i;
            const UnicodeClass k = kind(start);
            if (start < n && k != UnicodeClass::Space) {
                end = run_end(start, k);
            } else {
                // Whitespace at i: the run, less its last character when a non-space follows
                // and the run has two or more ("\s+(?!\S)"), else all of it ("\s+").
                const size_t run = run_end(i, UnicodeClass::Space);
                end = (run < n && run - i >= 2) ? run - 1 : run;
            }
        }
        const size_t from = chars[i].at, to = end < n ? chars[end].at : text.size();
        pieces.push_back(text.substr(from, to - from));
        i = end;
    }
    return pieces;
}

std::string bytes_label(std::string_view bytes) {
    std::string label;
    for (size_t at = 0; at < bytes.size();) {
        const Utf8Character c = utf8_character(bytes, at);
        const char32_t cp = c.code_point;
        if (c.length != 0 && cp == ' ') {
            label.append("\u2423");
        } else if (c.length != 0 && cp == '\n') {
            label.append("\u21B5");
        } else if (c.length != 0 && cp == '\t') {
            label.append("\u21E5");
        } else if (c.length == 0 || cp < 0x20 || cp == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned char>(bytes[at]));
            label.append(hex);
            at += 1;
            continue;
        } else {
            label.append(bytes.substr(at, c.length));
        }
        at += c.length;
    }
    return label;
}

// --- rule 3: merges ------------------------------------------------------------

BytePairEncoder::BytePairEncoder(const std::vector<std::string>& vocab, const std::vector<std::string>& merges,
                                 const std::string& where)
    : byte_id_(256, -1) {
    std::unordered_map<std::string_view, int64_t> ids;
    ids.reserve(vocab.size());
    merges_.reserve(merges.size());
    bytes_.resize(vocab.size());
    for (size_t id = 0; id < vocab.size(); ++id) {
        if (!token_as_bytes(vocab[id], bytes_[id]))
            fail(where, ": vocabulary entry ", id, " is no gpt2_bpe token (check_vocabulary)");
        ids.emplace(vocab[id], static_cast<int64_t>(id));
        if (bytes_[id].size() == 1) byte_id_[static_cast<uint8_t>(bytes_[id][0])] = static_cast<int64_t>(id);
    }
    if (merges.size() > static_cast<size_t>(INT32_MAX)) fail(where, " has ", merges.size(), " merges; at most 2^31-1");
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& merge = merges[rank];
        auto broken = [&](const std::string& rule) {
            fail(where, " entry ", rank, " ", rule, " (docs/FORMAT.md, vocabulary rules)");
        };
        const size_t space = merge.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
            merge.find(' ', space + 1) != std::string::npos)
            broken(text_of("\"", merge, "\" is not \"left right\": two tokens separated by exactly one space"));
        const std::string_view left = std::string_view(merge).substr(0, space);
        const std::string_view right = std::string_view(merge).substr(space + 1);
        const std::string merged = std::string(left).append(right);
        auto l = ids.find(left), r = ids.find(right), m = ids.find(merged);
        if (l == ids.end()) broken(text_of("\"", merge, "\": its left side \"", left, "\" is not in the vocabulary"));
        if (r == ids.end()) broken(text_of("\"", merge, "\": its right side \"", right, "\" is not in the vocabulary"));
        if (m == ids.end())
            broken(text_of("\"", merge, "\": the merged token \"", merged, "\" is not in the vocabulary"));
        auto [earlier, first_time] =
            merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), static_cast<int32_t>(m->second)});
        if (!first_time)
            broken(text_of("\"", merge, "\" is the same pair as entry ", earlier->second.rank,
                           "; no pair may be merged twice"));
    }
}

std::vector<int64_t> BytePairEncoder::encode_piece(std::string_view piece) const {
    // The symbols as a linked list over the piece's byte positions: a merge
    // keeps the left symbol (its id becomes the merged one) and unlinks the right.
    struct Symbol {
        int64_t id;
        int64_t prev, next;  // -1: none
        bool alive;
    };
    const auto n = static_cast<int64_t>(piece.size());
    std::vector<Symbol> symbols(piece.size());
    for (int64_t i = 0; i < n; ++i) {
        const auto byte = static_cast<uint8_t>(piece[static_cast<size_t>(i)]);
        if (byte_id_[byte] < 0) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", byte);
            fail("gpt2_bpe: the byte ", hex, " (byte ", i, " of the piece \"", bytes_label(piece),
                 "\") has no one-byte token in the vocabulary, so the text cannot be encoded");
        }
        symbols[static_cast<size_t>(i)] = {byte_id_[byte], i - 1, i + 1 < n ? i + 1 : -1, true};
    }
    // A candidate merge: the pair (left, its next) as it was when pushed.
    struct Candidate {
        int32_t rank;
        int64_t left, right, left_id, right_id;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : left > other.left;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto push_pair = [&](int64_t left) {
        if (left < 0) return;
        const int64_t right = symbols[static_cast<size_t>(left)].next;
        if (right < 0) return;
        const int64_t left_id = symbols[static_cast<size_t>(left)].id, right_id = symbols[static_cast<size_t>(right)].id;
        auto found = merges_.find(pair_key(left_id, right_id));
        if (found != merges_.end()) heap.push({found->second.rank, left, right, left_id, right_id});
    };
    auto still_there = [&](const Candidate& c) {
        const Symbol& left = symbols[static_cast<size_t>(c.left)];
        return left.alive && left.next == c.right && left.id == c.left_id &&
               symbols[static_cast<size_t>(c.right)].id == c.right_id;
    };
    for (int64_t i = 0; i + 1 < n; ++i) push_pair(i);
    std::vector<int64_t> merged_at;
    while (!heap.empty()) {
        // Every occurrence of the lowest-ranked pair, left to right (the heap
        // gives them in position order); the pairs they form are pushed after,
        // so a pair formed now waits for the next round, as in GPT-2's loop.
        const int32_t rank = heap.top().rank;
        merged_at.clear();
        while (!heap.empty() && heap.top().rank == rank) {
            const Candidate c = heap.top();
            heap.pop();
            if (!still_there(c)) continue;
            Symbol& left = symbols[static_cast<size_t>(c.left)];
            Symbol& right = symbols[static_cast<size_t>(c.right)];
            left.id = merges_.at(pair_key(c.left_id, c.right_id)).merged;
            left.next = right.next;
            if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = c.left;
            right.alive = false;
            merged_at.push_back(c.left);
        }
        for (int64_t at : merged_at) {
            if (!symbols[static_cast<size_t>(at)].alive) continue;
            push_pair(symbols[static_cast<size_t>(at)].prev);
            push_pair(at);
        }
    }
    std::vector<int64_t> ids;
    for (int64_t i = 0; i >= 0 && i < n; i = symbols[static_cast<size_t>(i)].next) ids.push_back(symbols[static_cast<size_t>(i)].id);
    return ids;
}

std::vector<int64_t> BytePairEncoder::encode(std::string_view text) const {
    std::vector<int64_t> ids;
    for (std::string_view piece : pretokenize(text)) {
        const std::vector<int64_t> piece_ids = encode_piece(piece);
        ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    return ids;
}

void check_merges(const std::vector<std::string>& merges, const std::vector<std::string>& vocab,
                  const std::string& where) {
    BytePairEncoder(vocab, merges, where);
}

}  // namespace tinyformer
