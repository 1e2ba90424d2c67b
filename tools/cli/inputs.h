// What a command reads its example from: TEXT (through the model's
// tokenizer) or --ids 5,17,3 (token ids as they are), and the target from
// --target TEXT or --target-ids. models/text.h frames them for the model.
#pragma once

#include "models/text.h"
#include "tools/cli/arguments.h"

#include <optional>
#include <string>
#include <vector>

namespace tinyformer::cli {

// The user's input tokens: from positional()[text_index] or from --ids,
// exactly one of the two (UsageError otherwise, or for ids that are not
// whole numbers). Prints the train_max_len warning when there is one.
std::vector<int64_t> input_tokens(const ParsedArguments& parsed, size_t text_index, const Model& model,
                                  const char* command);

// The target from --target TEXT or --target-ids (not both), or std::nullopt.
std::optional<std::vector<int64_t>> target_tokens(const ParsedArguments& parsed, const Model& model, const char* command);

// --ids / --target-ids as a list; UsageError for anything but whole numbers separated by commas.
std::vector<int64_t> ids_flag(const ParsedArguments& parsed, const std::string& flag, const char* command);

// "tinyformer COMMAND: warning: ..." on stderr when the input is longer than train_max_len.
void warn_if_long(const Model& model, int64_t tokens, const char* command);

}  // namespace tinyformer::cli
