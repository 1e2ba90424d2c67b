// `tinyformer run` and `tinyformer eval`: the toy models at work.

#include "models/toy_tasks.h"
#include "tools/cli/arguments.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace tinyformer::cli {

namespace {

const char* kRunHelp =
    "usage: tinyformer run MODEL.safetensors [--beam K] [--max-len N] [--unk] [TEXT...]\n"
    "\n"
    "Runs a trained model on each TEXT and prints one output line per input. With no\n"
    "TEXT, reads one input per line from standard input.\n"
    "  encoder-decoder models read TEXT as the source: `run data/models/reverse.safetensors hello`\n"
    "  decoder-only models continue the prompt <bos>TEXT: `run data/models/reverse-prefixlm.safetensors abc=`\n"
    "  --beam K     beam search of width K (default 1: greedy, inputs decoded together in batches)\n"
    "  --max-len N  generate at most N tokens (default: as many as the model's max_len allows,\n"
    "               at most 1024; a file's config could otherwise ask for 16M decoding steps)\n"
    "  --unk        map characters outside the vocabulary to <unk> with a warning; without it\n"
    "               such a character is an error naming it\n"
    "Special tokens in an output are shown as themselves, e.g. <unk>.\n";

const char* kEvalHelp =
    "usage: tinyformer eval MODEL.safetensors --task reverse|sort [--n 1000] [--seed S] [--beam K]\n"
    "\n"
    "Draws N fresh examples of the task (strings of length 1..16; reverse: lowercase\n"
    "letters, sort: digits) from a seeded generator, runs the model (decoder-only models\n"
    "get the prompt <bos>TEXT=) and prints the exact-match accuracy and a few failures.\n";

Model load_with_vocabulary(const std::string& path) {
    Model model = Model::load(path);
    if (model.vocab.empty()) fail(path, ": the checkpoint has no vocabulary (__metadata__ \"vocab\"), so it cannot read text");
    return model;
}

}  // namespace

int run_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--beam", "--max-len"}, {"--unk"}, "run");
    if (parsed.help()) {
        std::printf("%s", kRunHelp);
        return 0;
    }
    if (parsed.positional().empty()) throw UsageError("run: expected a MODEL file (see 'tinyformer run --help')");
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    GenerationOptions options;
    options.max_new_tokens = parsed.integer("--max-len", options.max_new_tokens, 1, 1 << 20);
    const Model model = load_with_vocabulary(parsed.positional()[0]);
    const Tokenizer tokenizer(model.vocab);

    std::vector<std::string> texts(parsed.positional().begin() + 1, parsed.positional().end());
    if (texts.empty())
        for (std::string line; std::getline(std::cin, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            texts.push_back(line);
        }
    const bool map_unknown = parsed.has("--unk");
    if (map_unknown)
        for (const std::string& text : texts) {
            int64_t unknown = 0;
            tokenizer.encode(text, true, &unknown);
            if (unknown)
                std::fprintf(stderr, "tinyformer run: warning: %lld character(s) of \"%s\" are not in the vocabulary; read as <unk>\n",
                             static_cast<long long>(unknown), text.c_str());
        }
    for (const std::string& output : generate_text(model, tokenizer, texts, beam, options, map_unknown))
        std::printf("%s\n", output.c_str());
    return 0;
}

int eval_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--task", "--n", "--seed", "--beam"}, {}, "eval");
    if (parsed.help()) {
        std::printf("%s", kEvalHelp);
        return 0;
    }
    if (parsed.positional().size() != 1) throw UsageError("eval: expected one MODEL file (see 'tinyformer eval --help')");
    const int64_t n = parsed.integer("--n", 1000, 1, 1000000);
    const int64_t seed = parsed.integer("--seed", 1, 0, INT64_MAX);
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const std::string& task_name = parsed.value("--task");
    const std::vector<std::string> tasks = toy_task_names();
    if (std::find(tasks.begin(), tasks.end(), task_name) == tasks.end())
        throw UsageError("eval: --task must be reverse or sort, got '" + task_name + "'");
    const ToyTask& task = toy_task(task_name);
    const Model model = load_with_vocabulary(parsed.positional()[0]);
    const Evaluation evaluation = evaluate(model, task, n, static_cast<uint64_t>(seed), beam);
    std::printf("%s on %lld fresh %s examples (seed %lld, %s): exact match %lld/%lld = %.2f%%\n",
                parsed.positional()[0].c_str(), static_cast<long long>(n), task.name.c_str(),
                static_cast<long long>(seed), beam > 1 ? ("beam " + std::to_string(beam)).c_str() : "greedy",
                static_cast<long long>(evaluation.correct), static_cast<long long>(evaluation.total),
                100.0 * evaluation.accuracy());
    const size_t shown = std::min<size_t>(evaluation.failures.size(), 5);
    if (shown) std::printf("first %zu failure(s):\n", shown);
    for (size_t i = 0; i < shown; ++i)
        std::printf("  %-18s expected %-18s got %s\n", evaluation.failures[i].input.c_str(),
                    evaluation.failures[i].expected.c_str(), evaluation.failures[i].output.c_str());
    return 0;
}

}  // namespace tinyformer::cli
