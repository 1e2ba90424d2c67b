// JSON read from files — a safetensors header, a checkpoint's "config" and
// "vocab" — is somebody else's text, so it is parsed under limits:
//   * nesting: nothing tinyformer reads nests deeper than a header's
//     {"name": {"shape": [..]}}, and nlohmann's dump() (used in error
//     messages) and comparison recurse once per level, so text like
//     "[[[[..." a million deep would overflow the stack. parse_json refuses
//     any array or object deeper than `max_depth` (the outermost value is
//     depth 0) before parsing.
//   * memory: a parsed value takes more than its text (nlohmann values are
//     16 bytes and more each). Measured as peak RSS growth, the worst text
//     found, {"a":[{},{},...]}, took about 38 bytes per byte (9 MB of it:
//     362 MB peak, `tinyformer info` on such a header); parse_json refuses
//     text unless kParsedJsonBytesPerByte times its size is available.
//   * duplicate keys: nlohmann keeps one of two equal keys of an object
//     silently, and another reader may keep the other; parse_json refuses
//     any object that holds a key twice (docs/FORMAT.md).
//   * message size: json_excerpt cuts a value's text for error messages.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tinyformer {

constexpr uint64_t kParsedJsonBytesPerByte = 48;  // memory for parsed JSON, per byte of its text

// Parses `text`; throws Error "<what> is not valid JSON", "<what> nests
// arrays/objects deeper than ..." or "<what> has the key "k" twice at the top
// level" (or: in "<enclosing key>"). Never returns a discarded value.
nlohmann::json parse_json(const std::string& text, int max_depth, const std::string& what);

// value.dump(), cut to at most `limit` characters ("..." marks the cut).
std::string json_excerpt(const nlohmann::json& value, size_t limit = 60);

}  // namespace tinyformer
