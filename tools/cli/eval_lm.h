// `tinyformer eval --task lm` (tools/cli/eval_lm.cpp): loss per position range.
#pragma once

#include "tools/cli/arguments.h"
#include "tools/cli/cli.h"

namespace tinyformer::cli {

extern const char* const kEvalLmHelp;  // appended to eval's --help
int eval_lm(const ParsedArguments& parsed);

}  // namespace tinyformer::cli
