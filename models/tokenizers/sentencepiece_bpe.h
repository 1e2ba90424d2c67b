// SentencePiece-style BPE — text to token ids the way llama2.c's run.c
// `encode` does it over a tokenizer.bin vocabulary (docs/FORMAT.md,
// tokenizer "sentencepiece_bpe": metadata "vocab" = the pieces, index = id,
// and "scores" = one float per piece; docs/TOKENIZERS.md).
//
// A piece is a string of text, written as it is: a space is ' ' (where
// SentencePiece writes U+2581 "▁"), so " the" is the piece for the word
// "the" after a space. A byte piece is exactly "<0x" + two upper-case hex
// digits + ">" ("<0x0A>", "<0xE2>"): it stands for that one raw byte (in
// llama2.c's vocabulary ids 3..258 are <0x00>..<0xFF>; they are found here by
// their strings, not by the id arithmetic "byte + 3").
//
// Encoding, step by step (initial_symbols, then merge):
// 1. Dummy prefix: a non-empty text gets one " " in front ("Hello" is read
//    as " Hello"), so that the first word looks like every other word. An
//    empty text is no tokens at all.
// 2. Code-point lookup: the text is cut into UTF-8 characters; each
//    character that is a piece of the vocabulary becomes that piece.
// 3. Byte fallback: a character that is not a piece becomes its bytes, each
//    as its byte piece ("é" = <0xC3> <0xA9> when "é" is no piece). A byte
//    that starts no valid UTF-8 character (a stray continuation byte, a cut
//    or over-long sequence, a surrogate) is read the same way, one byte
//    piece per byte. When the byte piece is missing too, the text maps to
//    nothing: an Error naming the character (or, when asked, <unk>).
// 4. Merges: while some two neighbouring symbols a, b have a concatenation
//    (the two pieces' strings joined, a + b) that is itself a piece, merge
//    the pair whose joined piece has the HIGHEST score into that one piece;
//    of equal scores, the leftmost pair. One merge at a time; the new piece
//    may then merge with its neighbours. Stop when no pair joins to a piece.
//    The symbols left are the ids.
//    Example (vocabulary " ", "a", "b", " a" (score -3), "ab" (score -1),
//    " ab" (score -2)): "ab" -> " " a b -> " " ab (the best, -1) -> " ab".
//
// Two merge loops give the same ids:
//   merge_reference: run.c's loop as it is: scan every neighbouring pair for
//     the best, merge it, scan again; each pair is looked up by building the
//     string a + b. O(n^2) lookups for n symbols, and each costs the pieces'
//     length (fine for a sentence, slow for a book). For the tests.
//   merge (used by encode): the same choice with a max-heap of the pairs
//     (score, then leftmost position) over a linked list of symbols; a merge
//     pushes the two pairs it forms, and a popped pair that is gone or
//     changed is skipped. A pair is looked up in the pair table (below), by
//     ids, never by building a + b: a vocabulary of long pieces ("a", "aa",
//     ... 3000 a's, each better than the last) made the string lookups read
//     about n x 1000 bytes (issue 31; docs/TOKENIZERS.md). O(n log n) on any
//     vocabulary: at most 3n pushes and pops, each a binary search of one
//     piece's table entries and a heap step.
//
// The pair table: every (a, b, c) with a + b == c, all three pieces, sorted
// by (a, b). Made once with the vocabulary, without building a string: the
// pieces sorted (once forward, once with their bytes reversed) give each
// piece its longest proper prefix and suffix that are pieces; c's prefix
// chain and suffix chain, of lengths adding up to len(c), are its splits.
// At most one entry per byte of the vocabulary; O(B log V) for B bytes of V
// pieces, and its memory is checked (engine/memory/available.h) first.
//
// Decoding (decode): each id's piece, joined, with two rules:
//   - the bos id (the config's bos_id; llama2.c: 1) writes nothing, and the
//     piece right after it loses its leading space (the dummy prefix), so
//     decode({bos} + encode(text)) == text;
//   - a byte piece is its raw byte ("<0xE2>" -> the byte 0xE2), so the bytes
//     of a character split by step 3 join back into the character.
//   Every other piece, "<unk>" and "</s>" included, is its string.
// label(id) is how views show a piece: a byte piece as it is ("<0xE2>");
// any other piece through bytes_label (models/tokenizers/gpt2_bpe.h): a space as "␣",
// a newline as "↵", a tab as "⇥", another control character as its bytes:
// "\r" -> "<0x0D>", U+0092 -> "<0xC2><0x92>".
//
// Where this differs from run.c (only on inputs where run.c's own result is
// accidental): run.c glues a stray UTF-8 continuation byte onto the
// character before it, so that "a\x80" falls back to <0x61> <0x80>; here the
// "a" stays the piece "a". run.c starts its best score at -1e10, so a piece
// scoring -1e10 or less is never merged there; here every piece can be
// (llama2.c's lowest score is -1e9). run.c uses the id -1 when " " is not a
// piece; here the dummy " " is read like any character (byte fallback).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinyformer {

// "<0x41>" -> 0x41; -1 for anything else (lower-case hex, "<0x4>", "<0x41>x").
int byte_piece_value(std::string_view piece);
// 0x41 -> "<0x41>".
std::string byte_piece_name(uint8_t byte);

// The "scores" rules (docs/FORMAT.md), the one place they are applied: one
// score per vocabulary entry, each a finite float32. Error naming `where`, the
// index and the value.
void check_scores(const std::vector<float>& scores, size_t vocab_size, const std::string& where);

class SentencePieceBpe {
public:
    // `vocab`: the pieces (index = id; check_vocabulary's rules for
    // sentencepiece_bpe), `scores`: one per piece (check_scores), `bos_id`:
    // the id decode treats as BOS (-1: none). Error naming `where`.
    SentencePieceBpe(const std::vector<std::string>& vocab, std::vector<float> scores, int64_t bos_id,
                     const std::string& where);

    // Text -> ids (steps 1-4, the heap merge). A character with neither a
    // piece nor byte pieces is an Error naming it and where it is, or, when
    // unk_id >= 0, that id (counted in *unknown_count).
    std::vector<int64_t> encode(std::string_view text, int64_t unk_id = -1, int64_t* unknown_count = nullptr) const;
    // The same with run.c's O(n^2) merge loop (for tests; the same ids).
    std::vector<int64_t> encode_reference(std::string_view text, int64_t unk_id = -1,
                                          int64_t* unknown_count = nullptr) const;

    // Steps 1-3 only: the symbols before any merge.
    std::vector<int64_t> initial_symbols(std::string_view text, int64_t unk_id, int64_t* unknown_count) const;

    // What a merge did, in its own steps (for the tests' bounds, which count
    // work, never time): heap comparisons, pair-table probes, and bytes of
    // pieces read to look a pair up (the reference builds a + b).
    struct Work {
        int64_t heap_comparisons = 0, table_probes = 0, piece_bytes = 0;
        int64_t total() const { return heap_comparisons + table_probes + piece_bytes; }
    };
    // Step 4, the two ways (`work`, when given, counts).
    std::vector<int64_t> merge(std::vector<int64_t> symbols, Work* work = nullptr) const;
    std::vector<int64_t> merge_reference(std::vector<int64_t> symbols, Work* work = nullptr) const;

    // The piece a + b, or -1: from the pair table (what merge asks), and by
    // building the string (what merge_reference asks).
    int64_t joined(int64_t left, int64_t right, Work* work = nullptr) const;
    int64_t joined_by_string(int64_t left, int64_t right, std::string& buffer, Work* work = nullptr) const;
    // Entries of the pair table (a, b, a + b): at most one per byte of the pieces.
    size_t pair_count() const { return pairs_.size(); }

    // Ids -> text (the rules above). Ids must be in range (the caller's check).
    std::string decode(const std::vector<int64_t>& ids) const;
    // Appends the text ids[i] adds (decode is this for each i, joined).
    void decode_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const;
    std::string label(int64_t id) const;

private:
    // The id of the piece spelled `text`, or -1 (a binary search of by_text_).
    int64_t find_piece(std::string_view text) const;
    void make_pair_table(const std::string& where);

    struct Pair {
        int32_t left, right, joined;
    };
    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    std::vector<int> byte_of_piece_;      // id -> its byte for a byte piece, else -1
    std::vector<int64_t> byte_piece_id_;  // byte -> id of its byte piece, -1 when missing
    std::vector<int32_t> by_text_;        // the ids, their pieces in byte order
    std::vector<Pair> pairs_;             // the pair table, sorted by (left, right)
    std::vector<size_t> pairs_from_;      // left id -> its first entry in pairs_ (V + 1 of them)
    int64_t bos_id_;
};

}  // namespace tinyformer
