#include "engine/io/json.h"

#include "engine/error.h"
#include "engine/memory/available.h"

#include <algorithm>
#include <atomic>
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

// parse_json's first pass: nlohmann's SAX parser builds nothing, and this
// handler remembers the first key an object holds twice (parsing goes on, so
// that invalid JSON later in the text is still named first, as when the
// value was built before looking for keys), counts what the parsed value
// would hold, and shows each value to the watcher. Objects and arrays nest
// at most max_depth + 1 deep here (parse_json checks that first).
class FirstPass : public nlohmann::json_sax<nlohmann::json> {
public:
    explicit FirstPass(JsonWatcher* watcher) : watcher_(watcher) {}

    bool valid = true;      // false after a parse error
    bool found = false;     // a key held twice
    std::string duplicate;  // the first key held twice, when found
    std::string where;      // "at the top level" or "in \"<the enclosing key>\""
    JsonCounts counts;

    bool null() override { return scalar("null"); }
    bool boolean(bool) override { return scalar("boolean"); }
    bool number_integer(number_integer_t) override { return scalar("number"); }
    bool number_unsigned(number_unsigned_t) override { return scalar("number"); }
    bool number_float(number_float_t, const string_t&) override { return scalar("number"); }
    bool string(string_t& text) override {
        ++counts.strings;
        count_text(text);
        return scalar("string", text);
    }
    bool binary(binary_t&) override { return scalar("binary"); }  // not produced from JSON text
    bool start_object(std::size_t) override {
        ++counts.objects;
        starts("object");
        open_.push_back({false, {}, ""});
        return true;
    }
    bool key(string_t& key) override {
        ++counts.members;
        count_text(key);
        if (watcher_) watcher_->key(static_cast<int>(open_.size()) - 1, key);
        Container& object = open_.back();
        if (!found && !object.keys.insert(key).second) {
            found = true;
            duplicate = key;
            where = open_.size() == 1 ? "at the top level" : "in \"" + open_[open_.size() - 2].last_key + "\"";
        }
        object.last_key = key;
        return true;
    }
    bool end_object() override { return ends(); }
    bool start_array(std::size_t) override {
        ++counts.arrays;
        starts("array");
        open_.push_back({true, {}, open_.empty() ? "" : open_.back().last_key});  // objects in an array: named by its key
        return true;
    }
    bool end_array() override { return ends(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        valid = false;
        return false;  // stops the parse
    }

private:
    struct Container {
        bool is_array;
        std::set<std::string> keys;
        std::string last_key;
    };
    std::vector<Container> open_;
    JsonWatcher* watcher_;
    const std::string no_text_;

    void count_text(const std::string& text) {
        if (text.size() > 15) {
            ++counts.long_texts;
            counts.long_text_bytes += text.size();
        }
    }
    void starts(std::string_view type, const std::string* text = nullptr) {
        if (!open_.empty() && open_.back().is_array) ++counts.array_elements;
        if (watcher_) watcher_->value(static_cast<int>(open_.size()), type, text ? *text : no_text_);
    }
    bool scalar(std::string_view type, const std::string& text) {
        starts(type, &text);
        return true;
    }
    bool scalar(std::string_view type) {
        starts(type);
        return true;
    }
    bool ends() {
        open_.pop_back();
        if (watcher_) watcher_->end(static_cast<int>(open_.size()));
        return true;
    }
};

std::atomic<uint64_t> values_built{0};

}  // namespace

double parsed_json_bytes(const JsonCounts& c) {
    return 16.0 + 64.0 * static_cast<double>(c.objects) + 96.0 * static_cast<double>(c.members) +
           32.0 * static_cast<double>(c.arrays) + 48.0 * static_cast<double>(c.array_elements) +
           48.0 * static_cast<double>(c.strings) + 24.0 * static_cast<double>(c.long_texts) +
           static_cast<double>(c.long_text_bytes);
}

nlohmann::json parse_json(const std::string& text, int max_depth, const std::string& what, JsonWatcher* watcher) {
    // Depth first, in a linear scan: a parse callback could refuse it while
    // parsing, but nlohmann's callback parser rescans the parent container at
    // every closing brace, which makes 40k tensor entries take 40 s.
    const int depth = deepest_container(text);
    if (depth > max_depth)
        fail(what, " nests arrays/objects ", depth + 1, " deep; at most ", max_depth + 1, " are allowed here");
    FirstPass first(watcher);
    nlohmann::json::sax_parse(text, &first);
    if (!first.valid) fail(what, " is not valid JSON");
    if (first.found)
        fail(what, " has the key \"", first.duplicate, "\" twice ", first.where, "; no JSON object may repeat a key");
    if (watcher) watcher->before_building(first.counts);
    require_available(static_cast<double>(text.size()) * kParsedJsonBytesPerByte,
                      text_of(what, ": parsing its ", text.size(), " bytes of JSON may take up to ",
                             kParsedJsonBytesPerByte, " bytes per byte,"));
    nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) fail(what, " is not valid JSON");  // the first pass has seen it valid
    values_built += 1 + first.counts.members + first.counts.array_elements;
    return value;
}

uint64_t parsed_json_values() { return values_built.load(); }

std::string json_excerpt(const nlohmann::json& value, size_t limit) {
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() <= limit) return text;
    while (limit > 0 && (static_cast<unsigned char>(text[limit]) & 0xC0) == 0x80) --limit;  // not inside a UTF-8 character
    text.resize(limit);
    return text.append("...");
}

}  // namespace tinyformer
