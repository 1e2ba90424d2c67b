// `tinyformer lesson` (tools/cli/lesson.cpp), run as a learner runs it: each
// lesson's key numbers against numbers worked out by hand in the comments
// here, so that a change to what a lesson prints fails a test.
#include <doctest/doctest.h>

#include "tests/lesson_output.h"
#include "tests/run_cli.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>
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

// Every line of `lines` appears in `text` as a whole line, word for word: a lesson's claims,
// so that changing a number or a word of what it says fails a test.
void check_lines(const std::string& text, const std::vector<std::string>& lines) {
    const std::string framed = "\n" + text;
    for (const std::string& line : lines) {
        INFO("the lesson no longer says, as a line of its own:\n", line);
        CHECK(framed.find("\n" + line + "\n") != std::string::npos);
    }
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

TEST_CASE("lesson all runs every lesson in the order of lesson 10.3's sections, each section named, then 10.4, then int8") {
    const CliRun list = run_tinyformer({"lesson"});
    REQUIRE(list.status == 0);
    const CliRun& all = test_helpers::lesson_all_run();  // shared with the tests that read each lesson's part
    INFO("stderr: ", all.err);
    // The extrapolation lesson reads helper X's four models (issue #23 item 3); until they are
    // committed `lesson all` stops before printing anything, naming the first one missing, and
    // only the list's order is checked.
    std::string missing;  // the first of the four not committed yet, or empty
    for (const char* model : {"data/models/reverse-learned.safetensors", "data/models/reverse-sinusoidal.safetensors",
                              "data/models/reverse-rotary.safetensors", "data/models/reverse-alibi.safetensors"})
        if (missing.empty() && !std::filesystem::is_regular_file(model)) missing = model;
    const bool have_models = missing.empty();
    if (!have_models) {
        CHECK(all.status == 1);
        CHECK(all.out.empty());
        CHECK(has(all.err, "tinyformer: error: lesson: " + missing + " is missing"));
        MESSAGE(missing, " is not committed yet: only the order of the list is checked");
    } else {
        REQUIRE(all.status == 0);
    }
    // Each section heading, then its lessons, in this order (10.3's sections 2..11, then 10.4).
    const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
        {"10.3 §2 scaled dot-product attention: the shapes, and why 1/sqrt(Dk)", {"shapes", "scale"}},
        {"10.3 §3 the mask goes in before softmax", {"finite-negative"}},
        {"10.3 §4 one Boolean tensor, two meanings; a query with no key", {"conventions", "empty-row", "nan-history"}},
        {"10.3 §5 one head from scratch: the 3x3 worked example", {"causal"}},
        {"10.3 §6 the causal mask, and why it is not one template", {"is-causal", "peeking"}},
        {"10.3 §7 multi-head attention", {"multihead"}},
        {"10.3 §8 what the framework APIs do: weights, dropout", {"need-weights", "dropout"}},
        {"10.3 §9 attention itself knows no positions", {"permutation", "positions"}},
        {"10.3 §10 what attention costs, beyond O(T^2)", {"paths", "local"}},
        {"10.3 §11 attention weights are not causal explanations: counterfactuals, the stream", {"patching", "lens"}},
        {"10.4 residuals and normalisation, positions, grouped KV heads (the next lesson)", {"norms", "swiglu", "rotary", "rope-pairs", "alibi", "gqa", "extrapolation"}},
        {"beyond the lessons: int8 weights (Q8_0), as llama2.c's runq.c runs them", {"quantization"}},
    };
    size_t at = 0, listed = 0;
    for (const auto& [title, names] : sections) {
        CAPTURE(title);
        listed = list.out.find("\n" + title + "\n", listed);  // in order in the list too
        REQUIRE(listed != std::string::npos);
        for (const std::string& name : names) {
            CAPTURE(name);
            listed = list.out.find("\n  " + name + " ", listed);
            REQUIRE(listed != std::string::npos);
        }
        if (!have_models) continue;
        const size_t heading = all.out.find("\n== " + title + " ==\n", at);
        REQUIRE(heading != std::string::npos);  // present, and after the previous section's lessons
        at = heading;
        for (const std::string& name : names) {
            CAPTURE(name);
            const size_t lesson_at = all.out.find("\n=== " + name + ":", at);
            REQUIRE(lesson_at != std::string::npos);
            at = lesson_at;
        }
    }
    if (have_models) CHECK(all.out.find("\n== ", at) == std::string::npos);  // no section after the last
}

TEST_CASE("lesson NAME --help for the new lessons") {
    const CliRun is_causal = run_tinyformer({"lesson", "is-causal", "--help"});
    CHECK(is_causal.status == 0);
    CHECK(is_causal.out == "usage: tinyformer lesson is-causal\n\n"
                           "is_causal=True is top-left when L != S: a cached step gives 2, not 14/3\n");
    const CliRun norms = run_tinyformer({"lesson", "norms", "--help"});
    CHECK(norms.status == 0);
    CHECK(has(norms.out, "usage: tinyformer lesson norms\n\nLayerNorm vs RMSNorm"));
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
    CHECK(has(found.out, "data/models/reverse-peeking.safetensors: reverse-causal's architecture"));

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
                             "; the lessons that read trained models (peeking, patching, lens, extrapolation, quantization) run from a tinyformer "
                             "checkout that has data/models/\n");
    }
}

// ---- What the lessons SAY, line for line (the numbers worked out by hand beside them) ----

TEST_CASE("lesson text: shapes, scale and finite-negative say what they show") {
    check_lines(lesson("shapes"), {
        "In cross-attention the queries come from the decoder (length L) and the keys",
        "and values from the encoder (length S), so L and S can differ.",
        "scores  A [B,L,S]  = [2,4,6]   (softmax runs over S, the key axis)",
    });
    check_lines(lesson("scale"), {
        "q and k with independent unit-variance components: Var(q . k) = Dk.",
        "Dividing by sqrt(Dk) brings it back to ~1 and keeps softmax from saturating.",
        "Unscaled, the largest weight approaches 1 as Dk grows (softmax saturates, gradients",
        "vanish); scaled, it stays moderate. The argument assumes independent, zero-mean,",
        "unit-variance components - trained representations need not satisfy it.",
    });
    // 10004 - 1e4 = 4; e^4 = 54.59815; 54.59815 / (2 + 54.59815) = 0.964663.
    check_lines(lesson("finite-negative"), {
        "Scores of one query against 3 keys: [0, 0, 10004]. Key 2 is to be masked.",
        "With -1e4 the masked key's score is still 10004 - 10000 = 4 > 0, so it gets",
        "e^4 / (2 + e^4) = 0.964663 of the weight: a finite negative only suppresses",
        "relative to the other scores; -inf guarantees exactly 0.",
        "Zeroing after softmax without renormalising: all scores 0, key 2 zeroed afterwards.",
    });
}

TEST_CASE("lesson text: conventions, empty-row and nan-history name the two meanings and the versions") {
    check_lines(lesson("conventions"), {
        "nn.MultiheadAttention's bool attn_mask / key_padding_mask: True = BLOCKED.",
        "F.scaled_dot_product_attention's bool attn_mask:        True = ALLOWED.",
        "The migration bug: the MHA tensor passed on as if it were an SDPA mask.",
        "Query 2 now sees nothing and query 0 sees only the future:",
        // triu(1) read as True = allowed: q0 sees k1 k2, q1 sees k2, q2 nothing.
        "q0: k1 k2", "q1: k2", "q2: (none)",
    });
    check_lines(lesson("empty-row"), {
        "If query 2 is padding, its result is DEFINED: output and weight row exactly 0.",
        "Masking padded keys alone never does this; padded queries must be marked too:",
    });
    check_lines(lesson("nan-history"), {
        "  PyTorch 1.13 (Debian's; the tools here): nn.MultiheadAttention (and the private",
        "      F._scaled_dot_product_attention; the public one arrived in 2.0) give NaN for the row.",
        "  PyTorch >= 2.5: SDPA, and MultiheadAttention with need_weights=False, give 0",
        "Q = K = 0, V = [2, 4, 8]; query 0 now sees keys 1 and 2, query 1 key 2, query 2 nothing:",
        "The right answers are 2, 3, 14/3 (`lesson causal`). With NaN the bug shows at once (and",
    });
}

TEST_CASE("lesson text: causal states the worked example's numbers") {
    // V = 2, 4, 8 averaged over the allowed keys: 2; (2+4)/2 = 3; (2+4+8)/3 = 14/3 = 4.666667.
    check_lines(lesson("causal"), {
        "Q = K = 0, so every allowed score is 0 and each query averages its allowed values.",
        "V = [2, 4, 8]. Causal mask (true = may attend):",
        "q0: k0", "q1: k0 k1", "q2: k0 k1 k2",
        "outputs: 2.000000 3.000000 4.666667   (lesson: 2, 3, 14/3 = 4.666667)",
        "outputs: 4.666667 6.000000 8.000000   (by hand: 14/3, (4+8)/2 = 6, 8)",
    });
}

TEST_CASE("lesson is-causal: is_causal's top-left triangle gives 2 where the cached step needs 14/3") {
    const std::string out = lesson("is-causal");
    // Q = K = 0: every allowed score is 0, so a query averages the V of its allowed keys.
    // One new token at position 2 over k0 k1 k2 (L = 1, S = 3):
    //   bottom-right, s <= S - L + l = 2: keys 0, 1, 2 -> (2 + 4 + 8) / 3 = 14/3 = 4.666667
    //   top-left (torch.ones(1, 3).tril(): s <= l = 0): key 0 only -> 2
    // Two new tokens at positions 1, 2 (L = 2): bottom-right q0 <= 1, q1 <= 2 -> 3, 14/3;
    //   top-left q0 <= 0, q1 <= 1 -> 2, 3 (the full pass's first rows instead of its last).
    check_lines(out, {
        "  Mask::causal(1, 3), bottom-right (the engine):",
        "q0: k0 k1 k2",
        "  -> outputs 4.666667   (by hand: (2+4+8)/3 = 14/3, the full pass's last row)",
        "  torch.ones(1, 3).tril() via Mask::from_torch_sdpa_mask, top-left (is_causal=True):",
        "q0: k0",
        "  -> outputs 2.000000   (by hand: 2 = V of k0 alone: the newest token sees only the first)",
        "q1: k0 k1 k2",
        "  -> outputs 3.000000 4.666667   (by hand: 3 and 14/3, the full pass's last two rows)",
        "q1: k0 k1",
        "  -> outputs 2.000000 3.000000   (by hand: 2 and 3: the full pass's FIRST two rows)",
        "L of S positions. The engine's Mask::causal(L, S) aligns the triangle bottom-right: query l",
        "sees key s iff s <= S - L + l, so the step's rows are the last rows of the full pass.",
        "PyTorch's is_causal=True (F.scaled_dot_product_attention since 2.0; on 1.13 the private",
        "F._scaled_dot_product_attention) builds torch.ones(L, S).tril(): query l sees key s iff",
        "s <= l, aligned top-left. For L = S the two are the same mask; for L < S they are not.",
        "Q = K = 0, V = 2, 4, 8 as in `lesson causal`: the full pass (L = S = 3) gives 2, 3, 14/3.",
        "torch.ones(L, S, dtype=torch.bool).tril(S - L) (recent PyTorch also has",
    });
}

TEST_CASE("lesson text: multihead says the score memory grows with H, as `cost` prints it") {
    // D = T = 512, B = 1: scores [1,H,512,512] floats = 4 * H * 262144 B = H MiB; Q K^T is
    // H * T^2 * Dh = T^2 * D = 512^3 = 134217728 multiply-adds whatever H is.
    check_lines(lesson("multihead"), {
        "  H =  1, Dh = 512: 1050624 projection parameters, 134217728 score multiply-adds, scores 1.0 MiB",
        "  H =  8, Dh =  64: 1050624 projection parameters, 134217728 score multiply-adds, scores 8.0 MiB",
        "  H = 16, Dh =  32: 1050624 projection parameters, 134217728 score multiply-adds, scores 16.0 MiB",
        "[T,Dh] x [Dh,T], H * T^2 * Dh = T^2 * D multiply-adds. What grows with H is the scores:",
        "[B,H,T,T], one T x T matrix per head, which the materialized path holds (models/cost.h,",
        "The head size Dh = D/H shrinks as H grows; the score memory grows as H: 4 * B * H * T^2 bytes.",
    });
    // The project's own `cost` agrees.
    for (const auto& [heads, scores] : {std::pair<const char*, const char*>{"1", "[1,1,512,512] 1.0 MiB"},
                                        {"8", "[1,8,512,512] 8.0 MiB"}, {"16", "[1,16,512,512] 16.0 MiB"}}) {
        const CliRun cost = run_tinyformer({"cost", "--heads", heads, "--seq", "512"});
        REQUIRE(cost.status == 0);
        CHECK(has(cost.out, std::string("scores [B,H,T,T] = ") + scores));
    }
}

TEST_CASE("lesson text: paths states one shape, Dk = Dv = 64, for its output and its table") {
    // One head, Dv = 64: the output [300, 64] is 300 * 64 * 4 = 76800 B = 75.0 KiB, the number
    // in the table; at Dv = 32 it would be 37.5 KiB.
    check_lines(lesson("paths"), {
        "The same answer: L = 300, S = 1000, Dk = Dv = 64, largest difference between the two",
        "What each path allocates for one head of Dk = Dv = 64 (output [L,Dv] + scratch; models/cost.h,",
        "[L,S] = 256 MiB of scores and the streaming one a [256, 2048] tile: the saving is real",
    });
}

TEST_CASE("lesson text: local, need-weights, dropout, permutation and positions keep their claims") {
    // The numbers of the local text: 132064 / 2048^2 = 3.15%, 638976 / 2048^2 = 15.2%, 1/16 = 6.25%
    // (the working is in "lesson local: the scores each path computes ...").
    check_lines(lesson("local"), {
        "The window allows 3.15% of the scores, but only the streaming path turns that into less",
        "first query's window start to its last query's window end (256 + 2W = 320 keys, 288 at",
        "the two ends), so it computes 15.2%. The materialized path computes all of them and then",
        "blocks most. The strided mask allows only 6.25%, yet each block's allowed keys run from",
        "saved. A sparse mask is a speed-up only when the kernel skips the blocked work; time it",
    });
    check_lines(lesson("need-weights"), {
        "[B,L,S] when average_attn_weights=True (the default), per head [B,H,L,S] when False;",
        "tinyformer's choice is the same: AttentionOptions.want_weights.",
        "Averaged weights hide what each head does; tinyformer never averages unless asked",
    });
    check_lines(lesson("dropout"), {
        "Dropout at p = 0.1 in training: each weight is zeroed with probability p and the rest",
        "are scaled by 1/(1-p) = 1.1111. One draw that zeroes key 3:",
        "The pitfall: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1) drops out even under",
        "eval(); it does not know the module's mode. A module must pass",
    });
    check_lines(lesson("permutation"), {
        "A causal or local mask carries position; without it (and without positional",
        "encodings) attention cannot tell token order.",
    });
    check_lines(lesson("positions"), {
        "Without positions the layer sees a set: the same tokens in any order give the same",
        "embeddings makes order part of the input, so the outputs change.",
    });
}

TEST_CASE("lesson text: peeking says how the two models' training differs, and what the peeking one gets right") {
    const std::string out = lesson("peeking");
    // The training logs' first lines are what the text quotes: 6000 steps for reverse-causal,
    // 5000 for reverse-peeking, the same architecture and size.
    for (const auto& [log, first_line] :
         {std::pair<const char*, const char*>{"data/models/reverse-causal.train.log",
                                              "reverse-causal: decoder_only D=64 H=4 F=256, 206623 parameters, 6000 steps of 128\n"},
          {"data/models/reverse-peeking.train.log",
           "reverse-peeking: decoder_only D=64 H=4 F=256, 206623 parameters, 5000 steps of 128\n"}}) {
        CAPTURE(log);
        CHECK(test_helpers::read_file(log).rfind(first_line, 0) == 0);
    }
    check_lines(out, {
        "data/models/reverse-peeking.safetensors: reverse-causal's architecture, data generator, seed and optimiser settings,",
        "for 5000 steps where reverse-causal had 6000 (the first line of each data/models/*.train.log);",
        "  honest exact match:   100.0% (200/200)",
        "  peeking exact match:    9.5% (19/200)",
        // The 200 inputs (Random seed 1, lengths 1..16): 27 have 1 or 2 letters; the peeking
        // model's 19 right answers are all among them (1-letter inputs: the answer is the letter
        // just before '='), none of the 173 longer ones.
        "right only inputs of at most 2 letters (19 of the 27 here); of the 173 longer inputs",
        "what the data allows is the symptom; here, far below log 26. At generation the token it",
    });
    // How many longer outputs start right depends on near-ties of a confused model: a range.
    const double first_right = number_after(out, "of the 173 longer inputs\n");
    CHECK(first_right > 40);
    CHECK(first_right < 173);
    CHECK(has(out, " start with the right letter (the one just before '=', which it can see) and every\n"));
}

TEST_CASE("lesson norms: LayerNorm and RMSNorm of 1, 2, 3, 4 by hand; post-LN's stream stays at 1, pre-LN's grows") {
    const std::string out = lesson("norms");
    // x = 1, 2, 3, 4, weight 1, bias 0, eps 1e-5.
    // LayerNorm: mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, 1 / sqrt(1.25001) = 0.894424:
    //   -1.5, -0.5, 0.5, 1.5 times that = -1.3416 -0.4472 0.4472 1.3416.
    // RMSNorm: mean(x^2) = 30 / 4 = 7.5, 1 / sqrt(7.50001) = 0.365148: 0.3651 0.7303 1.0954 1.4606.
    CHECK(has(out, "  LayerNorm(x)         -1.3416  -0.4472   0.4472   1.3416\n"));
    CHECK(has(out, "  RMSNorm(x)            0.3651   0.7303   1.0954   1.4606\n"));
    // x + 10 = 11..14: LayerNorm the same as for x; RMSNorm: mean(x^2) = (121+144+169+196)/4 = 157.5,
    // sqrt 12.549900: 11, 12, 13, 14 over it = 0.8765 0.9562 1.0359 1.1155.
    CHECK(has(out, "  LayerNorm(x + 10)    -1.3416  -0.4472   0.4472   1.3416\n"));
    CHECK(has(out, "  RMSNorm(x + 10)       0.8765   0.9562   1.0359   1.1155\n"));
    CHECK(number_after(out, "largest |norm(2x) - norm(x)|: LayerNorm") < 1e-5);
    CHECK(number_after(out, ", RMSNorm ") < 1e-5);  // LayerNorm: eps / (2 var) ~ 4e-6 of the values
    check_lines(out, {
        "LayerNorm:  y = (x - mean) / sqrt(var + eps) * weight + bias    (centres, then scales)",
        "RMSNorm:    y = x / sqrt(mean(x^2) + eps) * weight              (scales only; no mean, no bias)",
        "  (x - 2.5) / sqrt(1.25) = -1.3416 -0.4472 0.4472 1.3416; mean(x^2) = 30 / 4 = 7.5,",
        "  sqrt(7.5) = 2.7386, so RMSNorm is x / 2.7386 = 0.3651 0.7303 1.0954 1.4606.",
        "  post-LN:  x = norm1(x + Attention(x));   x = norm2(x + FFN(x))",
        "  pre-LN:   x = x + Attention(norm1(x));   x = x + FFN(norm2(x))",
        "Pre-LN adds each sublayer's output to a stream nothing normalises, so it grows with depth;",
        "a pre-LN model therefore ends with one more norm before the output head (the final norm:",
    });
    // The engine's layers are the formulas above, computed from their parts.
    CHECK(number_after(out, "largest |engine - the formula from the parts|: post-LN") < 1e-5);
    CHECK(number_after(out, ", pre-LN ") < 1e-5);
    // The table: after each of 6 layers, post-LN's RMS is that of a LayerNorm output with weight 1,
    // bias 0: sqrt(var / (var + eps)) = 1.000; pre-LN's only grows; the final norm brings it to 1.000.
    const size_t at = out.find("pre-LN + final norm\n");
    REQUIRE(at != std::string::npos);
    std::istringstream rows(out.substr(at + std::string("pre-LN + final norm\n").size()));
    double previous_pre = 0;
    for (int layer = 1; layer <= 6; ++layer) {
        CAPTURE(layer);
        int index = 0;
        double post = 0, pre = 0, final_norm = 0;
        rows >> index >> post >> pre >> final_norm;
        CHECK(index == layer);
        CHECK(post == doctest::Approx(1.0).epsilon(1e-3));
        CHECK(final_norm == doctest::Approx(1.0).epsilon(1e-3));
        CHECK(pre > previous_pre);
        previous_pre = pre;
    }
    CHECK(previous_pre > 2.0);  // after 6 layers the un-normalised stream is well above 1
}

TEST_CASE("lesson extrapolation: four schemes x three length ranges, 50 examples each, then five LMs' loss per range as eval's, or one line naming the missing model") {
    const CliRun run = run_tinyformer({"lesson", "extrapolation"});
    const char* models[] = {"data/models/reverse-learned.safetensors", "data/models/reverse-sinusoidal.safetensors",
                            "data/models/reverse-rotary.safetensors", "data/models/reverse-alibi.safetensors"};
    for (const char* model : models)
        if (!std::filesystem::is_regular_file(model)) {
            // Helper X's models are not committed yet: one error line naming the first missing one.
            CAPTURE(model);
            CHECK(run.status == 1);
            CHECK(run.out.empty());
            CHECK(run.err.rfind(std::string("tinyformer: error: lesson: ") + model + " is missing: ", 0) == 0);
            CHECK(run.err.find('\n') == run.err.size() - 1);
            MESSAGE(std::string(model), " is not committed yet: only the missing-model error is checked");
            return;
        }
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    check_lines(run.out, {
        "Exact match of greedy decoding on 50 fresh inputs per length range (tinyformer::Random,",
        // The longest training example, 16 letters: <bos> + 16 + "=" + 16 answer letters = 34
        // tokens at positions 0..33 (its <eos> only a label); max_len 72, so rows 34..71.
        "rows 34..71 were never trained (the longest training example fills positions 0..33);",
        "all of length 17. These are 50 examples per cell, a smaller sample than the committed",
        "per position range on the first 50 of the 200 held-out sequences of",
        // lm-learned: trained windows read positions 0..31 (train_max_len 32), max_len 128.
        "at any length; rotary's angles at distances past 31 and the learned table's rows",
        "32..127 (never trained) are new to the model there. docs/EXTRAPOLATION.md has the",
    });
    // One row per model, three cells "k/50 p%" with p = 2k (k/50 as a percentage).
    for (const char* model : models) {
        CAPTURE(model);
        const size_t at = run.out.find(std::string("\n  ") + model);
        REQUIRE(at != std::string::npos);
        std::istringstream row(run.out.substr(at + 3 + std::string(model).size()));
        for (int range = 0; range < 3; ++range) {
            CAPTURE(range);
            long correct = -1, total = 0, percent = -1;
            char slash = 0, sign = 0;
            row >> correct >> slash >> total >> percent >> sign;
            CHECK(slash == '/');
            CHECK(total == 50);
            CHECK(sign == '%');
            CHECK(correct >= 0);
            CHECK(correct <= 50);
            CHECK(percent == 2 * correct);
        }
    }
    // "best at 17-24": the model whose middle cell is largest (the first of equals), read off the rows above.
    long best = -1, right_longest = 0;
    std::string best_model;
    for (const char* model : models) {
        std::istringstream row(run.out.substr(run.out.find(std::string("\n  ") + model) + 3 + std::string(model).size()));
        long cells[3] = {0, 0, 0}, total = 0, percent = 0;
        char slash = 0, sign = 0;
        for (long& cell : cells) row >> cell >> slash >> total >> percent >> sign;
        if (cells[1] > best) best = cells[1], best_model = model;
        right_longest += cells[2];
    }
    CHECK(has(run.out, "From the numbers: best at 17-24: " + best_model + " (" + std::to_string(best) +
                           "/50);\nright at 25-32: " + std::to_string(right_longest) + " of 200 inputs in all.\n"));
    // The language models: each row is `eval --task lm --n 50`'s, and the sentence after names
    // the smallest and the largest 96-127 minus 2-31, computed here from eval's numbers.
    std::vector<std::string> eval_args = {"eval"};
    const char* lm_models[] = {"learned", "sinusoidal", "rotary", "alibi", "none"};
    for (const char* scheme : lm_models) eval_args.push_back(std::string("data/models/lm-") + scheme + ".safetensors");
    for (const char* arg : {"--task", "lm", "--data", "data/models/lm-heldout.txt", "--positions",
                            "2-31,32-47,48-63,64-95,96-127", "--n", "50"})
        eval_args.push_back(arg);
    const CliRun eval = run_tinyformer(eval_args);
    REQUIRE(eval.status == 0);
    std::string flattest, steepest;
    double least = 0, most = 0;
    for (const char* scheme : lm_models) {
        CAPTURE(scheme);
        const std::string name = std::string("lm-") + scheme;
        const size_t in_eval = eval.out.find("\n" + name + " ");
        const size_t in_lesson = run.out.find("\n  " + name + " ");
        REQUIRE(in_eval != std::string::npos);
        REQUIRE(in_lesson != std::string::npos);
        std::istringstream eval_row(eval.out.substr(in_eval + 1 + name.size()));
        std::istringstream lesson_row(run.out.substr(in_lesson + 3 + name.size()));
        double first = 0, last = 0;
        for (int range = 0; range < 5; ++range) {
            double from_eval = -1, from_lesson = -2;
            eval_row >> from_eval;
            lesson_row >> from_lesson;
            CHECK(from_lesson == from_eval);  // both printed with 4 decimals from the same computation
            if (range == 0) first = from_eval;
            last = from_eval;
        }
        if (flattest.empty() || last - first < least) least = last - first, flattest = name;
        if (steepest.empty() || last - first > most) most = last - first, steepest = name;
    }
    CHECK(has(run.out, "From the numbers: from 2-31 to 96-127 the loss of " + flattest + " changes least ("));
    CHECK(has(run.out, "that of " + steepest + " most ("));
}

TEST_CASE("lesson is-causal: the two triangles as pictures; at L = S both are the causal lesson's") {
    // For L = S both alignments are the same triangle: Mask::causal(3, 3) is the causal lesson's.
    const std::string causal = lesson("causal");
    CHECK(has(causal, "q0: k0\nq1: k0 k1\nq2: k0 k1 k2\n"));
    const std::string out = lesson("is-causal");
    CHECK(has(out, "  Mask::causal(2, 3), bottom-right (the engine):\nq0: k0 k1\nq1: k0 k1 k2\n"));
    CHECK(has(out, "  torch.ones(2, 3).tril() via Mask::from_torch_sdpa_mask, top-left (is_causal=True):\nq0: k0\nq1: k0 k1\n"));
}

TEST_CASE("lesson rotary: the score depends on m - n only; the KV cache holds keys turned once by their own positions") {
    const std::string out = lesson("rotary");
    // Dh = 2, q = k = (1, 0), frequency theta^0 = 1: rot(q, m) = (cos m, sin m), score
    // cos m cos n + sin m sin n = cos(m - n); cos(2) = cos(-2) = -0.416147 (cos 2 = -0.4161468...).
    check_lines(out, {
        "    rot(q, m) . rot(k, n) = q . rot(k, n - m)      which depends on m - n only.",
        "       3      1    -0.416147    -0.416147",
        "      13     11    -0.416147    -0.416147",
        "    1003   1001    -0.416147    -0.416147",
        "       1      3    -0.416147    -0.416147",
        "  by hand: cos(2) = -0.416147 for every pair with m - n = 2, and cos(-2) is the same.",
        "The same score to float rounding: the angles are float32 (position * frequency, then cos and",
        "rot(k_n, n), each key turned by ITS OWN position when it is written, and never again:",
    });
    // Shifting both positions by s keeps the score to float rounding: the angle s * freq has a
    // float32 rounding of about s * 6e-8 radians, times |q||k| ~ 64 for Dh = 64 normal vectors:
    // under 1e-4 up to s = 1000, about 1e-3 at s = 10000.
    for (const char* s : {"       1 ", "      10 ", "     100 ", "    1000 "}) {
        const size_t at = out.find(std::string("\n  ") + s);
        REQUIRE(at != std::string::npos);
        double score = 0, difference = 1;
        std::istringstream(out.substr(at + 3 + std::string(s).size())) >> score >> difference;
        CAPTURE(s);
        CHECK(std::fabs(difference) < 1e-4);
    }
    // The cache after 4 steps: exactly rot(k_n, n), by construction (the lesson projects k_n with the
    // module's own fused one-token product and turns it with rotary_reference, which the fast path
    // equals bit for bit); k_n itself only at n = 0 (angle 0: cos 1, sin 0); a row never changes after its step.
    check_lines(out, {
        "    0                 0.00e+00         0.00e+00                         0.00e+00",
    });
    const size_t table = out.find("|cached at step n - at the end|\n");
    REQUIRE(table != std::string::npos);
    for (int n : {1, 2, 3}) {
        const size_t at = out.find("\n    " + std::to_string(n) + " ", table);
        CAPTURE(n);
        REQUIRE(at != std::string::npos);
        double turned = 1, unturned = 0, later = 1;
        int row = 0;
        std::istringstream(out.substr(at + 1)) >> row >> turned >> unturned >> later;
        CHECK(row == n);
        CHECK(turned == 0.0);
        CHECK(unturned > 0.1);
        CHECK(later == 0.0);
    }
}

TEST_CASE("lesson alibi: the slopes for H = 4, 6, 8, the causal bias per head, and 5.653274 for the 3x3 example") {
    const std::string out = lesson("alibi");
    // H = 4: 2^(-8 (h+1) / 4) = 2^-2, 2^-4, 2^-6, 2^-8. H = 8: 2^(-(h+1)) = 2^-1 .. 2^-8. H = 6: n = 4,
    // the four of H = 4, then H = 8's at indices 0 and 2: 2^-1, 2^-3.
    // Head 0 of H = 4 has slope 1/4: row i, column j <= i is -(i - j) / 4.
    // Head 3 has 1/256: -1/256 = -0.00390625 -> -0.00391, -2/256 -> -0.00781, -3/256 = -0.01171875 -> -0.01172.
    check_lines(out, {
        "  H = 4: 2^-2 2^-4 2^-6 2^-8",
        "  H = 6: 2^-2 2^-4 2^-6 2^-8 2^-1 2^-3",
        "  H = 8: 2^-1 2^-2 2^-3 2^-4 2^-5 2^-6 2^-7 2^-8",
        "  head 0, slope 0.25:",
        "      0.00000      -inf      -inf      -inf",
        "     -0.25000   0.00000      -inf      -inf",
        "     -0.50000  -0.25000   0.00000      -inf",
        "     -0.75000  -0.50000  -0.25000   0.00000",
        "  head 3, slope 0.00390625:",
        "     -0.01172  -0.00781  -0.00391   0.00000",
        "    bias[h, i, j] = -slope_h * |i - j|         (causal: -slope_h * (i - j))",
        "Why no position table: the bias is computed from the two positions when attention runs",
    });
    // The 3x3 example, slope 1/2 (H = 8's head 0), Q = K = 0 so the scores are the bias alone.
    // Query 1: biases -0.5, 0: e^-0.5 = 0.606531, weights 0.606531 / 1.606531 = 0.377541 and 0.622459,
    //   output 2 * 0.377541 + 4 * 0.622459 = 3.244919.
    // Query 2: biases -1, -0.5, 0: e^-1 = 0.367879, e^-0.5 = 0.606531, 1; sum 1.974410;
    //   weights 0.186324 0.307196 0.506480; output (0.735759 + 2.426123 + 8) / 1.974410 = 5.653274.
    check_lines(out, {
        "H = 8, slope 0.5, through Mask::alibi(8, 3) & Mask::causal(3):",
        "     1.000000   0.000000   0.000000",
        "     0.377541   0.622459   0.000000",
        "     0.186324   0.307196   0.506480",
        "  e^0 = 1, sum 1.974410; (2 * 0.367879 + 4 * 0.606531 + 8 * 1) / 1.974410 = 5.653274.",
    });
    const size_t at = out.find("  outputs: ");
    REQUIRE(at != std::string::npos);
    double first = 0, second = 0, third = 0;
    std::istringstream(out.substr(at + 11)) >> first >> second >> third;
    CHECK(first == doctest::Approx(2.0).epsilon(1e-6));
    CHECK(second == doctest::Approx(3.244919).epsilon(1e-6));
    CHECK(third == doctest::Approx(5.653274).epsilon(1e-6));
    CHECK(std::fabs(number_after(out, "The engine's value minus the hand value:")) < 1e-5);
}

TEST_CASE("lesson gqa: stories15M's KV cache bytes per token at 6, 3, 2, 1 K/V heads; GQA equals repeated K/V heads") {
    const std::string out = lesson("gqa");
    // 2 (K and V) * 6 layers * Hkv * 48 * 4 bytes: Hkv = 6: 13824 B = 13.5 KiB; 3: 6912 = 6.75 KiB;
    // 2: 4608 = 4.5 KiB; 1: 2304 = 2.25 KiB. At 256 tokens: 13824 * 256 = 3538944 B = 3.375 MiB,
    // then 1.6875, 1.125, 0.5625 MiB.
    check_lines(out, {
        "     6    6            13824          13.50                 3.3750",
        "     6    3             6912           6.75                 1.6875",
        "     6    2             4608           4.50                 1.1250",
        "     6    1             2304           2.25                 0.5625",
        "    2 (K and V) * layers * Hkv * Dh * 4 bytes",
        "  by hand: 2 * 6 * 6 * 48 * 4 = 13824 B = 13.5 KiB per token with 6 K/V heads; 3, 2, 1 heads",
        // Reading K/V head h / 4 in place and copying it to head h give the same products: exactly 0
        // (by construction: the same calls in the same shapes on the same numbers, L = 5 rows, so
        // packed sgemm products; only the row stride K/V are read with differs).
        "  materialized  largest |GQA - expanded|: output 0.00e+00, weights 0.00e+00",
        "  streaming     largest |GQA - expanded|: output 0.00e+00",
    });
}

TEST_CASE("lesson NAME --help for rotary, alibi and gqa") {
    for (const char* name : {"rotary", "alibi", "gqa", "swiglu", "rope-pairs"}) {
        CAPTURE(name);
        const CliRun run = run_tinyformer({"lesson", name, "--help"});
        CHECK(run.status == 0);
        CHECK(has(run.out, std::string("usage: tinyformer lesson ") + name + "\n\n"));
    }
    CHECK(has(run_tinyformer({"lesson", "alibi", "--help"}).out, "the 3x3 example with slope 1/2: 5.653274"));
}

TEST_CASE("lesson swiglu: SiLU at -2..2, one SwiGLU FFN worked by hand, and why F = 2/3 * 4D keeps a 4D FFN's weights") {
    const std::string out = lesson("swiglu");
    // SiLU(x) = x / (1 + e^-x): sigmoid(1) = 1 / 1.367879 = 0.731059, sigmoid(2) = 1 / 1.135335 = 0.880797,
    // sigmoid(-1) = 1 - 0.731059 = 0.268941, sigmoid(-2) = 1 - 0.880797 = 0.119203; times x:
    // 0.731059, 1.761594, -0.268941, -0.238406; SiLU(0) = 0.
    check_lines(out, {
        "  ReLU:    FFN(x) = W2 relu(W1 x)                 two matrices, W1 [F, D], W2 [D, F]",
        "  SwiGLU:  FFN(x) = W2 (SiLU(W1 x) * W3 x)        three: W1, W3 [F, D] and W2 [D, F]",
        "  x             -2.000000  -1.000000   0.000000   1.000000   2.000000",
        "  SiLU(x)       -0.238406  -0.268941   0.000000   0.731059   1.761594",
        "  ReLU(x)        0.000000   0.000000   0.000000   1.000000   2.000000",
    });
    // x = (1, 2). W1 x = (1*1 + 0*2, 0*1 + 1*2, 1*1 - 1*2) = (1, 2, -1); W3 x = (1 + 2, 0.5, 2) = (3, 0.5, 2);
    // SiLU(W1 x) * W3 x = (0.731059 * 3, 1.761594 * 0.5, -0.268941 * 2) = (2.193176, 0.880797, -0.537883);
    // W2 rows (1, 0, 1), (0, 1, -1): (2.193176 - 0.537883, 0.880797 + 0.537883) = (1.655293, 1.418680).
    // ReLU: relu(1, 2, -1) = (1, 2, 0); W2: (1 + 0, 2 - 0) = (1, 2).
    check_lines(out, {
        "  SiLU(W1 x) * W3 x = (2.193176, 0.880797, -0.537883)",
        "  W2 of that = (2.193176 - 0.537883, 0.880797 + 0.537883) = (1.655293, 1.418680)",
        "  the engine's FeedForward (swiglu):   1.655293   1.418680",
        "  the engine's FeedForward (relu):     1.000000   2.000000",
    });
    // float32 products of 3 units against 6-decimal hand values: under 1e-6.
    CHECK(std::fabs(number_after(out, "largest |engine - hand|:")) < 1e-6);
    // Weights without biases: ReLU 2 D F, SwiGLU 3 D F. D = 288: 2 * 288 * 1152 = 663552 = 3 * 288 * 768.
    // D = 4096: 2 * 4096 * 16384 = 134217728; 3 * 4096 * 11008 = 135266304, 1048576 more = 0.78125%.
    check_lines(out, {
        "     288     relu     1152         663552",
        "     288   swiglu      768         663552",
        "    4096     relu    16384      134217728",
        "    4096   swiglu    11008      135266304   (0.78% more than the ReLU FFN)",
        "F = 8D/3 = 2/3 * 4D. llama2.c's stories15M (D = 288) takes F = 2/3 * 4 * 288 = 768; LLaMA",
    });
}

TEST_CASE("lesson rope-pairs: one q turned with adjacent and half pairs by hand; scores depend on m - n in both; permuted rows convert") {
    const std::string out = lesson("rope-pairs");
    // Dh = 4, pos = 1: theta_0 = 1, theta_1 = 10000^(-1/2) = 0.01. cos 1 = 0.5403023, sin 1 = 0.8414710,
    // cos 0.01 = 0.99995, sin 0.01 = 0.0099998.
    // adjacent: (1, 2) -> (0.540302 - 1.682942, 0.841471 + 1.080605) = (-1.142640, 1.922076);
    //           (3, 4) -> (2.99985 - 0.039999, 0.029999 + 3.9998) = (2.959851, 4.0297995).
    // half:     (q0, q2) = (1, 3) -> (0.540302 - 2.524413, 0.841471 + 1.620907) = (-1.984111, 2.462378);
    //           (q1, q3) = (2, 4) -> (1.9999 - 0.039999, 0.0199997 + 3.9998) = (1.959901, 4.019800).
    check_lines(out, {
        "  adjacent pairs (0, 1) by theta_0, (2, 3) by theta_1",
        "  half     pairs (0, 2) by theta_0, (1, 3) by theta_1",
        "  q                           1.000000   2.000000   3.000000   4.000000",
    });
    const double adjacent[4] = {-1.142640, 1.922076, 2.959851, 4.0297995};
    const double half[4] = {-1.984111, 1.959901, 2.462378, 4.019800};
    for (const auto& [label, hand] : {std::pair<std::string, const double*>{"  rot(q, 1), adjacent  ", adjacent},
                                      {"  rot(q, 1), half      ", half}}) {
        const size_t at = out.find(label);
        REQUIRE(at != std::string::npos);
        std::istringstream row(out.substr(at + label.size()));
        for (int d = 0; d < 4; ++d) {
            double value = 0;
            row >> value;
            CAPTURE(label);
            CAPTURE(d);
            CHECK(std::fabs(value - hand[d]) < 1.5e-6);  // float32 turns, 6 printed decimals
        }
    }
    // The scores at (3, 1), (10, 8), (1002, 1000): one number per column, to float rounding
    // (angles of float32 positions times frequencies: ~1e-5 at 1000 for unit-size vectors of Dh = 8).
    const size_t table = out.find("adjacent           half\n");
    REQUIRE(table != std::string::npos);
    std::istringstream rows(out.substr(table + 24));
    double first_adjacent = 0, first_half = 0;
    for (int row = 0; row < 3; ++row) {
        long long m = 0, n = 0;
        double a = 0, h = 0;
        rows >> m >> n >> a >> h;
        CHECK(m - n == 2);
        if (row == 0) {
            first_adjacent = a;
            first_half = h;
        }
        CHECK(std::fabs(a - first_adjacent) < 1e-4);
        CHECK(std::fabs(h - first_half) < 1e-4);
    }
    CHECK(std::fabs(first_adjacent - first_half) > 0.1);  // the pairings are not the same numbers
    // Adjacent row 2p <- half row p, 2p + 1 <- p + Dh/2: Dh = 4: 0 2 1 3; Dh = 8: 0 4 1 5 2 6 3 7.
    CHECK(has(out, "the half rows 0 2 1 3 (Dh = 8: 0 4 1 5 2 6 3 7)."));
    // Permuted rows: the same weights and output to float rounding (the score's 4 products summed in
    // another order: a few units of 1e-7 of weights <= 1); not permuted, the weights move by far more.
    const size_t converted = out.find("  rows permuted (converted)");
    const size_t unconverted = out.find("  rows as they were (not converted)");
    REQUIRE(converted != std::string::npos);
    REQUIRE(unconverted != std::string::npos);
    double weights = 1, output = 1;
    std::istringstream(out.substr(converted + 27)) >> weights >> output;
    CHECK(weights < 1e-6);
    CHECK(output < 1e-5);
    std::istringstream(out.substr(unconverted + 35)) >> weights >> output;
    CHECK(weights > 0.1);
    CHECK(output > 0.1);
}

// ---- Section 11 on trained models: patching and the lens (tools/cli/lesson_study.cpp) ----

namespace {

// The numbers on the line of `text` that starts with `label` and then has numbers only
// (brackets and % signs skipped): a row of a lesson's table.
std::vector<double> table_row(const std::string& text, const std::string& label) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.compare(0, label.size(), label) != 0) continue;
        std::string rest = line.substr(label.size());
        for (char& c : rest)
            if (c == '(' || c == ')' || c == '%') c = ' ';
        std::istringstream numbers(rest);
        std::vector<double> row;
        for (double x; numbers >> x;) row.push_back(x);
        if (numbers.eof() && !row.empty()) return row;
    }
    FAIL("no table row starting with '", label, "' and then numbers");
    return {};
}

}  // namespace

TEST_CASE("lesson patching: the changed position's stream carries the answer; heads split it; weight is not effect") {
    const std::string out = lesson("patching");
    // Each model's row: pairs, same, embed = 1, carried, median, min, spread, largest.
    for (const std::string model : {"reverse ", "sort ", "dates "}) {
        CAPTURE(model);
        const std::vector<double> row = table_row(out, model);
        REQUIRE(row.size() == 8);
        CHECK(row[0] >= 90);        // the statements rest on at least 90 patched pairs per model
        // The embedding at the one changed position, patched, makes the corrupted run the clean
        // run bit for bit (every other position already reads the same token): exactly 1, always.
        CHECK(row[2] == row[0]);
        CHECK(row[3] >= 85);        // "restores at least 0.9 ... in at least 85 of the 100 pairs"
        CHECK(row[6] <= 5);         // "moves the effect by more than 0.1 in at most 5 pairs"
        CHECK(row[7] < 0.25);       // "never by 0.25"
    }
    check_lines(out, {"What the counts show. In all three models the character that differs reaches the answer through",
                      "position moves the effect by more than 0.1 in at most 5 pairs, never by 0.25. The encoder keeps"});
    // Heads: "the top head is always one of decoder.1's cross-attention heads, and which one changes".
    const size_t heads_at = out.find("the head with the largest effect:\n");
    const size_t heads_end = out.find("  its effect:", heads_at);
    REQUIRE(heads_at != std::string::npos);
    REQUIRE(heads_end != std::string::npos);
    std::istringstream heads(out.substr(heads_at, heads_end - heads_at));
    int distinct = 0;
    for (std::string line; std::getline(heads, line);) {
        if (line.find(" in ") == std::string::npos) continue;
        CHECK(has(line, "    decoder.1.cross_attn.h"));
        ++distinct;
    }
    CHECK(distinct >= 2);
    const double pairs = number_after(out, "reverse, the same ");
    // "no single head ... restores all of it (the top head's effect stays below 0.95, about 0.4 at the median)".
    CHECK(number_after(out, "its effect: median ") > 0.3);
    CHECK(number_after(out, "its effect: median ") < 0.5);
    CHECK(number_after(out, ", max ") < 0.95);
    // "A weight is not an effect": a third or more of the cases of a head looking hard at the changed
    // character carry less than 0.1; the hardest-looking head carries most in fewer than 3/4 of the pairs.
    const double looking = number_after(out, "(head, pair) cases of weight >= 0.5 on the changed position: ");
    const double without = number_after(out, "of which effect < 0.1: ");
    CHECK(looking >= pairs);        // enough cases for the count to mean something
    CHECK(without * 3 >= looking);
    CHECK(number_after(out, "largest weight on the changed position: ") * 4 < pairs * 3);
    CHECK(has(out, "What patching does not prove."));
}

TEST_CASE("lesson lens: the last layer's lens is the model; the answer appears there; post-LN norms are fixed") {
    const std::string out = lesson("lens");
    struct Model {
        std::string name;
        std::vector<std::string> layers;
        bool pre_ln;
    };
    const Model models[] = {{"reverse (", {"embed", "decoder.0", "decoder.1"}, true},
                            {"reverse-causal (", {"embed", "layers.0", "layers.1", "layers.2", "layers.3"}, true},
                            {"sort (", {"embed", "decoder.0", "decoder.1"}, false}};
    for (const Model& model : models) {
        CAPTURE(model.name);
        const size_t begin = out.find("\n" + model.name);
        REQUIRE(begin != std::string::npos);
        const std::string part = out.substr(begin, out.find("\n\n", begin + 1) - begin);
        // Rows: top-1 %, mean p(answer), mean norm, spread %.
        std::vector<std::vector<double>> rows;
        for (const std::string& layer : model.layers) {
            rows.push_back(table_row(part, "  " + layer + " "));
            REQUIRE(rows.back().size() == 4);
        }
        // "The last layer's lens IS the model": the same code on the same bits, difference 0,
        // so the answer (the model's argmax) is its top token everywhere.
        CHECK(number_after(part, "largest |difference| ") == 0.0);
        CHECK(rows.back()[0] == 100.0);
        for (size_t l = 0; l + 1 < rows.size(); ++l) CHECK(rows[l][0] < 50.0);  // "fewer than half"
        // The norms: post-LN's stream is a LayerNorm's output, "spread under 2%"; pre-LN's "over 4%".
        for (size_t l = 1; l < rows.size(); ++l) {
            if (model.pre_ln) CHECK(rows[l][3] > 4.0);
            else CHECK(rows[l][3] < 2.0);
        }
        if (model.name == "reverse-causal (") CHECK(rows[2][2] > rows[0][2]);  // "grows through reverse-causal's first layers"
        if (model.name == "reverse (") {  // "shrinks through reverse's decoder"
            CHECK(rows[1][2] < rows[0][2]);
            CHECK(rows[2][2] < rows[1][2]);
        }
        if (!model.pre_ln) {
            CHECK(has(part, "no direct attribution: post-LN"));
            continue;
        }
        // Direct attribution: the parts sum to the logit within kAttributionTolerance (1e-5), and
        // "the last layer's attention alone writes more than half of it; the earlier layers'
        // direct parts are small" (each under a fifth of the logit).
        CHECK(number_after(part, "(1 + sum of |parts|): ") <= 1e-5);
        const double logit = number_after(part, " inputs, logit ");
        const std::string last = model.layers.back();
        CHECK(number_after(part, "    " + last + " attention") > logit / 2);
        for (size_t l = 0; l + 1 < model.layers.size(); ++l) {
            const std::string group = l == 0 ? "    embed" : "    " + model.layers[l] + " attention";
            CAPTURE(group);
            CHECK(std::fabs(number_after(part, group)) < logit / 5);
            if (l > 0) CHECK(std::fabs(number_after(part, "    " + model.layers[l] + " ffn")) < logit / 5);
        }
    }
    check_lines(out, {"What the numbers show. The last layer's lens IS the model: the same final norm and unembedding",
                      "What the lens does not prove. The final norm and unembedding were trained to read the LAST"});
}

// ---- int8 weights (tools/cli/lesson_quantization.cpp) ----

namespace {

// The numbers of the first line after `from` that starts with `label`, read with '/', 'x' and
// '%' as spaces ("459/459" is two numbers, "9.5x" one) and words skipped.
std::vector<double> numbers_of_line(const std::string& text, size_t from, const std::string& label) {
    const size_t at = text.find("\n" + label, from);
    REQUIRE_MESSAGE(at != std::string::npos, "no line starting with '", label, "'");
    std::string line = text.substr(at + 1 + label.size(), text.find('\n', at + 1) - at - 1 - label.size());
    for (char& c : line)
        if (c == '/' || c == 'x' || c == '%') c = ' ';
    std::istringstream words(line);
    std::vector<double> numbers;
    for (std::string word; words >> word;) {
        char* end = nullptr;
        const double value = std::strtod(word.c_str(), &end);
        if (end != word.c_str() && *end == '\0') numbers.push_back(value);
    }
    return numbers;
}

}  // namespace

TEST_CASE("lesson quantization: one group and one int8 dot product by hand, the logits' error, accuracy, bytes") {
    const std::string out = lesson("quantization");
    // 1. w = 2.3 -63.5 17.8 0.2 -9.75 40.1 5.25 -0.6: max|w| = 63.5, s = 63.5 / 127 = 0.5 (exact).
    //    w / s = 4.6 -127 35.6 0.4 -19.5 80.2 10.5 -1.2; round (halves away from 0):
    //    q = 5 -127 36 0 -20 80 11 -1; q * s = 2.5 -63.5 18 0 -10 40 5.5 -0.5;
    //    |error| = 0.2 0 0.2 0.2 0.25 0.1 0.25 0.1: the largest 0.25 = s / 2 at -9.75 and 5.25
    //    (-19.5 -> -20, 10.5 -> 11); 0.2 < s / 2 becomes 0; 0.25 / 63.5 = 1/254.
    // 2. x = 1.04 0.33 -2 0.5 12.7 -1 4.26 -3.3: s_x = 12.7 / 127 = 0.1, x / s_x = 10.4 3.3 -20 5 127
    //    -10 42.6 -33, q_x = 10 3 -20 5 127 -10 43 -33. q_w . q_x = 50 - 381 - 720 + 0 - 2540 - 800
    //    + 473 + 33 = -3885; * 0.5 * 0.1 = -194.25. w . x = 2.392 - 20.955 - 35.6 + 0.1 - 123.825
    //    - 40.1 + 22.365 + 1.98 = -193.643; error 0.607 = 0.31% of 193.643. The products after
    //    rounding: 2.5 (up from 2.392), -19.05 (up from -20.955), -36 (down), 0 (down from 0.1),
    //    -127 (down), -40 (up from -40.1), 23.65 (up from 22.365), 1.65 (down from 1.98): 4 up,
    //    4 down. Bound 0.25 * 25.13 + 0.05 * 139.5 + 8 * 0.25 * 0.05 = 13.3575; 0.607 / 13.358 = 4.5%.
    check_lines(out, {
        "  w             2.3000  -63.5000   17.8000    0.2000   -9.7500   40.1000    5.2500   -0.6000",
        "  max|w| = 63.5, so s = 63.5 / 127 = 0.500000",
        "  w / s         4.6000 -127.0000   35.6000    0.4000  -19.5000   80.2000   10.5000   -1.2000",
        "  q                  5      -127        36         0       -20        80        11        -1",
        "  q * s         2.5000  -63.5000   18.0000    0.0000  -10.0000   40.0000    5.5000   -0.5000",
        "  |error|       0.2000    0.0000    0.2000    0.2000    0.2500    0.1000    0.2500    0.1000",
        "  largest error 0.2500 at w = -9.75 and 5.25; s / 2 = 0.2500; no error above s / 2: yes",
        "  there w / s (-19.5 and 10.5) is halfway between two integers, and round takes it away from 0: yes",
        "  the largest |w| comes back exactly (q = +-127): yes",
        "  numbers smaller than s / 2 in size become 0: here 0.2",
        "  relative to max|w| no error exceeds 1/254 = 0.0039: yes",
        "  x             1.0400    0.3300   -2.0000    0.5000   12.7000   -1.0000    4.2600   -3.3000",
        "  max|x| = 12.7, so s_x = 0.100000",
        "  q_x               10         3       -20         5       127       -10        43       -33",
        "  int32 sum  q_w . q_x = 5*10 + -127*3 + 36*-20 + 0*5 + -20*127 + 80*-10 + 11*43 + -1*-33",
        "             = -3885   (exact: int8 x int8 products summed in int32)",
        "  scaled     -3885 * s_w * s_x = -3885 * 0.5 * 0.100000 = -194.2500   (the engine's q8_matvec: -194.2500)",
        "  float32    w . x = -193.6430",
        "  error      0.6070 (0.31% of |w . x|)",
        "  bound      s_w/2 sum|x| + s_x/2 sum|w| + G s_w/2 s_x/2 = 0.25 * 25.13 + 0.05 * 139.50 + 8 * 0.25 * 0.05",
        "             = 13.3575; with float32's own rounding 13.3581 (q8_error_bound, engine/quant/q8_0.h)",
        "  the error is 4.5% of the bound: rounding moved 4 of the 8 products up and 4 down, and",
    });
    // 3. reverse on 50 inputs. a) The head alone: every logit within its bound, at every G, the
    // largest error a fraction of it. b) Every weight: the mean errors per G and the statements
    // made of them.
    const size_t head = out.find("a) The head alone"), whole = out.find("b) Every weight in int8");
    REQUIRE(head != std::string::npos);
    REQUIRE(whole != std::string::npos);
    std::vector<double> means, same;
    for (const std::string G : {"8", "32", "64"}) {
        CAPTURE(G);
        const std::string label = "  " + std::string(4 - G.size(), ' ') + G + " ";
        const size_t at = out.find("\n" + label, head);
        CHECK(out.substr(at, out.find('\n', at + 1) - at).find(" yes ") != std::string::npos);
        const std::vector<double> alone = numbers_of_line(out, head, label);
        REQUIRE(alone.size() == 4);  // largest, mean, largest bound, largest error / bound (%)
        CHECK(alone[0] > 0);
        CHECK(alone[0] <= alone[2]);
        CHECK(alone[3] <= 100);
        const std::vector<double> row = numbers_of_line(out, whole, label);
        REQUIRE(row.size() == 5);  // largest, mean, mean / the head alone's, same top token of positions
        CHECK(row[2] == doctest::Approx(row[1] / alone[1]).epsilon(0.06));  // 2 printed digits of each
        means.push_back(row[1]);
        same.push_back(row[3]);
        CHECK(row[3] <= row[4]);
    }
    const bool sorted = means[0] <= means[1] && means[1] <= means[2];
    CHECK(has(out, std::string("Smaller groups, smaller errors (a group's scale follows its own largest number): ") +
                       (sorted ? "yes." : "no.")));
    CHECK(has(out, "At G = 32 the top token is the same at " + std::to_string(static_cast<int64_t>(same[1])) + " of\n"));
    // 4. The six toy models: float32 as `tinyformer eval` measures them (docs/TOY_MODELS.md:
    // 1000, 997, 1000, 1000, 999, 79 of 1000, seed 1); change = int8 - float32; the statement
    // counts the unchanged ones; int8 costs at most 1% of the examples on any of them.
    const std::vector<std::pair<std::string, double>> toy = {
        {"  data/models/reverse.safetensors            reverse ", 1000}, {"  data/models/sort.safetensors               sort ", 997},
        {"  data/models/reverse-prefixlm.safetensors   reverse ", 1000}, {"  data/models/reverse-causal.safetensors     reverse ", 1000},
        {"  data/models/dates.safetensors              dates ", 999},    {"  data/models/reverse-peeking.safetensors    reverse ", 79}};
    int64_t unchanged = 0;
    for (const auto& [label, float32] : toy) {
        CAPTURE(label);
        std::string line = out.substr(out.find(label) + label.size());
        line = line.substr(0, line.find('\n'));
        for (char& c : line)
            if (c == '/') c = ' ';
        double f = 0, n1 = 0, i = 0, n2 = 0, change = 0;
        std::istringstream(line) >> f >> n1 >> i >> n2 >> change;
        CHECK(f == float32);
        CHECK(n1 == 1000);
        CHECK(n2 == 1000);
        CHECK(change == i - f);
        CHECK(std::fabs(change) <= 10);
        unchanged += change == 0;
    }
    CHECK(has(out, "Accuracy unchanged on " + std::to_string(unchanged) + " of 6 models"));
    // 5. Bytes (counted by hand in tests/test_quantization.cpp: 231296 quantized numbers, 8222
    // float32): float32 4 * 239518 = 958072; at G: 4 * 8222 = 32888 + 231296 + 4 * 231296 / G:
    // G = 8: 115648, total 379832, 958072 / 379832 = 2.52x; G = 32: 28912, 293096, 3.27x;
    // G = 64: 14456, 278640, 3.44x. At G = 32 a weight takes 1.125 of 4 bytes: 28%.
    check_lines(out, {
        "  weights         float32 (B)     int8 (B)     scales (B)      total (B)       vs float32",
        "  float32              958072            0              0         958072            1.00x",
        "  int8 G = 8            32888       231296         115648         379832            2.52x",
        "  int8 G = 32           32888       231296          28912         293096            3.27x",
        "  int8 G = 64           32888       231296          14456         278640            3.44x",
        "231296 of the model's 239518 numbers are the linear layers' and the head's weights; each takes",
        "1 + 4/G bytes in int8 instead of 4: 1.5 at G = 8, 1.125 at G = 32, 1.0625 at G = 64.",
        "token: where it is bound by memory (docs/PERFORMANCE.md), at G = 32 it reads 28% of the",
    });
}

TEST_CASE("lesson quantization --help names what it reads: the six toy models") {
    const CliRun run = run_tinyformer({"lesson", "quantization", "--help"});
    CHECK(run.status == 0);
    CHECK(has(run.out, "usage: tinyformer lesson quantization\n\nint8 weights in groups: one group and one int8 dot product by hand"));
    for (const char* model : {"data/models/reverse.safetensors", "data/models/sort.safetensors",
                              "data/models/reverse-prefixlm.safetensors", "data/models/reverse-causal.safetensors",
                              "data/models/dates.safetensors", "data/models/reverse-peeking.safetensors"})
        CHECK(has(run.out, std::string("  ") + model + "\n"));
}
