// The toy tasks of data/models/ and how text goes in and out of a model.
//
//   reverse   lowercase strings of length 1..16 -> the string reversed
//   sort      digit strings of length 1..16     -> the digits sorted
//   dates     a date 1900-01-01..2099-12-31 (uniform) in one of six forms
//             (uniform): "3 may 1979", "may 3 1979", "may 3, 1979",
//             "03/05/1979" (day/month/year), "1979.05.03",
//             "thursday 3 may 1979"                 -> ISO "1979-05-03"
//
// Lengths: every task draws inputs of its own lengths (reverse, sort: 1..16,
// uniform; dates: 10..27 characters, as its forms come out). A LengthRange
// asks for inputs of lengths min..max instead: reverse and sort draw the
// length uniformly in the range, then each character uniformly; dates draws
// dates as always and keeps those whose text has a length in the range. A
// task refuses a range it cannot make (check_lengths: min >= 1, min <= max,
// inside the task's own min_length..max_length), and evaluate refuses
// lengths whose examples do not fit the model: a decoder-only model needs
// prompt + answer tokens <= max_len (its last answer token predicts <eos>),
// an encoder-decoder source <= max_len and <bos> + answer <= max_len.
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
    int64_t min_length = 1, max_length = 1;  // the input lengths (characters) the task can make
};

// Input lengths min..max in characters (both included).
struct LengthRange {
    int64_t min = 1, max = 1;
};
// "A-B" (or "A" when min == max) -> the range. Error naming the text unless it is
// one or two whole numbers (digits only, at most 9 each) joined by '-'.
LengthRange parse_length_range(const std::string& text);
// The range as text: "A-B", or "A" when min == max.
std::string length_range_text(const LengthRange& lengths);
// Error naming the range and the task's lengths unless 1 <= min <= max and
// task.min_length <= min, max <= task.max_length.
void check_lengths(const ToyTask& task, const LengthRange& lengths);
// The longest input (characters) of `task` whose example fits `model`
// (see Lengths above); 0 when none does. For the alphabet tasks only (no sample).
int64_t longest_fitting_length(const Model& model, const ToyTask& task);

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

// The n inputs evaluate draws from `seed` (see Lengths above).
std::vector<std::string> draw_inputs(const ToyTask& task, int64_t n, uint64_t seed,
                                     const std::optional<LengthRange>& lengths = std::nullopt);

// n fresh examples of `task` (its sample, or lengths 1..16, uniform; with `lengths`,
// inputs of those lengths, see above) from `seed`, decoded greedily
// (beam_width 1) or by beam search. Error for lengths the task cannot make or
// examples longer than the model's max_len (naming both numbers).
Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width = 1,
                    const std::optional<LengthRange>& lengths = std::nullopt);

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
