#include "engine/io/json.h"

#include "engine/error.h"
#include "engine/memory/available.h"

#include <algorithm>
#include <set>
#include <vector>

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

// A SAX pass that stops at the first key an object holds twice (nlohmann's
// parser silently keeps one of the two values). Objects and arrays nest at
// most max_depth + 1 deep here (parse_json checks that first).
class DuplicateKeyFinder : public nlohmann::json_sax<nlohmann::json> {
public:
    bool found = false;
    std::string duplicate;  // the key held twice, when found
    std::string where;      // "at the top level" or "in \"<the enclosing key>\""

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        open_.push_back({{}, ""});
        return true;
    }
    bool key(string_t& key) override {
        Container& object = open_.back();
        if (!object.keys.insert(key).second) {
            found = true;
            duplicate = key;
            where = open_.size() == 1 ? "at the top level" : "in \"" + open_[open_.size() - 2].last_key + "\"";
            return false;  // stops the parse
        }
        object.last_key = key;
        return true;
    }
    bool end_object() override {
        open_.pop_back();
        return true;
    }
    bool start_array(std::size_t) override {
        open_.push_back({{}, open_.empty() ? "" : open_.back().last_key});  // objects in an array: named by its key
        return true;
    }
    bool end_array() override {
        open_.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

private:
    struct Container {
        std::set<std::string> keys;
        std::string last_key;
    };
    std::vector<Container> open_;
};

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
    DuplicateKeyFinder finder;
    nlohmann::json::sax_parse(text, &finder);
    if (finder.found)
        fail(what, " has the key \"", finder.duplicate, "\" twice ", finder.where, "; no JSON object may repeat a key");
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
