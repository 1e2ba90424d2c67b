// libFuzzer harness: the config parser (models/config.cpp), fed the text of
// a checkpoint's "config" metadata. It either refuses with tinyformer::Error
// or returns a config whose sizes obey the rules parse_config promises; a
// config that breaks them, a crash, a sanitizer report or another exception
// type is a finding. Seeds in tests/fuzz/corpus/config/.
#include "models/config.h"

#include "engine/error.h"
#include "tests/fuzz/harnesses.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

FuzzCounts fuzz_config_counts;

int fuzz_config_one_input(const uint8_t* data, size_t size) {
    using namespace tinyformer;
    ModelConfig config;
    try {
        config = parse_config(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const Error&) {
        ++fuzz_config_counts.refused;
        return 0;  // refused: fine
    }
    // What the rest of the engine relies on, for an accepted config.
    const bool single_stack = config.arch != Architecture::EncoderDecoder;
    const bool sizes_ok = config.d_model > 0 && config.nhead > 0 && config.d_model % config.nhead == 0 &&
                          config.dim_feedforward > 0 && config.max_len > 0 &&
                          (single_stack ? config.num_layers > 0 && config.vocab_size > 0
                                        : config.num_encoder_layers > 0 && config.num_decoder_layers > 0 &&
                                              config.src_vocab_size > 0 && config.tgt_vocab_size > 0) &&
                          config.layer_norm_eps > 0 && config.d_model <= (1 << 24) && config.max_len <= (1 << 24);
    const int64_t vocabulary = single_stack ? config.vocab_size : std::max(config.src_vocab_size, config.tgt_vocab_size);
    for (int64_t id : {config.pad_id, config.bos_id, config.eos_id})
        if (id < -1 || id >= vocabulary) std::abort();  // a special id outside the vocabulary
    if (!sizes_ok) std::abort();  // accepted a config the rules forbid
    ++fuzz_config_counts.accepted;
    return 0;
}

#ifndef TINYFORMER_CORPUS_TEST
// Printed at exit: how many inputs were accepted and how many refused.
void print_counts() {
    std::fprintf(stderr, "fuzz_config: accepted %lld, refused %lld\n", fuzz_config_counts.accepted,
                 fuzz_config_counts.refused);
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::atexit(print_counts);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz_config_one_input(data, size); }
#endif
