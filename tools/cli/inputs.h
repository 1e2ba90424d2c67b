// What a command reads its example from: TEXT (through the model's
// tokenizer) or --ids 5,17,3 (token ids as they are), and the target from
// --target TEXT or --target-ids. models/text.h frames them for the model.
// With --unk (a switch of run, attention, align, explore, probe and trace) a
// character outside the vocabulary is read as <unk>, with one warning line.
// Warnings are printed only once the command has done its work (main prints
// the deferred ones after a command returns), so a command refused at any
// point prints its one error line and nothing else; every warning line goes
// through the terminal text rule (tools/cli/terminal_text.h).
#pragma once

#include "models/text.h"
#include "tools/cli/arguments.h"

#include <optional>
#include <string>
#include <vector>

namespace tinyformer::cli {

// The user's input tokens: from positional()[text_index] (with --unk when
// given) or from --ids, exactly one of the two (UsageError otherwise, or for
// ids that are not whole numbers). Checks them with model_input, then defers
// the --unk and train_max_len warnings (defer_warnings) when there are some.
std::vector<int64_t> input_tokens(const ParsedArguments& parsed, size_t text_index, const Model& model,
                                  const char* command);

// TEXT as the user's tokens. With map_unknown (--unk) a character outside
// the vocabulary becomes <unk> (a whitespace tokenizer's unknown word always
// does when the vocabulary has <unk>); `warnings` then gets the line
// "tinyformer COMMAND: warning: N token(s) of "TEXT" are not in the vocabulary; read as <unk>".
std::vector<int64_t> text_tokens(const ModelText& model_text, const std::string& text, bool map_unknown,
                                 const char* command, std::vector<std::string>& warnings);

// The target from --target TEXT or --target-ids (not both), or std::nullopt.
std::optional<std::vector<int64_t>> target_tokens(const ParsedArguments& parsed, const Model& model, const char* command);

// --ids / --target-ids as a list; UsageError for anything but whole numbers separated by commas.
std::vector<int64_t> ids_flag(const ParsedArguments& parsed, const std::string& flag, const char* command);

// Adds "tinyformer COMMAND: warning: ..." to `warnings` when the input is longer than train_max_len.
void warn_if_long(const Model& model, int64_t tokens, const char* command, std::vector<std::string>& warnings);

// Each warning line on stderr, as terminal text.
void print_warnings(const std::vector<std::string>& warnings);
// Warnings kept until the command has succeeded; main() prints them after
// the command returns and drops them when it fails.
void defer_warnings(const std::vector<std::string>& warnings);
void print_deferred_warnings();

}  // namespace tinyformer::cli
