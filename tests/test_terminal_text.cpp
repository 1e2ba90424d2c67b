// tools/cli/terminal_text.h: the escape rule for every line the CLI prints
// from a model or a user. Expected strings are written by hand from the rule.
#include <doctest/doctest.h>

#include "tests/helpers.h"
#include "tools/cli/terminal_text.h"

#include <cstdio>
#include <string>

using tinyformer::cli::terminal_text;
using tinyformer::cli::write_terminal_text;

namespace {

// What write_terminal_text writes (through a temporary file) and the bytes it reports.
std::pair<std::string, size_t> streamed(const std::string& text, size_t max_bytes = SIZE_MAX) {
    test_helpers::TempDirectory dir;
    std::FILE* file = std::fopen(dir.file("out").c_str(), "wb");
    REQUIRE(file);
    const size_t consumed = write_terminal_text(file, text, max_bytes);
    std::fclose(file);
    std::FILE* in = std::fopen(dir.file("out").c_str(), "rb");
    std::string written;
    for (int c; (c = std::fgetc(in)) != EOF;) written.push_back(static_cast<char>(c));
    std::fclose(in);
    return {written, consumed};
}

struct Case {
    const char* name;
    std::string text, expected;
};

// clang-format off
const Case kEscaped[] = {
    {"ESC, a terminal escape",            "a\x1b[2Jb",                     "a\\x1b[2Jb"},
    {"OSC that retitles the window",      "\x1b]0;TITLE\x07",              "\\x1b]0;TITLE\\x07"},
    {"NUL",                               std::string("a\0b", 3),          "a\\x00b"},
    {"newline and carriage return",       "one\ntwo\r",                    "one\\x0atwo\\x0d"},
    {"tab",                               "a\tb",                          "a\\x09b"},
    {"DEL",                               "a\x7f",                         "a\\x7f"},
    {"C1 NEL U+0085 as bytes C2 85",      "a\xc2\x85z",                    "a\\u{0085}z"},
    {"C1 CSI U+009B",                     "\xc2\x9b" "31m",                "\\u{009b}31m"},
    {"U+0080, the first C1",              "\xc2\x80",                      "\\u{0080}"},
    {"right-to-left override U+202E",     "abc\xe2\x80\xae" "def",         "abc\\u{202e}def"},
    {"left-to-right isolate U+2066",      "\xe2\x81\xa6x",                 "\\u{2066}x"},
    {"pop directional isolate U+2069",    "\xe2\x81\xa9",                  "\\u{2069}"},
    {"right-to-left mark U+200F",         "\xe2\x80\x8f",                  "\\u{200f}"},
    {"left-to-right mark U+200E",         "\xe2\x80\x8e",                  "\\u{200e}"},
    {"embedding U+202A",                  "\xe2\x80\xaa",                  "\\u{202a}"},
    {"Arabic letter mark U+061C",         "\xd8\x9c",                      "\\u{061c}"},
    {"invalid byte 0xFF",                 "a\xff" "b",                     "a\\xffb"},
    {"stray continuation byte",           "\x80",                          "\\x80"},
    {"truncated 3-byte sequence (E2 82)", "5\xe2\x82",                     "5\\xe2\\x82"},
    {"truncated sequence before ASCII",   "\xe2\x82" "a",                  "\\xe2\\x82a"},
    {"overlong '/' C0 AF",                "\xc0\xaf",                      "\\xc0\\xaf"},
    {"overlong 3-byte E0 80 AF",          "\xe0\x80\xaf",                  "\\xe0\\x80\\xaf"},
    {"surrogate U+D800 as ED A0 80",      "\xed\xa0\x80",                  "\\xed\\xa0\\x80"},
    {"above U+10FFFF (F4 90 80 80)",      "\xf4\x90\x80\x80",              "\\xf4\\x90\\x80\\x80"},
    {"F5, never in UTF-8",                "\xf5",                          "\\xf5"},
    {"C1 as a raw byte 0x9B",             "\x9b" "31m",                    "\\x9b31m"},
};

const char* const kUnchanged[] = {
    "5\xe2\x82\xac",                       // 5€ (E2 82 AC: its middle byte is in 0x80..0x9F)
    "z\xc3\xa9ro",                         // zéro
    "\xe4\xb8\xad\xe6\x96\x87",            // 中文
    "\xf0\x9f\x98\x80",                    // 😀, a 4-byte character
    "e\xcc\x81",                           // e + U+0301 combining acute accent
    "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb",  // 👩‍💻: a zero-width joiner U+200D is no bidi control
    "\xc2\xa0\xc2\xbf",                    // U+00A0, U+00BF: just above C1
    "\xed\x9f\xbf\xee\x80\x80",            // U+D7FF and U+E000: either side of the surrogates
    "\xf4\x8f\xbf\xbf",                    // U+10FFFF, the last code point
    "plain ASCII ~ with a \\x1b that is text",
};
// clang-format on

}  // namespace

TEST_CASE("Terminal text: each control, bidi control and invalid byte is escaped as the rule says") {
    for (const Case& c : kEscaped) {
        CAPTURE(c.name);
        CHECK(terminal_text(c.text) == c.expected);
        CHECK(streamed(c.text).first == c.expected);
        CHECK(streamed(c.text).second == c.text.size());
    }
}

TEST_CASE("Terminal text: valid UTF-8 is printed as it is (5€, zéro, CJK, emoji, combining marks)") {
    for (const char* text : kUnchanged) {
        CAPTURE(text);
        CHECK(terminal_text(text) == text);
        CHECK(streamed(text).first == text);
    }
    CHECK(terminal_text("") == "");
}

TEST_CASE("Terminal text: a newline and a tab kept as themselves or drawn as pictures; every other control escaped") {
    using tinyformer::NewlinesAndTabs;
    CHECK(terminal_text("ROMEO:\nO\tsweet", NewlinesAndTabs::Kept) == "ROMEO:\nO\tsweet");
    CHECK(terminal_text("ROMEO:\nO\tsweet", NewlinesAndTabs::Pictured) == "ROMEO:\xE2\x90\x8AO\xE2\x90\x89sweet");
    CHECK(terminal_text("ROMEO:\nO\tsweet") == "ROMEO:\\x0aO\\x09sweet");  // the default: one line
    // The rest of the rule holds whichever way newlines and tabs are shown.
    for (const NewlinesAndTabs how : {NewlinesAndTabs::Kept, NewlinesAndTabs::Pictured}) {
        for (const Case& c : kEscaped) {
            if (c.text.find_first_of("\n\t") != std::string::npos) continue;
            CAPTURE(c.name);
            CHECK(terminal_text(c.text, how) == c.expected);
        }
        CHECK(terminal_text("a\r\n\x1b[2J\xe2\x80\xae", how).find("\\x0d") == 1);
        CHECK(terminal_text("a\r\n\x1b[2J\xe2\x80\xae", how).find("\\x1b[2J\\u{202e}") != std::string::npos);
        for (const char* text : kUnchanged) CHECK(terminal_text(text, how) == text);
    }
}

TEST_CASE("Terminal text: the streaming twin stops before max_bytes, never inside a character") {
    // "a€b": a (1 byte), € (3 bytes), b. Up to 3 bytes: € would cross the limit.
    CHECK(streamed("a\xe2\x82\xac" "b", 3) == std::pair<std::string, size_t>("a", 1));
    CHECK(streamed("a\xe2\x82\xac" "b", 4) == std::pair<std::string, size_t>("a\xe2\x82\xac", 4));
    CHECK(streamed("a\x1b" "b", 2) == std::pair<std::string, size_t>("a\\x1b", 2));
    CHECK(streamed("a\xe2\x80\xae", 3) == std::pair<std::string, size_t>("a", 1));
    CHECK(streamed("abc", 0) == std::pair<std::string, size_t>("", 0));
}

TEST_CASE("A token for a table: one character in quotes (also a 2-byte one), a longer token as it is, both escaped") {
    using tinyformer::cli::token_for_table;
    CHECK(token_for_table("a") == "'a'");
    CHECK(token_for_table("\xc3\xa9") == "'\xc3\xa9'");  // é, one character of two bytes
    CHECK(token_for_table(" ") == "' '");
    CHECK(token_for_table("\x1b") == "'\\x1b'");
    CHECK(token_for_table("<eos>") == "<eos>");
    CHECK(token_for_table("ab") == "ab");
    CHECK(token_for_table("\xe2\x80\xae" "x") == "\\u{202e}x");  // two characters: U+202E and x
    CHECK(token_for_table("") == "");
}

TEST_CASE("Markdown text: the terminal rule, then a backslash before what could start markup") {
    using tinyformer::cli::markdown_text;
    CHECK(markdown_text("reverse  \"abc\"  head 2") == "reverse  \"abc\"  head 2");  // nothing to escape
    CHECK(markdown_text("*a* `b` _c_") == "\\*a\\* \\`b\\` \\_c\\_");
    CHECK(markdown_text("[x](http://e.org) ![i](j)") == "\\[x\\](http://e.org) !\\[i\\](j)");
    CHECK(markdown_text("<script>&amp;|~~") == "\\<script\\>\\&amp;\\|\\~\\~");
    CHECK(markdown_text("a\\b") == "a\\\\b");
    // A first character that could open a block: heading, list, quote; an ordered list's number.
    CHECK(markdown_text("# big") == "\\# big");
    CHECK(markdown_text("- item") == "\\- item");
    CHECK(markdown_text("+ item") == "\\+ item");
    CHECK(markdown_text("12. item") == "12\\. item");
    CHECK(markdown_text("3) item") == "3\\) item");
    CHECK(markdown_text("a - b. 1. c") == "a - b. 1. c");  // not at the start: plain text
    // Control characters, a newline and bidi controls as the terminal rule shows them, their backslash escaped.
    CHECK(markdown_text("a\x1b[2Jb\nc") == "a\\\\x1b\\[2Jb\xE2\x90\x8A" "c");  // a newline as its picture ␊
    CHECK(markdown_text("\xe2\x80\xae" "x") == "\\\\u{202e}x");
    CHECK(markdown_text("z\xc3\xa9ro") == "z\xc3\xa9ro");
}

TEST_CASE("Markdown code: a fence longer than any run of backticks inside, padded when the text starts or ends with one") {
    using tinyformer::cli::markdown_code;
    CHECK(markdown_code("abc") == "`abc`");
    CHECK(markdown_code("a`b") == "``a`b``");
    CHECK(markdown_code("a``b`c") == "```a``b`c```");
    CHECK(markdown_code("`a") == "`` `a ``");
    CHECK(markdown_code("a`") == "`` a` ``");
    CHECK(markdown_code("") == "``");
    CHECK(markdown_code("a\x1b[31m\nb\t") == "`a\\x1b[31m\xE2\x90\x8A" "b\xE2\x90\x89`");  // one line, no control character
}
