// UTF-8 — the one decoder the engine's text checks use: safetensors headers
// (engine/io/safetensors.cpp) and vocabularies (models/tokenizers/tokenizer.cpp); and the
// one rule for showing text that came from a model or a user, on a terminal
// (tools/cli/terminal_text.h) and in a picture (tools/pictures/font.h).
// Valid means RFC 3629: the shortest form only, no surrogate code point
// (U+D800..U+DFFF: a "lone surrogate" written as UTF-8 is invalid), nothing
// above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
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

// Where the bytes that may still become a character start: the offset of
// a last lead byte (C2..F4) followed by fewer continuation bytes than its
// character needs (and nothing else), else text.size(). Text that arrives
// in pieces (run's tokens, each shown as soon as it is known: a token may
// end in the middle of a character) is shown up to this offset and the
// rest held for the next piece; held bytes that never complete are shown at
// the end as show_text shows them, \xNN each. Since show_text decides each
// character from its own bytes only, showing the pieces so cut gives the
// same text as showing the whole at once.
size_t utf8_unfinished_tail(std::string_view text);

// Text shown as it is, and yet safe (docs/FORMAT.md section 6):
//   - valid UTF-8 is kept: é, €, CJK, emoji, combining marks;
//   - a newline and a tab as the caller chooses (NewlinesAndTabs below):
//     \x0a and \x09 by default;
//   - the other C0 controls U+0000..U+001F and DEL U+007F become \xNN
//     (lower-case hex): ESC -> \x1b, NUL -> \x00, CR -> \x0d;
//   - C1 code points U+0080..U+009F and the bidi controls U+061C, U+200E,
//     U+200F, U+202A..U+202E, U+2066..U+2069 become \u{XXXX} (4 lower-case
//     hex digits): U+0085 -> \u{0085}, U+202E -> \u{202e};
//   - every byte of invalid UTF-8 becomes \xNN (a stray continuation byte,
//     a truncated sequence, an overlong form, a surrogate, F5..FF).
// The result is valid UTF-8 with no control character (a newline and a tab
// excepted when the caller keeps them): it cannot move the cursor, retitle a
// window or reorder what follows it. A backslash stays a backslash: the
// escapes are for reading, not for parsing back.
bool shown_escaped(char32_t code_point);

// How show_text shows a newline (U+000A) and a tab (U+0009), the two control
// characters that are part of ordinary text (a play, a poem, a table):
//   Escaped:  \x0a and \x09, as every other C0 control: the text stays one
//             line (errors, warnings, summaries, tables; the default)
//   Kept:     as themselves: text printed as text (tinyformer run's output)
//   Pictured: as their pictures from Unicode's Control Pictures block, "␊"
//             (U+240A) and "␉" (U+2409): one line that still shows where
//             they are (run --escape)
// Either way a newline or a tab can only end a line or move to the next tab
// stop, never move the cursor anywhere else.
enum class NewlinesAndTabs { Escaped, Kept, Pictured };

// Calls write(piece, length) with the shown text of the whole characters
// that lie within text[0, max_bytes) (a character is never cut in two), piece
// by piece, allocating nothing; returns how many bytes of `text` that was.
template <typename Write>
size_t show_text(std::string_view text, size_t max_bytes, Write&& write,
                 NewlinesAndTabs newlines_and_tabs = NewlinesAndTabs::Escaped) {
    static const char kHex[] = "0123456789abcdef";
    size_t at = 0;
    while (at < text.size()) {
        const Utf8Character c = utf8_character(text, at);
        if (at + (c.length ? c.length : 1) > max_bytes) break;
        if ((text[at] == '\n' || text[at] == '\t') && newlines_and_tabs != NewlinesAndTabs::Escaped) {
            // U+2400 + code as UTF-8: E2 90 8A for a newline, E2 90 89 for a tab
            const char picture[3] = {'\xE2', '\x90', static_cast<char>(0x80 + text[at])};
            if (newlines_and_tabs == NewlinesAndTabs::Kept) write(text.data() + at, 1);
            else write(picture, sizeof picture);
            at += 1;
            continue;
        }
        if (c.length == 0 || c.code_point < 0x20 || c.code_point == 0x7F) {  // invalid byte, C0 or DEL: \xNN
            const auto byte = static_cast<unsigned char>(text[at]);
            const char escaped[4] = {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
            write(escaped, sizeof escaped);
            at += 1;
            continue;
        }
        if (shown_escaped(c.code_point)) {  // C1 or bidi: \u{XXXX}
            const char32_t v = c.code_point;
            const char escaped[8] = {'\\', 'u', '{', kHex[(v >> 12) & 0xF], kHex[(v >> 8) & 0xF],
                                     kHex[(v >> 4) & 0xF], kHex[v & 0xF], '}'};
            write(escaped, sizeof escaped);
        } else {
            write(text.data() + at, c.length);
        }
        at += c.length;
    }
    return at;
}

// show_text into a string: shown_text("a\x1b[2J") == "a\\x1b[2J",
// shown_text("a\nb", NewlinesAndTabs::Pictured) == "a␊b".
std::string shown_text(std::string_view text, NewlinesAndTabs newlines_and_tabs = NewlinesAndTabs::Escaped);

}  // namespace tinyformer
