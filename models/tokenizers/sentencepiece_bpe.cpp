#include "models/tokenizers/sentencepiece_bpe.h"

#include "engine/error.h"
#include "engine/memory/available.h"
#include "engine/io/utf8.h"
#include "models/tokenizers/gpt2_bpe.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <queue>

namespace tinyformer {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;  // lower case is not a byte piece's spelling
}

// A character of the text for an error message: "'é' (U+00E9, bytes C3 A9)";
// a byte that starts no character: "the byte 0x80 (no valid UTF-8 character)".
std::string describe(std::string_view text, size_t at, const Utf8Character& character) {
    char buffer[32];
    if (character.length == 0) {
        std::snprintf(buffer, sizeof buffer, "0x%02X", static_cast<unsigned char>(text[at]));
        return text_of("the byte ", buffer, " (it starts no valid UTF-8 character)");
    }
    std::string described = "'";
    described.append(text.substr(at, character.length)).append("' (");
    std::snprintf(buffer, sizeof buffer, "U+%04X, bytes", static_cast<unsigned>(character.code_point));
    described.append(buffer);
    for (size_t i = 0; i < character.length; ++i) {
        std::snprintf(buffer, sizeof buffer, " %02X", static_cast<unsigned char>(text[at + i]));
        described.append(buffer);
    }
    return described.append(")");
}

// The ids of `texts` in byte order (stable: equal texts keep their id order).
// A merge sort: each text takes part in O(log V) comparisons, each costing at
// most its length, so B bytes of V texts cost O((B + V) log V).
std::vector<int32_t> in_byte_order(const std::vector<std::string>& texts) {
    std::vector<int32_t> order(texts.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return texts[static_cast<size_t>(a)] < texts[static_cast<size_t>(b)];
    });
    return order;
}

// For every text, the longest proper prefix of it that is one of `texts`
// (-1: none), from the byte order alone: the texts that are prefixes of one
// text come before it, and every text between such a prefix and it starts
// with that prefix too; so walking the order, `chain` (the texts that are
// prefixes of the current one, shortest first) only loses the ones longer
// than what the next text has in common with the current one. Each text is
// compared with its neighbour once: O(B).
std::vector<int32_t> longest_proper_prefixes(const std::vector<std::string>& texts, const std::vector<int32_t>& order) {
    std::vector<int32_t> parent(texts.size(), -1), chain;
    for (size_t i = 0; i < order.size(); ++i) {
        const std::string& text = texts[static_cast<size_t>(order[i])];
        if (i > 0) {
            const std::string& previous = texts[static_cast<size_t>(order[i - 1])];
            const size_t most = std::min(previous.size(), text.size());
            size_t common = 0;
            while (common < most && previous[common] == text[common]) ++common;
            while (!chain.empty() && texts[static_cast<size_t>(chain.back())].size() > common) chain.pop_back();
        }
        if (!chain.empty()) parent[static_cast<size_t>(order[i])] = chain.back();
        chain.push_back(order[i]);
    }
    return parent;
}

}  // namespace

int byte_piece_value(std::string_view piece) {
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    const int high = hex_digit(piece[3]), low = hex_digit(piece[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
}

std::string byte_piece_name(uint8_t byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    return name;
}

void check_scores(const std::vector<float>& scores, size_t vocab_size, const std::string& where) {
    if (scores.size() != vocab_size)
        fail(where, " has ", scores.size(), " scores but the vocabulary has ", vocab_size,
             " pieces; give one score per piece, in id order (docs/FORMAT.md)");
    for (size_t index = 0; index < scores.size(); ++index)
        if (!std::isfinite(scores[index]))
            fail(where, " entry ", index, " is ", scores[index], "; a score is a finite float32 (docs/FORMAT.md)");
}

SentencePieceBpe::SentencePieceBpe(const std::vector<std::string>& vocab, std::vector<float> scores, int64_t bos_id,
                                   const std::string& where)
    : pieces_(vocab), scores_(std::move(scores)), byte_of_piece_(vocab.size(), -1), byte_piece_id_(256, -1),
      bos_id_(bos_id) {
    check_scores(scores_, pieces_.size(), where + " \"scores\"");
    if (pieces_.size() > static_cast<size_t>(INT32_MAX))
        fail(where, ": the vocabulary has ", pieces_.size(), " pieces; at most 2^31 - 1");
    by_text_ = in_byte_order(pieces_);
    // Equal pieces are neighbours in byte order; the first later copy (in id order) is named.
    size_t copy = pieces_.size();
    for (size_t i = 1; i < by_text_.size(); ++i)
        if (pieces_[static_cast<size_t>(by_text_[i])] == pieces_[static_cast<size_t>(by_text_[i - 1])])
            copy = std::min(copy, static_cast<size_t>(by_text_[i]));
    if (copy < pieces_.size())
        fail(where, ": vocabulary entry ", copy, " is a second copy of a piece (check_vocabulary)");
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const int byte = byte_piece_value(pieces_[id]);
        byte_of_piece_[id] = byte;
        if (byte >= 0) byte_piece_id_[static_cast<size_t>(byte)] = static_cast<int64_t>(id);
    }
    make_pair_table(where);
}

void SentencePieceBpe::make_pair_table(const std::string& where) {
    const std::vector<int32_t> prefix_of = longest_proper_prefixes(pieces_, by_text_);
    std::vector<std::string> reversed(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id) reversed[id].assign(pieces_[id].rbegin(), pieces_[id].rend());
    const std::vector<int32_t> suffix_of = longest_proper_prefixes(reversed, in_byte_order(reversed));
    reversed = {};
    // c's splits: a prefix a and a suffix b of c, both pieces, with
    // len(a) + len(b) == len(c). The prefixes come longest first, so the
    // suffix each needs comes shortest first: one pass over both chains.
    std::vector<int32_t> suffixes;
    auto each_split = [&](auto&& visit) {
        for (size_t c = 0; c < pieces_.size(); ++c) {
            suffixes.clear();
            for (int32_t b = suffix_of[c]; b >= 0; b = suffix_of[static_cast<size_t>(b)]) suffixes.push_back(b);
            const size_t length = pieces_[c].size();
            auto b = suffixes.rbegin();  // shortest first
            for (int32_t a = prefix_of[c]; a >= 0 && b != suffixes.rend(); a = prefix_of[static_cast<size_t>(a)]) {
                const size_t wanted = length - pieces_[static_cast<size_t>(a)].size();
                while (b != suffixes.rend() && pieces_[static_cast<size_t>(*b)].size() < wanted) ++b;
                if (b != suffixes.rend() && pieces_[static_cast<size_t>(*b)].size() == wanted)
                    visit(Pair{a, *b, static_cast<int32_t>(c)});
            }
        }
    };
    size_t count = 0;
    each_split([&](const Pair&) { ++count; });
    require_available(static_cast<double>(count) * sizeof(Pair),
                      text_of(where, " the sentencepiece_bpe pair table (", count, " pieces that are two pieces joined) needs ",
                              count * sizeof(Pair), " bytes of memory"));
    pairs_.reserve(count);
    each_split([&](const Pair& pair) { pairs_.push_back(pair); });
    std::sort(pairs_.begin(), pairs_.end(), [](const Pair& x, const Pair& y) {
        return x.left != y.left ? x.left < y.left : x.right < y.right;
    });
    // Where each left piece's entries start (pairs_from_[V]: the end).
    pairs_from_.assign(pieces_.size() + 1, 0);
    for (const Pair& pair : pairs_) ++pairs_from_[static_cast<size_t>(pair.left) + 1];
    std::partial_sum(pairs_from_.begin(), pairs_from_.end(), pairs_from_.begin());
}

int64_t SentencePieceBpe::find_piece(std::string_view text) const {
    auto found = std::lower_bound(by_text_.begin(), by_text_.end(), text, [&](int32_t id, std::string_view wanted) {
        return std::string_view(pieces_[static_cast<size_t>(id)]) < wanted;
    });
    return found != by_text_.end() && pieces_[static_cast<size_t>(*found)] == text ? *found : -1;
}

// --- steps 1-3: dummy prefix, code points, byte fallback ----------------------

std::vector<int64_t> SentencePieceBpe::initial_symbols(std::string_view text, int64_t unk_id,
                                                       int64_t* unknown_count) const {
    std::vector<int64_t> symbols;
    if (text.empty()) return symbols;
    // Step 1: the dummy " ", read like any character of the text (it is
    // position "-1" in messages: the text's own characters count from 0).
    const std::string prefixed = std::string(" ").append(text);
    symbols.reserve(prefixed.size());
    size_t character_index = 0;
    for (size_t at = 0; at < prefixed.size(); ++character_index) {
        const Utf8Character character = utf8_character(prefixed, at);
        const size_t length = character.length == 0 ? 1 : character.length;  // a byte of invalid UTF-8: alone
        // Step 2: the character as a piece.
        if (character.length != 0) {
            const int64_t id = find_piece(std::string_view(prefixed).substr(at, length));
            if (id >= 0) {
                symbols.push_back(id);
                at += length;
                continue;
            }
        }
        // Step 3: its bytes as byte pieces, all of them or none.
        bool every_byte = true;
        for (size_t i = 0; i < length; ++i)
            every_byte = every_byte && byte_piece_id_[static_cast<unsigned char>(prefixed[at + i])] >= 0;
        if (every_byte) {
            for (size_t i = 0; i < length; ++i)
                symbols.push_back(byte_piece_id_[static_cast<unsigned char>(prefixed[at + i])]);
        } else if (unk_id >= 0) {
            symbols.push_back(unk_id);
            if (unknown_count) ++*unknown_count;
        } else {
            size_t missing = 0;
            while (byte_piece_id_[static_cast<unsigned char>(prefixed[at + missing])] >= 0) ++missing;
            const std::string what = at == 0 ? std::string("the dummy prefix ' ' (U+0020, bytes 20)")
                                             : describe(prefixed, at, character);
            fail("sentencepiece_bpe: ", what,
                 at == 0 ? std::string(" put before the text")
                         : text_of(" at character ", character_index - 1, " of the text (byte ", at - 1, ")"),
                 " is no piece of the vocabulary, and its byte piece ",
                 byte_piece_name(static_cast<uint8_t>(prefixed[at + missing])),
                 " is missing too, so the text cannot be encoded (a vocabulary with all 256 byte pieces "
                 "<0x00>..<0xFF> encodes every text)");
        }
        at += length;
    }
    return symbols;
}

// --- step 4: merges ---------------------------------------------------------------

int64_t SentencePieceBpe::joined_by_string(int64_t left, int64_t right, std::string& buffer, Work* work) const {
    buffer.assign(pieces_[static_cast<size_t>(left)]).append(pieces_[static_cast<size_t>(right)]);
    if (work) work->piece_bytes += static_cast<int64_t>(buffer.size());
    return find_piece(buffer);
}

int64_t SentencePieceBpe::joined(int64_t left, int64_t right, Work* work) const {
    // Binary search of left's entries of the pair table for right.
    size_t low = pairs_from_[static_cast<size_t>(left)], high = pairs_from_[static_cast<size_t>(left) + 1];
    const size_t end = high;
    while (low < high) {
        if (work) ++work->table_probes;
        const size_t middle = low + (high - low) / 2;
        const Pair& pair = pairs_[middle];
        if (pair.right < right) low = middle + 1;
        else high = middle;
    }
    return low < end && pairs_[low].right == right ? pairs_[low].joined : -1;
}

std::vector<int64_t> SentencePieceBpe::merge_reference(std::vector<int64_t> symbols, Work* work) const {
    std::string buffer;
    while (true) {
        // Scan every neighbouring pair; keep the first one of the best score.
        int64_t best_id = -1;
        size_t best_at = 0;
        for (size_t i = 0; i + 1 < symbols.size(); ++i) {
            const int64_t id = joined_by_string(symbols[i], symbols[i + 1], buffer, work);
            if (id >= 0 && (best_id < 0 || scores_[static_cast<size_t>(id)] > scores_[static_cast<size_t>(best_id)])) {
                best_id = id;
                best_at = i;
            }
        }
        if (best_id < 0) return symbols;
        symbols[best_at] = best_id;
        symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
    }
}

std::vector<int64_t> SentencePieceBpe::merge(std::vector<int64_t> symbols, Work* work) const {
    // The symbols as a linked list over their starting positions: a merge
    // keeps the left symbol (its id becomes the joined piece) and unlinks the
    // right one, so positions keep their left-to-right order.
    struct Symbol {
        int64_t id;
        int64_t prev, next;  // -1: none
        bool alive;
    };
    const auto n = static_cast<int64_t>(symbols.size());
    std::vector<Symbol> list(symbols.size());
    for (int64_t i = 0; i < n; ++i) list[static_cast<size_t>(i)] = {symbols[static_cast<size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, true};
    // A pair (left, its next) as it was when pushed; the heap's top is the
    // highest score, of equal scores the leftmost. It still stands when left
    // is alive, right is still its next, and right's own next is unchanged:
    // a symbol's id only changes when it merges with its next, which unlinks
    // that next for good (so left.id changed <=> left.next moved on, and
    // right.id changed <=> right.next moved on).
    struct Candidate {
        float score;
        int32_t joined_id;
        int64_t left, right, right_next;
    };
    auto comes_later = [work](const Candidate& a, const Candidate& b) {
        if (work) ++work->heap_comparisons;
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    };
    std::priority_queue<Candidate, std::vector<Candidate>, decltype(comes_later)> heap(comes_later);
    auto push_pair = [&](int64_t left) {
        if (left < 0) return;
        const int64_t right = list[static_cast<size_t>(left)].next;
        if (right < 0) return;
        const int64_t left_id = list[static_cast<size_t>(left)].id, right_id = list[static_cast<size_t>(right)].id;
        const int64_t id = joined(left_id, right_id, work);
        if (id >= 0)
            heap.push({scores_[static_cast<size_t>(id)], static_cast<int32_t>(id), left, right,
                       list[static_cast<size_t>(right)].next});
    };
    for (int64_t i = 0; i + 1 < n; ++i) push_pair(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        Symbol& left = list[static_cast<size_t>(c.left)];
        Symbol& right = list[static_cast<size_t>(c.right)];
        // Gone (the right symbol was merged away) or changed (either one merged since).
        if (!left.alive || left.next != c.right || right.next != c.right_next) continue;
        left.id = c.joined_id;
        left.next = right.next;
        if (right.next >= 0) list[static_cast<size_t>(right.next)].prev = c.left;
        right.alive = false;
        push_pair(left.prev);
        push_pair(c.left);
    }
    std::vector<int64_t> ids;
    for (int64_t i = n > 0 ? 0 : -1; i >= 0; i = list[static_cast<size_t>(i)].next) ids.push_back(list[static_cast<size_t>(i)].id);
    return ids;
}

std::vector<int64_t> SentencePieceBpe::encode(std::string_view text, int64_t unk_id, int64_t* unknown_count) const {
    return merge(initial_symbols(text, unk_id, unknown_count));
}

std::vector<int64_t> SentencePieceBpe::encode_reference(std::string_view text, int64_t unk_id,
                                                        int64_t* unknown_count) const {
    return merge_reference(initial_symbols(text, unk_id, unknown_count));
}

// --- decoding and labels ----------------------------------------------------------

std::string SentencePieceBpe::decode(const std::vector<int64_t>& ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) decode_piece(ids, i, text);
    return text;
}

void SentencePieceBpe::decode_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const {
    const int64_t id = ids[i];
    if (id == bos_id_) return;  // BOS is no text
    const int byte = byte_of_piece_[static_cast<size_t>(id)];
    if (byte >= 0) {
        out.push_back(static_cast<char>(byte));
        return;
    }
    std::string_view piece = pieces_[static_cast<size_t>(id)];
    if (i > 0 && ids[i - 1] == bos_id_ && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    out.append(piece);
}

std::string SentencePieceBpe::label(int64_t id) const {
    const std::string& piece = pieces_[static_cast<size_t>(id)];
    if (byte_of_piece_[static_cast<size_t>(id)] >= 0) return piece;
    // bytes_label, character by character, and a C1 control (U+0080..U+009F:
    // llama2.c's vocabulary has 12 pieces that are one) as its two bytes.
    std::string label;
    for (size_t at = 0; at < piece.size();) {
        const Utf8Character character = utf8_character(piece, at);
        const size_t length = character.length == 0 ? 1 : character.length;
        if (character.length != 0 && character.code_point >= 0x80 && character.code_point <= 0x9F) {
            for (size_t i = 0; i < length; ++i) label.append(byte_piece_name(static_cast<uint8_t>(piece[at + i])));
        } else {
            label.append(bytes_label(std::string_view(piece).substr(at, length)));
        }
        at += length;
    }
    return label;
}

}  // namespace tinyformer
