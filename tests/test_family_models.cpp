// The decoder-only family models of data/families/, run from their committed files as a
// user runs them (no Python, no torch here):
//
//   nanogpt-char  a nanoGPT-style character model (bias=False, tied head, exact GELU)
//                 trained by tools/python/examples/train_nanogpt_char.py, exported from
//                 its ckpt.pt + meta.pkl by the nanoGPT converter
//   mingpt-sort   minGPT's sorting demo (tanh GELU, untied head without bias) trained by
//                 tools/python/examples/train_mingpt_sort.py, exported from its state_dict
//   gpt2-tiny     a 2-layer GPT-2 with its own 557-token byte-level BPE vocabulary,
//                 trained by tools/python/examples/train_gpt2_tiny.py, exported from its
//                 Hugging Face folder (config.json, model.safetensors, vocab.json, merges.txt)
//
// The reference outputs are PyTorch's: families/gpt.py's GPT.generate(do_sample=False)
// (nanoGPT's loop with the argmax) or families/hf_gpt2.py's generate_greedy on the trained module, written to NAME.greedy.tsv by
// those scripts (data/families/README.md gives the commands). Neither model has an end
// token, so each prompt asks for exactly as many tokens as PyTorch generated
// (--max-new-tokens).
#include <doctest/doctest.h>

#include "models/text.h"
#include "tests/greedy_margin.h"
#include "tests/run_cli.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

using test_helpers::CliRun;
using test_helpers::run_tinyformer;

namespace {

struct Continuation {
    std::string prompt, output;
    size_t tokens;  // how many tokens PyTorch generated
};

// NAME.greedy.tsv: "prompt TAB continuation [TAB tokens]" per line, '#' lines are
// comments. Nothing trimmed: a prompt or a continuation may end in a space. Without the
// third column the continuation's characters are its tokens (a char tokenizer over ASCII).
std::vector<Continuation> continuations(const std::string& path) {
    std::ifstream file(path);
    REQUIRE_MESSAGE(file.good(), "missing ", path, " (run the tests from the repository root)");
    std::vector<Continuation> rows;
    for (std::string line; std::getline(file, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t tab = line.find('\t');
        REQUIRE(tab != std::string::npos);
        const size_t second = line.find('\t', tab + 1);
        Continuation row{line.substr(0, tab), line.substr(tab + 1, second == std::string::npos ? std::string::npos
                                                                                                : second - tab - 1),
                         0};
        row.tokens = second == std::string::npos ? row.output.size() : std::stoul(line.substr(second + 1));
        rows.push_back(row);
    }
    return rows;
}

// Every committed prompt through `tinyformer run MODEL --max-new-tokens N PROMPT`, one
// prompt per run (B=1, as PyTorch generated them); returns how many were identical.
// char_max_len > 0 (a char model's max_len): tinyformer never lets prompt + output
// outgrow max_len positions, while the upstream generate also makes the token after the
// last position (it needs none of its own): only the first max_len - prompt characters
// of PyTorch's continuation are expected then.
int same_as_pytorch(const std::string& name, size_t expected_rows, size_t char_max_len = 0) {
    const std::string model = "data/families/" + name + ".safetensors";
    const std::vector<Continuation> rows = continuations("data/families/" + name + ".greedy.tsv");
    REQUIRE(rows.size() == expected_rows);
    const tinyformer::Model loaded = tinyformer::Model::load(model);
    int same = 0;
    for (const Continuation& row : rows) {
        CAPTURE(row.prompt);
        const CliRun run = run_tinyformer({"run", model, "--max-new-tokens", std::to_string(row.tokens), row.prompt});
        INFO("stderr: ", run.err);
        REQUIRE(run.status == 0);
        std::string expected = row.output;
        if (char_max_len > 0 && row.prompt.size() + expected.size() > char_max_len)
            expected.resize(char_max_len - row.prompt.size());
        // PyTorch's logits are within FORMAT's bound of the engine's, not the same floats: the
        // output must be PyTorch's where the engine's top-2 margin decides every step
        // (tests/greedy_margin.h, read in this process: its logits are within float rounding,
        // far below that bound, of the `run` above), and every step of these prompts is.
        const test_helpers::AgainstPytorch margins = test_helpers::greedy_against_pytorch(
            loaded, {row.prompt}, {expected}, static_cast<int64_t>(row.tokens));
        CHECK(margins.decided == 1);
        if (margins.decided == 1) CHECK(run.out == expected + "\n");
        same += run.out == expected + "\n";
    }
    return same;
}

}  // namespace

TEST_CASE("families: the nanoGPT char model continues each committed prompt as PyTorch's generate does") {
    const int same = same_as_pytorch("nanogpt-char", 5);
    MESSAGE("nanogpt-char: ", same, "/5 continuations identical to PyTorch's");
}

TEST_CASE("families: the minGPT sort model sorts as PyTorch's generate does, and the answers are sorted") {
    // minGPT's demo: 6 digits, block_size 11, 6 answer tokens; the 6th comes from 11
    // positions, so tinyformer (max_len 11) writes the first 5 of them.
    const int same = same_as_pytorch("mingpt-sort", 20, 11);
    MESSAGE("mingpt-sort: ", same, "/20 answers identical to PyTorch's (their first 5 tokens)");
    // The task itself, checked by hand rather than against PyTorch: each committed answer
    // is its input's digits in ascending order (the model was trained to do this).
    for (const Continuation& row : continuations("data/families/mingpt-sort.greedy.tsv")) {
        std::string sorted = row.prompt;
        std::sort(sorted.begin(), sorted.end());
        CHECK(row.output == sorted);
    }
}

TEST_CASE("families: the tiny GPT-2 (byte-level BPE) continues each committed prompt as PyTorch does") {
    const int same = same_as_pytorch("gpt2-tiny", 5);
    MESSAGE("gpt2-tiny: ", same, "/5 continuations identical to PyTorch's");
}

// data/families/llama2c-tiny: a llama2.c-shaped model (RMSNorm, SwiGLU, rotary on adjacent
// pairs, 4 query heads sharing 2 K/V heads, tied head, its own 384-piece tokenizer.bin)
// trained by tools/python/examples/train_llama2c_tiny.py. Its greedy.tsv holds, per prompt,
// the prompt's ids as run.c encodes them (BOS 1 first) and the ids PyTorch's greedy
// generate (families/llama.py, checked equal to upstream model.py) continued with.
TEST_CASE("families: the llama2.c model continues each committed prompt with PyTorch's ids, and the text encodes as run.c") {
    const std::string model = "data/families/llama2c-tiny/llama2c-tiny.safetensors";
    const tinyformer::Model loaded = tinyformer::Model::load(model);
    std::ifstream file("data/families/llama2c-tiny/llama2c-tiny.greedy.tsv");
    REQUIRE(file.good());
    int rows = 0, same = 0, encoded = 0;
    for (std::string line; std::getline(file, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> fields;
        for (size_t start = 0;;) {
            const size_t tab = line.find('\t', start);
            fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
            if (tab == std::string::npos) break;
            start = tab + 1;
        }
        REQUIRE(fields.size() >= 3);
        const std::string& prompt = fields[0];
        const std::string& prompt_ids = fields[1];
        const std::string& expected = fields[2];
        CAPTURE(prompt);
        ++rows;
        const size_t tokens = static_cast<size_t>(std::count(expected.begin(), expected.end(), ',')) + 1;
        // run --ids puts the model's <bos> (bos_id 1) first itself, as it does for text.
        REQUIRE(prompt_ids.rfind("1,", 0) == 0);
        const std::string after_bos = prompt_ids.substr(2);
        const CliRun run = run_tinyformer(
            {"run", model, "--ids", after_bos, "--max-new-tokens", std::to_string(tokens), "--print-ids"});
        INFO("stderr: ", run.err);
        REQUIRE(run.status == 0);
        // Compared under the top-2 margin of the engine's logits, as above, in this process.
        tinyformer::GenerationOptions options;
        options.record_logits = true;
        options.max_new_tokens = static_cast<int64_t>(tokens);
        const std::vector<int64_t> after_bos_ids = tinyformer::parse_ids(after_bos, "prompt ids");
        const tinyformer::Generation greedy =
            tinyformer::greedy_decode(loaded, {tinyformer::model_input(loaded, after_bos_ids)}, options);
        const test_helpers::Decided decided = test_helpers::check_same_greedy_tokens(
            greedy, 0, tinyformer::parse_ids(expected, "expected ids"), test_helpers::kPytorchAgreement);
        CHECK(decided.all());
        if (decided.all()) CHECK(run.out == expected + "\n");
        same += run.out == expected + "\n";
        // The engine's sentencepiece_bpe encoding of the prompt is the file's (without its BOS).
        const CliRun ids = run_tinyformer({"tokenize", model, prompt, "--format", "ids"});
        REQUIRE(ids.status == 0);
        std::string spaced = after_bos;
        std::replace(spaced.begin(), spaced.end(), ',', ' ');
        CHECK(ids.out == spaced + "\n");
        encoded += ids.out == spaced + "\n";
    }
    CHECK(rows == 5);
    MESSAGE("llama2c-tiny: ", same, "/", rows, " continuations identical to PyTorch's; ", encoded, "/", rows,
            " prompts encoded as the file has them");
}
