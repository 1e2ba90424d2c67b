// models/tokenizers/gpt2_bpe.h and the gpt2_bpe tokenizer (models/tokenizers/tokenizer.h,
// docs/FORMAT.md "tokenizer": "gpt2_bpe", "merges"), and `tinyformer
// tokenize`. Every expected value is worked out by hand below from GPT-2's
// rules as the header states them; the whole GPT-2 vocabulary is compared
// with a real peer in tests/peer/gpt2_bpe.test.mjs (make test-peers).
#include <doctest/doctest.h>

#include "models/tokenizers/gpt2_bpe.h"
#include "models/text.h"
#include "models/tokenizers/tokenizer.h"
#include "engine/random.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"
#include "tools/pictures/font.h"

#include <chrono>
#include <nlohmann/json.hpp>

using namespace tinyformer;
using test_helpers::run_tinyformer;
using test_helpers::run_tinyformer_ok;
using json = nlohmann::json;

namespace {

// tests/peer/make_tiny_bpe.mjs: ids 0..255 = the one-byte tokens (id = byte),
// then 256 "Ġt", 257 "he", 258 "Ġthe", 259 "The", 260 "at", 261 "Ġc", 262 "Ġcat",
// 263 "Ġs", 264 "Ġsat", 265 "on", 266 "Ġon", 267 "Ġm", 268 "Ġmat", 269 "in",
// 270 "Ġin", 271 "Ġinto", 272 "to", 273 "ĠĠ" (merge rank r makes token 256 + r).
const std::string kTinyBpe = "data/tokenizer/tiny-bpe.safetensors";

std::vector<std::string> pieces(const std::string& text) {
    std::vector<std::string> out;
    for (std::string_view piece : pretokenize(text)) out.emplace_back(piece);
    return out;
}

using Pieces = std::vector<std::string>;
using Ids = std::vector<int64_t>;

}  // namespace

TEST_CASE("gpt2_bpe byte table: printable Latin-1 bytes stand for themselves, the other 68 for U+0100.. in byte order") {
    // Worked from the rule: the bytes that do not stand for themselves are
    // 0x00..0x20 (33 bytes -> U+0100..U+0120), 0x7F (-> U+0121),
    // 0x80..0xA0 (33 bytes -> U+0122..U+0142) and 0xAD (-> U+0143): 68.
    CHECK(byte_character(0x41) == U'A');
    CHECK(byte_character(0x21) == U'!');
    CHECK(byte_character(0x7E) == U'~');
    CHECK(byte_character(0xA1) == U'\u00A1');
    CHECK(byte_character(0xFF) == U'\u00FF');
    CHECK(byte_character(0x00) == U'\u0100');
    CHECK(byte_character(0x0A) == U'\u010A');  // newline: "Ċ"
    CHECK(byte_character(0x20) == U'\u0120');  // space: "Ġ"
    CHECK(byte_character(0x7F) == U'\u0121');
    CHECK(byte_character(0x80) == U'\u0122');
    CHECK(byte_character(0xA0) == U'\u0142');
    CHECK(byte_character(0xAD) == U'\u0143');
    CHECK(byte_of_character(U'\u0120') == 0x20);
    CHECK(byte_of_character(U'\u0143') == 0xAD);
    CHECK(byte_of_character(U'A') == 0x41);
    CHECK(byte_of_character(U'\u0144') == -1);  // one past the last
    CHECK(byte_of_character(U' ') == -1);       // a space stands for no byte: it is written "Ġ"
    CHECK(byte_of_character(U'\u00AD') == -1);  // soft hyphen: byte 0xAD is written U+0143
    CHECK(byte_of_character(U'\u20AC') == -1);  // €
    // Every byte and back: the table is one-to-one.
    for (int byte = 0; byte < 256; ++byte) CHECK(byte_of_character(byte_character(static_cast<uint8_t>(byte))) == byte);
    // Strings: " the" is "Ġthe"; "é" (C3 A9) is "Ã©".
    CHECK(bytes_as_token(" the") == "\xC4\xA0the");
    CHECK(bytes_as_token("\xC3\xA9") == "\xC3\x83\xC2\xA9");
    std::string bytes;
    CHECK(token_as_bytes("\xC4\xA0the", bytes));
    CHECK(bytes == " the");
    CHECK_FALSE(token_as_bytes("a b", bytes));         // a real space is no byte-level character
    CHECK_FALSE(token_as_bytes("\xC5\x84", bytes));    // U+0144
    CHECK_FALSE(token_as_bytes("\xC4", bytes));        // invalid UTF-8
}

TEST_CASE("Unicode classes follow the generated table: letters, numbers, JavaScript's whitespace, the rest other") {
    CHECK(unicode_class(U'a') == UnicodeClass::Letter);
    CHECK(unicode_class(U'Z') == UnicodeClass::Letter);
    CHECK(unicode_class(U'\u00E9') == UnicodeClass::Letter);   // é (Ll)
    CHECK(unicode_class(U'\u65E5') == UnicodeClass::Letter);   // 日 (Lo)
    CHECK(unicode_class(U'\u02B0') == UnicodeClass::Letter);   // ʰ (Lm)
    CHECK(unicode_class(U'7') == UnicodeClass::Number);
    CHECK(unicode_class(U'\u00BD') == UnicodeClass::Number);   // ½ (No)
    CHECK(unicode_class(U'\u2163') == UnicodeClass::Number);   // Ⅳ (Nl)
    CHECK(unicode_class(U'\u0663') == UnicodeClass::Number);   // Arabic-Indic 3 (Nd)
    CHECK(unicode_class(U' ') == UnicodeClass::Space);
    CHECK(unicode_class(U'\t') == UnicodeClass::Space);
    CHECK(unicode_class(U'\r') == UnicodeClass::Space);
    CHECK(unicode_class(U'\u00A0') == UnicodeClass::Space);    // no-break space (Zs)
    CHECK(unicode_class(U'\u3000') == UnicodeClass::Space);    // ideographic space (Zs)
    CHECK(unicode_class(U'\u2028') == UnicodeClass::Space);    // line separator (JavaScript's LineTerminator)
    CHECK(unicode_class(U'\uFEFF') == UnicodeClass::Space);    // JavaScript's \s has it, Unicode's White_Space not
    CHECK(unicode_class(U'\u0085') == UnicodeClass::Other);    // and the other way round
    CHECK(unicode_class(U'\u200B') == UnicodeClass::Other);    // zero width space is Cf
    CHECK(unicode_class(U'!') == UnicodeClass::Other);
    CHECK(unicode_class(U'\'') == UnicodeClass::Other);
    CHECK(unicode_class(U'\U0001F600') == UnicodeClass::Other);  // 😀 (So)
    CHECK(unicode_class(U'\u0301') == UnicodeClass::Other);      // combining acute (Mn)
    CHECK(unicode_class(U'\u0378') == UnicodeClass::Other);      // unassigned
    CHECK(unicode_class(0) == UnicodeClass::Other);
    CHECK(unicode_class(0x10FFFF) == UnicodeClass::Other);
}

TEST_CASE("The GPT-2 pre-tokenizer splits as its pattern reads, worked by hand") {
    // Letters after an optional space; the space joins the word that follows.
    CHECK(pieces("Hello world") == Pieces{"Hello", " world"});
    CHECK(pieces("1999 cats") == Pieces{"1999", " cats"});
    CHECK(pieces("12345") == Pieces{"12345"});  // numbers are one run, not split into digits
    CHECK(pieces("hello!!! ok") == Pieces{"hello", "!!!", " ok"});
    CHECK(pieces(" ...") == Pieces{" ..."});
    // Contractions: lower case only; otherwise "'" is punctuation.
    CHECK(pieces("it's") == Pieces{"it", "'s"});
    CHECK(pieces("don't") == Pieces{"don", "'t"});
    CHECK(pieces("we'll've") == Pieces{"we", "'ll", "'ve"});
    CHECK(pieces("'re") == Pieces{"'re"});
    CHECK(pieces("IT'S") == Pieces{"IT", "'", "S"});
    CHECK(pieces("!'s") == Pieces{"!'", "s"});  // the punctuation run takes the "'" first
    // Whitespace: a run before a word keeps its last space for the word; at the end it stays whole.
    CHECK(pieces("a  b") == Pieces{"a", " ", " b"});
    CHECK(pieces("a   b") == Pieces{"a", "  ", " b"});
    CHECK(pieces("trailing  ") == Pieces{"trailing", "  "});
    CHECK(pieces("a ") == Pieces{"a", " "});
    CHECK(pieces(" ") == Pieces{" "});
    CHECK(pieces("x\n\ny") == Pieces{"x", "\n", "\n", "y"});  // only ' ' joins a word; "\n" before y is \s+ alone
    CHECK(pieces(" \nabc") == Pieces{" ", "\n", "abc"});
    CHECK(pieces("\t x") == Pieces{"\t", " x"});
    CHECK(pieces("x\u00a0y") == Pieces{"x", "\u00a0", "y"});  // a no-break space is whitespace, not ' '
    // Other scripts, emoji.
    CHECK(pieces("caf\u00e9") == Pieces{"caf\u00e9"});
    CHECK(pieces("\u65e5\u672c\u8a9e") == Pieces{"\u65e5\u672c\u8a9e"});
    CHECK(pieces("a\U0001F600b") == Pieces{"a", "\U0001F600", "b"});
    CHECK(pieces(" \U0001F600") == Pieces{" \U0001F600"});
    CHECK(pieces("").empty());
    CHECK_ERROR_CONTAINS(pretokenize("ok\xC3"), "not valid UTF-8 at byte 2 of 3");
}

TEST_CASE("BPE merges: the lowest-ranked pair present, every occurrence left to right, worked by hand") {
    // ids: a 0, b 1, c 2, Ġ 3, ab 4, bc 5, abc 6, Ġa 7, aa 8
    // merges by rank: 0 "a b", 1 "b c", 2 "ab c", 3 "Ġ a", 4 "a a"
    const std::vector<std::string> vocab = {"a", "b", "c", "\xC4\xA0", "ab", "bc", "abc", "\xC4\xA0" "a", "aa"};
    const std::vector<std::string> merges = {"a b", "b c", "ab c", "\xC4\xA0 a", "a a"};
    const Tokenizer bpe(vocab, TokenizerKind::Gpt2Bpe, merges);
    // "abc": pairs (a,b) r0, (b,c) r1 -> ab c; (ab,c) r2 -> abc.
    CHECK(bpe.encode("abc") == Ids{6});
    CHECK(bpe.encode("bc") == Ids{5});
    // "aaa": (a,a) r4 at 0 and 1; left to right, not overlapping -> aa a.
    CHECK(bpe.encode("aaa") == Ids{8, 0});
    CHECK(bpe.encode("aaaa") == Ids{8, 8});
    // " abc" is one piece: Ġ a b c; (a,b) r0 beats (Ġ,a) r3 -> Ġ ab c -> Ġ abc: Ġa never forms.
    CHECK(bpe.encode(" abc") == Ids{3, 6});
    // " aa": (Ġ,a) r3 beats (a,a) r4 -> Ġa a.
    CHECK(bpe.encode(" aa") == Ids{7, 0});
    // Pieces are encoded apart: "ab c" is "ab" + " c" (Ġ c: no merge).
    CHECK(bpe.encode("ab c") == Ids{4, 3, 2});
    CHECK(bpe.encode("") == Ids{});
    CHECK(bpe.decode({3, 6}) == " abc");
    CHECK(bpe.decode({8, 0, 3, 2}) == "aaa c");
    // A byte without its one-byte token cannot be encoded.
    CHECK_ERROR_CONTAINS(bpe.encode("abd"), "the byte 0x64 (byte 2 of the piece \"abd\")");
    CHECK_THROWS_AS(bpe.decode({9}), Error);

    // A pair formed by a merge waits for the next round, as in GPT-2's loop:
    // merges 0 "ab a", 1 "a b"; "abab": (a,b) r1 twice -> ab ab, and (ab,ab) has no rank.
    // (Merging "ab a" as soon as it forms would give "aba b".)
    const Tokenizer rounds({"a", "b", "ab", "aba"}, TokenizerKind::Gpt2Bpe, {"ab a", "a b"});
    CHECK(rounds.encode("abab") == Ids{2, 2});
    // "aba": (a,b) r1 -> ab a; next round (ab,a) r0 -> aba.
    CHECK(rounds.encode("aba") == Ids{3});
}

TEST_CASE("A 100 kB word is merged in O(n log n): every 'a' pair, then every 'aa' pair, ...") {
    // merges 0 "a a", 1 "aa aa", 2 "aaaa aaaa": 100000 a's -> 12500 tokens "aaaaaaaa" (id 3).
    const Tokenizer bpe({"a", "aa", "aaaa", "aaaaaaaa"}, TokenizerKind::Gpt2Bpe, {"a a", "aa aa", "aaaa aaaa"});
    const auto start = std::chrono::steady_clock::now();
    const Ids ids = bpe.encode(std::string(100000, 'a'));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(ids == Ids(12500, 3));
    CHECK(seconds < 2.0);  // about 0.1 s here (-O3); a quadratic loop would take minutes
    // 100001 a's: the last one is left over.
    const Ids odd = bpe.encode(std::string(100001, 'a'));
    CHECK(odd.size() == 12501);
    CHECK(odd.back() == 0);
}

TEST_CASE("gpt2_bpe vocabulary and merges rules: byte characters, no duplicates, merges of tokens into tokens") {
    CHECK(tokenizer_kind("gpt2_bpe") == TokenizerKind::Gpt2Bpe);
    CHECK(std::string(tokenizer_kind_name(TokenizerKind::Gpt2Bpe)) == "gpt2_bpe");
    CHECK_ERROR_CONTAINS(tokenizer_kind("bpe"), "\"char\", \"whitespace\", \"gpt2_bpe\"");
    // Vocabulary.
    check_vocabulary({"a", "\xC4\xA0the", "<|endoftext|>", "\xC3\x83\xC2\xA9"}, TokenizerKind::Gpt2Bpe, "v");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", "a b"}, TokenizerKind::Gpt2Bpe, "v"),
                         "v entry 1 \"a b\" holds a character that stands for no byte");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", "\xE2\x82\xAC"}, TokenizerKind::Gpt2Bpe, "v"),
                         "v entry 1", "stands for no byte");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", "b", "a"}, TokenizerKind::Gpt2Bpe, "v"),
                         "v entry 2 \"a\" is the same token as entry 0");
    CHECK_ERROR_CONTAINS(check_vocabulary({"a", ""}, TokenizerKind::Gpt2Bpe, "v"), "v entry 1", "empty");
    // Merges.
    const std::vector<std::string> vocab = {"a", "b", "ab"};
    check_merges({"a b"}, vocab, "m");
    check_merges({}, vocab, "m");
    CHECK_ERROR_CONTAINS(check_merges({"ab"}, vocab, "m"), "m entry 0 \"ab\" is not \"left right\"");
    CHECK_ERROR_CONTAINS(check_merges({"a  b"}, vocab, "m"), "m entry 0", "exactly one space");
    CHECK_ERROR_CONTAINS(check_merges({" a"}, vocab, "m"), "m entry 0", "not \"left right\"");
    CHECK_ERROR_CONTAINS(check_merges({"a b", "a c"}, vocab, "m"), "m entry 1 \"a c\": its right side \"c\" is not in the vocabulary");
    CHECK_ERROR_CONTAINS(check_merges({"b a"}, vocab, "m"), "m entry 0 \"b a\": the merged token \"ba\" is not in the vocabulary");
    CHECK_ERROR_CONTAINS(check_merges({"a b", "a b"}, vocab, "m"), "m entry 1 \"a b\" is the same pair as entry 0");
    // Merges only for gpt2_bpe.
    CHECK_ERROR_CONTAINS(Tokenizer({"a", "b", "ab"}, TokenizerKind::Whitespace, std::vector<std::string>{"a b"}), "merges are for the \"gpt2_bpe\" tokenizer");
}

TEST_CASE("Token labels: gpt2_bpe shows its bytes with a visible space, newline and tab, and cut UTF-8 as <0xNN>") {
    CHECK(bytes_label(" the") == "\u2423the");
    CHECK(bytes_label("\n") == "\u21B5");
    CHECK(bytes_label("\t") == "\u21E5");
    CHECK(bytes_label("caf\xC3\xA9") == "caf\xC3\xA9");
    CHECK(bytes_label("\xE2\x80") == "<0xE2><0x80>");   // two of the three bytes of "…"
    CHECK(bytes_label("\xA6") == "<0xA6>");
    CHECK(bytes_label("\x1b[2J") == "<0x1B>[2J");
    CHECK(bytes_label("\x7f") == "<0x7F>");
    CHECK(bytes_label("\r\n") == "<0x0D>\u21B5");
    // Through the Tokenizer (one function for every view) and ModelText (pictures, explorer, tables).
    const Tokenizer bpe({"\xC4\xA0", "a", "\xC4\xA0" "a", "\xC3\xA2"}, TokenizerKind::Gpt2Bpe, {"\xC4\xA0 a"});
    CHECK(bpe.label(2) == "\u2423a");
    CHECK(bpe.label(3) == "<0xE2>");  // "â" is the character for byte 0xE2
    CHECK(bpe.token(2) == "\xC4\xA0" "a");
    CHECK_THROWS_AS(bpe.label(4), Error);
    const Tokenizer chars({"<pad>", " ", "a"});
    CHECK(chars.label(1) == " ");  // other kinds: the token as it is
    const Model tiny = Model::load(kTinyBpe);
    CHECK(tiny.text.tokenizer == TokenizerKind::Gpt2Bpe);
    const ModelText text(tiny);
    CHECK(text.input_label(262) == "\u2423cat");
    CHECK(text.output_label(273) == "\u2423\u2423");
    CHECK(text.encode_input("The cat sat on the mat.") == Ids{259, 262, 264, 266, 258, 268, 46});
    CHECK(text.decode_output({259, 262, 32, 32, 10}) == "The cat  \n");
    // The picture font draws these characters (DejaVu Sans has them; a font without them draws the box).
    CHECK(font_has_glyph(U'\u2423'));
    CHECK(font_has_glyph(U'\u21B5'));
    CHECK(font_has_glyph(U'\u21E5'));
    CHECK_FALSE(font_has_glyph(U'\u65E5'));  // no CJK in DejaVu Sans
}

TEST_CASE("The loader reads \"merges\" for gpt2_bpe only, requires them with its vocab, and checks their rules") {
    test_helpers::TempDirectory dir;
    using test_helpers::Contents;
    const auto refused = [&](const std::string& name, const std::function<void(std::map<std::string, std::string>&)>& edit) {
        return test_helpers::error_message(
            [&] { Model::load(test_helpers::edited(dir, name, kTinyBpe, [&](Contents& c) { edit(c.metadata); })); });
    };
    std::string message = refused("no-merges.safetensors", [](auto& m) { m.erase("merges"); });
    CHECK(message.find("no-merges.safetensors: __metadata__ has a \"gpt2_bpe\" \"vocab\" but no \"merges\"") != std::string::npos);
    message = refused("bad-merge.safetensors", [](auto& m) { m["merges"] = json({"\xC4\xA0 t", "x y"}).dump(); });
    CHECK(message.find("bad-merge.safetensors: __metadata__ \"merges\" entry 1 \"x y\": the merged token \"xy\" is not in the vocabulary") !=
          std::string::npos);
    message = refused("not-array.safetensors", [](auto& m) { m["merges"] = "\"a b\""; });
    CHECK(message.find("__metadata__ \"merges\" must be a JSON array of strings") != std::string::npos);
    message = refused("number.safetensors", [](auto& m) { m["merges"] = "[1]"; });
    CHECK(message.find("__metadata__ \"merges\" entry 0 is not a string: 1") != std::string::npos);
    message = refused("whitespace-merges.safetensors", [](auto& m) {
        std::vector<std::string> vocab;
        for (int i = 0; i < 274; ++i) vocab.push_back(std::string("w").append(std::to_string(i)));
        m["tokenizer"] = "whitespace";
        m["vocab"] = json(vocab).dump();
    });
    CHECK(message.find("__metadata__ \"merges\" is for the \"gpt2_bpe\" tokenizer; this one is \"whitespace\"") != std::string::npos);
    message = refused("bad-token.safetensors", [](auto& m) {
        json vocab = json::parse(m["vocab"]);
        vocab[270] = "a b";
        m["vocab"] = vocab.dump();
    });
    CHECK(message.find("__metadata__ \"vocab\" entry 270 \"a b\" holds a character that stands for no byte") != std::string::npos);
}

TEST_CASE("tinyformer tokenize prints ids and labelled tokens (table, ids, json), decodes --ids, for every tokenizer") {
    // The table, worked from the vocabulary above.
    auto run = run_tinyformer_ok({"tokenize", kTinyBpe, "The cat sat on the mat."});
    CHECK(run.out ==
          "text: \"The cat sat on the mat.\" (7 tokens)\n"
          "ids: 259 262 264 266 258 268 46\n"
          "   259  \"The\"\n"
          "   262  \"\u2423cat\"\n"
          "   264  \"\u2423sat\"\n"
          "   266  \"\u2423on\"\n"
          "   258  \"\u2423the\"\n"
          "   268  \"\u2423mat\"\n"
          "    46  \".\"\n");
    // --format ids: one line per TEXT; "into  the": in to | " " | " the" ("Ġin to" needs the space).
    run = run_tinyformer_ok({"tokenize", kTinyBpe, "--format", "ids", "into  the", "", "   x"});
    CHECK(run.out == "269 272 32 258\n\n273 32 120\n");
    // json: labels, and the text back; é is two byte tokens, shown <0xC3> <0xA9>.
    run = run_tinyformer_ok({"tokenize", kTinyBpe, "--format", "json", "caf\xC3\xA9"});
    CHECK(json::parse(run.out) == json::parse(R"({"ids":[99,97,102,195,169],"tokens":["c","a","f","<0xC3>","<0xA9>"],"text":"caf\u00e9"})"));
    // --ids: decoded; a cut character is hex in json and \xNN on the table's text line.
    run = run_tinyformer_ok({"tokenize", kTinyBpe, "--format", "json", "--ids", "99,195"});
    CHECK(json::parse(run.out) == json::parse(R"({"ids":[99,195],"tokens":["c","<0xC3>"],"text_bytes":"63c3"})"));
    run = run_tinyformer_ok({"tokenize", kTinyBpe, "--ids", "99,195,10,27"});
    CHECK(run.out == "text: \"c\\xc3\\x0a\\x1b\" (4 tokens)\nids: 99 195 10 27\n    99  \"c\"\n   195  \"<0xC3>\"\n"
                     "    10  \"\u21B5\"\n    27  \"<0x1B>\"\n");
    // A TEXT starting with "--" after --.
    run = run_tinyformer_ok({"tokenize", kTinyBpe, "--format", "ids", "--", "--x"});
    CHECK(run.out == "45 45 120\n");
    // Other tokenizers: the char toy model (labels are the tokens).
    run = run_tinyformer_ok({"tokenize", "data/models/reverse.safetensors", "--format", "json", "hello"});
    CHECK(json::parse(run.out)["tokens"] == json({"h", "e", "l", "l", "o"}));
    run = run_tinyformer_ok({"tokenize", "data/models/reverse.safetensors", "--ids", "4,5"});
    CHECK(run.out == "text: \"ab\" (2 tokens)\nids: 4 5\n     4  \"a\"\n     5  \"b\"\n");
    // Refusals: one error line each.
    auto refused = run_tinyformer({"tokenize", kTinyBpe, "--format", "csv", "x"});
    CHECK(refused.status == 2);
    CHECK(refused.err == "tinyformer: error: tokenize: --format must be table, ids or json, got 'csv'\n");
    refused = run_tinyformer({"tokenize", kTinyBpe});
    CHECK(refused.status == 2);
    refused = run_tinyformer({"tokenize", kTinyBpe, "x", "--ids", "1"});
    CHECK(refused.status == 2);
    refused = run_tinyformer({"tokenize", kTinyBpe, "--ids", "1,274"});
    CHECK(refused.status == 1);
    CHECK(refused.err == "tinyformer: error: tokenize: token id 274 at position 1 is outside the vocabulary 0..273\n");
    refused = run_tinyformer({"tokenize", kTinyBpe, "ok", "bad\xC3"});
    CHECK(refused.status == 1);
    CHECK(refused.out.empty());  // nothing printed for the first TEXT either
    CHECK(refused.err.find("not valid UTF-8 at byte 3 of 4") != std::string::npos);
    refused = run_tinyformer({"tokenize", "data/models/reverse.safetensors", "a b"});
    CHECK(refused.status == 1);
    CHECK(refused.err.find("character ' ' at position 1") != std::string::npos);
    const auto unk = run_tinyformer_ok({"tokenize", "data/models/reverse.safetensors", "--format", "ids", "--unk", "a b"});
    CHECK(unk.out == "4 3 5\n");  // <unk> is id 3
    CHECK(unk.err == "tinyformer tokenize: warning: 1 token(s) of \"a b\" are not in the vocabulary; read as <unk>\n");
    const auto help = run_tinyformer_ok({"tokenize", "--help"});
    CHECK(help.out.find("usage: tinyformer tokenize MODEL.safetensors") == 0);
}

TEST_CASE("Property: on random UTF-8 text the pieces join back to the text and decode(encode(text)) is the text") {
    // All 256 one-byte tokens (id = byte) and the tiny checkpoint's merges: every valid text encodes.
    const Model tiny = Model::load(kTinyBpe);
    const Tokenizer bpe(tiny.text.vocab, TokenizerKind::Gpt2Bpe, tiny.text.merges);
    // Characters of every class and byte length: ASCII letters, digits, punctuation, ' and the
    // contraction letters, whitespace of 1..3 bytes, é, 日, 😀, a combining mark.
    const std::vector<std::string> alphabet = {"a", "t", "s", "r", "e", "l", "d", "m", "v", "T", "h", "c",  "0",
                                               "7", "'", "!", ".", "-", " ", " ", " ", "\t", "\n", "\r", "\xC2\xA0",
                                               "\xE3\x80\x80", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x98\x80", "\xCC\x81"};
    Random random(22);
    for (int trial = 0; trial < 2000; ++trial) {
        std::string text;
        const auto length = static_cast<int>(random.uniform() * 24);
        for (int i = 0; i < length; ++i) text += alphabet[static_cast<size_t>(random.uniform() * alphabet.size())];
        CAPTURE(text);
        std::string joined;
        for (std::string_view piece : pretokenize(text)) {
            CHECK_FALSE(piece.empty());
            joined.append(piece);
        }
        CHECK(joined == text);
        CHECK(bpe.decode(bpe.encode(text)) == text);
    }
}
