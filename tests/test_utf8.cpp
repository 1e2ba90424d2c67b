// engine/io/utf8.h: the UTF-8 decoder under the header and vocabulary rules.
// Code points worked out by hand from the bytes (RFC 3629's table).
#include <doctest/doctest.h>

#include "engine/io/utf8.h"

#include <string>

using tinyformer::first_invalid_utf8;
using tinyformer::utf8_character;

TEST_CASE("utf8_character decodes 1 to 4 byte characters to their code points") {
    CHECK(utf8_character("a", 0).code_point == U'a');
    CHECK(utf8_character("a", 0).length == 1);
    CHECK(utf8_character("\xc3\xa9", 0).code_point == 0xE9);            // é: 110 00011, 10 101001
    CHECK(utf8_character("\xc3\xa9", 0).length == 2);
    CHECK(utf8_character("\xe2\x82\xac", 0).code_point == 0x20AC);      // €
    CHECK(utf8_character("\xf0\x9f\x98\x80", 0).code_point == 0x1F600);  // 😀
    CHECK(utf8_character("\xf0\x9f\x98\x80", 0).length == 4);
    CHECK(utf8_character("x\xc2\x9b", 1).code_point == 0x9B);            // C1 CSI is valid UTF-8 (a control, not bad bytes)
    CHECK(utf8_character(std::string_view("\0", 1), 0).length == 1);     // NUL is valid UTF-8
}

TEST_CASE("utf8_character refuses what RFC 3629 refuses: bad leads, bad continuations, overlongs, surrogates, above U+10FFFF, cuts") {
    for (const std::string bad : {"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf",  // continuation, overlong
                                  "\xed\xa0\x80", "\xed\xbf\xbf",                                            // U+D800, U+DFFF
                                  "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff",                            // above U+10FFFF
                                  "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xc3" "a"}) {                          // cut, bad continuation
        CAPTURE(bad);
        CHECK(utf8_character(bad, 0).length == 0);
    }
    CHECK(utf8_character("\xed\x9f\xbf", 0).code_point == 0xD7FF);       // just below the surrogates
    CHECK(utf8_character("\xf4\x8f\xbf\xbf", 0).code_point == 0x10FFFF);  // the last code point
}

TEST_CASE("first_invalid_utf8 gives the offset of the first bad byte, npos for valid text") {
    CHECK(first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac") == std::string_view::npos);
    CHECK(first_invalid_utf8("") == std::string_view::npos);
    CHECK(first_invalid_utf8("ab\xff" "c") == 2);
    CHECK(first_invalid_utf8("\xc3\xa9\xed\xa0\x80") == 2);
}
