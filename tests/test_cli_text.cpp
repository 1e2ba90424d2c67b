// The CLI's inputs (tools/cli/inputs.h, run.cpp): TEXT or --ids, the prompt
// suffix, standard input, and models without a vocabulary or bos_id, run
// through the built program as a user would. Refusals are in the bad-input
// catalogue (tests/test_bad_inputs.cpp).
#include <doctest/doctest.h>

#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

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
    CHECK(run.out.find("layers-layer0-self-heads.png") != std::string::npos);
    const std::string index = test_helpers::read_file(dir.file("maps/index.md"));
    CHECK(index.find("input: `ids 3,8,0`, no target") != std::string::npos);
    CHECK(index.find("layers-layer1-self-head0.png") != std::string::npos);  // 2 layers, 1 head
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
    CHECK(text.out == ids.out);
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
