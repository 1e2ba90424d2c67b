#include "tools/cli/inputs.h"

#include <cstdio>

namespace tinyformer::cli {

std::vector<int64_t> ids_flag(const ParsedArguments& parsed, const std::string& flag, const char* command) {
    try {
        return parse_ids(parsed.value(flag), flag);
    } catch (const UsageError&) {
        throw;
    } catch (const Error& error) {
        throw UsageError(std::string(command) + ": " + error.what());
    }
}

void warn_if_long(const Model& model, int64_t tokens, const char* command) {
    const std::string warning = length_warning(model, tokens);
    if (!warning.empty()) std::fprintf(stderr, "tinyformer %s: warning: %s\n", command, warning.c_str());
}

std::vector<int64_t> input_tokens(const ParsedArguments& parsed, size_t text_index, const Model& model,
                                  const char* command) {
    const bool has_text = parsed.positional().size() > text_index;
    if (has_text == parsed.has("--ids"))
        throw UsageError(std::string(command) + ": give the input as TEXT or as --ids, " +
                         (has_text ? "not both" : "one of them") + " (see 'tinyformer " + command + " --help')");
    const std::vector<int64_t> tokens =
        has_text ? ModelText(model).encode_input(parsed.positional()[text_index]) : ids_flag(parsed, "--ids", command);
    model_input(model, tokens);  // refuses first, so that a refused input prints no warning
    warn_if_long(model, static_cast<int64_t>(tokens.size()), command);
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
