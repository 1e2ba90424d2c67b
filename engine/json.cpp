#include "engine/json.h"

#include "engine/error.h"

namespace tinyformer {

nlohmann::json parse_json(const std::string& text, int max_depth, const std::string& what) {
    using json = nlohmann::json;
    // The callback sees each array and object as it starts, at its depth.
    const auto limit_depth = [&](int depth, json::parse_event_t event, json&) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
            depth > max_depth)
            fail(what, " nests arrays/objects ", depth + 1, " deep; at most ", max_depth + 1, " are allowed here");
        return true;
    };
    json value = json::parse(text, limit_depth, /*allow_exceptions=*/false);
    if (value.is_discarded()) fail(what, " is not valid JSON");
    return value;
}

std::string json_excerpt(const nlohmann::json& value, size_t limit) {
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() <= limit) return text;
    while (limit > 0 && (static_cast<unsigned char>(text[limit]) & 0xC0) == 0x80) --limit;  // not inside a UTF-8 character
    text.resize(limit);
    return text.append("...");
    return text;
}

}  // namespace tinyformer
