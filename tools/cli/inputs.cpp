#include "tools/cli/inputs.h"

#include "tools/cli/terminal_text.h"

#include <cstdio>

namespace tinyformer::cli {

std::vector<int64_t> ids_flag(const ParsedArguments& parsed, const std::string& flag, const char* command) {
    try {
        return parse_ids(parsed.value(flag), flag);
    } catch (const UsageError&) {
        throw;
    } catch (const Error& error) {
        throw UsageError(std::string(command) + ": " + error.message());
    }
}

void warn_if_long(const Model& model, int64_t tokens, const char* command, std::vector<std::string>& warnings) {
    const std::string warning = length_warning(model, tokens);
    if (!warning.empty()) warnings.push_back(text_of("tinyformer ", command, ": warning: ", warning));
}

void print_warnings(const std::vector<std::string>& warnings) {
    for (const std::string& warning : warnings) std::fprintf(stderr, "%s\n", terminal_text(warning).c_str());
}

namespace {
std::vector<std::string>& deferred() {
    static std::vector<std::string> warnings;
    return warnings;
}
}  // namespace

void defer_warnings(const std::vector<std::string>& warnings) {
    deferred().insert(deferred().end(), warnings.begin(), warnings.end());
}

void print_deferred_warnings() {
    print_warnings(deferred());
    deferred().clear();
}

std::vector<int64_t> text_tokens(const ModelText& model_text, const std::string& text, bool map_unknown,
                                 const char* command, std::vector<std::string>& warnings) {
    int64_t unknown = 0;
    std::vector<int64_t> tokens = model_text.encode_input(text, map_unknown, &unknown);
    if (unknown)
        warnings.push_back(text_of("tinyformer ", command, ": warning: ", unknown, " token(s) of \"", text,
                                   "\" are not in the vocabulary; read as <unk>"));
    return tokens;
}

std::vector<int64_t> input_tokens(const ParsedArguments& parsed, size_t text_index, const Model& model,
                                  const char* command) {
    const bool has_text = parsed.positional().size() > text_index;
    if (has_text == parsed.has("--ids"))
        throw UsageError(std::string(command) + ": give the input as TEXT or as --ids, " +
                         (has_text ? "not both" : "one of them") + " (see 'tinyformer " + command + " --help')");
    std::vector<std::string> warnings;
    const std::vector<int64_t> tokens =
        has_text ? text_tokens(ModelText(model), parsed.positional()[text_index], parsed.has("--unk"), command, warnings)
                 : ids_flag(parsed, "--ids", command);
    model_input(model, tokens);  // refuses first
    warn_if_long(model, static_cast<int64_t>(tokens.size()), command, warnings);
    defer_warnings(warnings);  // printed once the command has done its work: a refusal later prints no warning
    return tokens;
}

std::optional<std::vector<int64_t>> target_tokens(const ParsedArguments& parsed, const Model& model, const char* command) {
    if (parsed.has("--target") && parsed.has("--target-ids"))
        throw UsageError(std::string(command) + ": give the target as --target or as --target-ids, not both");
    if (parsed.has("--target")) return ModelText(model).encode_output(parsed.value("--target"));
    if (parsed.has("--target-ids")) return ids_flag(parsed, "--target-ids", command);
    return std::nullopt;
}

}  // namespace tinyformer::cli
