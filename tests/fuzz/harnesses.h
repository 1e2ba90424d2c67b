// The fuzz harnesses' entry points. `make fuzz` links each into a
// libFuzzer program (LLVMFuzzerTestOneInput calls it); the test suite links
// all of them (built with TINYFORMER_CORPUS_TEST) and runs every committed seed
// through them (tests/test_fuzz_corpus.cpp), under g++ and `make sanitize`.
#pragma once

#include <cstddef>
#include <cstdint>

// Each returns 0, as libFuzzer wants; a finding aborts the process.
int fuzz_safetensors_one_input(const uint8_t* data, size_t size);
int fuzz_config_one_input(const uint8_t* data, size_t size);
int fuzz_forward_one_input(const uint8_t* data, size_t size);
int fuzz_text_one_input(const uint8_t* data, size_t size);

// What the inputs so far did, so that a run (and a test) can see how many
// got past the parser to the interesting part.
struct FuzzCounts {
    long long refused = 0;   // tinyformer::Error, for any reason
    long long accepted = 0;  // read / parsed / run to the end with finite outputs
};
extern FuzzCounts fuzz_safetensors_counts, fuzz_config_counts, fuzz_text_counts;
extern FuzzCounts fuzz_forward_counts[2];  // [0] the reverse model, [1] reverse-prefixlm
