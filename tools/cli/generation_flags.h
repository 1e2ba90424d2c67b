// The generation flags `run` and `explore` share: how many tokens, and which
// search makes them (models/decoding.h):
//   --max-new-tokens N  at most N new tokens, never past the model's max_len
//                       (run: past it in a sliding window where the model's
//                       positions allow one, GenerationOptions::slide_window)
//                       (default: 1024 for a model with an eos_id, 64 for
//                       one without, default_max_new_tokens)
//   --temperature T     sampling: softmax(logits / T), T > 0
//   --top-k K           sampling: only the K most likely tokens (K >= 1)
//   --top-p P           sampling: the smallest set of most likely tokens whose
//                       probability reaches P, 0 < P <= 1
//   --seed S            the sampling draws' seed (default 0); input i draws
//                       from Random(S + i)
// Sampling is used when any of --temperature, --top-k, --top-p is given (the
// others then keep their neutral values: T = 1, every token, P = 1). Usage
// errors (exit 2), each naming the flag: a value out of its range, --seed
// without a sampling flag (it would change nothing), sampling with --beam.
#pragma once

#include "models/decoding.h"
#include "tools/cli/arguments.h"

#include <optional>
#include <set>
#include <string>

namespace tinyformer::cli {

// The flags above, for ParsedArguments' value flags.
const std::set<std::string>& generation_flag_names();

// The help lines of the flags above, for a command's --help.
extern const char* kGenerationFlagsHelp;

struct GenerationFlags {
    GenerationOptions options;        // max_new_tokens from --max-new-tokens (else the model's default)
    std::optional<Sampling> sampling; // given when a sampling flag is
    bool any_given = false;           // one of the flags above was given
};

// Reads the flags (--max-len, run's older name of --max-new-tokens, when
// `old_max_len` is true); `beam` is the --beam width already read.
GenerationFlags generation_flags(const ParsedArguments& parsed, int64_t beam, const char* command, bool old_max_len = false);

// "greedy", "beam 4" or "sample (T 0.8, top-k 40, top-p 0.95, seed 3)": which search made the tokens.
std::string search_name(const std::optional<Sampling>& sampling, int64_t beam);

}  // namespace tinyformer::cli
