#include "tools/cli/generation_flags.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tinyformer::cli {

const std::set<std::string>& generation_flag_names() {
    static const std::set<std::string> names = {"--max-new-tokens", "--temperature", "--top-k", "--top-p", "--seed"};
    return names;
}

const char* kGenerationFlagsHelp =
    "  --max-new-tokens N  generate at most N tokens, never past the model's max_len (run: past\n"
    "               it in a sliding window where the model's positions allow one) (default:\n"
    "               1024 for a model with an eos_id, which stops by itself: a ceiling, since a\n"
    "               file's config could ask for 16M steps; 64 for a model without one, a nanoGPT\n"
    "               model say, whose every continuation runs to this limit)\n"
    "  --temperature T  sample from softmax(logits / T) instead of taking the argmax; T > 0\n"
    "               (T < 1 sharpens, T > 1 flattens; greedy is the limit T -> 0)\n"
    "  --top-k K    sample among the K most likely tokens only (K >= 1; equal logits: the\n"
    "               smaller id first)\n"
    "  --top-p P    sample among the smallest set of most likely tokens whose probability\n"
    "               (after --top-k) reaches P, 0 < P <= 1 (nucleus sampling)\n"
    "  --seed S     the seed of the draws (default 0; input i of several draws from seed\n"
    "               S + i): the same seed makes the same draws on every machine (the\n"
    "               same tokens unless a draw falls within float rounding of the edge\n"
    "               between two tokens)\n"
    "               Sampling is on when any of --temperature, --top-k, --top-p is given; the\n"
    "               others keep T = 1, every token, P = 1. It is a third search beside greedy\n"
    "               and --beam, not used with --beam (the exact steps: models/decoding.h,\n"
    "               docs/TOY_MODELS.md#sampling).\n";

namespace {

// A decimal number (from_chars' general format: 0.8, 1e-3), finite.
double number_flag(const ParsedArguments& parsed, const std::string& flag, const char* command, const char* range) {
    const std::string& text = parsed.value(flag);
    double number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(number))
        throw UsageError(std::string(command) + ": " + flag + " needs a number " + range + ", got '" + text + "'");
    return number;
}

}  // namespace

GenerationFlags generation_flags(const ParsedArguments& parsed, int64_t beam, const char* command, bool old_max_len) {
    GenerationFlags flags;
    const std::string c = command;
    for (const std::string& name : generation_flag_names()) flags.any_given = flags.any_given || parsed.has(name);
    std::string max_flag = "--max-new-tokens";
    if (old_max_len && parsed.has("--max-len")) {
        if (parsed.has("--max-new-tokens"))
            throw UsageError(c + ": give --max-new-tokens once (--max-len is its older name)");
        max_flag = "--max-len";
        flags.any_given = true;
    }
    if (parsed.has(max_flag)) flags.options.max_new_tokens = parsed.integer(max_flag, 0, 1, 1 << 20);

    const bool sampling = parsed.has("--temperature") || parsed.has("--top-k") || parsed.has("--top-p");
    if (!sampling) {
        if (parsed.has("--seed"))
            throw UsageError(c + ": --seed seeds sampling, which is off; give --temperature, --top-k or --top-p with it");
        return flags;
    }
    if (beam > 1)
        throw UsageError(c + ": --beam and sampling (--temperature, --top-k, --top-p) are two searches; choose one");
    Sampling s;
    if (parsed.has("--temperature")) {
        s.temperature = number_flag(parsed, "--temperature", command, "> 0");
        if (s.temperature <= 0)
            throw UsageError(c + ": --temperature must be > 0 (for greedy decoding leave the sampling flags out), got '" +
                             parsed.value("--temperature") + "'");
    }
    s.top_k = parsed.integer("--top-k", 0, 1, INT64_MAX);
    if (parsed.has("--top-p")) {
        s.top_p = number_flag(parsed, "--top-p", command, "in (0, 1]");
        if (!(s.top_p > 0 && s.top_p <= 1))
            throw UsageError(c + ": --top-p must be in (0, 1], got '" + parsed.value("--top-p") + "'");
    }
    s.seed = static_cast<uint64_t>(parsed.integer("--seed", 0, 0, INT64_MAX));
    flags.sampling = s;
    return flags;
}

std::string search_name(const std::optional<Sampling>& sampling, int64_t beam) {
    if (beam > 1) return "beam " + std::to_string(beam);
    if (!sampling) return "greedy";
    char text[160];
    std::snprintf(text, sizeof text, "sample (T %g, top-k %s, top-p %g, seed %llu)", sampling->temperature,
                  sampling->top_k ? std::to_string(sampling->top_k).c_str() : "all", sampling->top_p,
                  static_cast<unsigned long long>(sampling->seed));
    return text;
}

}  // namespace tinyformer::cli
