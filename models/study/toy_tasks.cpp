#include "models/study/toy_tasks.h"

#include "engine/random.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tinyformer {

namespace {

std::string reversed(const std::string& text) { return std::string(text.rbegin(), text.rend()); }

std::string sorted(const std::string& text) {
    std::string out = text;
    std::sort(out.begin(), out.end());
    return out;
}

const char* const kMonths[12] = {"january", "february", "march",     "april",   "may",      "june",
                                 "july",    "august",   "september", "october", "november", "december"};
const char* const kWeekdays[7] = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};

std::string two_digits(int64_t n) {
    char text[8];
    std::snprintf(text, sizeof text, "%02lld", static_cast<long long>(n));
    return text;
}

// A date uniform over 1900-01-01..2099-12-31, in a form drawn uniformly.
std::string random_date(Random& random) {
    const int64_t first = days_from_civil({1900, 1, 1}), last = days_from_civil({2099, 12, 31});
    const Date date = civil_from_days(random.uniform_int(first, last));
    return date_text(date, random.uniform_int(0, 5));
}

// The characters of the six forms: " ,./", digits, and the letters of the month and weekday names.
const char* const kDateAlphabet = " ,./0123456789abcdefghijlmnoprstuvwy";

constexpr int64_t kMaxTextLength = 16;   // the alphabet tasks' default lengths: 1..16
constexpr int64_t kLongestText = 4096;    // the longest input the alphabet tasks make
constexpr int64_t kDateShortest = 10, kDateLongest = 27;  // "1 may 1900", "wednesday 30 september 1998"
// Draws of a date per wanted one before a length range counts as unreachable
// (the rarest length, 27, is about 1 draw in 700).
constexpr int64_t kDateDrawsPerExample = 100000;
constexpr size_t kBatch = 64;

const std::vector<ToyTask>& tasks() {
    static const std::vector<ToyTask> all = {
        {"reverse", "abcdefghijklmnopqrstuvwxyz", reversed, nullptr, 1, kLongestText},
        {"sort", "0123456789", sorted, nullptr, 1, kLongestText},
        {"dates", kDateAlphabet, iso_date, random_date, kDateShortest, kDateLongest},
    };
    return all;
}

std::string random_text(Random& random, const std::string& alphabet, int64_t min_length, int64_t max_length) {
    std::string text;
    const int64_t length = random.uniform_int(min_length, max_length);
    for (int64_t j = 0; j < length; ++j)
        text += alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(alphabet.size()) - 1))];
    return text;
}

// Positions an example takes in `model` (see the header's Lengths): the
// prompt as model_input frames it (<bos>, the text, the prompt suffix) and the answer.
int64_t positions_needed(const Model& model, const ModelText& text, const std::string& input,
                         const std::string& answer) {
    int64_t prompt = static_cast<int64_t>(text.encode_input(input).size());
    const int64_t target = static_cast<int64_t>(text.encode_output(answer).size());
    if (model.encoder_decoder) return std::max(prompt, 1 + target);
    if (model.config.bos_id >= 0) ++prompt;
    if (!model.text.prompt_suffix.empty()) prompt += static_cast<int64_t>(text.encode_input(model.text.prompt_suffix).size());
    return prompt + target;
}

// max_len bounds the positions unless the model has no positional encoding (docs/FORMAT.md).
bool bounded_by_max_len(const Model& model) { return model.config.pos_encoding != PositionalEncoding::None; }

int64_t parse_length(const std::string& number, const std::string& text) {
    if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos)
        fail("lengths '", text, "': expected A-B or A, whole numbers of characters (e.g. 17-24 or 20)");
    return std::stoll(number);
}

}  // namespace

// Howard Hinnant's days_from_civil / civil_from_days (public domain), for
// the proleptic Gregorian calendar.
int64_t days_from_civil(const Date& date) {
    const int64_t y = date.year - (date.month <= 2 ? 1 : 0);
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;                                                  // [0, 399]
    const int64_t doy = (153 * (date.month + (date.month > 2 ? -3 : 9)) + 2) / 5 + date.day - 1;  // [0, 365]
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                          // [0, 146096]
    return era * 146097 + doe - 719468;
}

Date civil_from_days(int64_t days) {
    days += 719468;
    const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const int64_t doe = days - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    const int64_t day = doy - (153 * mp + 2) / 5 + 1;
    const int64_t month = mp < 10 ? mp + 3 : mp - 9;
    return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

int64_t weekday(const Date& date) {
    // 1970-01-01 was a Thursday (3 with monday = 0).
    return ((days_from_civil(date) % 7 + 7) % 7 + 3) % 7;
}

const char* month_name(int64_t month) {
    if (month < 1 || month > 12) fail("month_name: month ", month, " is not 1..12");
    return kMonths[month - 1];
}

const char* weekday_name(int64_t day) {
    if (day < 0 || day > 6) fail("weekday_name: day ", day, " is not 0..6");
    return kWeekdays[day];
}

std::string date_text(const Date& date, int64_t form) {
    const std::string d = std::to_string(date.day), y = std::to_string(date.year), month = month_name(date.month);
    switch (form) {
        case 0: return d + " " + month + " " + y;
        case 1: return month + " " + d + " " + y;
        case 2: return month + " " + d + ", " + y;
        case 3: return two_digits(date.day) + "/" + two_digits(date.month) + "/" + y;
        case 4: return y + "." + two_digits(date.month) + "." + two_digits(date.day);
        case 5: return std::string(weekday_name(weekday(date))) + " " + d + " " + month + " " + y;
        default: fail("date_text: form ", form, " is not 0..5");
    }
}

std::string iso_date(const std::string& text) {
    // Parse each form back and accept the text only if writing the date in
    // that form gives the text again.
    Date date;
    std::string clean = text;
    for (char& c : clean)
        if (c == ',' || c == '/' || c == '.') c = ' ';
    std::istringstream words(clean);
    std::vector<std::string> parts;
    for (std::string word; words >> word;) parts.push_back(word);
    if (!parts.empty() && std::find(std::begin(kWeekdays), std::end(kWeekdays), parts[0]) != std::end(kWeekdays))
        parts.erase(parts.begin());
    if (parts.size() != 3) return "";
    const auto month_of = [](const std::string& word) -> int64_t {
        for (int64_t m = 0; m < 12; ++m)
            if (word == kMonths[m]) return m + 1;
        return 0;
    };
    const auto number = [](const std::string& word) -> int64_t {
        if (word.empty() || word.size() > 4 || word.find_first_not_of("0123456789") != std::string::npos) return -1;
        return std::stoll(word);
    };
    if (text.find('.') != std::string::npos)
        date = {number(parts[0]), number(parts[1]), number(parts[2])};
    else if (text.find('/') != std::string::npos)
        date = {number(parts[2]), number(parts[1]), number(parts[0])};
    else if (month_of(parts[0]))
        date = {number(parts[2]), month_of(parts[0]), number(parts[1])};
    else
        date = {number(parts[2]), month_of(parts[1]), number(parts[0])};
    if (date.year < 1900 || date.year > 2099 || date.month < 1 || date.month > 12 || date.day < 1) return "";
    const Date back = civil_from_days(days_from_civil(date));
    if (back.year != date.year || back.month != date.month || back.day != date.day) return "";  // e.g. 31 april
    bool written = false;
    for (int64_t form = 0; form < 6; ++form) written = written || date_text(date, form) == text;
    if (!written) return "";
    return std::to_string(date.year) + "-" + two_digits(date.month) + "-" + two_digits(date.day);
}

LengthRange parse_length_range(const std::string& text) {
    const size_t dash = text.find('-');
    if (dash == std::string::npos) {
        const int64_t length = parse_length(text, text);
        return {length, length};
    }
    return {parse_length(text.substr(0, dash), text), parse_length(text.substr(dash + 1), text)};
}

std::string length_range_text(const LengthRange& lengths) {
    return lengths.min == lengths.max ? std::to_string(lengths.min)
                                      : std::to_string(lengths.min) + "-" + std::to_string(lengths.max);
}

void check_lengths(const ToyTask& task, const LengthRange& lengths) {
    if (lengths.min < 1) fail("lengths ", length_range_text(lengths), ": lengths start at 1 character, got ", lengths.min);
    if (lengths.min > lengths.max)
        fail("lengths ", lengths.min, "-", lengths.max, ": the first length is larger than the last");
    if (lengths.min < task.min_length || lengths.max > task.max_length)
        fail("lengths ", length_range_text(lengths), ": the ", task.name, " task makes inputs of ", task.min_length,
             "..", task.max_length, " characters");
}

int64_t longest_fitting_length(const Model& model, const ToyTask& task) {
    if (task.sample) fail("longest_fitting_length: the ", task.name, " task draws its own inputs, not lengths");
    const ModelText text(model);
    if (!bounded_by_max_len(model)) return task.max_length;
    int64_t low = 0, high = task.max_length;  // positions_needed grows with the length: bisect
    while (low < high) {
        const int64_t mid = (low + high + 1) / 2;
        const std::string input(static_cast<size_t>(mid), task.alphabet[0]);
        if (positions_needed(model, text, input, task.answer(input)) <= model.config.max_len)
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

std::vector<std::string> toy_task_names() {
    std::vector<std::string> names;
    for (const ToyTask& task : tasks()) names.push_back(task.name);
    return names;
}

const ToyTask& toy_task(const std::string& name) {
    for (const ToyTask& task : tasks())
        if (task.name == name) return task;
    std::string known;
    for (const std::string& task : toy_task_names()) known += (known.empty() ? "" : ", ") + task;
    fail("unknown task '", name, "'; the tasks are ", known);
}

std::vector<std::vector<int64_t>> generate(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                           int64_t beam_width, const GenerationOptions& options,
                                           const std::optional<Sampling>& sampling) {
    std::vector<std::vector<int64_t>> outputs;
    if (sampling && beam_width > 1) fail("generate: beam search (width ", beam_width, ") and sampling are two searches; choose one");
    if (sampling) check_sampling(*sampling);
    refuse_inputs_without_room(model, inputs);  // every input, before the first batch is decoded
    if (beam_width > 1) {
        for (const auto& input : inputs) outputs.push_back(beam_search(model, input, beam_width, 1.0, options).tokens[0]);
        return outputs;
    }
    for (size_t first = 0; first < inputs.size(); first += kBatch) {
        const std::vector<std::vector<int64_t>> batch(inputs.begin() + static_cast<std::ptrdiff_t>(first),
                                                      inputs.begin() + static_cast<std::ptrdiff_t>(std::min(first + kBatch, inputs.size())));
        if (!sampling) {
            for (auto& tokens : greedy_decode(model, batch, options).tokens) outputs.push_back(std::move(tokens));
            continue;
        }
        Sampling batch_sampling = *sampling;  // the batch's row 0 is input `first`: Random(seed + first)
        batch_sampling.seed += static_cast<uint64_t>(first);
        for (auto& tokens : sample_decode(model, batch, batch_sampling, options).tokens) outputs.push_back(std::move(tokens));
    }
    return outputs;
}

std::vector<std::string> generate_text(const Model& model, const std::vector<std::string>& texts, int64_t beam_width,
                                       const GenerationOptions& options, bool map_unknown) {
    const ModelText text(model);
    std::vector<std::vector<int64_t>> inputs;
    for (const std::string& each : texts) inputs.push_back(model_input(model, text.encode_input(each, map_unknown)));
    std::vector<std::string> outputs;
    for (const auto& tokens : generate(model, inputs, beam_width, options)) outputs.push_back(text.decode_output(tokens));
    return outputs;
}

std::vector<std::string> draw_inputs(const ToyTask& task, int64_t n, uint64_t seed,
                                     const std::optional<LengthRange>& lengths) {
    if (n < 1) fail("draw_inputs: n must be >= 1, got ", n);
    if (lengths) check_lengths(task, *lengths);
    Random random(seed);
    std::vector<std::string> texts;
    for (int64_t i = 0; i < n; ++i) {
        if (!task.sample) {
            texts.push_back(lengths ? random_text(random, task.alphabet, lengths->min, lengths->max)
                                    : random_text(random, task.alphabet, 1, kMaxTextLength));
            continue;
        }
        std::string text = task.sample(random);
        for (int64_t draws = 1; lengths && (static_cast<int64_t>(text.size()) < lengths->min ||
                                            static_cast<int64_t>(text.size()) > lengths->max);
             ++draws) {
            if (draws == kDateDrawsPerExample)
                fail("draw_inputs: no ", task.name, " input of lengths ", length_range_text(*lengths), " in ", draws,
                     " draws");
            text = task.sample(random);
        }
        texts.push_back(text);
    }
    return texts;
}

Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width,
                    const std::optional<LengthRange>& lengths) {
    if (n < 1) fail("evaluate: n must be >= 1, got ", n);
    if (model.text.vocab.empty() || model.text.tokenizer != TokenizerKind::Char)
        fail("evaluate: the ", task.name, " task needs a model with a character vocabulary");
    const Tokenizer tokenizer(model.text.input_vocab());
    for (char c : task.alphabet)
        if (!tokenizer.contains(std::string(1, c)))
            fail("evaluate: the model's vocabulary has no '", c, "', so it was not trained on the ", task.name, " task");
    if (lengths) check_lengths(task, *lengths);
    const ModelText model_text(model);
    if (lengths && !task.sample) {  // the longest length decides, before anything is drawn
        const int64_t longest = longest_fitting_length(model, task);
        if (lengths->max > longest) {
            const std::string input(static_cast<size_t>(lengths->max), task.alphabet[0]);
            fail("evaluate: an input of ", lengths->max, " characters needs ",
                 positions_needed(model, model_text, input, task.answer(input)),
                 " positions with its answer, more than the model's max_len ", model.config.max_len,
                 " (inputs up to ", longest, " characters fit)");
        }
    }
    const std::vector<std::string> texts = draw_inputs(task, n, seed, lengths);
    for (const std::string& text : lengths ? texts : std::vector<std::string>{}) {  // dates' drawn lengths
        const int64_t needed = positions_needed(model, model_text, text, task.answer(text));
        if (bounded_by_max_len(model) && needed > model.config.max_len)
            fail("evaluate: the input \"", text, "\" (", text.size(), " characters) needs ", needed,
                 " positions with its answer, more than the model's max_len ", model.config.max_len);
    }
    const std::vector<std::string> outputs = generate_text(model, texts, beam_width, {});
    Evaluation evaluation;
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::string expected = task.answer(texts[i]);
        ++evaluation.total;
        if (outputs[i] == expected)
            ++evaluation.correct;
        else
            evaluation.failures.push_back({texts[i], expected, outputs[i]});
    }
    return evaluation;
}

}  // namespace tinyformer
