// `tinyformer eval --lengths A-B` (models/study/toy_tasks.*): inputs drawn in the
// range, the ranges refused, the max_len limit, and the position-scheme
// models of docs/EXTRAPOLATION.md (tools/python/train_extrapolation.py)
// against PyTorch's greedy outputs, token for token.

#include "engine/memory/float_buffer.h"
#include "models/study/toy_tasks.h"
#include "tests/greedy_margin.h"

#include "tests/helpers.h"

#include <doctest/doctest.h>

#include "tests/run_cli.h"

#include <fstream>
#include <set>

using namespace tinyformer;
using test_helpers::run_tinyformer;

namespace {

std::string model_path(const std::string& name) { return "data/models/" + name + ".safetensors"; }

}  // namespace

TEST_CASE("parse_length_range reads A-B and A, and refuses anything else by name") {
    const LengthRange range = parse_length_range("17-24");
    CHECK(range.min == 17);
    CHECK(range.max == 24);
    const LengthRange single = parse_length_range("20");
    CHECK(single.min == 20);
    CHECK(single.max == 20);
    CHECK(length_range_text(range) == "17-24");
    CHECK(length_range_text(single) == "20");
    for (const char* bad : {"", "x", "1-", "-3", "1-2-3", "+4", "4 ", "1234567890", "3.5"}) {
        CAPTURE(bad);
        CHECK(test_helpers::error_message([&] { parse_length_range(bad); }) ==
              std::string("lengths '") + bad + "': expected A-B or A, whole numbers of characters (e.g. 17-24 or 20)");
    }
}

TEST_CASE("check_lengths refuses 0, A > B and lengths the task cannot make") {
    const ToyTask& reverse = toy_task("reverse");
    const ToyTask& dates = toy_task("dates");
    CHECK(test_helpers::error_message([&] { check_lengths(reverse, {0, 5}); }) == "lengths 0-5: lengths start at 1 character, got 0");
    CHECK(test_helpers::error_message([&] { check_lengths(reverse, {5, 3}); }) == "lengths 5-3: the first length is larger than the last");
    CHECK(test_helpers::error_message([&] { check_lengths(reverse, {1, 5000}); }) ==
          "lengths 1-5000: the reverse task makes inputs of 1..4096 characters");
    // dates: its shortest form is "1 may 1900" (10), its longest "wednesday 30 september 1998" (27).
    CHECK(test_helpers::error_message([&] { check_lengths(dates, {9, 12}); }) == "lengths 9-12: the dates task makes inputs of 10..27 characters");
    CHECK(test_helpers::error_message([&] { check_lengths(dates, {28, 28}); }) == "lengths 28: the dates task makes inputs of 10..27 characters");
    CHECK_NOTHROW(check_lengths(dates, {10, 27}));
    CHECK_NOTHROW(check_lengths(reverse, {1, 4096}));
}

TEST_CASE("draw_inputs: every input has a length in the range, each length of the range comes up") {
    for (const char* name : {"reverse", "sort"}) {
        CAPTURE(name);
        const ToyTask& task = toy_task(name);
        const std::vector<std::string> texts = draw_inputs(task, 1000, 1, LengthRange{5, 8});
        REQUIRE(texts.size() == 1000);
        std::set<size_t> seen;
        for (const std::string& text : texts) {
            CHECK(text.size() >= 5);
            CHECK(text.size() <= 8);
            CHECK(text.find_first_not_of(task.alphabet) == std::string::npos);
            seen.insert(text.size());
        }
        CHECK(seen == std::set<size_t>{5, 6, 7, 8});  // 1000 draws of 4 lengths: each ~250 times
        for (const std::string& text : draw_inputs(task, 50, 3, LengthRange{20, 20})) CHECK(text.size() == 20);
        // Without a range: 1..16 as before; with 1-16 the very same draws.
        const std::vector<std::string> plain = draw_inputs(task, 300, 7);
        CHECK(plain == draw_inputs(task, 300, 7, LengthRange{1, 16}));
        for (const std::string& text : plain) CHECK((text.size() >= 1 && text.size() <= 16));
    }
    const ToyTask& dates = toy_task("dates");
    for (const std::string& text : draw_inputs(dates, 30, 1, LengthRange{27, 27})) {
        CAPTURE(text);
        CHECK(text.size() == 27);
        CHECK(!iso_date(text).empty());  // a real date in one of the forms
    }
    for (const std::string& text : draw_inputs(dates, 200, 2, LengthRange{11, 12})) CHECK((text.size() == 11 || text.size() == 12));
}

TEST_CASE("eval --lengths: inputs that cannot fit the model's max_len are refused, naming both numbers") {
    // reverse-causal: max_len 40, a decoder-only prompt <bos> TEXT '=' (L + 2) and the
    // answer (L) must fit: 2L + 2 <= 40, so L <= 19; L = 20 needs 42.
    const Model causal = Model::load(model_path("reverse-causal"));
    CHECK(longest_fitting_length(causal, toy_task("reverse")) == 19);
    CHECK(test_helpers::error_message([&] { evaluate(causal, toy_task("reverse"), 10, 1, 1, LengthRange{17, 20}); }) ==
          "evaluate: an input of 20 characters needs 42 positions with its answer, more than the model's max_len 40 "
          "(inputs up to 19 characters fit)");
    CHECK_NOTHROW(evaluate(causal, toy_task("reverse"), 3, 1, 1, LengthRange{19, 19}));
    // sort: encoder-decoder, max_len 32: source L <= 32 and <bos> + answer L + 1 <= 32, so L <= 31.
    const Model sort = Model::load(model_path("sort"));
    CHECK(longest_fitting_length(sort, toy_task("sort")) == 31);
    // reverse-learned etc.: max_len 72, 2L + 2 <= 72, so L <= 35.
    CHECK(longest_fitting_length(Model::load(model_path("reverse-learned")), toy_task("reverse")) == 35);
}

TEST_CASE("tinyformer eval --lengths: the refusals are one line, usage errors exit 2, the model's limit exits 1") {
    const std::string model = model_path("reverse-causal");
    struct Refusal {
        std::vector<std::string> args;
        int status;
        std::string error;
    };
    const std::vector<Refusal> refusals = {
        {{"--lengths", "0"}, 2, "tinyformer: error: eval: --lengths 0: lengths start at 1 character, got 0\n"},
        {{"--lengths", "9-3"}, 2, "tinyformer: error: eval: --lengths 9-3: the first length is larger than the last\n"},
        {{"--lengths", "abc"}, 2,
         "tinyformer: error: eval: --lengths 'abc': expected A-B or A, whole numbers of characters (e.g. 17-24 or 20)\n"},
        {{"--lengths", "99999"}, 2, "tinyformer: error: eval: --lengths 99999: the reverse task makes inputs of 1..4096 characters\n"},
        {{"--lengths", "25-32"}, 1,
         "tinyformer: error: evaluate: an input of 32 characters needs 66 positions with its answer, more than the "
         "model's max_len 40 (inputs up to 19 characters fit)\n"},
    };
    for (const Refusal& refusal : refusals) {
        std::vector<std::string> args = {"eval", model, "--task", "reverse", "--n", "5"};
        args.insert(args.end(), refusal.args.begin(), refusal.args.end());
        CAPTURE(refusal.args[1]);
        const auto run = run_tinyformer(args);
        CHECK(run.status == refusal.status);
        CHECK(run.out.empty());
        CHECK(run.err == refusal.error);
    }
    const auto help = run_tinyformer({"eval", "--help"});
    CHECK(help.status == 0);
    CHECK(help.out.find("--lengths A-B") != std::string::npos);
    const auto ok = run_tinyformer({"eval", model, "--task", "reverse", "--n", "4", "--lengths", "3"});
    CHECK(ok.status == 0);
    CHECK(ok.out.rfind(model + " on 4 fresh reverse examples of length 3 (seed 1, greedy): exact match 4/4 = 100.00%\n", 0) == 0);
}

TEST_CASE("The position-scheme models equal PyTorch's greedy outputs, lengths 1..32, token for token") {
    // 200 held-out inputs of length 1..16, then 100 of 17..32 (train_extrapolation.py).
    for (const char* name : {"reverse-learned", "reverse-sinusoidal", "reverse-rotary", "reverse-alibi"}) {
        CAPTURE(name);
        const Model model = Model::load(model_path(name));
        std::ifstream file("data/models/" + std::string(name) + ".greedy.tsv");
        REQUIRE_MESSAGE(file.good(), "missing data/models/", name, ".greedy.tsv (run the tests from the repository root)");
        std::vector<std::string> inputs, expected;
        for (std::string line; std::getline(file, line);) {
            if (line.empty() || line[0] == '#') continue;
            const size_t tab = line.find('\t');
            REQUIRE(tab != std::string::npos);
            inputs.push_back(line.substr(0, tab));
            expected.push_back(line.substr(tab + 1));
        }
        REQUIRE(inputs.size() == 300);
        // The sanitizer build (make sanitize) took 175 s here against the normal build's 8 s
        // (a loaded 2-core machine): there every 10th input is compared, 20 of the 200
        // held-out and 10 of the long ones, on the same code paths; what it looks for is a
        // memory error or undefined behaviour. The normal build compares all 300 and counts
        // the held-out right answers, which are the committed models' own property.
        const bool sanitized = float_buffer_pool_state().starts_with("off (sanitizer");
        const size_t stride = sanitized ? 10 : 1, held_out = (200 + stride - 1) / stride;
        if (sanitized) {
            std::vector<std::string> some_inputs, some_expected;
            for (size_t i = 0; i < inputs.size(); i += stride) {
                some_inputs.push_back(inputs[i]);
                some_expected.push_back(expected[i]);
            }
            inputs = some_inputs;
            expected = some_expected;
        }
        // PyTorch's logits are within FORMAT's 1e-4 + 1e-4|b| of ours, not the same floats:
        // every output is compared over the steps our top-2 margin decides, in full where
        // every step is (tests/greedy_margin.h). In distribution every step is. Beyond it
        // (inputs 200..299, lengths 17..32) the models are mostly wrong and close calls
        // between tokens occur (one of reverse-sinusoidal's 100, a 27-character input, came
        // out otherwise than PyTorch's on one machine): those rows are compared up to the tie.
        const test_helpers::AgainstPytorch c = test_helpers::greedy_against_pytorch(model, inputs, expected);
        int64_t right = 0, decided_short = 0;
        for (size_t i = 0; i < held_out; ++i) {
            decided_short += c.row_decided[i];
            right += c.outputs[i] == std::string(inputs[i].rbegin(), inputs[i].rend());
        }
        CHECK(decided_short == static_cast<int64_t>(held_out));
        MESSAGE(std::string(name), ": ", c.same, "/", inputs.size(), " outputs identical to PyTorch's (", c.decided,
                " decided at every step); ", right, "/", held_out, " held-out 1..16 right");
        // In distribution: rotary 200/200, learned 199, sinusoidal 191, alibi 186 of the 200
        // (the same budget for all four; EXTRAPOLATION.md names the two below 95%).
        if (!sanitized) CHECK(right >= 180);
    }
}
