// The toy tasks of data/models/ and how text goes in and out of a model.
//
//   reverse   lowercase strings of length 1..16 -> the string reversed
//   sort      digit strings of length 1..16     -> the digits sorted
//   dates     a date 1900-01-01..2099-12-31 (uniform) in one of six forms
//             (uniform): "3 may 1979", "may 3 1979", "may 3, 1979",
//             "03/05/1979" (day/month/year), "1979.05.03",
//             "thursday 3 may 1979"                 -> ISO "1979-05-03"
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
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

class Random;

struct ToyTask {
    std::string name;
    std::string alphabet;  // every character an input can have
    std::string (*answer)(const std::string& text);
    std::string (*sample)(Random& random) = nullptr;  // one input; nullptr = 1..16 characters of the alphabet
};

// The civil calendar (proleptic Gregorian), for the dates task.
struct Date {
    int64_t year = 0, month = 0, day = 0;  // month 1..12, day 1..31
};
int64_t days_from_civil(const Date& date);  // days since 1970-01-01 (negative before)
Date civil_from_days(int64_t days);
int64_t weekday(const Date& date);        // 0 = monday .. 6 = sunday
const char* month_name(int64_t month);    // 1..12: "january" ..
const char* weekday_name(int64_t day);    // 0..6: "monday" ..
// The six forms of `date`, in the order above; form 0..5.
std::string date_text(const Date& date, int64_t form);
// The ISO answer of any of the six forms ("" if the text is none of them).
std::string iso_date(const std::string& text);

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

// n fresh examples of `task` (its sample, or lengths 1..16, uniform) from `seed`, decoded
// greedily (beam_width 1) or by beam search.
Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width = 1);

// Decodes the model inputs (model_input's framing; batched when greedy or
// sampling) and returns each row's output tokens: greedy (beam_width 1, no
// sampling), beam search (beam_width > 1) or sampling (models/decoding.h;
// input i draws from Random(seed + i)). Error for beam search with sampling.
std::vector<std::vector<int64_t>> generate(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                           int64_t beam_width, const GenerationOptions& options,
                                           const std::optional<Sampling>& sampling = std::nullopt);

// Texts through the model's tokenizer, model_input and generate, back to text.
std::vector<std::string> generate_text(const Model& model, const std::vector<std::string>& texts, int64_t beam_width,
                                       const GenerationOptions& options, bool map_unknown = false);

}  // namespace tinyformer
