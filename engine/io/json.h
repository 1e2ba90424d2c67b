// JSON read from files — a safetensors header, a checkpoint's "config" and
// "vocab" — is somebody else's text, so it is parsed under limits:
//   * nesting: nothing tinyformer reads nests deeper than a header's
//     {"name": {"shape": [..]}}, and nlohmann's dump() (used in error
//     messages) and comparison recurse once per level, so text like
//     "[[[[..." a million deep would overflow the stack. parse_json refuses
//     any array or object deeper than `max_depth` (the outermost value is
//     depth 0) before parsing.
//   * validity and duplicate keys, before any value is built: a first pass
//     (nlohmann's SAX parser, which builds nothing) refuses invalid JSON, and
//     then any object that holds a key twice (nlohmann keeps one of two
//     equal keys silently, and another reader may keep the other;
//     docs/FORMAT.md). The same pass counts what the parsed value would
//     hold (JsonCounts) and shows every value to an optional JsonWatcher,
//     which may refuse the text from its structure before it is built:
//     the safetensors header does (engine/io/safetensors.cpp), so that a
//     97.8 MB header of {"a":[{},{},...]} is refused after that pass: 2.9 s
//     and 426 MB peak (`/usr/bin/time -v tinyformer info FILE`), where
//     building its value first took 8.5 s (34 s on a busy machine) and
//     3.78 GB (docs/BAD_INPUT.md, issue 31). Text the watcher accepts is
//     still built, within the memory check below.
//   * memory: a parsed value takes more than its text (nlohmann values are
//     16 bytes and more each). Measured as peak RSS growth, the worst text
//     found, {"a":[{},{},...]}, took about 38 bytes per byte (9 MB of it:
//     362 MB peak, `tinyformer info` on such a header); parse_json refuses
//     text unless kParsedJsonBytesPerByte times its size is available.
//   * message size: json_excerpt cuts a value's text for error messages.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tinyformer {

constexpr uint64_t kParsedJsonBytesPerByte = 48;  // memory for parsed JSON, per byte of its text

// What valid JSON holds, counted by parse_json's first pass before anything
// is built. Strings longer than 15 bytes (std::string's inline buffer) are
// counted apart with their bytes, since only they take heap memory.
struct JsonCounts {
    uint64_t objects = 0, arrays = 0;
    uint64_t members = 0;         // keys of objects (each a std::map node)
    uint64_t array_elements = 0;  // values inside arrays (each a 16-byte slot)
    uint64_t strings = 0;         // string values (each a std::string on the heap)
    uint64_t long_texts = 0, long_text_bytes = 0;  // keys and strings longer than 15 bytes
};

// The bytes nlohmann's value for `counts` allocates at most, with glibc's
// allocator on 64 bits (a block is its size plus 8, rounded up to 16): an
// object's std::map 64, a member's node 96 (key, value and links), an array's
// std::vector 32, an array element 48 (a 16-byte slot in a buffer that grows
// by doubling, with the old buffer still held while it is copied), a string
// 48, a long text its bytes + 24 more. {"a":[{},{},...]} is 112 bytes per
// 3 bytes of text.
double parsed_json_bytes(const JsonCounts& counts);

// Sees every value of parse_json's first pass, in text order, once the
// depth limit has passed (so depth <= max_depth + 1) and before the value is
// built; before_building is called only when the text is valid JSON with no
// key twice, and may throw to refuse it without building anything.
class JsonWatcher {
public:
    virtual ~JsonWatcher() = default;
    // A value starts at `depth` (the outermost value is 0); `type` is
    // nlohmann's type_name() ("object", "array", "string", "number",
    // "boolean", "null"); `text` is a string's value, else empty.
    virtual void value(int depth, std::string_view type, const std::string& text) = 0;
    // A key of the object at `depth` (its value follows at depth + 1).
    virtual void key(int depth, const std::string& key) = 0;
    // The object or array that started at `depth` ends.
    virtual void end(int depth) = 0;
    virtual void before_building(const JsonCounts& counts) = 0;
};

// Parses `text`; throws Error "<what> is not valid JSON", "<what> nests
// arrays/objects deeper than ..." or "<what> has the key "k" twice at the top
// level" (or: in "<enclosing key>"), or what `watcher` throws. Never returns
// a discarded value.
nlohmann::json parse_json(const std::string& text, int max_depth, const std::string& what,
                          JsonWatcher* watcher = nullptr);

// How many values parse_json has built in this process so far (the values
// of every text it returned or refused after building): a test's way to see
// that a refusal came before anything was built.
uint64_t parsed_json_values();

// value.dump(), cut to at most `limit` characters ("..." marks the cut).
std::string json_excerpt(const nlohmann::json& value, size_t limit = 60);

}  // namespace tinyformer
