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

std::vector<std::vector<int64_t>> generate(const Model& model, const std::vector<std::vector<int64_t>>& inputs,
                                           int64_t beam_width, const GenerationOptions& options) {
    std::vector<std::vector<int64_t>> outputs;
    if (beam_width > 1) {
        for (const auto& input : inputs) outputs.push_back(beam_search(model, input, beam_width, 1.0, options).tokens[0]);
        return outputs;
    }
    for (size_t first = 0; first < inputs.size(); first += kBatch) {
        const std::vector<std::vector<int64_t>> batch(inputs.begin() + static_cast<std::ptrdiff_t>(first),
                                                      inputs.begin() + static_cast<std::ptrdiff_t>(std::min(first + kBatch, inputs.size())));
        for (auto& tokens : greedy_decode(model, batch, options).tokens) outputs.push_back(std::move(tokens));
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

Evaluation evaluate(const Model& model, const ToyTask& task, int64_t n, uint64_t seed, int64_t beam_width) {
    if (n < 1) fail("evaluate: n must be >= 1, got ", n);
    if (model.text.vocab.empty() || model.text.tokenizer != TokenizerKind::Char)
        fail("evaluate: the ", task.name, " task needs a model with a character vocabulary");
    const Tokenizer tokenizer(model.text.input_vocab());
    for (char c : task.alphabet)
        if (!tokenizer.contains(std::string(1, c)))
            fail("evaluate: the model's vocabulary has no '", c, "', so it was not trained on the ", task.name, " task");
    Random random(seed);
    std::vector<std::string> texts;
    for (int64_t i = 0; i < n; ++i) {
        std::string text;
        const int64_t length = random.uniform_int(1, kMaxTextLength);
        for (int64_t j = 0; j < length; ++j)
            text += task.alphabet[static_cast<size_t>(random.uniform_int(0, static_cast<int64_t>(task.alphabet.size()) - 1))];
        texts.push_back(text);
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
