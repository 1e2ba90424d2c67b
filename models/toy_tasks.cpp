#include "models/toy_tasks.h"

#include "engine/random.h"

#include <algorithm>

namespace tinyformer {

namespace {

std::string reversed(const std::string& text) { return std::string(text.rbegin(), text.rend()); }

std::string sorted(const std::string& text) {
    std::string out = text;
    std::sort(out.begin(), out.end());
    return out;
}

const std::vector<ToyTask>& tasks() {
    static const std::vector<ToyTask> all = {
        {"reverse", "abcdefghijklmnopqrstuvwxyz", reversed},
        {"sort", "0123456789", sorted},
    };
    return all;
}

constexpr int64_t kMaxTextLength = 16;
constexpr size_t kBatch = 64;

}  // namespace

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

std::vector<int64_t> model_input(const Model& model, const Tokenizer& tokenizer, const std::string& text,
                                 bool map_unknown, int64_t* unknown_count) {
    std::vector<int64_t> ids = tokenizer.encode(text, map_unknown, unknown_count);
    const int64_t length = static_cast<int64_t>(ids.size()), max_len = model.config.max_len;
    if (model.encoder_decoder) {
        if (ids.empty()) fail("the input text is empty; an encoder-decoder model needs at least one source token");
        if (model.config.pos_encoding != PositionalEncoding::None && length > max_len)
            fail("the input text \"", text, "\" is ", length, " tokens but the model's max_len is ", max_len);
        return ids;
    }
    if (model.config.bos_id < 0) fail("the model's config has no bos_id to start a prompt with");
    if (length + 1 > max_len)
        fail("the prompt \"", text, "\" is ", length + 1, " tokens with <bos> but the model's max_len is ", max_len);
    ids.insert(ids.begin(), model.config.bos_id);
    return ids;
}

std::vector<std::string> generate_text(const Model& model, const Tokenizer& tokenizer,
                                       const std::vector<std::string>& texts, int64_t beam_width,
                                       const GenerationOptions& options, bool map_unknown) {
    std::vector<std::vector<int64_t>> inputs;
    for (const std::string& text : texts) inputs.push_back(model_input(model, tokenizer, text, map_unknown));
    std::vector<std::string> outputs;
    if (beam_width > 1) {
        for (const auto& input : inputs)
            outputs.push_back(tokenizer.decode(beam_search(model, input, beam_width, 1.0, options).tokens[0]));
        return outputs;
    }
    for (size_t first = 0; first < inputs.size(); first += kBatch) {
        const std::vector<std::vector<int64_t>> batch(inputs.begin() + static_cast<std::ptrdiff_t>(first),
                                                      inputs.begin() + static_cast<std::ptrdiff_t>(std::min(first + kBatch, inputs.size())));
        for (const auto& tokens : greedy_decode(model, batch, options).tokens) outputs.push_back(tokenizer.decode(tokens));
    }
    return outputs;
}

Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width) {
    if (n < 1) fail("evaluate: n must be >= 1, got ", n);
    const Tokenizer tokenizer(model.vocab);
    for (char c : task.alphabet)
        if (!tokenizer.contains(std::string(1, c)))
            fail("evaluate: the model's vocabulary has no '", c, "', so it was not trained on the ", task.name, " task");
    const bool prompt = !model.encoder_decoder;  // decoder-only: "<bos>" + text + "="
    Random random(seed);
    std::vector<std::string> texts, prompts;
    for (int64_t i = 0; i < n; ++i) {
        std::string text;
        const int64_t length = random.uniform_int(1, kMaxTextLength);
        for (int64_t j = 0; j < length; ++j)
            text += task.alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(task.alphabet.size()) - 1))];
        texts.push_back(text);
        prompts.push_back(prompt ? text + "=" : text);
    }
    const std::vector<std::string> outputs = generate_text(model, tokenizer, prompts, beam_width, {});
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
