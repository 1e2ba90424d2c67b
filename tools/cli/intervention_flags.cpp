#include "tools/cli/intervention_flags.h"

#include "engine/io/json.h"
#include "tools/cli/terminal_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tinyformer::cli {

const std::set<std::string>& intervention_flag_names() {
    static const std::set<std::string> names{"--overrides", "--block", "--allow", "--ablate"};
    return names;
}

const char* kInterventionFlagsHelp =
    "  interventions (docs/FORMAT.md section 4b; CALL is a trace name: encoder.0.self_attn,\n"
    "  decoder.1.cross_attn, layers.2.self_attn):\n"
    "  --overrides FILE.json        {\"mask_overrides\": {\"CALL\": [[Q, K, 0|1], ...]}, \"ablate\": [[\"CALL\", H], ...]}\n"
    "  --block CALL:Q:K[,...]       query Q may not attend key K in CALL (before softmax)\n"
    "  --allow CALL:Q:K[,...]       query Q may attend key K in CALL (e.g. a causal-blocked future key)\n"
    "  --ablate CALL:H[,...]        head H of CALL outputs 0 (its weights are still shown)\n"
    "  The flags add to the file's (a later cell wins). While decoding, a cell applies at the step\n"
    "  of its query, and a future key does not exist yet.\n";

namespace {

// A whole number >= 0 of a flag's item, else a UsageError naming the flag.
int64_t number(const std::string& text, const std::string& flag, const std::string& item, const char* command) {
    const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
        throw UsageError(std::string(command) + ": " + flag + " '" + terminal_text(item) +
                         "': expected whole numbers >= 0 after CALL, got '" + terminal_text(text) + "'");
    return std::stoll(text);
}

// "decoder.0.self_attn:2:4" -> {"decoder.0.self_attn", {"2", "4"}}: the call, then `count` numbers after colons.
std::pair<std::string, std::vector<int64_t>> split_item(const std::string& item, size_t count, const std::string& flag,
                                                        const char* command) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t colon; (colon = item.find(':', start)) != std::string::npos; start = colon + 1)
        parts.push_back(item.substr(start, colon - start));
    parts.push_back(item.substr(start));
    const char* form = count == 2 ? "CALL:Q:K" : "CALL:H";
    if (parts.size() != count + 1 || parts[0].empty())
        throw UsageError(std::string(command) + ": " + flag + " '" + terminal_text(item) + "': expected " + form +
                         " (e.g. " + (count == 2 ? "decoder.0.self_attn:2:4" : "decoder.1.cross_attn:0") + ")");
    std::vector<int64_t> numbers;
    for (size_t i = 1; i < parts.size(); ++i) numbers.push_back(number(parts[i], flag, item, command));
    return {parts[0], numbers};
}

std::vector<std::string> items(const ParsedArguments& parsed, const std::string& flag, const char* command) {
    std::vector<std::string> list;
    const std::string& value = parsed.value(flag);
    size_t start = 0;
    for (size_t comma; (comma = value.find(',', start)) != std::string::npos; start = comma + 1)
        list.push_back(value.substr(start, comma - start));
    list.push_back(value.substr(start));
    for (const std::string& item : list)
        if (item.empty())
            throw UsageError(std::string(command) + ": " + flag + " has an empty item in '" + terminal_text(value) + "'");
    return list;
}

}  // namespace

Interventions read_overrides_file(const std::string& path) {
    const std::string what = "--overrides " + path;
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) fail(what, ": no such file");
    if (std::filesystem::is_directory(status)) fail(what, ": is a directory, expected a .json file");
    if (!std::filesystem::is_regular_file(status)) fail(what, ": not a regular file");
    const uint64_t size = std::filesystem::file_size(path, error);
    if (error) fail(what, ": cannot read its size: ", error.message());
    if (size > kMaxOverridesBytes)
        fail(what, ": ", size, " bytes, more than the limit of ", kMaxOverridesBytes, " bytes for an overrides file");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(what, ": cannot open: ", std::strerror(errno));
    std::string text(size, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(size)) || in.peek() != std::char_traits<char>::eof())
        fail(what, ": cannot read its ", size, " bytes (file changed while reading?)");
    // {"mask_overrides": {"call": [[q, k, a]]}}: arrays nest 3 deep below the top.
    return parse_interventions_file(parse_json(text, 3, what), what);
}

Interventions intervention_flags(const ParsedArguments& parsed, const char* command) {
    Interventions interventions;
    if (parsed.has("--overrides")) interventions = read_overrides_file(parsed.value("--overrides"));
    for (const char* flag : {"--block", "--allow"}) {
        if (!parsed.has(flag)) continue;
        for (const std::string& item : items(parsed, flag, command)) {
            auto [call, numbers] = split_item(item, 2, flag, command);
            interventions.mask_overrides[call].push_back({numbers[0], numbers[1], std::string(flag) == "--allow"});
        }
    }
    if (parsed.has("--ablate"))
        for (const std::string& item : items(parsed, "--ablate", command)) {
            auto [call, numbers] = split_item(item, 1, "--ablate", command);
            interventions.ablate.emplace_back(call, numbers[0]);
        }
    return interventions;
}

}  // namespace tinyformer::cli
