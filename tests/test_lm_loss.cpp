// Language-model loss per position (models/study/lm_loss.*, `tinyformer eval
// --task lm`): the ranges refused, and the five models of docs/EXTRAPOLATION.md's
// second experiment (tools/python/train_lm_extrapolation.py) against PyTorch's
// mean NLL per range on the same held-out sequences (data/models/lm-*.loss.tsv).

#include "models/study/lm_loss.h"

#include "tests/helpers.h"

#include <doctest/doctest.h>

#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

using namespace tinyformer;
using test_helpers::CliRun;
using test_helpers::run_tinyformer;

namespace {

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

const char* const kSchemes[] = {"learned", "sinusoidal", "rotary", "alibi", "none"};

}  // namespace

TEST_CASE("parse_position_ranges reads A-B,C-D and A, and refuses the rest by name") {
    const std::vector<PositionRange> ranges = parse_position_ranges("2-31,32-47,96");
    REQUIRE(ranges.size() == 3);
    CHECK(ranges[0].first == 2);
    CHECK(ranges[0].last == 31);
    CHECK(ranges[2].first == 96);
    CHECK(ranges[2].last == 96);
    CHECK(position_range_text(ranges[1]) == "32-47");
    CHECK(position_range_text(ranges[2]) == "96");
    for (const char* bad : {"", "x", "3-", "-3", "1-2-3", "2-31,", ",2", "1234567890", "3.5", "2-31,,4"}) {
        CAPTURE(bad);
        CHECK(test_helpers::error_message([&] { parse_position_ranges(bad); }).starts_with("positions: expected A-B or A"));
    }
    CHECK(test_helpers::error_message([&] { parse_position_ranges("2-31,9-3"); }) == "positions: the range '9-3' is reversed (9 > 3)");
}

TEST_CASE("mean_nll_per_range averages the positions of each range and refuses one past the last") {
    const std::vector<double> per_position = {4.0, 1.0, 2.0, 6.0};  // positions 0..3
    // 1-2: (1 + 2) / 2 = 1.5; 0-3: 13 / 4 = 3.25; 3: 6.
    const std::vector<double> means = mean_nll_per_range(per_position, {{1, 2}, {0, 3}, {3, 3}});
    CHECK(means == std::vector<double>{1.5, 3.25, 6.0});
    CHECK(test_helpers::error_message([&] { mean_nll_per_range(per_position, {{2, 4}}); }) ==
          "positions: the range 2-4 goes past the last scored position 3 (sequences of 5 tokens: position p predicts "
          "token p + 1)");
}

TEST_CASE("read_lm_sequences maps characters through the vocabulary and refuses unknown ones and ragged lines") {
    const Model model = Model::load("data/models/lm-none.safetensors");  // vocabulary a..h = ids 0..7
    const auto sequences = read_lm_sequences(model, "# a comment\nabh\r\n\nhha\n");
    REQUIRE(sequences.size() == 2);
    CHECK(sequences[0] == std::vector<int64_t>{0, 1, 7});
    CHECK(sequences[1] == std::vector<int64_t>{7, 7, 0});
    CHECK(test_helpers::error_message([&] { read_lm_sequences(model, "abc\nabz\n"); }) ==
          "lm sequences: line 2 has 'z', which is not in the model's vocabulary");
    CHECK(test_helpers::error_message([&] { read_lm_sequences(model, "abc\nab\n"); }) == "lm sequences: line 2 has 2 tokens, the first sequence 3");
    CHECK(test_helpers::error_message([&] { read_lm_sequences(model, "# nothing\n"); }).starts_with("lm sequences: no sequence"));
    // max_len 128: a line of 129 tokens is read, one of 130 refused as it is read (by its own
    // length, before the characters are looked at), and reading stops after `limit` sequences.
    std::istringstream fits(std::string(129, 'a') + "\r\n" + std::string(129, 'b') + "\n");
    CHECK(read_lm_sequences(model, fits, 5).size() == 2);
    std::istringstream too_long("ab\n# c\n" + std::string(100000, 'z') + "\n");
    CHECK(test_helpers::error_message([&] { read_lm_sequences(model, too_long, 5); }) ==
          "lm sequences: line 3 has 100000 tokens, more than max_len + 1 = 129 (T tokens need T - 1 positions)");
    std::istringstream limited("abc\nhha\nabz\n" + std::string(100000, 'z') + "\n");
    const auto first_two = read_lm_sequences(model, limited, 2);
    REQUIRE(first_two.size() == 2);
    CHECK(first_two[1] == std::vector<int64_t>{7, 7, 0});
    CHECK(limited.peek() == 'a');  // stopped at line 3, unread
    // 130 tokens need 129 positions; max_len is 128.
    const std::vector<std::vector<int64_t>> long_one = {std::vector<int64_t>(130, 0)};
    CHECK(test_helpers::error_message([&] { mean_nll_per_position(model, long_one); }) ==
          "lm loss: sequences of 130 tokens need 129 positions, more than the model's max_len 128");
}

TEST_CASE("a model without positions scores a repeated letter the same at every position") {
    // lm-none has no position signal: at position p of "dddd..." causal attention
    // averages p + 1 copies of one value vector, which is that vector, so every
    // position gets the same logits and the same NLL (to float rounding).
    const Model model = Model::load("data/models/lm-none.safetensors");
    const std::vector<double> nll = mean_nll_per_position(model, {std::vector<int64_t>(5, 3)});
    REQUIRE(nll.size() == 4);
    for (double value : nll) CHECK(value == doctest::Approx(nll[0]).epsilon(1e-5));
    // A model with positions does not: lm-learned adds a different row at each p.
    const Model learned = Model::load("data/models/lm-learned.safetensors");
    const std::vector<double> placed = mean_nll_per_position(learned, {std::vector<int64_t>(5, 3)});
    CHECK(std::fabs(placed[3] - placed[0]) > 1e-3);
}

// PyTorch: tools/python/train_lm_extrapolation.py computed each range's mean
// NLL from its own float32 logits (log-softmax in float64), on the same 200
// sequences. The engine's logits agree with PyTorch's to float rounding (about
// 1e-6 relative: a different summation order in the products), which moves an
// NLL by about as much; a mean over 200 x 16 or more cells is no worse. So
// 1e-5 relative holds with room, while a position wrong by one, a wrong rotary
// angle or ALiBi slope moves these means by 1e-3 and more (the ranges past 31
// differ by 0.1 to 2 nats between schemes).
TEST_CASE("eval --task lm: every model's mean NLL per range equals PyTorch's on the held-out sequences") {
    for (const char* scheme : kSchemes) {
        CAPTURE(scheme);
        const std::string name = std::string("data/models/lm-") + scheme;
        const Model model = Model::load(name + ".safetensors");
        const auto sequences = read_lm_sequences(model, file_text("data/models/lm-heldout.txt"));
        CHECK(sequences.size() == 200);
        const std::vector<double> per_position = mean_nll_per_position(model, sequences);
        REQUIRE(per_position.size() == 128);
        std::stringstream tsv(file_text(name + ".loss.tsv"));
        std::string line;
        int64_t rows = 0;
        while (std::getline(tsv, line)) {
            if (line.empty() || line[0] == '#') continue;
            const size_t tab = line.find('\t');
            REQUIRE(tab != std::string::npos);
            const PositionRange range = parse_position_ranges(line.substr(0, tab)).at(0);
            const double pytorch = std::stod(line.substr(tab + 1));
            const double engine = mean_nll_per_range(per_position, {range}).at(0);
            CAPTURE(line);
            CHECK(std::fabs(engine - pytorch) <= 1e-5 * std::fabs(pytorch));
            ++rows;
        }
        CHECK(rows == 5);
    }
}

TEST_CASE("eval --task lm prints one row per model and refuses bad ranges in one line") {
    const CliRun run = run_tinyformer({"eval", "data/models/lm-alibi.safetensors", "data/models/lm-none.safetensors",
                                       "--task", "lm", "--data", "data/models/lm-heldout.txt", "--positions", "2-31",
                                       "--n", "10"});
    CHECK(run.status == 0);
    CHECK(run.out.starts_with("mean NLL (nats) per position range, 10 sequences of 129 tokens in "
                              "data/models/lm-heldout.txt (position p predicts token p+1):\nmodel        2-31\n"
                              "lm-alibi   "));
    CHECK(run.out.find("\nlm-none    ") != std::string::npos);  // the names padded to the longest, "lm-alibi"
    const auto refused = [](const std::string& positions) {
        return run_tinyformer({"eval", "data/models/lm-alibi.safetensors", "--task", "lm", "--data",
                               "data/models/lm-heldout.txt", "--positions", positions});
    };
    const CliRun past = refused("96-128");
    CHECK(past.status == 1);
    CHECK(past.err == "tinyformer: error: eval: --positions 96-128 goes past data/models/lm-alibi.safetensors's last "
                      "position 127 (max_len 128)\n");
    const CliRun reversed = refused("31-2");
    CHECK(reversed.status == 2);
    CHECK(reversed.err == "tinyformer: error: eval: --positions: the range '31-2' is reversed (31 > 2)\n");
    const CliRun empty = refused("");
    CHECK(empty.status == 2);
    CHECK(empty.err.starts_with("tinyformer: error: eval: --positions: expected A-B or A"));
    const CliRun no_data = run_tinyformer({"eval", "data/models/lm-alibi.safetensors", "--task", "lm", "--positions", "2-3"});
    CHECK(no_data.status == 2);
    CHECK(no_data.err == "tinyformer: error: eval: --task lm needs --data FILE (held-out sequences, one a line)\n");
}

TEST_CASE("eval --task lm --plot draws any finite loss: the y step follows the range") {
    // lm-none with lm_head zeroed and its bias (0, -60, ..., -60): the logits are the bias
    // at every position, so on "bbb..." (token 1) the NLL is log(1 + 7 e^-60) + 60 = 60 nats
    // (7 e^-60 is 1e-25) everywhere. A fixed half-nat step would need 120 ticks.
    test_helpers::TempDirectory dir;
    const auto sure = [](test_helpers::Contents& c) {
        std::vector<uint8_t>& weight = c.tensor("lm_head.weight").bytes;
        std::fill(weight.begin(), weight.end(), 0);  // 0.0f is four zero bytes
        test_helpers::set_float(c.tensor("lm_head.bias"), 0, 0.0f);
        for (size_t v = 1; v < 8; ++v) test_helpers::set_float(c.tensor("lm_head.bias"), v, -60.0f);
    };
    const std::string model = test_helpers::edited(dir, "lm-sure.safetensors", "data/models/lm-none.safetensors", sure);
    {
        std::ofstream data(dir.file("b.txt"));
        data << std::string(9, 'b') << "\n" << std::string(9, 'b') << "\n";
    }
    const CliRun run = run_tinyformer({"eval", model, "--task", "lm", "--data", dir.file("b.txt"), "--positions", "0-7",
                                       "--plot", dir.file("loss.png")});
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK(run.out.find("\nlm-sure  60.0000\n") != std::string::npos);
    CHECK(run.out.ends_with("loss.png\n"));
    CHECK(std::ifstream(dir.file("loss.png")).good());
}
