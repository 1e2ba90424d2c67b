// UTF-8 — the one decoder the engine's text checks use: safetensors headers
// (engine/safetensors.cpp) and vocabularies (models/tokenizer.cpp).
// Valid means RFC 3629: the shortest form only, no surrogate code point
// (U+D800..U+DFFF: a "lone surrogate" written as UTF-8 is invalid), nothing
// above U+10FFFF.
#pragma once

#include <cstddef>
#include <string_view>

namespace tinyformer {

// The character starting at text[at]: its code point and its length in bytes
// (1..4), or length 0 when the bytes there are not valid UTF-8.
struct Utf8Character {
    char32_t code_point = 0;
    size_t length = 0;
};
Utf8Character utf8_character(std::string_view text, size_t at);

// The offset of the first byte that starts no valid character, or
// std::string_view::npos when all of `text` is valid UTF-8.
size_t first_invalid_utf8(std::string_view text);

}  // namespace tinyformer
