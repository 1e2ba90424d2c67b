// The toy tasks of data/models/ and how text goes in and out of a model.
//
//   reverse   lowercase strings of length 1..16 -> the string reversed
//   sort      digit strings of length 1..16     -> the digits sorted
//
// An encoder-decoder model reads the text as its source; a decoder-only
// model reads the prompt <bos> text + its prompt suffix (the toy models
// declare "=": the model continues after it), framed by model_input
// (models/text.h), as `tinyformer run` frames it. evaluate() draws fresh
// examples from tinyformer::Random, decodes them in batches and counts exact
// matches.
#pragma once

#include "models/decoding.h"
#include "models/text.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

struct ToyTask {
    std::string name;
    std::string alphabet;
    std::string (*answer)(const std::string& text);
};

const ToyTask& toy_task(const std::string& name);  // Error listing the tasks if unknown
std::vector<std::string> toy_task_names();

struct Example {
    std::string input, expected, output;
};

struct Evaluation {
    int64_t correct = 0, total = 0;
    std::vector<Example> failures;  // every failure, in order
    double accuracy() const { return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0; }
};

// n fresh examples of `task` (lengths 1..16, uniform) from `seed`, decoded
// greedily (beam_width 1) or by beam search.
Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width = 1);

// Decodes the model inputs (model_input's framing; batched when greedy) and
// returns each row's output tokens.
std::vector<std::vector<int64_t>> generate(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                           int64_t beam_width, const GenerationOptions& options);

// Texts through the model's tokenizer, model_input and generate, back to text.
std::vector<std::string> generate_text(const Model& model, const std::vector<std::string>& texts, int64_t beam_width,
                                       const GenerationOptions& options, bool map_unknown = false);

}  // namespace tinyformer
