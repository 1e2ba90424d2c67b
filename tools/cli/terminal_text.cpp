#include "tools/cli/terminal_text.h"

namespace tinyformer::cli {

namespace {

bool continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// The length of the valid UTF-8 character at text[at] (its code point in
// *code_point), or 0 when the bytes there are not one. Valid means the
// shortest encoding of a code point up to U+10FFFF that is not a surrogate
// (RFC 3629): the second byte's range depends on the lead byte.
size_t utf8_character(std::string_view text, size_t at, char32_t* code_point) {
    const auto lead = static_cast<unsigned char>(text[at]);
    if (lead < 0x80) {
        *code_point = lead;
        return 1;
    }
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;   // below: overlong
        if (lead == 0xED) high = 0x9F;  // above: surrogates U+D800..U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;   // below: overlong
        if (lead == 0xF4) high = 0x8F;  // above: beyond U+10FFFF
    } else {
        return 0;  // a continuation byte, C0/C1 (always overlong) or F5..FF
    }
    if (text.size() - at < length) return 0;
    const auto second = static_cast<unsigned char>(text[at + 1]);
    if (second < low || second > high) return 0;
    char32_t value = lead & (0xFF >> (length + 1));
    for (size_t i = 1; i < length; ++i) {
        const auto byte = static_cast<unsigned char>(text[at + i]);
        if (!continuation(byte)) return 0;
        value = (value << 6) | (byte & 0x3F);
    }
    *code_point = value;
    return length;
}

bool is_bidi_control(char32_t c) {
    return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// Calls write(piece, length) with the escaped text, piece by piece, for the
// whole characters within text[0, max_bytes); returns the bytes consumed.
template <typename Write>
size_t escape(std::string_view text, size_t max_bytes, Write&& write) {
    static const char kHex[] = "0123456789abcdef";
    size_t at = 0;
    while (at < text.size()) {
        char32_t c = 0;
        const size_t length = utf8_character(text, at, &c);
        if (at + (length ? length : 1) > max_bytes) break;
        if (length == 0 || c < 0x20 || c == 0x7F) {  // invalid byte, C0 or DEL: \xNN
            const auto byte = static_cast<unsigned char>(text[at]);
            const char escaped[4] = {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
            write(escaped, sizeof escaped);
            at += 1;
            continue;
        }
        if ((c >= 0x80 && c <= 0x9F) || is_bidi_control(c)) {  // \u{XXXX}
            const char escaped[8] = {'\\', 'u', '{', kHex[(c >> 12) & 0xF], kHex[(c >> 8) & 0xF],
                                     kHex[(c >> 4) & 0xF], kHex[c & 0xF], '}'};
            write(escaped, sizeof escaped);
        } else {
            write(text.data() + at, length);
        }
        at += length;
    }
    return at;
}

}  // namespace

std::string terminal_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    escape(text, text.size(), [&](const char* piece, size_t length) { out.append(piece, length); });
    return out;
}

size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes) {
    return escape(text, max_bytes, [&](const char* piece, size_t length) { std::fwrite(piece, 1, length, out); });
}

}  // namespace tinyformer::cli
