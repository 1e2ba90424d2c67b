#include "engine/json.h"

#include "engine/error.h"
#include "engine/memory.h"

#include <algorithm>

namespace tinyformer {

namespace {

// The deepest array or object in `text` (the outermost is depth 0; -1 when
// there is none), in one pass that skips string contents. Invalid JSON gets
// some depth; the parser refuses it afterwards.
int deepest_container(const std::string& text) {
    int depth = -1, deepest = -1;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;  // skip the escaped character
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

}  // namespace

nlohmann::json parse_json(const std::string& text, int max_depth, const std::string& what) {
    // Depth first, in a linear scan: a parse callback could refuse it while
    // parsing, but nlohmann's callback parser rescans the parent container at
    // every closing brace, which makes 40k tensor entries take 40 s.
    const int depth = deepest_container(text);
    if (depth > max_depth)
        fail(what, " nests arrays/objects ", depth + 1, " deep; at most ", max_depth + 1, " are allowed here");
    require_available(static_cast<double>(text.size()) * kParsedJsonBytesPerByte,
                      text_of(what, ": parsing its ", text.size(), " bytes of JSON may take up to ",
                             kParsedJsonBytesPerByte, " bytes per byte,"));
    nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) fail(what, " is not valid JSON");
    return value;
}

std::string json_excerpt(const nlohmann::json& value, size_t limit) {
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() <= limit) return text;
    while (limit > 0 && (static_cast<unsigned char>(text[limit]) & 0xC0) == 0x80) --limit;  // not inside a UTF-8 character
    text.resize(limit);
    return text.append("...");
}

}  // namespace tinyformer
