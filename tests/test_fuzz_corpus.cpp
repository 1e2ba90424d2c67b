// The fuzzers' committed seeds (tests/fuzz/corpus/, from
// tools/python/make_fuzz_corpus.py), run through the same harness code that
// `make fuzz` runs under libFuzzer, so that every seed — and every finding
// that is added to the corpus — is checked by `make test` and, under ASan and
// UBSan, by `make sanitize`. A harness aborts on a finding (a crash, NaN in an
// output, a config accepted against the rules), which fails the run.
// Seed names say what must happen: "valid-*" is accepted, "bad-*" refused.
#include <doctest/doctest.h>

#include "tests/fuzz/harnesses.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Seed {
    std::string name;
    std::vector<uint8_t> bytes;
};

std::vector<Seed> seeds(const std::string& harness) {
    std::vector<Seed> result;
    for (const auto& entry : std::filesystem::directory_iterator("tests/fuzz/corpus/" + harness)) {
        std::ifstream in(entry.path(), std::ios::binary);
        result.push_back({entry.path().filename().string(),
                          std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>())});
    }
    std::sort(result.begin(), result.end(), [](const Seed& a, const Seed& b) { return a.name < b.name; });
    REQUIRE(result.size() >= 10);
    return result;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// A parser harness's seeds: each valid-* one accepted once, each bad-* one refused once.
void check_parser_seeds(const std::string& harness, int (*one_input)(const uint8_t*, size_t), const FuzzCounts& counts) {
    for (const Seed& seed : seeds(harness)) {
        INFO("seed: tests/fuzz/corpus/", harness, "/", seed.name);
        const FuzzCounts before = counts;
        one_input(seed.bytes.data(), seed.bytes.size());
        CHECK(counts.accepted - before.accepted == (starts_with(seed.name, "valid-") ? 1 : 0));
        CHECK(counts.refused - before.refused == (starts_with(seed.name, "bad-") ? 1 : 0));
    }
}

}  // namespace

TEST_CASE("Fuzz seeds: the safetensors parser reads every valid-* seed and refuses every bad-* one") {
    check_parser_seeds("safetensors", fuzz_safetensors_one_input, fuzz_safetensors_counts);
}

TEST_CASE("Fuzz seeds: the config parser accepts every valid-* seed and refuses every bad-* one") {
    check_parser_seeds("config", fuzz_config_one_input, fuzz_config_counts);
}

TEST_CASE("Fuzz seeds: forward runs each valid seed on its model (ed-* reverse, plm-* reverse-prefixlm) and refuses bad ones") {
    for (const Seed& seed : seeds("forward")) {
        INFO("seed: tests/fuzz/corpus/forward/", seed.name);
        const FuzzCounts reverse = fuzz_forward_counts[0], prefix_lm = fuzz_forward_counts[1];
        fuzz_forward_one_input(seed.bytes.data(), seed.bytes.size());
        const bool valid = seed.name.find("-valid") != std::string::npos;
        CHECK(fuzz_forward_counts[0].accepted - reverse.accepted == (valid && starts_with(seed.name, "ed-") ? 1 : 0));
        CHECK(fuzz_forward_counts[1].accepted - prefix_lm.accepted == (valid && starts_with(seed.name, "plm-") ? 1 : 0));
        CHECK(fuzz_forward_counts[0].refused + fuzz_forward_counts[1].refused - reverse.refused - prefix_lm.refused ==
              (valid ? 1 : 2));
    }
}

TEST_CASE("Fuzz seeds: text encodes every valid-* seed, refuses every bad-* one, and checks any-* either way") {
    for (const Seed& seed : seeds("text")) {
        INFO("seed: tests/fuzz/corpus/text/", seed.name);
        const FuzzCounts before = fuzz_text_counts;
        fuzz_text_one_input(seed.bytes.data(), seed.bytes.size());
        const long long accepted = fuzz_text_counts.accepted - before.accepted;
        const long long refused = fuzz_text_counts.refused - before.refused;
        CHECK(accepted + refused == 1);
        if (starts_with(seed.name, "valid-")) CHECK(accepted == 1);
        if (starts_with(seed.name, "bad-")) CHECK(refused == 1);
    }
}
