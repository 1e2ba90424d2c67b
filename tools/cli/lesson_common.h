// The pieces every `tinyformer lesson` file uses (tools/cli/lesson.cpp for
// lesson 10.3, tools/cli/lesson_10_4.cpp for section 10.4,
// tools/cli/lesson_quantization.cpp for int8 weights): a lesson's
// heading, a matrix printed row by row, a Boolean matrix from its values.
#pragma once

#include "engine/attention.h"
#include "engine/mask.h"
#include "engine/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tinyformer::cli {

inline void heading(const char* title) { std::printf("\n=== %s ===\n\n", title); }

inline void print_matrix(const char* name, ConstMatrixView m, int precision = 4) {
    std::printf("%s [%lld,%lld]\n", name, static_cast<long long>(m.rows), static_cast<long long>(m.cols));
    for (int64_t r = 0; r < m.rows; ++r) {
        std::printf("  ");
        for (int64_t c = 0; c < m.cols; ++c) std::printf(" %*.*f", precision + 4, precision, m(r, c));
        std::printf("\n");
    }
}

inline BoolTensor bool_matrix(int64_t rows, int64_t cols, std::vector<uint8_t> values) {
    return BoolTensor{{rows, cols}, std::move(values)};
}

inline AttentionOptions with_weights() {
    AttentionOptions options;
    options.want_weights = true;
    return options;
}

// The largest |a - b| over two tensors of the same shape.
inline double max_difference(const Tensor& a, const Tensor& b) {
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
        worst = std::max(worst, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
    return worst;
}

// A trained model a lesson reads, `relative` to a checkout (data/models/...):
// from the current folder, else from the checkout the running binary was
// built in; empty when neither has it (find_lesson_model), or an Error naming
// where it was looked for (lesson_model). tools/cli/lesson.cpp.
std::string find_lesson_model(const std::string& relative);
std::string lesson_model(const std::string& relative);

// The models lesson_patching and lesson_lens read (tools/cli/lesson_study.cpp).
constexpr const char* kStudyModels[] = {"data/models/reverse.safetensors", "data/models/sort.safetensors",
                                        "data/models/dates.safetensors", "data/models/reverse-causal.safetensors"};

// The models lesson_extrapolation reads (helper X's, tools/python/train_extrapolation.py).
constexpr const char* kExtrapolationModels[] = {
    "data/models/reverse-learned.safetensors", "data/models/reverse-sinusoidal.safetensors",
    "data/models/reverse-rotary.safetensors", "data/models/reverse-alibi.safetensors"};
// The language models of its second experiment (tools/python/train_lm_extrapolation.py) and their held-out text.
constexpr const char* kLmModels[] = {"data/models/lm-learned.safetensors", "data/models/lm-sinusoidal.safetensors",
                                     "data/models/lm-rotary.safetensors", "data/models/lm-alibi.safetensors",
                                     "data/models/lm-none.safetensors"};
constexpr const char* kLmHeldOut = "data/models/lm-heldout.txt";

// Section 11's lessons on trained models (tools/cli/lesson_study.cpp).
void lesson_patching();
void lesson_lens();

// Section 10.4's lessons (tools/cli/lesson_10_4.cpp).
void lesson_norms();
void lesson_rotary();
void lesson_alibi();
void lesson_gqa();
void lesson_extrapolation();
// The gated FFN and rotary's two pairings (tools/cli/lesson_swiglu_rope.cpp).
void lesson_swiglu();
void lesson_rope_pairs();

// The six toy models of docs/TOY_MODELS.md and the task `tinyformer eval` measures each on:
// the models lesson_quantization reads.
struct ToyModel {
    const char* path;
    const char* task;
};
constexpr ToyModel kToyModels[] = {
    {"data/models/reverse.safetensors", "reverse"},          {"data/models/sort.safetensors", "sort"},
    {"data/models/reverse-prefixlm.safetensors", "reverse"}, {"data/models/reverse-causal.safetensors", "reverse"},
    {"data/models/dates.safetensors", "dates"},              {"data/models/reverse-peeking.safetensors", "reverse"},
};

// int8 weights (tools/cli/lesson_quantization.cpp).
void lesson_quantization();

}  // namespace tinyformer::cli
