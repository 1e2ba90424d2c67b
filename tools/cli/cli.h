// The `tinyformer` command line: one binary, git-style subcommands.
// Only tools/ parses command lines. Library errors (tinyformer::Error) become
// `tinyformer: error: <message>` and exit 1; UsageError (bad flags or
// arguments) the same with exit 2.
#pragma once

#include "engine/error.h"

#include <string>
#include <string_view>
#include <vector>

namespace tinyformer::cli {

class UsageError : public Error {
public:
    using Error::Error;
};

using Arguments = std::vector<std::string>;

// "tinyformer: error: MESSAGE" on stderr, one line (the terminal text rule,
// at most 2000 bytes of the message), allocating nothing: how main reports a
// failed command, and `run --interactive` a failed line before the next one.
void print_error(std::string_view message);

int lesson_command(const Arguments& args);
int forward_command(const Arguments& args);
int info_command(const Arguments& args);
int run_command(const Arguments& args);
int eval_command(const Arguments& args);
int attention_command(const Arguments& args);
int mask_command(const Arguments& args);
int probe_command(const Arguments& args);
int lens_command(const Arguments& args);
int patch_command(const Arguments& args);
int align_command(const Arguments& args);
int cost_command(const Arguments& args);
int trace_command(const Arguments& args);
int explore_command(const Arguments& args);
int tokenize_command(const Arguments& args);

}  // namespace tinyformer::cli
