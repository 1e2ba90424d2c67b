// `tinyformer lesson` (tools/cli/lesson.cpp), run as a learner runs it: each
// lesson's key numbers against numbers worked out by hand in the comments
// here, so that a change to what a lesson prints fails a test.
#include <doctest/doctest.h>

#include "tests/run_cli.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <sys/wait.h>

using test_helpers::CliRun;
using test_helpers::run_tinyformer;

namespace {

std::string lesson(const std::string& name) {
    const CliRun run = run_tinyformer({"lesson", name});
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    return run.out;
}

bool has(const std::string& text, const std::string& piece) {
    INFO("missing: ", piece);
    return text.find(piece) != std::string::npos;
}

// The number printed after `label` on its line, e.g. "no positions   4.77e-07".
double number_after(const std::string& text, const std::string& label) {
    const size_t at = text.find(label);
    REQUIRE_MESSAGE(at != std::string::npos, "missing: ", label);
    return std::strtod(text.c_str() + at + label.size(), nullptr);
}

}  // namespace

TEST_CASE("lesson causal: 2, 3, 14/3 with future weights exactly 0; the reversed mask gives 14/3, 6, 8") {
    const std::string out = lesson("causal");
    // Q = K = 0: each query averages its allowed values of V = [2, 4, 8]:
    // q0 -> 2, q1 -> (2+4)/2 = 3, q2 -> (2+4+8)/3 = 14/3 = 4.666667.
    CHECK(has(out, "outputs: 2.000000 3.000000 4.666667"));
    CHECK(has(out, "every future weight (key > query) is exactly 0: yes"));
    // Reversed: q0 sees all three (14/3), q1 sees 4 and 8 (6), q2 sees 8.
    CHECK(has(out, "outputs: 4.666667 6.000000 8.000000"));
}

TEST_CASE("lesson conventions: the MHA and SDPA spellings of one causal mask give identical weights") {
    const std::string out = lesson("conventions");
    CHECK(has(out, "identical: yes"));
    CHECK(has(out, "query 2 of batch 0 may attend no key"));  // the migration bug, refused
}

TEST_CASE("lesson nan-history: the migration bug gives 6, 8, NaN in PyTorch 1.13 and 6, 8, 0 since 2.5") {
    const std::string out = lesson("nan-history");
    // MHA's causal tensor read as SDPA's (True = allowed): q0 sees keys 1, 2 -> (4 + 8) / 2 = 6;
    // q1 sees key 2 -> 8; q2 sees none -> NaN (1.13) or 0 (_safe_softmax).
    CHECK(has(out, "softmax as PyTorch 1.13:        outputs 6.00, 8.00, NaN"));
    CHECK(has(out, "softmax as PyTorch >= 2.5 SDPA: outputs 6.00, 8.00, 0.00"));
    CHECK(has(out, "tinyformer:                     attention: query 2 of batch 0 may attend no key"));
    CHECK(has(out, "#133882"));
}

TEST_CASE("lesson need-weights: weights run the materialized path, no weights the streaming one, same output") {
    const std::string out = lesson("need-weights");
    CHECK(has(out, "weights asked for:     path materialized weights [1,2,5,5]"));
    CHECK(has(out, "weights not asked for: path streaming    weights none"));
    CHECK(number_after(out, "the outputs differ by at most") < 1e-5);
}

TEST_CASE("lesson dropout: one row's softmax, a draw at p = 0.1, and the 1/(1-p) rescale") {
    const std::string out = lesson("dropout");
    // softmax([1, 2, 0.5, 3, 1.5]) = e^(x-3) / sum: e^-2 = 0.135335, e^-1 = 0.367879,
    // e^-2.5 = 0.082085, 1, e^-1.5 = 0.223130; sum 1.808430
    // -> 0.074836 0.203425 0.045390 0.552966 0.123384
    CHECK(has(out, "0.0748 0.2034 0.0454 0.5530 0.1234   sum 1.0000"));
    // key 3 dropped, the rest x 1/0.9 = 1.111111: 0.083151 0.226028 0.050433 0 0.137093, sum 0.496705
    CHECK(has(out, "0.0832 0.2260 0.0504 0.0000 0.1371   sum 0.4967"));
    CHECK(has(out, "dropout_p = self.dropout if self.training else 0.0"));
}

TEST_CASE("lesson positions: equivariant without positions, not with sinusoidal or learned ones") {
    const std::string out = lesson("positions");
    CHECK(number_after(out, "no positions") < 1e-5);
    CHECK(number_after(out, "sinusoidal positions") > 0.1);
    CHECK(number_after(out, "learned positions (random table)") > 0.1);
}

TEST_CASE("lesson multihead: the projection parameters at D = 512 are the same for H = 1, 8 and 16") {
    const std::string out = lesson("multihead");
    // [3D, D] + [3D] + [D, D] + [D] = 4 D^2 + 4 D = 4 * 262144 + 2048 = 1050624, whatever H is.
    CHECK(has(out, "H =  1, Dh = 512: 1050624 projection parameters"));
    CHECK(has(out, "H =  8, Dh =  64: 1050624 projection parameters"));
    CHECK(has(out, "H = 16, Dh =  32: 1050624 projection parameters"));
    CHECK(has(out, "(mask: causal over the 4 positions)"));
}

TEST_CASE("lesson paths: the streaming path holds less only where [L,S] is large, by formula and measured") {
    const std::string out = lesson("paths");
    // L=300, S=1000: scores 300*1000*4 B = 1.14 MiB; the streaming tile is clamped to S:
    // [256, 1000] + 2*256 floats = 1026048 B = 1002.0 KiB — about the same.
    CHECK(has(out, "300   1000  materialized            75.0 KiB + 1.1 MiB"));
    CHECK(has(out, "300   1000  streaming            75.0 KiB + 1002.0 KiB"));
    // L=S=8192: scores 8192^2 * 4 B = 256 MiB; a [256, 2048] tile + 512 floats = 2.0 MiB.
    CHECK(has(out, "8192   8192  materialized           2.0 MiB + 256.0 MiB"));
    CHECK(has(out, "8192   8192  streaming                2.0 MiB + 2.0 MiB"));
    // Measured peaks (the last column): the materialized path really holds the scores,
    // the streaming one less than a tenth of them.
    const double materialized = number_after(out, "2.0 MiB + 256.0 MiB");
    const double streaming = number_after(out, "2.0 MiB + 2.0 MiB");
    CHECK(materialized >= 256.0);
    CHECK(streaming < 25.6);
}

TEST_CASE("lesson finite-negative: -1e4 lets e^4 / (2 + e^4) = 0.964663 of the weight through") {
    const std::string out = lesson("finite-negative");
    // Scores [0, 0, 10004] + [0, 0, -1e4] = [0, 0, 4]: e^4 = 54.59815, 54.59815 / 56.59815 = 0.964663,
    // and 1 / 56.59815 = 0.017668 for each of the others: the engine's weights.
    CHECK(has(out, "0.017668   0.017668   0.964663"));
    CHECK(has(out, "zeroed after softmax:  row sums: 0.666667"));  // 1 - 1/3: the row no longer sums to 1
    // -inf: exp(-inf) = 0 exactly, the other two share the row: 1/2 each.
    CHECK(has(out, "0.500000   0.500000   0.000000"));
    CHECK(has(out, "masked before softmax: row sums: 1.000000"));
}

TEST_CASE("lesson shapes: cross-attention's shapes with L = 4 queries over S = 6 keys, rows summing to 1") {
    const std::string out = lesson("shapes");
    // Q [2,4,8] K [2,6,8] V [2,6,5]: scores Q K^T are [B,L,S] = [2,4,6], the output A V [B,L,Dv] = [2,4,5].
    CHECK(has(out, "scores  A [B,L,S]  = [2,4,6]"));
    CHECK(has(out, "output  O [B,L,Dv] = [2,4,5]"));
    CHECK(has(out, "row sums: 1.000000 1.000000 1.000000 1.000000"));  // softmax over the key axis
    CHECK(has(out, "attention: key has Dk=7 but query has Dk=8 (query [2,4,8], key [2,6,7], value [2,6,5])"));
}

TEST_CASE("lesson empty-row: NaN computed naively, an error from tinyformer, 2 3 0 when the query is padding") {
    const std::string out = lesson("empty-row");
    CHECK(has(out, "naive softmax([-inf, -inf, -inf]) = "));
    CHECK(has(out, "nan"));  // exp(-inf - (-inf)) = exp(nan)
    CHECK(has(out, "attention: query 2 of batch 0 may attend no key"));
    // Q = K = 0, V = [2, 4, 8], causal: q0 -> 2, q1 -> (2 + 4) / 2 = 3, q2 is padding -> exactly 0.
    CHECK(has(out, "     0.5000   0.5000   0.0000\n     0.0000   0.0000   0.0000"));
    CHECK(has(out, "outputs: 2 3 0   (query 2 is padding; any NaN: no)"));
}

TEST_CASE("lesson scale: Var(q.k) grows as Dk, Var(q.k / sqrt Dk) stays near 1, raw softmax saturates") {
    const std::string out = lesson("scale");
    // Independent unit-variance components: Var(q.k) = Dk. From 4000 sampled pairs the sample
    // variance has a relative standard error of about sqrt(2/4000) * sqrt(2) = 3%: 10% is > 3 sigma.
    for (const auto& [dk, label] : {std::pair<double, const char*>{4, "\n     4 "}, {64, "\n    64 "},
                                    {1024, "\n  1024 "}}) {
        CAPTURE(dk);
        const double raw = number_after(out, label);
        CHECK(raw == doctest::Approx(dk).epsilon(0.1));
        const size_t at = out.find(label);
        std::istringstream row(out.substr(at + std::string(label).size()));
        double variance = 0, scaled = 0, max_raw = 0, max_scaled = 0;
        row >> variance >> scaled >> max_raw >> max_scaled;
        CHECK(scaled == doctest::Approx(1.0).epsilon(0.1));
        // 16 keys: uniform weights would be 1/16; scaled scores ~ N(0,1) keep the largest near 0.25,
        // unscaled ones at Dk = 1024 (standard deviation 32) put almost all weight on one key.
        CHECK(max_scaled < 0.35);
        if (dk == 1024) CHECK(max_raw > 0.9);
    }
}

TEST_CASE("lesson permutation: equivariant without a mask; a causal mask breaks it unless permuted too") {
    const std::string out = lesson("permutation");
    CHECK(number_after(out, "no mask:                                  max difference") < 1e-5);   // float rounding
    CHECK(number_after(out, "causal mask, same mask for both:          max difference") > 0.1);
    CHECK(number_after(out, "causal mask permuted along both axes too: max difference") < 1e-5);
}

TEST_CASE("lesson multihead: each head's causal weights, rows summing to 1 and nothing above the diagonal") {
    const std::string out = lesson("multihead");
    for (const char* head : {"head 0 weights [4,4]\n", "head 1 weights [4,4]\n"}) {
        CAPTURE(head);
        const size_t at = out.find(head);
        REQUIRE(at != std::string::npos);
        std::istringstream rows(out.substr(at + std::string(head).size()));
        for (int l = 0; l < 4; ++l) {
            double sum = 0;
            for (int s = 0; s < 4; ++s) {
                double weight = -1;
                rows >> weight;
                if (s > l) CHECK(weight == 0.0);  // printed 0.0000: key after the query, causal
                if (s <= l) CHECK(weight > 0.0);
                sum += weight;
            }
            CHECK(sum == doctest::Approx(1.0).epsilon(3e-4));  // 4 printed decimals
        }
    }
}

TEST_CASE("lesson all runs every lesson, and the list names each") {
    const CliRun list = run_tinyformer({"lesson"});
    REQUIRE(list.status == 0);
    const CliRun all = run_tinyformer({"lesson", "all"});
    REQUIRE(all.status == 0);
    for (const std::string name : {"shapes", "causal", "conventions", "empty-row", "finite-negative", "scale",
                                   "multihead", "paths", "local", "permutation", "nan-history", "need-weights", "dropout",
                                   "positions", "peeking"}) {
        CAPTURE(name);
        CHECK(has(list.out, "  " + name + " "));
        CHECK(has(all.out, "=== " + name));
    }
}

TEST_CASE("lesson local: the scores each path computes for a local window and a strided mask, by hand") {
    const std::string out = lesson("local");
    // T = 2048, W = 32. Allowed by the window: T(2W+1) minus the cells cut off at both ends,
    // 2 * (1 + 2 + ... + W) = W(W+1): 2048*65 - 32*33 = 133120 - 1056 = 132064 = 3.15% of 2048^2.
    // Strided: 2048 / 16 = 128 keys per query = 6.25%.
    CHECK(number_after(out, "local W=32, streaming") == doctest::Approx(3.15));
    CHECK(number_after(out, "strided 1 in 16, streaming") == doctest::Approx(6.25));
    // Streaming: 8 blocks of 256 queries; block i needs keys from 256i - 32 to 256i + 255 + 32,
    // clipped to 0..2047: 288 keys for the first and last block, 320 for the six others, one
    // tile each. 256 x (2*288 + 6*320) = 256 x 2496 = 638976 scores = 15.2% of 4194304.
    CHECK(has(out, "3.15%    638976 ( 15.2%)"));
    // Every other row computes all 2048^2 = 4194304: no mask, the materialized path, and the
    // strided mask, whose every tile holds an allowed key.
    CHECK(has(out, "100.00%   4194304 (100.0%)"));
    CHECK(has(out, "3.15%   4194304 (100.0%)"));
    CHECK(has(out, "6.25%   4194304 (100.0%)"));
}

TEST_CASE("lesson peeking: the causal model's logits up to t ignore what follows; a model trained without the mask peeks") {
    const std::string out = lesson("peeking");
    // Two inputs sharing <bos>attention= (positions 0..10), differing after: with the causal mask the
    // logits at positions <= 10 are computed from the same tokens by the same operations, so they are
    // bit for bit equal (difference exactly 0); later positions read different tokens.
    CHECK(has(out, "causal mask:        largest |logits A - logits B| at positions <= t: 0 "));
    CHECK(number_after(out, "causal mask:        largest |logits A - logits B| at positions <= t: 0   at positions > t:") > 1.0);
    // The same weights without the mask: the future reaches the earlier positions.
    CHECK(number_after(out, "the same weights without the mask: at positions <= t:") > 0.1);
    // Teacher-forced on the same 200 examples. Reversal is a function of the prompt: both models
    // can reach a small loss on it, the peeking one only when it reads its labels (bidirectional).
    CHECK(number_after(out, "honest loss (causal, as trained):") < 0.01);
    CHECK(number_after(out, "peeking loss (bidirectional, as trained):") < 0.1);
    CHECK(number_after(out, "peeking loss (causal, as decoding runs):") > 1.0);
    // Random letters as the answers: no model that does not see them can average less than
    // log 26 = 3.258 nats per letter (cross-entropy >= entropy). The honest model is above that
    // floor; the peeking model far below it, by a factor of more than 10.
    const double log26 = std::log(26.0);
    const double honest_random = number_after(out, "honest loss on random answers:");
    const double peeking_random = number_after(out, "peeking loss on random answers:");
    CHECK(honest_random > log26);
    CHECK(peeking_random * 10 < log26);
    CHECK(number_after(out, "honest exact match:") > 95.0);
    CHECK(number_after(out, "peeking exact match:") < 20.0);
}

TEST_CASE("lesson NAME --help prints that lesson's help, and what it reads") {
    const CliRun causal = run_tinyformer({"lesson", "causal", "--help"});
    CHECK(causal.status == 0);
    CHECK(causal.out == "usage: tinyformer lesson causal\n\n"
                        "practice 2: the 3x3 causal example (2, 3, 14/3), then the reversed mask\n");
    const CliRun peeking = run_tinyformer({"lesson", "peeking", "-h"});
    CHECK(peeking.status == 0);
    CHECK(has(peeking.out, "usage: tinyformer lesson peeking\n"));
    CHECK(has(peeking.out, "data/models/reverse-causal.safetensors"));
    CHECK(run_tinyformer({"lesson", "nope", "--help"}).status == 2);
}

TEST_CASE("lesson peeking finds its models from the binary's checkout when run elsewhere, and says when they are missing") {
    test_helpers::TempDirectory dir;
    const std::string binary = std::filesystem::absolute(test_helpers::tinyformer_binary()).string();
    auto run_in = [&](const std::string& folder, const std::string& program, const std::string& lesson) {
        const std::string command = "cd " + test_helpers::shell_quoted(folder) + " && OPENBLAS_NUM_THREADS=1 timeout 300 " +
                                    test_helpers::shell_quoted(program) + " lesson " + lesson + " >" +
                                    test_helpers::shell_quoted(dir.file("out")) + " 2>" +
                                    test_helpers::shell_quoted(dir.file("err"));
        const int raw = std::system(command.c_str());
        return CliRun{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, test_helpers::read_file(dir.file("out")),
                      test_helpers::read_file(dir.file("err"))};
    };
    const CliRun found = run_in(dir.path().string(), binary, "peeking");
    INFO("stderr: ", found.err);
    CHECK(found.status == 0);
    CHECK(has(found.out, "data/models/reverse-peeking.safetensors: the same data"));

    // A copy of the binary in a folder with no data/models/ above it: one line, before any output.
    std::filesystem::create_directories(dir.file("elsewhere/build"));
    std::filesystem::copy_file(binary, dir.file("elsewhere/build/tinyformer"));
    for (const std::string lesson : {"peeking", "all"}) {
        CAPTURE(lesson);
        const CliRun missing = run_in(dir.file("elsewhere"), dir.file("elsewhere/build/tinyformer"), lesson);
        CHECK(missing.status == 1);
        CHECK(missing.out.empty());
        CHECK(missing.err == "tinyformer: error: lesson: data/models/reverse-causal.safetensors is missing: not in the "
                             "current folder, nor in the checkout of " +
                             std::filesystem::canonical(dir.file("elsewhere/build/tinyformer")).string() +
                             "; the lessons that read trained models (peeking) run from a tinyformer checkout that has "
                             "data/models/\n");
    }
}
