// The CLI's inputs (tools/cli/inputs.h, run.cpp): TEXT or --ids, the prompt
// suffix, standard input, and models without a vocabulary or bos_id, run
// through the built program as a user would. Refusals are in the bad-input
// catalogue (tests/test_bad_inputs.cpp).
#include <doctest/doctest.h>

#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"
#include "tests/terminal_checks.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

using test_helpers::CliRun;
using test_helpers::Contents;
using test_helpers::TempDirectory;
using test_helpers::edited;
using test_helpers::run_tinyformer;
using test_helpers::run_tinyformer_ok;
using json = nlohmann::json;

namespace {

const std::string kReverse = "data/models/reverse.safetensors";
const std::string kEncoderOnly = "data/reference/eo_post_relu_learned_h1.model.safetensors";  // no vocabulary
const std::string kSeq2seq = "data/reference/ed_post_relu_sin.model.safetensors";           // no vocabulary


}  // namespace

TEST_CASE("run appends a decoder-only model's prompt suffix when it is missing, so 'abc' and 'abc=' agree, as in eval") {
    for (const std::string model : {"data/models/reverse-causal.safetensors", "data/models/reverse-prefixlm.safetensors"}) {
        CAPTURE(model);
        const CliRun run = run_tinyformer_ok({"run", model, "abc", "abc=", "transformer", "transformer="});
        CHECK(run.out == "cba\ncba\nremrofsnart\nremrofsnart\n");
    }
}

TEST_CASE("run --ids takes the tokens that text would become") {
    // reverse's vocabulary: <pad> <bos> <eos> <unk> a b c ..., so a=4, e=8, h=11, l=15, o=18.
    CHECK(run_tinyformer_ok({"run", kReverse, "--ids", "11,8,15,15,18"}).out == "olleh\n");
    CHECK(run_tinyformer_ok({"run", kReverse, "hello"}).out == "olleh\n");
}

TEST_CASE("run reads one input per line of standard input, and warns past the length the model was trained on") {
    TempDirectory dir;
    std::ofstream(dir.file("lines.txt")) << "hello\r\nabc\nzz\n";
    const CliRun lines = run_tinyformer_ok({"run", kReverse}, dir.file("lines.txt"));
    CHECK(lines.out == "olleh\ncba\nzz\n");
    CHECK(lines.err.empty());

    // The toy models were trained on 1..16 characters (metadata train_max_len 16).
    const CliRun longer = run_tinyformer_ok({"run", kReverse, "abcdefghijklmnopq"});  // 17 characters
    CHECK(longer.err == "tinyformer run: warning: the input is 17 tokens, longer than the 16 the model was trained on "
                        "(train_max_len); its output may be wrong\n");
    CHECK(run_tinyformer_ok({"run", kReverse, "abcdefghijklmnop"}).err.empty());  // 16: no warning
}

TEST_CASE("attention draws an encoder-only model's self-attention on --ids, labelled with the ids") {
    TempDirectory dir;
    const CliRun run = run_tinyformer_ok({"attention", kEncoderOnly, "--ids", "3,8,0", "--out", dir.file("maps")});
    CHECK(run.out.find("layers.0.self_attn.heads.png") != std::string::npos);
    const std::string index = test_helpers::read_file(dir.file("maps/index.md"));
    CHECK(index.find("input: `ids 3,8,0`, no target") != std::string::npos);
    CHECK(index.find("layers.1.self_attn.head0.png") != std::string::npos);  // 2 layers, 1 head
}

TEST_CASE("attention on an encoder-decoder model without bos_id reads the target as given") {
    TempDirectory dir;
    const std::string no_bos = edited(dir, "no-bos.safetensors", kSeq2seq, [](Contents& c) {
        json config = json::parse(c.metadata.at("config"));
        config.erase("bos_id");
        c.metadata["config"] = config.dump();
    });
    const CliRun run = run_tinyformer_ok({"attention", no_bos, "--ids", "3,4,5", "--target-ids", "7,8", "--out", dir.file("maps")});
    const std::string index = test_helpers::read_file(dir.file("maps/index.md"));
    CHECK(index.find("target: `7,8`") != std::string::npos);  // no vocabulary: written as ids
    CHECK(run.err.find("-> 7,8;") != std::string::npos);
}

TEST_CASE("probe on --ids prints the same report as on the text those ids spell") {
    const CliRun text = run_tinyformer_ok({"probe", "data/models/sort.safetensors", "3141"});
    // sort's vocabulary: <pad> <bos> <eos> <unk> 0 1 2 ..., so digit d is id d + 4.
    const CliRun ids = run_tinyformer_ok({"probe", "data/models/sort.safetensors", "--ids", "7,5,8,5"});
    CHECK(text.out == ids.out);  // exact by construction: the same ids, so the same calls on the same numbers
    CHECK(text.out.find("target \"1134\"") != std::string::npos);
}

TEST_CASE("A word-level model reads and writes words of its vocabulary") {
    TempDirectory dir;
    const std::vector<std::string> words = {"<pad>", "<bos>", "<eos>", "<unk>", "the", "cat", "sat", "on",
                                            "mat",   "a",     "dog",   "ran",   "to",  "big"};
    const std::string model = edited(dir, "words.safetensors", "data/reference/do_prefix_pre_gelu_sin.model.safetensors",
                                     [&](Contents& c) {
                                         c.metadata["vocab"] = json(words).dump();
                                         c.metadata["tokenizer"] = std::string("whitespace");
                                     });
    // Random weights: the continuation is whatever the model says, but it is made of its words.
    const CliRun run = run_tinyformer_ok({"run", model, "the  zebra"});  // unknown word -> <unk>, with a warning
    CHECK(run.err.find("1 token(s) of \"the  zebra\" are not in the vocabulary; read as <unk>") != std::string::npos);
    std::istringstream out(run.out);
    const std::set<std::string> known(words.begin(), words.end());
    for (std::string word; out >> word;) CHECK(known.count(word) == 1);
}

TEST_CASE("--unk reads a character outside the vocabulary as <unk> with one warning line in every command that reads TEXT") {
    TempDirectory dir;
    const std::vector<std::vector<std::string>> commands = {
        {"run", kReverse, "hAllo"},
        {"attention", kReverse, "hAllo", "--out", dir.file("maps")},
        {"align", kReverse, "hAllo"},
        {"probe", kReverse, "hAllo"},
        {"explore", kReverse, "hAllo", "--html", dir.file("page.html")},
        {"trace", kReverse, "hAllo", "--output", dir.file("trace.safetensors")},
    };
    for (const std::vector<std::string>& command : commands) {
        CAPTURE(command[0]);
        const CliRun refused = run_tinyformer(command);
        CHECK(refused.status == 1);
        CHECK(refused.err.find("character 'A' at position 1 of \"hAllo\" is not in the model's vocabulary") != std::string::npos);
        std::vector<std::string> with_unk = command;
        with_unk.push_back("--unk");
        const CliRun run = run_tinyformer_ok(with_unk);
        const std::string warning = "tinyformer " + command[0] +
                                    ": warning: 1 token(s) of \"hAllo\" are not in the vocabulary; read as <unk>\n";
        // One warning line; outside `run` it comes last, once the command has done its work.
        if (command[0] == "run")
            CHECK(run.err.starts_with(warning));
        else
            CHECK(run.err.ends_with(warning));
        CHECK(run.err.find("warning") == run.err.rfind("warning"));
        const CliRun help = run_tinyformer_ok({command[0], "--help"});
        CHECK(help.out.find("--unk") != std::string::npos);
    }
}

TEST_CASE("No raw ESC, C1 or bidi control reaches the terminal from a hostile vocabulary or hostile input") {
    // A whitespace copy of the reverse model whose words a..g hold characters that
    // a vocabulary may hold (docs/FORMAT.md) but a terminal must not be given raw:
    // the bidi controls U+202E, U+2066, U+200F, U+2069; and ones that stay as they
    // are: a zero-width joiner U+200D, a combining acute U+0301, the euro sign.
    TempDirectory dir;
    std::vector<std::string> vocab = {"<pad>", "<bos>", "<eos>", "<unk>",
                                      "a\u202Eb", "\u2066x", "y\u200F", "z\u200Dw", "e\u0301", "5\u20AC", "\u2069g"};
    for (char c = 'h'; c <= 'z'; ++c) vocab.push_back(std::string(1, c));
    REQUIRE(vocab.size() == 30);
    const std::string model = edited(dir, "hostile.safetensors", kReverse, [&](Contents& c) {
        c.metadata["vocab"] = json(vocab).dump();
        c.metadata["tokenizer"] = std::string("whitespace");
    });
    // The reverse model reverses ids: words 4..9 ("abcdef" in the char model) come back as 9..4.
    REQUIRE(run_tinyformer_ok({"run", kReverse, "abcdef"}).out == "fedcba\n");
    const std::string words = "a\u202Eb \u2066x y\u200F z\u200Dw e\u0301 5\u20AC";
    // Hostile input: words outside the vocabulary, read as <unk> with a warning that shows them.
    const std::string hostile = words + " \x1b]0;TITLE\x07 \x1b[2J \xc2\x9b" "31m \xff\xfe \xe2\x80\xae";

    auto clean = [](const CliRun& run) {
        INFO("stdout: ", run.out);
        INFO("stderr: ", run.err);
        CHECK(test_helpers::terminal_problem(run.out) == "");
        CHECK(test_helpers::terminal_problem(run.err) == "");
    };
    auto has = [](const std::string& text, const std::string& piece) {
        INFO("missing: ", piece, " in ", text);
        CHECK(text.find(piece) != std::string::npos);
    };
    const std::string escaped_input = "a\\u{202e}b \\u{2066}x y\\u{200f} z\u200Dw e\u0301 5\u20AC \\x1b]0;TITLE\\x07 "
                                      "\\x1b[2J \\u{009b}31m \\xff\\xfe \\u{202e}";
    const std::string unk_warning = "warning: 5 token(s) of \"" + escaped_input + "\" are not in the vocabulary; read as <unk>";

    const CliRun run = run_tinyformer_ok({"run", model, words});
    clean(run);
    CHECK(run.out == "5\u20AC e\u0301 z\u200Dw y\\u{200f} \\u{2066}x a\\u{202e}b\n");
    const CliRun run_unk = run_tinyformer_ok({"run", model, "--unk", hostile});
    clean(run_unk);
    has(run_unk.err, "tinyformer run: " + unk_warning);

    const CliRun align = run_tinyformer_ok({"align", model, "--unk", hostile});
    clean(align);
    has(align.err, "tinyformer align: " + unk_warning);
    has(align.out, "a\\u{202e}b");
    has(align.out, "\\u{2066}x");

    const CliRun probe = run_tinyformer_ok({"probe", model, "--unk", hostile});
    clean(probe);
    has(probe.err, "tinyformer probe: " + unk_warning);
    // probe shows the input as the model read it: the unknown words as <unk>.
    has(probe.out, "probe: hostile on \"a\\u{202e}b \\u{2066}x y\\u{200f} z\u200Dw e\u0301 5\u20AC <unk> <unk> <unk> <unk> <unk>\"");
    has(probe.out, "y\\u{200f}");

    const CliRun explore = run_tinyformer_ok({"explore", model, "--unk", hostile, "--html", dir.file("page\x1b[2J.html")});
    clean(explore);
    has(explore.out, "page\\x1b[2J.html");
    has(explore.err, "tinyformer explore: " + unk_warning);
    has(explore.err, "tinyformer explore: " + escaped_input + " -> ");

    const CliRun attention = run_tinyformer_ok({"attention", model, "--unk", hostile, "--out", dir.file("maps\xe2\x80\xae")});
    clean(attention);
    has(attention.out, "maps\\u{202e}/");
    has(attention.err, "tinyformer attention: " + escaped_input + " -> ");

    // An error holding the model's words and the user's: still one escaped line.
    std::string long_input = hostile;
    for (int i = 0; i < 5; ++i) long_input += " " + words;
    const CliRun refused = run_tinyformer({"run", model, long_input});
    clean(refused);
    CHECK(refused.status == 1);
    CHECK(refused.err.find('\n') == refused.err.size() - 1);
    has(refused.err, "input \"" + escaped_input + " a\\u{202e}b");
    has(refused.err, "is longer than the model's max_len of 32");
}

TEST_CASE("trace --inputs with a file name that is not UTF-8 writes the trace, the name escaped in its metadata") {
    TempDirectory dir;
    const std::string inputs = dir.file("in\xff.safetensors");
    std::filesystem::copy_file("data/reference/ed_post_relu_sin.inputs.safetensors", inputs);
    const CliRun run = run_tinyformer_ok({"trace", kSeq2seq, "--inputs", inputs, "--output", dir.file("trace.safetensors")});
    CHECK(test_helpers::terminal_problem(run.err) == "");
    const tinyformer::SafetensorsFile trace = tinyformer::SafetensorsFile::read(dir.file("trace.safetensors"));
    const std::string written = trace.metadata().at("inputs");
    CHECK(written.ends_with("/in\\xff.safetensors"));
}

namespace {

// data/models/reverse.safetensors with some letters' tokens replaced by other
// characters (its vocabulary: <pad> <bos> <eos> <unk> a b c ...): the model
// still reverses its input, so what run prints for a token is seen exactly.
std::string reverse_with_tokens(const TempDirectory& dir, const std::string& name,
                                const std::map<std::string, std::string>& replaced) {
    return edited(dir, name, kReverse, [&](Contents& c) {
        json vocab = json::parse(c.metadata.at("vocab"));
        for (auto& token : vocab)
            if (replaced.count(token.get<std::string>())) token = replaced.at(token.get<std::string>());
        c.metadata["vocab"] = vocab.dump();
    });
}

}  // namespace

TEST_CASE("run prints a newline and a tab token as themselves; --escape as their pictures; other controls stay escaped") {
    TempDirectory dir;
    // "a" is a newline token, "b" a tab token, "c" the right-to-left override U+202E (a bidi control: escaped).
    const std::string model =
        reverse_with_tokens(dir, "lines.safetensors", {{"a", "\n"}, {"b", "\t"}, {"c", "\xe2\x80\xae"}});
    const std::string input = "x\ny\tz\xe2\x80\xae";  // reversed: U+202E, z, tab, y, newline, x
    const CliRun text = run_tinyformer_ok({"run", model, input});
    CHECK(text.out == "\\u{202e}z\ty\nx\n");
    CHECK(test_helpers::terminal_problem(text.out) == "a raw C0 control or DEL at byte 9");  // the tab, and only it
    const CliRun escaped = run_tinyformer_ok({"run", model, "--escape", input});
    CHECK(escaped.out == "\\u{202e}z\xe2\x90\x89y\xe2\x90\x8ax\n");  // one line: ␉ and ␊
    CHECK(test_helpers::terminal_problem(escaped.out).empty());
    // the same tokens as ids: the newline is the token, not a picture of it
    CHECK(run_tinyformer_ok({"run", model, "--print-ids", input}).out ==
          run_tinyformer_ok({"run", kReverse, "--print-ids", "xaybzc"}).out);
    CHECK(run_tinyformer({"run", model, "--escape", "--print-ids", input}).status == 2);
}

TEST_CASE("run on a model converted before newlines were tokens (its vocabulary holds the picture ␊) prints as before") {
    TempDirectory dir;
    // What --visible-controls writes, and every nanoGPT file converted before: "\n" stored as U+240A.
    const std::string model = reverse_with_tokens(dir, "pictured.safetensors", {{"a", "\xe2\x90\x8a"}});
    // A typed newline is read as the picture's token, and the output shows the picture, with or without --escape.
    CHECK(run_tinyformer_ok({"run", model, "x\ny"}).out == "y\xe2\x90\x8ax\n");
    CHECK(run_tinyformer_ok({"run", model, "x\xe2\x90\x8ay"}).out == "y\xe2\x90\x8ax\n");
    CHECK(run_tinyformer_ok({"run", model, "--escape", "x\ny"}).out == "y\xe2\x90\x8ax\n");
}
