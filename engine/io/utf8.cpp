#include "engine/io/utf8.h"

namespace tinyformer {

Utf8Character utf8_character(std::string_view text, size_t at) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return {lead, 1};
    size_t length = 0;
    char32_t code_point = 0, smallest = 0;  // smallest: below it the form is overlong
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, code_point = lead & 0x1F, smallest = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, code_point = lead & 0x0F, smallest = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, code_point = lead & 0x07, smallest = 0x10000;
    } else {
        return {};  // a continuation byte, 0xC0 / 0xC1 (always overlong) or 0xF5..0xFF
    }
    if (length > text.size() - at) return {};
    for (size_t i = 1; i < length; ++i) {
        if ((byte(i) & 0xC0) != 0x80) return {};
        code_point = (code_point << 6) | (byte(i) & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return {};
    return {code_point, length};
}

size_t first_invalid_utf8(std::string_view text) {
    for (size_t at = 0; at < text.size();) {
        const size_t length = utf8_character(text, at).length;
        if (length == 0) return at;
        at += length;
    }
    return std::string_view::npos;
}

size_t utf8_unfinished_tail(std::string_view text) {
    // A character is at most 4 bytes: only the last 3 can be an unfinished one.
    for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
        const auto byte = static_cast<unsigned char>(text[text.size() - back]);
        if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back for its lead
        const size_t needs = byte >= 0xC2 && byte <= 0xDF ? 2 : byte >= 0xE0 && byte <= 0xEF ? 3 : byte >= 0xF0 && byte <= 0xF4 ? 4 : 0;
        return needs > back ? text.size() - back : text.size();
    }
    return text.size();
}

bool shown_escaped(char32_t c) {
    return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
           (c >= 0x2066 && c <= 0x2069);
}

std::string shown_text(std::string_view text, NewlinesAndTabs newlines_and_tabs) {
    std::string out;
    out.reserve(text.size());
    show_text(text, text.size(), [&](const char* piece, size_t length) { out.append(piece, length); }, newlines_and_tabs);
    return out;
}

}  // namespace tinyformer
