// models/tokenizers/sentencepiece_bpe.h and the sentencepiece_bpe tokenizer
// (models/tokenizers/tokenizer.h; docs/FORMAT.md "tokenizer": "sentencepiece_bpe",
// "scores"), end to end through `tinyformer tokenize`. Every expected id is
// worked out by hand below from the rules in the header (dummy " ", pieces,
// byte fallback, highest-score merge first, leftmost of equal scores). The
// 32000-piece llama2.c vocabulary was compared with upstream run.c's encode
// outside the repository (the numbers are in docs/TOKENIZERS.md).
#include <doctest/doctest.h>

#include "models/tokenizers/sentencepiece_bpe.h"
#include "models/text.h"
#include "models/tokenizers/tokenizer.h"
#include "engine/random.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace tinyformer;
using test_helpers::run_tinyformer;
using test_helpers::run_tinyformer_ok;
using json = nlohmann::json;

namespace {

using Ids = std::vector<int64_t>;

// The hand-built vocabulary most cases use, laid out as llama2.c's is:
//   0 <unk>, 1 <s>, 2 </s> (score 0)
//   3..258 the byte pieces <0x00>..<0xFF> (id = byte + 3; score 0)
//   259 " "   260 "a"   261 "b"   262 "c"            (score -10 each)
//   263 "ab" -3   264 "bc" -1   265 " a" -5   266 "abc" -4   267 " ab" -2   268 "aa" -7
// (" abc", " b", "ba", "aaa", " aa" are not pieces.)
struct Hand {
    std::vector<std::string> vocab;
    std::vector<float> scores;
};

Hand hand_vocabulary() {
    Hand hand;
    auto add = [&](const std::string& piece, float score) {
        hand.vocab.push_back(piece);
        hand.scores.push_back(score);
    };
    add("<unk>", 0);
    add("<s>", 0);
    add("</s>", 0);
    for (int byte = 0; byte < 256; ++byte) add(byte_piece_name(static_cast<uint8_t>(byte)), 0);
    for (const char* single : {" ", "a", "b", "c"}) add(single, -10);
    add("ab", -3);
    add("bc", -1);
    add(" a", -5);
    add("abc", -4);
    add(" ab", -2);
    add("aa", -7);
    return hand;
}

Tokenizer hand_tokenizer(int64_t bos_id = 1) {
    const Hand hand = hand_vocabulary();
    return Tokenizer(hand.vocab, TokenizerKind::SentencePieceBpe, {}, hand.scores, bos_id);
}

const std::string kTinyBpe = "data/tokenizer/tiny-bpe.safetensors";  // 274 tokens, decoder_only

}  // namespace

TEST_CASE("sentencepiece_bpe byte pieces: exactly <0x + two upper-case hex digits + >") {
    CHECK(byte_piece_value("<0x00>") == 0);
    CHECK(byte_piece_value("<0x0A>") == 10);
    CHECK(byte_piece_value("<0xE2>") == 0xE2);
    CHECK(byte_piece_value("<0xFF>") == 255);
    for (const char* not_byte : {"<0xe2>", "<0x4>", "<0x41>x", "<0x4G>", "0x41", "<unk>", "<0x041>", ""})
        CHECK(byte_piece_value(not_byte) == -1);
    CHECK(byte_piece_name(0x0A) == "<0x0A>");
    CHECK(byte_piece_name(0xE2) == "<0xE2>");
}

TEST_CASE("sentencepiece_bpe merges: the highest score first, of equal scores the leftmost, worked by hand") {
    const Tokenizer spm = hand_tokenizer();
    // "abc" -> " " a b c = 259 260 261 262. Pairs: " a" -5, ab -3, bc -1: bc wins -> " " a bc;
    // pairs " a" -5, abc -4: abc wins -> " " abc; " abc" is no piece: done.
    // (Lowest id first would merge ab (263) first and end at " ab" c = 267 262.)
    CHECK(spm.encode("abc") == Ids{259, 266});
    // "ab ab" -> " " a b " " a b. ab -3 at 1 and 4 (the best; leftmost) -> " " ab " " a b;
    // " ab" -2 at 0 -> " ab" " " a b; ab -3 -> " ab" " " ab; " ab" -2 -> " ab" " ab".
    CHECK(spm.encode("ab ab") == Ids{267, 267});
    // "baaa" -> " " b a a a: aa -7 at 2 and at 3, the same score: the leftmost -> " " b aa a;
    // "baa", "aaa" are no pieces: done. (Rightmost would give 259 261 260 268.)
    CHECK(spm.encode("baaa") == Ids{259, 261, 268, 260});
    // Equal scores of two different pieces: ab and bc both -1; in "abc" the leftmost, ab, wins.
    const Tokenizer tie({" ", "a", "b", "c", "ab", "bc"}, TokenizerKind::SentencePieceBpe, {}, {-9, -9, -9, -9, -1, -1});
    CHECK(tie.encode("abc") == Ids{0, 4, 3});
    CHECK(tie.encode("bc") == Ids{0, 5});
}

TEST_CASE("sentencepiece_bpe: the dummy prefix, empty text, byte fallback and invalid UTF-8") {
    const Tokenizer spm = hand_tokenizer();
    // A non-empty text gets a " " in front: "a" -> " " a -> " a" (265).
    CHECK(spm.encode("a") == Ids{265});
    CHECK(spm.encode(" ") == Ids{259, 259});  // the dummy " " and the text's own
    CHECK(spm.encode("") == Ids{});           // no dummy for nothing
    // é (C3 A9) is no piece: its bytes, <0xC3> = 195 + 3 = 198, <0xA9> = 169 + 3 = 172;
    // " <0xC3>" is no piece: nothing merges across a byte piece.
    CHECK(spm.encode("\xC3\xA9") == Ids{259, 198, 172});
    // 😀 = F0 9F 98 80 -> 243 162 155 131; a newline (0x0A) -> 13.
    CHECK(spm.encode("\xF0\x9F\x98\x80") == Ids{259, 243, 162, 155, 131});
    CHECK(spm.encode("a\nb") == Ids{265, 13, 261});
    // Invalid UTF-8: every byte that starts no character is its own byte piece.
    // "a\x80": " " a <0x80> -> " a" <0x80> = 265 131 (run.c would glue 0x80 to the a: 259 100 131).
    CHECK(spm.encode("a\x80") == Ids{265, 131});
    // A cut 3-byte character E2 82: <0xE2> = 229, <0x82> = 133; a surrogate ED A0 80 byte by byte.
    CHECK(spm.encode("\xE2\x82") == Ids{259, 229, 133});
    CHECK(spm.encode("\xED\xA0\x80" "a") == Ids{259, 240, 163, 131, 260});
    // The reference loop agrees on all of them.
    const Hand hand = hand_vocabulary();
    const SentencePieceBpe direct(hand.vocab, hand.scores, 1, "test");
    for (const char* text : {"abc", "ab ab", "baaa", "a", " ", "", "\xC3\xA9", "a\x80", "\xE2\x82"})
        CHECK(direct.encode_reference(text) == direct.encode(text));
    // The symbols before any merge (steps 1-3).
    CHECK(direct.initial_symbols("ab\xC3\xA9", -1, nullptr) == Ids{259, 260, 261, 198, 172});
}

TEST_CASE("sentencepiece_bpe decoding: byte pieces are raw bytes, BOS is no text and takes the next piece's space") {
    const Tokenizer spm = hand_tokenizer(/*bos_id=*/1);
    CHECK(spm.decode({267, 267}) == " ab ab");   // the dummy prefix stays without a BOS
    CHECK(spm.decode({1, 267, 267}) == "ab ab");  // after BOS: its space dropped
    CHECK(spm.decode({1, 259, 260}) == "a");      // " " after BOS is nothing
    CHECK(spm.decode({1, 198, 172}) == "\xC3\xA9");  // <0xC3> <0xA9> -> é
    CHECK(spm.decode({260, 1, 265}) == "aa");     // a BOS anywhere
    CHECK(spm.decode({0, 2}) == "<unk></s>");     // other pieces as their strings
    CHECK(spm.decode({}) == "");
    CHECK(spm.decode({229}) == "\xE2");           // a cut character stays cut (views show \xe2)
    // decode({bos} + encode(text)) is the text.
    for (const char* text : {"abc", "ab ab", " lead", "caf\xC3\xA9 \xF0\x9F\x98\x80", "a\nb\tc", "a\x80"}) {
        Ids ids = spm.encode(text);
        ids.insert(ids.begin(), 1);
        CHECK(spm.decode(ids) == text);
    }
    // Without a bos id nothing is dropped.
    const Tokenizer no_bos = hand_tokenizer(/*bos_id=*/-1);
    CHECK(no_bos.decode({1, 267}) == "<s> ab");
    CHECK_THROWS_AS(spm.decode({269}), Error);
}

TEST_CASE("sentencepiece_bpe labels: a space as ␣, controls as pictures or <0xNN>, a byte piece as it is") {
    Hand hand = hand_vocabulary();
    hand.vocab.push_back(";\r");  // 269: llama2.c's vocabulary has pieces like this
    hand.vocab.push_back("\n<s>\n");  // 270: and its BOS piece is this
    hand.vocab.push_back("\xC2\x92");  // 271: and 12 pieces that are a C1 control, here U+0092
    hand.scores.insert(hand.scores.end(), {-20, 0, -20});
    const Tokenizer spm(hand.vocab, TokenizerKind::SentencePieceBpe, {}, hand.scores, 1);
    CHECK(spm.label(259) == "\u2423");
    CHECK(spm.label(267) == "\u2423ab");
    CHECK(spm.label(198) == "<0xC3>");
    CHECK(spm.label(13) == "<0x0A>");  // the byte piece of a newline: its name, not ↵
    CHECK(spm.label(1) == "<s>");
    CHECK(spm.label(269) == ";<0x0D>");
    CHECK(spm.label(270) == "\u21B5<s>\u21B5");
    CHECK(spm.label(271) == "<0xC2><0x92>");
    CHECK(spm.token(269) == ";\r");
}

TEST_CASE("sentencepiece_bpe: text that maps to nothing is an Error naming the character, or <unk> when asked") {
    // No byte pieces: 0 <unk>, 1 " ", 2 a, 3 " a" (-1).
    const Tokenizer spm({"<unk>", " ", "a", " a"}, TokenizerKind::SentencePieceBpe, {}, {0, -5, -5, -1});
    CHECK(spm.encode("aa") == Ids{3, 2});
    CHECK_ERROR_CONTAINS(spm.encode("a\xC3\xA9"), "sentencepiece_bpe: '\xC3\xA9' (U+00E9, bytes C3 A9) at character 1 of the text (byte 1)",
                         "no piece of the vocabulary, and its byte piece <0xC3> is missing too");
    CHECK_ERROR_CONTAINS(spm.encode("a\x80"), "the byte 0x80 (it starts no valid UTF-8 character) at character 1", "<0x80>");
    CHECK_ERROR_CONTAINS(spm.encode("\x1b"), "(U+001B, bytes 1B) at character 0", "<0x1B>");
    // With map_unknown: <unk>, counted (the merges then go on around it).
    int64_t unknown = 0;
    CHECK(spm.encode("a\xC3\xA9" "a", /*map_unknown=*/true, &unknown) == Ids{3, 0, 2});
    CHECK(unknown == 1);
    CHECK_THROWS_AS(spm.encode_exactly("\xC3\xA9"), Error);
    // Only some of a character's byte pieces: still nothing (no half characters), naming the first missing one.
    const Tokenizer half({" ", "<0xC3>"}, TokenizerKind::SentencePieceBpe, {}, {0, 0});
    CHECK(half.encode("\xC3") == Ids{0, 1});
    CHECK_ERROR_CONTAINS(half.encode("\xC3\xA9"), "its byte piece <0xA9> is missing");
    // No " " and no <0x20>: the dummy prefix itself cannot be read; with <0x20> it is that byte.
    CHECK_ERROR_CONTAINS(Tokenizer({"a"}, TokenizerKind::SentencePieceBpe, {}, {0}).encode("a"),
                         "the dummy prefix ' ' (U+0020, bytes 20) put before the text is no piece", "<0x20>");
    CHECK(Tokenizer({"a", "<0x20>"}, TokenizerKind::SentencePieceBpe, {}, {0, 0}).encode("a") == Ids{1, 0});
}

TEST_CASE("sentencepiece_bpe vocabulary and scores rules") {
    CHECK(tokenizer_kind("sentencepiece_bpe") == TokenizerKind::SentencePieceBpe);
    CHECK(std::string(tokenizer_kind_name(TokenizerKind::SentencePieceBpe)) == "sentencepiece_bpe");
    CHECK_ERROR_CONTAINS(tokenizer_kind("sentencepiece"), "\"sentencepiece_bpe\"");
    // Control characters are allowed (tokenizer.bin's pieces as they are); empty and duplicate entries are not.
    CHECK_NOTHROW(check_vocabulary({"\n<s>\n", ";\r", "a"}, TokenizerKind::SentencePieceBpe, "v"));
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", ""}, TokenizerKind::SentencePieceBpe, "v"), "v entry 1");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", "a"}, TokenizerKind::SentencePieceBpe, "v"), "v entry 1", "same token as entry 0");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", "\xC3"}, TokenizerKind::SentencePieceBpe, "v"), "v entry 1", "not valid UTF-8");
    CHECK_ERROR_CONTAINS(check_vocabulary({"\r"}, TokenizerKind::Char, "v"), "control character");
    // Scores: one finite float32 per piece.
    CHECK_ERROR_CONTAINS(check_scores({0, 0}, 3, "s"), "s has 2 scores but the vocabulary has 3 pieces");
    CHECK_ERROR_CONTAINS(check_scores({0, INFINITY}, 2, "s"), "s entry 1 is inf");
    CHECK_ERROR_CONTAINS(Tokenizer({"a", "b"}, TokenizerKind::SentencePieceBpe, {}, {0}), "\"scores\" has 1 scores");
    CHECK_ERROR_CONTAINS(Tokenizer({"a"}, TokenizerKind::SentencePieceBpe), "has 0 scores but the vocabulary has 1");
    CHECK_ERROR_CONTAINS(Tokenizer({"a"}, TokenizerKind::Char, {}, {0}), "scores are for the \"sentencepiece_bpe\" tokenizer");
}

TEST_CASE("Property: the heap merge gives run.c's O(n^2) loop's ids on random vocabularies with tied scores") {
    // Pieces: the four characters and random strings of 2..4 of them; scores
    // from a few integers, so that ties are common; texts of up to 40 characters.
    Random random(23);
    const std::string alphabet[] = {" ", "a", "b", "\xC3\xA9"};
    int compared = 0;
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<std::string> vocab(std::begin(alphabet), std::end(alphabet));
        for (int i = 0; i < 40; ++i) {
            std::string piece;
            const int64_t length = random.uniform_int(2, 4);
            for (int64_t k = 0; k < length; ++k) piece += alphabet[random.uniform_int(0, 3)];
            if (std::find(vocab.begin(), vocab.end(), piece) == vocab.end()) vocab.push_back(piece);
        }
        std::vector<float> scores;
        for (size_t i = 0; i < vocab.size(); ++i) scores.push_back(-static_cast<float>(random.uniform_int(0, 4)));
        const SentencePieceBpe spm(vocab, scores, -1, "random");
        for (int t = 0; t < 10; ++t) {
            std::string text;
            const int64_t length = random.uniform_int(0, 40);
            for (int64_t k = 0; k < length; ++k) text += alphabet[random.uniform_int(0, 3)];
            const Ids fast = spm.encode(text), reference = spm.encode_reference(text);
            INFO("text: \"", text, "\"");
            CHECK(fast == reference);
            CHECK(spm.decode(fast) == (text.empty() ? "" : " " + text));
            ++compared;
        }
    }
    CHECK(compared == 3000);
}

TEST_CASE("sentencepiece_bpe: a 200 kB text is merged in O(n log n)") {
    // " ", a, aa -1, aaaa -2, aaaaaaaa -3: all pairs of a first (the best score), then of aa, then
    // of aaaa: 200000 a's -> " " + 25000 x "aaaaaaaa" (id 4).
    const SentencePieceBpe spm({" ", "a", "aa", "aaaa", "aaaaaaaa"}, {-9, -9, -1, -2, -3}, -1, "test");
    SentencePieceBpe::Work work;
    const Ids ids = spm.merge(spm.initial_symbols(std::string(200000, 'a'), -1, nullptr), &work);
    REQUIRE(ids.size() == 25001);
    CHECK(ids[0] == 0);
    CHECK(std::all_of(ids.begin() + 1, ids.end(), [](int64_t id) { return id == 4; }));
    // n = 200001 symbols, log2 n < 18: at most 3n pushes and pops of a heap, each a table lookup.
    const double n = 200001;
    CHECK(work.piece_bytes == 0);
    CHECK(static_cast<double>(work.total()) < 16 * n * std::log2(n));
}

TEST_CASE("sentencepiece_bpe: a hostile vocabulary of long pieces still merges in O(n log n) steps") {
    // Pieces a, aa, ..., 2000 a's, each scoring its length: 100000 a's grow one piece an a at a
    // time up to 2000 a's, then the next. Building a + b to look each pair up (run.c's way, and this
    // merge's before issue 31) reads about n x 1000 bytes: 10^8 steps; the pair table answers each
    // pair in a binary search.
    std::vector<std::string> vocab = {" "};
    std::vector<float> scores = {-1e6f};
    for (int length = 1; length <= 2000; ++length) {
        vocab.push_back(std::string(static_cast<size_t>(length), 'a'));
        scores.push_back(static_cast<float>(length));
    }
    const SentencePieceBpe spm(vocab, scores, -1, "hostile");
    CHECK(spm.pair_count() == 2000 * 1999 / 2);  // a^k = a^i + a^(k-i) for i = 1..k-1
    const std::string text(100000, 'a');
    SentencePieceBpe::Work work;
    const Ids ids = spm.merge(spm.initial_symbols(text, -1, nullptr), &work);
    // " " then 50 pieces of 2000 a's (id 2000).
    REQUIRE(ids.size() == 51);
    CHECK(ids[0] == 0);
    CHECK(std::all_of(ids.begin() + 1, ids.end(), [](int64_t id) { return id == 2000; }));
    const double n = 100001;
    CHECK(work.piece_bytes == 0);
    CHECK(static_cast<double>(work.total()) < 16 * n * std::log2(n));  // 2.7e7; by strings: 1e8
    // The same ids as run.c's loop on a shorter text (its cost is n^2 lookups).
    const std::string shorter(5000, 'a');
    CHECK(spm.encode(shorter) == spm.encode_reference(shorter));
}

TEST_CASE("sentencepiece_bpe pair table: exactly the pairs whose strings join to a piece") {
    // Random pieces over a 3-letter alphabet with a two-byte character: every (a, b) is looked up
    // in the table and by building a + b.
    Random random(31);
    const std::string alphabet[] = {"a", "b", "\xC3\xA9"};
    for (int trial = 0; trial < 40; ++trial) {
        std::vector<std::string> vocab(std::begin(alphabet), std::end(alphabet));
        for (int i = 0; i < 60; ++i) {
            std::string piece;
            const int64_t length = random.uniform_int(2, 7);
            for (int64_t k = 0; k < length; ++k) piece += alphabet[random.uniform_int(0, 2)];
            if (std::find(vocab.begin(), vocab.end(), piece) == vocab.end()) vocab.push_back(piece);
        }
        const SentencePieceBpe spm(vocab, std::vector<float>(vocab.size(), 0.0f), -1, "random");
        std::string buffer;
        size_t joined = 0;
        for (size_t a = 0; a < vocab.size(); ++a)
            for (size_t b = 0; b < vocab.size(); ++b) {
                const auto left = static_cast<int64_t>(a), right = static_cast<int64_t>(b);
                const auto found = std::find(vocab.begin(), vocab.end(), vocab[a] + vocab[b]);
                const int64_t expected = found == vocab.end() ? -1 : found - vocab.begin();
                CHECK(spm.joined(left, right) == expected);
                CHECK(spm.joined_by_string(left, right, buffer) == expected);
                joined += expected >= 0;
            }
        CHECK(spm.pair_count() == joined);
    }
}

TEST_CASE("Property: the heap merge gives run.c's ids on vocabularies of long, nested pieces") {
    // Pieces that are runs and repeats of a and b up to 30 bytes (many pieces are two others
    // joined, in several ways), scores with ties; texts of up to 120 characters.
    Random random(47);
    int compared = 0;
    for (int trial = 0; trial < 60; ++trial) {
        std::vector<std::string> vocab = {" ", "a", "b"};
        for (int i = 0; i < 80; ++i) {
            const std::string unit = random.uniform_int(0, 1) ? "a" : (random.uniform_int(0, 1) ? "ab" : "b");
            std::string piece;
            const int64_t repeats = random.uniform_int(1, 30 / static_cast<int64_t>(unit.size()));
            for (int64_t k = 0; k < repeats; ++k) piece += unit;
            if (random.uniform_int(0, 3) == 0) piece = " " + piece;
            if (std::find(vocab.begin(), vocab.end(), piece) == vocab.end()) vocab.push_back(piece);
        }
        std::vector<float> scores;
        for (size_t i = 0; i < vocab.size(); ++i) scores.push_back(static_cast<float>(random.uniform_int(-3, 3)));
        const SentencePieceBpe spm(vocab, scores, -1, "nested");
        for (int t = 0; t < 10; ++t) {
            std::string text;
            const int64_t length = random.uniform_int(0, 120);
            for (int64_t k = 0; k < length; ++k) text += random.uniform_int(0, 4) == 0 ? "b" : (random.uniform_int(0, 9) ? "a" : " ");
            INFO("text: \"", text, "\"");
            CHECK(spm.encode(text) == spm.encode_reference(text));
            ++compared;
        }
    }
    CHECK(compared == 600);
}

TEST_CASE("The loader reads \"scores\" for sentencepiece_bpe only, requires them with its vocab, and checks them") {
    test_helpers::TempDirectory dir;
    using test_helpers::Contents;
    // The hand vocabulary (269 pieces) + 5 more to fill the tiny model's 274: d e f g h (-10).
    Hand hand = hand_vocabulary();
    for (const char* more : {"d", "e", "f", "g", "h"}) {
        hand.vocab.push_back(more);
        hand.scores.push_back(-10);
    }
    auto as_spm = [&](Contents& c) {
        c.metadata["tokenizer"] = "sentencepiece_bpe";
        c.metadata["vocab"] = json(hand.vocab).dump();
        c.metadata["scores"] = json(hand.scores).dump();
        c.metadata.erase("merges");
        json config = c.config();
        config["bos_id"] = 1;
        config["eos_id"] = 2;
        c.set_config(config);
    };
    const std::string good = test_helpers::edited(dir, "spm.safetensors", kTinyBpe, as_spm);
    const Model model = Model::load(good);
    CHECK(model.text.scores.size() == 274);
    CHECK(model.text.scores[267] == -2.0f);
    const ModelText text(model);
    CHECK(text.encode_input("ab ab") == Ids{267, 267});
    CHECK(text.decode_output({1, 267, 198, 172}) == "ab\xC3\xA9");

    const auto refused = [&](const std::string& name, const std::function<void(std::map<std::string, std::string>&)>& edit) {
        return test_helpers::error_message([&] {
            Model::load(test_helpers::edited(dir, name, good, [&](Contents& c) { edit(c.metadata); }));
        });
    };
    auto contains = [](const std::string& message, const std::string& piece) {
        INFO("message: ", message);
        CHECK(message.find(piece) != std::string::npos);
    };
    contains(refused("no-scores.safetensors", [](auto& m) { m.erase("scores"); }),
             "no-scores.safetensors: __metadata__ has a \"sentencepiece_bpe\" \"vocab\" but no \"scores\"");
    contains(refused("short.safetensors", [&](auto& m) {
                 std::vector<float> fewer(hand.scores.begin(), hand.scores.end() - 1);
                 m["scores"] = json(fewer).dump();
             }),
             "short.safetensors: __metadata__ \"scores\" has 273 scores but the vocabulary has 274 pieces");
    contains(refused("string.safetensors", [&](auto& m) {
                 json scores = json(hand.scores);
                 scores[5] = "x";
                 m["scores"] = scores.dump();
             }),
             "__metadata__ \"scores\" entry 5 is not a number: \"x\"");
    contains(refused("huge.safetensors", [&](auto& m) {
                 std::string scores = json(hand.scores).dump();
                 scores.replace(scores.find('[') + 1, 3, "1e39");  // "0.0" -> 1e39: no float32
                 m["scores"] = scores;
             }),
             "__metadata__ \"scores\" entry 0 is inf; a score is a finite float32");
    contains(refused("object.safetensors", [](auto& m) { m["scores"] = "{}"; }), "\"scores\" must be a JSON array of numbers");
    contains(refused("empty-piece.safetensors", [&](auto& m) {
                 json vocab = json(hand.vocab);
                 vocab[270] = "";
                 m["vocab"] = vocab.dump();
             }),
             "__metadata__ \"vocab\" entry 270");
    // Scores belong to sentencepiece_bpe; the GPT-2 tiny model with scores added is refused.
    const std::string message = test_helpers::error_message([&] {
        Model::load(test_helpers::edited(dir, "bpe-scores.safetensors", kTinyBpe,
                                         [&](Contents& c) { c.metadata["scores"] = json(hand.scores).dump(); }));
    });
    contains(message, "__metadata__ \"scores\" is for the \"sentencepiece_bpe\" tokenizer; this one is \"gpt2_bpe\"");
}

TEST_CASE("tinyformer tokenize reads and decodes a sentencepiece_bpe checkpoint end to end") {
    test_helpers::TempDirectory dir;
    using test_helpers::Contents;
    Hand hand = hand_vocabulary();
    for (const char* more : {"d", "e", "f", "g", "h"}) {
        hand.vocab.push_back(more);
        hand.scores.push_back(-10);
    }
    const std::string path = test_helpers::edited(dir, "spm.safetensors", kTinyBpe, [&](Contents& c) {
        c.metadata["tokenizer"] = "sentencepiece_bpe";
        c.metadata["vocab"] = json(hand.vocab).dump();
        c.metadata["scores"] = json(hand.scores).dump();
        c.metadata.erase("merges");
        json config = c.config();
        config["bos_id"] = 1;
        c.set_config(config);
    });
    // The table: the decoded text keeps the dummy " " (no BOS in these ids), labels show it as ␣.
    auto run = run_tinyformer_ok({"tokenize", path, "ab ab", "baaa"});
    CHECK(run.out ==
          "text: \" ab ab\" (2 tokens)\n"
          "ids: 267 267\n"
          "   267  \"\u2423ab\"\n"
          "   267  \"\u2423ab\"\n"
          "\n"
          "text: \" baaa\" (4 tokens)\n"
          "ids: 259 261 268 260\n"
          "   259  \"\u2423\"\n"
          "   261  \"b\"\n"
          "   268  \"aa\"\n"
          "   260  \"a\"\n");
    run = run_tinyformer_ok({"tokenize", path, "--format", "json", "\xC3\xA9"});
    CHECK(json::parse(run.out) == json::parse(R"({"ids":[259,198,172],"tokens":["␣","<0xC3>","<0xA9>"],"text":" \u00e9"})"));
    run = run_tinyformer_ok({"tokenize", path, "--format", "ids", "abc", ""});
    CHECK(run.out == "259 266\n\n");
    // --ids with the BOS: no text for it, no space after it; a cut character is \xNN on the terminal.
    run = run_tinyformer_ok({"tokenize", path, "--ids", "1,267,229"});
    CHECK(run.out == "text: \"ab\\xe2\" (3 tokens)\nids: 1 267 229\n     1  \"<s>\"\n   267  \"\u2423ab\"\n   229  \"<0xE2>\"\n");
    // A control character in the text is read (byte fallback) and never sent to the terminal.
    run = run_tinyformer_ok({"tokenize", path, "a\x1b"});
    CHECK(run.out == "text: \" a\\x1b\" (2 tokens)\nids: 265 30\n   265  \"\u2423a\"\n    30  \"<0x1B>\"\n");
    // A vocabulary without byte pieces: a character with no piece is one error line; --unk reads it as <unk>.
    const std::string no_bytes = test_helpers::edited(dir, "no-bytes.safetensors", path, [&](Contents& c) {
        json vocab = json(hand.vocab);
        for (int byte = 0; byte < 256; ++byte) vocab[3 + byte] = std::string("x").append(std::to_string(byte));
        c.metadata["vocab"] = vocab.dump();
    });
    auto refused = run_tinyformer({"tokenize", no_bytes, "ab\xC3\xA9"});
    CHECK(refused.status == 1);
    CHECK(refused.out.empty());
    CHECK(refused.err ==
          "tinyformer: error: sentencepiece_bpe: '\xC3\xA9' (U+00E9, bytes C3 A9) at character 2 of the text (byte 2) is no "
          "piece of the vocabulary, and its byte piece <0xC3> is missing too, so the text cannot be encoded (a vocabulary "
          "with all 256 byte pieces <0x00>..<0xFF> encodes every text)\n");
    run = run_tinyformer_ok({"tokenize", no_bytes, "--format", "ids", "--unk", "ab\xC3\xA9"});
    CHECK(run.out == "267 0\n");
    CHECK(run.err == "tinyformer tokenize: warning: 1 token(s) of \"ab\xC3\xA9\" are not in the vocabulary; read as <unk>\n");
    // info names the tokenizer.
    run = run_tinyformer_ok({"info", path});
    CHECK(run.out.find("sentencepiece_bpe tokenizer, vocabulary of 274 tokens") != std::string::npos);
}
