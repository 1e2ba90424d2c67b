// The decoding tests' models and inputs (tests/test_stepper.cpp,
// tests/test_decoding.cpp): the PyTorch reference checkpoints of
// data/reference/ (random weights: they generate long, varied sequences,
// which is what these properties need); tests/test_toy_models.cpp checks the
// trained models.
#pragma once

#include "models/decoding.h"

#include <string>
#include <vector>

namespace tinyformer::decoding_cases {

inline const char* kCases[] = {"ed_post_relu_sin",         "ed_pre_gelu_learned_pad",    "do_prefix_pre_gelu_sin",
                               "do_pre_gelu_learned_pad",  "do_post_relu_sin_h1",        "do_alibi_pre_gelu_h6_pad",
                               "do_relbias_pre_gelu_h4_pad", "do_window_rotary_pre_gelu_pad"};

inline Model load_case(const std::string& name) { return Model::load("data/reference/" + name + ".model.safetensors"); }

// Inputs of different lengths: sources for encoder-decoder models, prompts
// starting with <bos> for decoder-only ones. Ordinary ids start at 3.
inline std::vector<std::vector<int64_t>> inputs_for(const Model& model) {
    const int64_t vocab = model.encoder_decoder ? model.config.src_vocab_size : model.config.vocab_size;
    std::vector<std::vector<int64_t>> inputs = {{3, 4, 5, 6}, {7}, {8, 9, 3}, {5, 5, 4, 3, 9, 8}};
    for (auto& input : inputs) {
        for (int64_t& id : input) id = 3 + (id - 3) % (vocab - 3);
        if (!model.encoder_decoder) input.insert(input.begin(), model.config.bos_id);
    }
    return inputs;
}

}  // namespace tinyformer::decoding_cases
