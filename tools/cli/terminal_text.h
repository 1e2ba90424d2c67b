// Text from a model or a user, made safe and true for a terminal. The one
// rule for every line the CLI prints that holds such text (results,
// warnings, summaries, errors; README "Bad inputs"):
//   - valid UTF-8 is printed as it is: é, €, CJK, emoji, combining marks;
//   - C0 controls U+0000..U+001F and DEL U+007F become \xNN (lower-case hex):
//     ESC -> \x1b, NUL -> \x00, newline -> \x0a;
//   - C1 code points U+0080..U+009F and the bidi controls U+061C, U+200E,
//     U+200F, U+202A..U+202E, U+2066..U+2069 become \u{XXXX} (4 lower-case
//     hex digits): U+0085 -> \u{0085}, U+202E -> \u{202e};
//   - every byte of invalid UTF-8 becomes \xNN: a stray continuation byte, a
//     lead byte without its continuation bytes (a truncated sequence), an
//     overlong encoding (C0 AF -> \xc0\xaf), a surrogate (ED A0 80 ->
//     \xed\xa0\x80), anything above U+10FFFF, the bytes F5..FF.
// A backslash stays a backslash: the escapes are for reading, not parsing.
// So the result is valid UTF-8 holding no control character: it cannot end
// a line, move the cursor, retitle the window or reorder what follows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tinyformer::cli {

// The text as the rule above prints it: terminal_text("a\x1b[2J") == "a\\x1b[2J".
std::string terminal_text(std::string_view text);

// terminal_text(text) written to `out`, allocating nothing (the error printer
// uses it after std::bad_alloc). Writes the whole characters that lie within
// the first `max_bytes` bytes of `text` (a character is never cut in two)
// and returns how many bytes of `text` that was.
size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes = SIZE_MAX);

}  // namespace tinyformer::cli
