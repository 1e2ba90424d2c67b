// Text in pictures — a line of UTF-8 drawn with a TrueType font, for the
// heatmaps' titles, labels and keys (tools/pictures/heatmap.h). The one place where
// text becomes pixels.
//
// The font is DejaVu Sans from the Debian package fonts-dejavu-core
// (kFontPath; the environment variable TINYFORMER_FONT names another
// TrueType file), read once and drawn with stb_truetype, anti-aliased.
// A font file that cannot be read is an Error naming the path and the package.
//
// What is drawn is the text as it is, with three exceptions, so that a label
// never hides, reorders or drops what it holds:
//   control characters  C0 U+0000-U+001F and DEL as "\xNN" (ESC -> "\x1b"),
//                       C1 U+0080-U+009F and the bidi controls U+061C, U+200E,
//                       U+200F, U+202A-U+202E, U+2066-U+2069 as "\u{XXXX}"
//                       (e.g. "\u{202e}"); each byte of invalid UTF-8 as "\xNN"
//                       (the rule docs/FORMAT.md gives for terminal text);
//   missing glyphs      a character the font lacks (e.g. CJK in DejaVu Sans)
//                       is drawn as a replacement box: a rectangle outline;
//   order               code points are drawn one after the other, left to
//                       right, in logical order: nothing reorders a line
//                       (right-to-left letters included), so no text can
//                       reverse its neighbours — the isolation the page gets
//                       from <bdi>.
// No shaping: combining marks are drawn where their glyph's metrics put them
// (DejaVu places most over the previous letter), ligatures are not formed.
//
// Sizes, at an integer scale s: a line box is kLineHeight * s px tall (the
// font's ascent + descent; DejaVu's capitals are then about 12.5 s px tall);
// a line's width is the sum of its glyph advances and kerning at scale 1,
// rounded up, times s (so every length is s times its length at scale 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

extern const char* const kFontPath;     // /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
extern const char* const kFontPackage;  // fonts-dejavu-core
constexpr int64_t kLineHeight = 20;     // px at scale 1: ascent + descent

// `text` with control characters, bidi controls and invalid bytes escaped as
// above, as UTF-8: what draw_text shows.
std::string displayed_text(const std::string& text);

// One line of text as coverage: 0 = background, 255 = ink; row-major,
// `width` x `height` (height = kLineHeight * scale; width = text_width).
struct TextMask {
    int64_t width = 0, height = 0;
    std::vector<uint8_t> coverage;
    uint8_t at(int64_t x, int64_t y) const { return coverage[static_cast<size_t>(y * width + x)]; }
};

int64_t text_width(const std::string& text, int64_t scale);  // px; 0 for ""
// Whether the picture font has a glyph for `code_point` (else draw_text draws the box).
bool font_has_glyph(char32_t code_point);
TextMask draw_text(const std::string& text, int64_t scale);

}  // namespace tinyformer
