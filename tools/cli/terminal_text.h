// Text from a model or a user, made safe and true for a terminal: the one
// rule for every line the CLI prints that holds such text (results,
// warnings, summaries, errors; docs/BAD_INPUT.md). The rule itself is
// engine/io/utf8.h's show_text, which the pictures' labels follow too:
//   - valid UTF-8 is printed as it is: é, €, CJK, emoji, combining marks;
//   - a newline and a tab become \x0a and \x09, so the line stays one line;
//     run's output, text a model wrote, keeps them as themselves (or shows
//     them as ␊ and ␉ with --escape): NewlinesAndTabs in engine/io/utf8.h;
//   - the other C0 controls and DEL become \xNN (ESC -> \x1b, NUL -> \x00);
//   - C1 code points and the bidi controls become \u{XXXX} (U+202E -> \u{202e});
//   - every byte of invalid UTF-8 becomes \xNN.
#pragma once

#include "engine/io/utf8.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tinyformer::cli {

// The text as the rule above prints it: terminal_text("a\x1b[2J") == "a\\x1b[2J",
// terminal_text("a\nb\x1b", NewlinesAndTabs::Kept) == "a\nb\\x1b".
std::string terminal_text(std::string_view text, NewlinesAndTabs newlines_and_tabs = NewlinesAndTabs::Escaped);

// terminal_text(text) written to `out`, allocating nothing (the error printer
// uses it after std::bad_alloc). Writes the whole characters that lie within
// the first `max_bytes` bytes of `text` (a character is never cut in two)
// and returns how many bytes of `text` that was.
size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes = SIZE_MAX);

// Text that arrives in pieces (run's output, a token at a time) written to
// `out` by the rule above as soon as it is known, flushed after each piece:
// the whole characters at once, the bytes of a character a piece leaves
// unfinished held until the next piece completes it (engine/io/utf8.h,
// utf8_unfinished_tail), so that a character is never printed half. What
// reaches `out` is byte for byte terminal_text(all the pieces joined).
class TerminalStream {
public:
    TerminalStream(std::FILE* out, NewlinesAndTabs newlines_and_tabs) : out_(out), newlines_and_tabs_(newlines_and_tabs) {}
    void write(std::string_view piece);
    // The held bytes (each \xNN: they never became a character), flushed; the next write starts a new text.
    void finish();

private:
    void show(size_t bytes);

    std::FILE* out_;
    NewlinesAndTabs newlines_and_tabs_;
    std::string held_;
};

// A token for a table: terminal text, and a one-character token in quotes
// ('a', 'é', '\x1b') so that a space or a digit reads as a token; a longer
// one (<eos>, a word) as it is.
std::string token_for_table(std::string_view token);

// Text from a model or a user in a Markdown file (attention's index.md): the
// rule above first, a newline and a tab as their pictures ␊ and ␉
// (NewlinesAndTabs::Pictured), so that no control character, newline or bidi
// control reaches the file, then Markdown's own escapes, so that the text is
// read as itself and never as markup:
//   markdown_text: a backslash before every character that can start markup
//     inside a line (\ ` * _ [ ] < > & | ~: emphasis, code, a link or image,
//     HTML, an entity, a table cell, strike-through), before a first
//     character that is ASCII punctuation (a heading's #, a list's - or +, a
//     quote's >), and before the . or ) after leading digits (an ordered
//     list's "1."): markdown_text("*a* `b`") == "\\*a\\* \\`b\\`".
//   markdown_code: a code span of the text: fenced with one backtick more
//     than its longest run of backticks (inside a code span a backslash
//     escapes nothing, so only a longer fence keeps a backtick in), with a
//     space inside each end when the text starts or ends with a backtick
//     (CommonMark takes one off each end): markdown_code("a`b") == "``a`b``".
std::string markdown_text(std::string_view text);
std::string markdown_code(std::string_view text);

}  // namespace tinyformer::cli
