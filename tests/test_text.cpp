// models/text.h and models/tokenizers/tokenizer.h: text and token ids in and out of a
// model (docs/FORMAT.md metadata: vocab, src_vocab, tokenizer,
// prompt_suffix, train_max_len). Expected ids are read off the vocabularies
// written below, by hand.
#include <doctest/doctest.h>

#include "models/text.h"
#include "tests/helpers.h"
#include "tests/safetensors_edit.h"

#include <nlohmann/json.hpp>

using namespace tinyformer;
using test_helpers::Contents;
using test_helpers::TempDirectory;
using test_helpers::edited;
using json = nlohmann::json;

namespace {

// decoder_only, causal, vocab_size 20, bos 1, eos 2, max_len 8, vocabulary <pad> <bos> <eos> a..q.
const std::string kDecoderOnly = "data/reference/do_post_relu_sin_h1.model.safetensors";
// encoder_decoder, src vocab 13, tgt vocab 11, bos 1, eos 2, max_len 16, no vocabulary.
const std::string kEncoderDecoder = "data/reference/ed_post_relu_sin.model.safetensors";
// encoder_only, vocab 9, no vocabulary.
const std::string kEncoderOnly = "data/reference/eo_post_relu_learned_h1.model.safetensors";

// 20 words: ids 0..19 in this order.
const std::vector<std::string> kWords = {"<pad>", "<bos>", "<eos>", "<unk>", "the", "cat", "sat", "on", "mat", "a",
                                         "dog",   "ran",   "to",    "big",   "red", "hat", "in",  "sun", "and", "is"};

// kDecoderOnly with its metadata changed by `edit`.
Model with_metadata(const TempDirectory& dir, const std::string& name, const std::string& source,
                    const std::function<void(std::map<std::string, std::string>&)>& edit) {
    return Model::load(edited(dir, name, source, [&](Contents& c) { edit(c.metadata); }));
}

}  // namespace

TEST_CASE("The character tokenizer: one id per UTF-8 character, specials never from text, unknowns named") {
    // ids: <pad> 0, <bos> 1, <eos> 2, <unk> 3, a 4, b 5, c 6, é 7 (two bytes in UTF-8), < 8
    const Tokenizer chars({"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c", "\xc3\xa9", "<"});
    CHECK(chars.encode("abc") == std::vector<int64_t>{4, 5, 6});
    CHECK(chars.encode("c\xc3\xa9" "a") == std::vector<int64_t>{6, 7, 4});  // é is one token, not two bytes
    CHECK(chars.encode("") == std::vector<int64_t>{});
    CHECK(chars.decode({6, 5, 4}) == "cba");
    CHECK(chars.decode({4, 3, 2}) == "a<unk><eos>");  // specials are written in angle brackets
    // "<eos>" typed as text is characters, never the special token: '<' is in the vocabulary, 'e' is not.
    CHECK_ERROR_CONTAINS(chars.encode("<eos>"), "character 'e' at position 1 of \"<eos>\"");
    CHECK_ERROR_CONTAINS(chars.encode("abz"), "character 'z' at position 2");
    // map_unknown: an unknown character becomes <unk>, counted.
    int64_t unknown = 0;
    CHECK(chars.encode("azb", true, &unknown) == std::vector<int64_t>{4, 3, 5});
    CHECK(unknown == 1);
    CHECK(chars.id_of("c") == 6);
    CHECK(chars.token(7) == "\xc3\xa9");
    CHECK(chars.size() == 9);
    CHECK_THROWS_AS(chars.id_of("z"), Error);
    CHECK_THROWS_AS(chars.token(9), Error);
    CHECK_THROWS_AS(chars.token(-1), Error);
}

TEST_CASE("The character tokenizer reads a control character as its Control Picture when the vocabulary has it") {
    // nanoGPT's shakespeare_char vocabulary holds "\n"; the converter stores it as
    // U+240A (UTF-8 E2 90 8A) and DEL as U+2421 (E2 90 A1). Text "a\nb" -> a, picture, b.
    const Tokenizer tokenizer({"a", "b", "\xE2\x90\x8A", "\xE2\x90\xA1"});
    CHECK(tokenizer.encode("a\nb") == std::vector<int64_t>{0, 2, 1});
    CHECK(tokenizer.encode("\x7F") == std::vector<int64_t>{3});
    CHECK(tokenizer.encode("\xE2\x90\x8A") == std::vector<int64_t>{2});  // the picture typed as itself
    CHECK(tokenizer.decode({0, 2, 1}) == "a\xE2\x90\x8A" "b");           // output shows the picture
    // A control character whose picture the vocabulary lacks is still refused, naming it.
    CHECK_ERROR_CONTAINS(tokenizer.encode("a\tb"), "not in the model's vocabulary");
}

TEST_CASE("A char vocabulary's newline and tab are tokens: read and written as themselves, labelled as views show them") {
    // nanoGPT's shakespeare_char vocabulary starts "\n", " ", "!", ...: the converter writes it as it is.
    const Tokenizer tokenizer({"\n", " ", "a", "b", "\t"});
    CHECK(tokenizer.encode("a\nb") == std::vector<int64_t>{2, 0, 3});
    CHECK(tokenizer.encode("\ta b\n") == std::vector<int64_t>{4, 2, 1, 3, 0});
    CHECK(tokenizer.decode({2, 0, 4, 3}) == "a\n\tb");
    // A view's label is one line, with the signs gpt2_bpe's labels use: U+21B5 (E2 86 B5) and U+21E5 (E2 87 A5).
    CHECK(tokenizer.label(0) == "\xE2\x86\xB5");
    CHECK(tokenizer.label(4) == "\xE2\x87\xA5");
    CHECK(tokenizer.label(2) == "a");
    // Any other control character is still not in the vocabulary, and named.
    CHECK_ERROR_CONTAINS(tokenizer.encode("a\rb"), "not in the model's vocabulary");
    // With both a newline token and its picture (a user's vocabulary may hold "␊"), each is read as itself.
    const Tokenizer both({"\n", "\xE2\x90\x8A"});
    CHECK(both.encode("\n\xE2\x90\x8A") == std::vector<int64_t>{0, 1});
}

TEST_CASE("The whitespace tokenizer reads words, maps unknown words to <unk>, and writes words joined by spaces") {
    const Tokenizer words(kWords, TokenizerKind::Whitespace);
    CHECK(words.encode("the cat sat") == std::vector<int64_t>{4, 5, 6});
    CHECK(words.encode("  the\tcat \n sat  ") == std::vector<int64_t>{4, 5, 6});  // runs of whitespace
    CHECK(words.encode("").empty());
    int64_t unknown = 0;
    CHECK(words.encode("the zebra sat", false, &unknown) == std::vector<int64_t>{4, 3, 6});
    CHECK(unknown == 1);
    CHECK(words.encode("<bos> cat") == std::vector<int64_t>{3, 5});  // a special token is never read from text
    CHECK(words.decode({4, 13, 10, 11}) == "the big dog ran");
    CHECK(words.decode({}).empty());

    std::vector<std::string> no_unk = kWords;
    no_unk[3] = "hello";
    const Tokenizer strict(no_unk, TokenizerKind::Whitespace);
    CHECK_ERROR_CONTAINS(strict.encode("the cat zebra sat"), "word 'zebra' (word 2, at character 8 of \"the cat zebra sat\")",
                         "which has no <unk>");
}

TEST_CASE("Tokenizer kinds are named as in docs/FORMAT.md; anything else is refused with both names") {
    CHECK(tokenizer_kind("char") == TokenizerKind::Char);
    CHECK(tokenizer_kind("whitespace") == TokenizerKind::Whitespace);
    CHECK(std::string(tokenizer_kind_name(TokenizerKind::Whitespace)) == "whitespace");
    CHECK_ERROR_CONTAINS(tokenizer_kind("bpe"), "\"bpe\" is not a tokenizer", "\"char\", \"whitespace\"");
    // The char tokenizer as before: one token per character.
    const Tokenizer chars({"<pad>", "a", "b"});
    CHECK(chars.encode("ba") == std::vector<int64_t>{2, 1});
    CHECK(chars.decode({1, 2}) == "ab");
}

TEST_CASE("parse_ids reads comma-separated whole numbers and names what is not one") {
    CHECK(parse_ids("5,17,3", "--ids") == std::vector<int64_t>{5, 17, 3});
    CHECK(parse_ids("0", "--ids") == std::vector<int64_t>{0});
    CHECK(parse_ids("-1,2", "--ids") == std::vector<int64_t>{-1, 2});  // kept: model_input names the range
    CHECK_ERROR_CONTAINS(parse_ids("", "--ids"), "--ids: expected token ids separated by commas");
    CHECK_ERROR_CONTAINS(parse_ids("5,,3", "--ids"), "--ids: '' (item 1 of \"5,,3\") is not a token id");
    CHECK_ERROR_CONTAINS(parse_ids("5,x", "--target-ids"), "--target-ids: 'x' (item 1 of \"5,x\")");
    CHECK_ERROR_CONTAINS(parse_ids("5, 3", "--ids"), "' 3' (item 1");
    CHECK_ERROR_CONTAINS(parse_ids("1.5", "--ids"), "'1.5' (item 0");
    CHECK_ERROR_CONTAINS(parse_ids("99999999999999999999", "--ids"), "is not a token id");
}

TEST_CASE("model_input frames the user's tokens: <bos> for decoder-only, the prompt suffix once, sources as they are") {
    TempDirectory dir;
    SUBCASE("decoder-only with a prompt suffix: appended when missing, never twice") {
        // vocabulary <pad>=0 <bos>=1 <eos>=2 a=3 b=4 ... q=19; suffix "q" = 19
        const Model model = with_metadata(dir, "suffix.safetensors", kDecoderOnly,
                                          [](auto& m) { m["prompt_suffix"] = std::string("q"); });
        const ModelText text(model);
        CHECK(model_input(model, text.encode_input("abc")) == std::vector<int64_t>{1, 3, 4, 5, 19});
        CHECK(model_input(model, text.encode_input("abcq")) == std::vector<int64_t>{1, 3, 4, 5, 19});
        CHECK(model_input(model, {3, 4}) == std::vector<int64_t>{1, 3, 4, 19});  // ids are framed the same way
        CHECK(model_input(model, {}) == std::vector<int64_t>{1, 19});
        CHECK_ERROR_CONTAINS(model_input(model, {3, 3, 3, 3, 3, 3, 3}),
                             "an input of 9 tokens (with <bos> and the prompt suffix) is longer than the model's max_len of 8");
    }
    SUBCASE("decoder-only without a suffix, and without bos_id") {
        const Model model = Model::load(kDecoderOnly);
        CHECK(model_input(model, {3, 4}) == std::vector<int64_t>{1, 3, 4});
        const Model no_bos = Model::load(edited(dir, "no-bos.safetensors", kDecoderOnly, [](Contents& c) {
            json config = json::parse(c.metadata.at("config"));
            config.erase("bos_id");
            c.metadata["config"] = config.dump();
        }));
        CHECK(model_input(no_bos, {3, 4}) == std::vector<int64_t>{3, 4});
        CHECK_ERROR_CONTAINS(model_input(no_bos, {}), "the input is empty; a decoder_only model without bos_id");
    }
    SUBCASE("encoder-decoder and encoder-only: the tokens as they are, checked against the input vocabulary") {
        const Model seq2seq = Model::load(kEncoderDecoder);  // src vocab 13, tgt vocab 11
        CHECK(model_input(seq2seq, {12, 0, 5}) == std::vector<int64_t>{12, 0, 5});
        CHECK_ERROR_CONTAINS(model_input(seq2seq, {5, 13}), "input token id 13 at position 1 is outside the vocabulary 0..12");
        CHECK_ERROR_CONTAINS(model_input(seq2seq, {-2}), "input token id -2 at position 0 is outside the vocabulary 0..12");
        CHECK_ERROR_CONTAINS(model_input(seq2seq, {}), "the input is empty; the encoder needs at least one token");
        CHECK(decoder_input(seq2seq, {10, 4}) == std::vector<int64_t>{1, 10, 4});  // <bos> + target
        CHECK_ERROR_CONTAINS(decoder_input(seq2seq, {11}), "target token id 11 at position 0 is outside the vocabulary 0..10");
        const Model encoder = Model::load(kEncoderOnly);
        CHECK(model_input(encoder, {8, 0}) == std::vector<int64_t>{8, 0});
    }
}

TEST_CASE("Without a vocabulary, labels are ids and outputs are written as ids; text is refused with a pointer to --ids") {
    const Model model = Model::load(kEncoderDecoder);
    const ModelText text(model);
    CHECK_FALSE(text.reads_text());
    CHECK(text.input_label(12) == "#12");
    CHECK(text.output_label(0) == "#0");
    CHECK(text.decode_output({5, 17, 3}) == "5,17,3");
    CHECK_ERROR_CONTAINS(text.encode_input("abc"), "has no vocabulary", "give token ids (--ids)");
    CHECK_ERROR_CONTAINS(text.encode_output("abc"), "give token ids (--target-ids)");
}

TEST_CASE("A source vocabulary apart from the target's labels each side with its own tokens") {
    TempDirectory dir;
    const Model model = with_metadata(dir, "two-vocabs.safetensors", kEncoderDecoder, [](auto& m) {
        m["src_vocab"] = json({"<pad>", "<bos>", "<eos>", "<unk>", "le", "chat", "est", "noir", "un", "chien", "et", "blanc", "petit"}).dump();
        m["vocab"] = json({"<pad>", "<bos>", "<eos>", "<unk>", "the", "cat", "is", "black", "a", "dog", "and"}).dump();
        m["tokenizer"] = std::string("whitespace");
    });
    const ModelText text(model);
    CHECK(text.encode_input("le chat est noir") == std::vector<int64_t>{4, 5, 6, 7});
    CHECK(text.encode_output("the cat is black") == std::vector<int64_t>{4, 5, 6, 7});
    CHECK(text.input_label(9) == "chien");
    CHECK(text.output_label(9) == "dog");
    CHECK(text.decode_output({8, 9}) == "a dog");
    CHECK(text.encode_input("le zebre") == std::vector<int64_t>{4, 3});  // unknown word -> <unk>
}

TEST_CASE("length_warning names both lengths past train_max_len, and says nothing up to it or when undeclared") {
    TempDirectory dir;
    const Model model = with_metadata(dir, "trained-3.safetensors", kDecoderOnly, [](auto& m) { m["train_max_len"] = std::string("3"); });
    CHECK(model.text.train_max_len == 3);
    CHECK(length_warning(model, 3).empty());
    CHECK(length_warning(model, 4) == "the input is 4 tokens, longer than the 3 the model was trained on (train_max_len); its output may be wrong");
    CHECK(length_warning(Model::load(kDecoderOnly), 1000).empty());
}

TEST_CASE("A special token is exactly '<' + [a-z0-9_]+ + '>'; nothing else is special") {
    for (const std::string special : {"<pad>", "<eos>", "<unk>", "<sep>", "<bos>", "<x>", "<mask_2>", "<0>"}) {
        CAPTURE(special);
        CHECK(is_special_token(special));
    }
    for (const std::string ordinary : {"<", ">", "<>", "<3", "<=", "<=>", "<Pad>", "<pad", "pad>", "<pa d>", "<é>", "<<pad>>", " <pad>"}) {
        CAPTURE(ordinary);
        CHECK_FALSE(is_special_token(ordinary));
    }
}

TEST_CASE("A word starting with '<' that is not special is typed as it is: '<3' and '<=' encode from text") {
    const Tokenizer words({"<pad>", "<unk>", "i", "<3", "<=", "you", "<sep>"}, TokenizerKind::Whitespace);
    int64_t unknown = 0;
    CHECK(words.encode("i <3 you", false, &unknown) == std::vector<int64_t>{2, 3, 5});
    CHECK(words.encode("<= i") == std::vector<int64_t>{4, 2});
    CHECK(unknown == 0);
    // A special token typed as text is not read as itself: <unk>, counted.
    CHECK(words.encode("i <sep>", false, &unknown) == std::vector<int64_t>{2, 1});
    CHECK(unknown == 1);
    // encode_exactly (how the prompt suffix is read) refuses it instead, and an unknown word too.
    CHECK(words.encode_exactly("<3 you") == std::vector<int64_t>{3, 5});
    CHECK_ERROR_CONTAINS(words.encode_exactly("i <sep>"), "word '<sep>' (word 1, at character 2 of \"i <sep>\") is not an ordinary token");
    CHECK_ERROR_CONTAINS(words.encode_exactly("zebra"), "word 'zebra' (word 0, at character 0 of \"zebra\") is not in the model's vocabulary");
    // The char tokenizer: "<" is one character like any other.
    const Tokenizer chars({"<pad>", "<", "3"});
    CHECK(chars.encode("<3") == std::vector<int64_t>{1, 2});
}

TEST_CASE("check_vocabulary applies each vocabulary rule, naming where, the entry's index, the entry and the rule") {
    struct Case {
        std::string rule;
        std::vector<std::string> vocab;
        TokenizerKind kind;
        std::vector<const char*> message;
    };
    const TokenizerKind kChar = TokenizerKind::Char, kWords = TokenizerKind::Whitespace;
    const std::vector<Case> cases = {
        {"no entries", {}, kChar, {"V: has no entries"}},
        {"an empty entry", {"<pad>", "a", ""}, kChar, {"V: entry 2 \"\" is an empty string"}},
        {"an empty word", {"<pad>", ""}, kWords, {"V: entry 1 \"\" is an empty string"}},
        {"two equal entries", {"<pad>", "a", "b", "a"}, kChar, {"V: entry 3 \"a\" is the same token as entry 1", "no two entries may be equal"}},
        {"two equal special tokens", {"<pad>", "<eos>", "<pad>"}, kWords, {"V: entry 2 \"<pad>\" is the same token as entry 0"}},
        {"a char token of two characters", {"<pad>", "ab"}, kChar, {"V: entry 1 \"ab\" is 2 characters", "one character each"}},
        {"a char token that only looks special", {"<pad>", "<3>x"}, kChar, {"V: entry 1 \"<3>x\" is 4 characters"}},
        {"a char token '<Pad>' (not special: upper case)", {"<pad>", "<Pad>"}, kChar, {"V: entry 1 \"<Pad>\" is 5 characters"}},
        {"a char token of a letter and a combining mark", {"e", "e\xcc\x81"}, kChar, {"V: entry 1 \"e\xcc\x81\" is 2 characters"}},
        {"a word with a space", {"<pad>", "new york"}, kWords, {"V: entry 1 \"new york\" holds whitespace at byte 3", "splits text there"}},
        {"a word of one space", {"<pad>", " "}, kWords, {"V: entry 1 \" \" holds whitespace at byte 0"}},
        {"ESC (C0)", {"<pad>", "\x1b[2J"}, kWords, {"V: entry 1", "holds the control character U+001B at byte 0"}},
        {"a newline with a letter in a char token", {"a", "a\n"}, kChar, {"V: entry 1", "control character U+000A at byte 1"}},
        {"a newline as a word", {"a", "\n"}, kWords, {"V: entry 1", "control character U+000A at byte 0"}},
        {"a carriage return as a char token", {"a", "\r"}, kChar, {"V: entry 1", "control character U+000D at byte 0"}},
        {"a form feed as a char token", {"a", "\f"}, kChar, {"V: entry 1", "control character U+000C at byte 0"}},
        {"a tab in a word", {"a", "b\tc"}, kWords, {"V: entry 1", "control character U+0009 at byte 1"}},
        {"NUL", {"a", std::string("b\0", 2)}, kWords, {"V: entry 1", "control character U+0000 at byte 1"}},
        {"DEL", {"a", "\x7f"}, kChar, {"V: entry 1", "control character U+007F"}},
        {"a C1 control as UTF-8", {"a", "\xc2\x9b"}, kChar, {"V: entry 1 holds the control character U+009B at byte 0 of 2"}},
        {"invalid UTF-8", {"a", "\xff"}, kChar, {"V: entry 1 is not valid UTF-8 (byte 0 of 1"}},
        {"a lone surrogate written as UTF-8", {"a", "\xed\xa0\x80"}, kChar, {"V: entry 1", "is not valid UTF-8"}},
        {"an overlong '/'", {"a", "\xc0\xaf"}, kChar, {"V: entry 1", "is not valid UTF-8"}},
        {"a cut UTF-8 character", {"a", "\xe2\x82"}, kChar, {"V: entry 1", "is not valid UTF-8"}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.rule);
        const std::string message = test_helpers::error_message([&] { check_vocabulary(c.vocab, c.kind, "V:"); });
        for (const char* piece : c.message) CHECK_MESSAGE(message.find(piece) != std::string::npos, message, " lacks ", piece);
        // The Tokenizer refuses the same vocabulary: it applies the same function.
        CHECK_THROWS_AS(Tokenizer(c.vocab, c.kind), Error);
    }
    // What the rules allow: one code point of any script, emoji, '<' alone,
    // words with '<' in them, a space as a char token, special tokens in both.
    check_vocabulary({"<pad>", "<eos>", "a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "<", " ", "\xcc\x81"}, kChar, "V:");
    check_vocabulary({"<pad>", "<sep>", "<3", "<=", "a<b", "caf\xc3\xa9", "\xe5\x9b\xbe"}, kWords, "V:");
    // A long entry is cut in the message.
    const std::string message = test_helpers::error_message(
        [&] { check_vocabulary({"a", std::string(5000, 'x') + " y"}, kWords, "V:"); });
    CHECK(message.find("(5002 bytes)") != std::string::npos);
    CHECK(message.size() < 400);
}

TEST_CASE("The loader applies the vocabulary rules to vocab and src_vocab, naming the file, the key, the index and the rule") {
    TempDirectory dir;
    const auto refused = [&](const std::string& name, const std::string& source,
                             const std::function<void(std::map<std::string, std::string>&)>& edit) {
        return test_helpers::error_message([&] { with_metadata(dir, name, source, edit); });
    };
    // kDecoderOnly: vocabulary <pad> <bos> <eos> a..q (20 entries).
    auto vocab_with = [](size_t index, const std::string& token) {
        std::vector<std::string> vocab = {"<pad>", "<bos>", "<eos>"};
        for (char c = 'a'; c <= 'q'; ++c) vocab.push_back(std::string(1, c));
        vocab[index] = token;
        return json(vocab).dump();
    };
    std::string message = refused("dup.safetensors", kDecoderOnly, [&](auto& m) { m["vocab"] = vocab_with(5, "a"); });
    CHECK(message.find("dup.safetensors: __metadata__ \"vocab\" entry 5 \"a\" is the same token as entry 3") != std::string::npos);
    message = refused("two-chars.safetensors", kDecoderOnly, [&](auto& m) { m["vocab"] = vocab_with(7, "ab"); });
    CHECK(message.find("two-chars.safetensors: __metadata__ \"vocab\" entry 7 \"ab\" is 2 characters") != std::string::npos);
    message = refused("space.safetensors", kDecoderOnly, [&](auto& m) {
        m["vocab"] = vocab_with(7, "a b");
        m["tokenizer"] = std::string("whitespace");
    });
    CHECK(message.find("space.safetensors: __metadata__ \"vocab\" entry 7 \"a b\" holds whitespace at byte 1") != std::string::npos);
    message = refused("not-string.safetensors", kDecoderOnly, [&](auto& m) {
        json vocab = json::parse(vocab_with(0, "<pad>"));
        vocab[4] = 4;
        m["vocab"] = vocab.dump();
    });
    CHECK(message.find("not-string.safetensors: __metadata__ \"vocab\" entry 4 is not a string: 4") != std::string::npos);
    // src_vocab (encoder_decoder, 13 source tokens): the same rules, its own key.
    message = refused("src.safetensors", kEncoderDecoder, [&](auto& m) {
        m["vocab"] = json({"<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "f", "g", "h"}).dump();
        m["src_vocab"] = json({"<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "f", "g", "h", "i", "\x1b"}).dump();
    });
    CHECK(message.find("src.safetensors: __metadata__ \"src_vocab\" entry 12") != std::string::npos);
    CHECK(message.find("control character U+001B") != std::string::npos);
}

TEST_CASE("prompt_suffix must encode with the model's tokenizer as ordinary tokens: never a special token, never <unk>") {
    TempDirectory dir;
    const std::string words = json({"<pad>", "<bos>", "<eos>", "<unk>", "<sep>", "=", "<=", "a", "b", "c", "d", "e", "f",
                                    "g", "h", "i", "j", "k", "l", "m"}).dump();
    const auto load = [&](const std::string& name, const std::string& suffix) {
        return with_metadata(dir, name, kDecoderOnly, [&](auto& m) {
            m["vocab"] = words;
            m["tokenizer"] = std::string("whitespace");
            m["prompt_suffix"] = suffix;
        });
    };
    // "<=" is an ordinary word: a fine suffix, appended as its id (6) after <bos> and the prompt.
    const Model model = load("suffix-ok.safetensors", "<=");
    CHECK(model_input(model, ModelText(model).encode_input("a b")) == std::vector<int64_t>{1, 7, 8, 6});
    CHECK_ERROR_CONTAINS(load("suffix-sep.safetensors", "<sep>"), "suffix-sep.safetensors: __metadata__ \"prompt_suffix\" \"<sep>\"",
                         "word '<sep>'", "is not an ordinary token");
    CHECK_ERROR_CONTAINS(load("suffix-unk.safetensors", "zebra"), "__metadata__ \"prompt_suffix\" \"zebra\"",
                         "word 'zebra'", "is not in the model's vocabulary");
    CHECK_ERROR_CONTAINS(load("suffix-blank.safetensors", "  "), "\"prompt_suffix\" \"  \": it holds no token");
}
