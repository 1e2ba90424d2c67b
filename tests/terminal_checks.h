// What the tests check about text the CLI printed (docs/BAD_INPUT.md, the
// terminal text rule): written here from the rule, independently of
// tools/cli/terminal_text.cpp, the code under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace test_helpers {

// The first problem of `text` for a terminal, or "" when there is none:
// invalid UTF-8, or a code point the rule escapes (C0 but the newlines the
// caller allows, DEL, C1 U+0080..U+009F, the bidi controls).
inline std::string terminal_problem(std::string_view text, bool newlines_allowed = true) {
    for (size_t at = 0; at < text.size();) {
        const auto b0 = static_cast<unsigned char>(text[at]);
        const size_t length = b0 < 0x80 ? 1 : b0 >= 0xC2 && b0 < 0xE0 ? 2 : b0 >= 0xE0 && b0 < 0xF0 ? 3
                              : b0 >= 0xF0 && b0 < 0xF5                ? 4
                                                                        : 0;
        const std::string where = " at byte " + std::to_string(at);
        if (length == 0 || at + length > text.size()) return "invalid UTF-8" + where;
        uint32_t c = length == 1 ? b0 : b0 & (0x7F >> length);
        for (size_t i = 1; i < length; ++i) {
            const auto b = static_cast<unsigned char>(text[at + i]);
            if ((b & 0xC0) != 0x80) return "invalid UTF-8" + where;
            c = (c << 6) | (b & 0x3F);
        }
        static const uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < kSmallest[length] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return "invalid UTF-8" + where;
        if (c == 0x1B) return "a raw ESC" + where;
        if ((c < 0x20 && !(c == '\n' && newlines_allowed)) || c == 0x7F) return "a raw C0 control or DEL" + where;
        if (c >= 0x80 && c <= 0x9F) return "a raw C1 control" + where;
        if (c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069))
            return "a raw bidi control" + where;
        at += length;
    }
    return "";
}

}  // namespace test_helpers
