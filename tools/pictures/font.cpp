// Text in pictures: see font.h. stb_truetype's functions come from Debian's
// libstb (linked through pkg-config stb).

#include "tools/pictures/font.h"

#include "engine/error.h"
#include "engine/io/utf8.h"

#include <stb_truetype.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace tinyformer {

const char* const kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const char* const kFontPackage = "fonts-dejavu-core";

namespace {

// ---------------------------------------------------------------- code points

// The code points draw_text draws for `text`: its shown form (engine/io/utf8.h:
// controls, bidi controls and invalid bytes spelled out as escapes).
std::vector<uint32_t> code_points(const std::string& text) {
    const std::string shown = shown_text(text);
    std::vector<uint32_t> out;
    for (size_t at = 0; at < shown.size();) {
        const Utf8Character c = utf8_character(shown, at);
        out.push_back(static_cast<uint32_t>(c.code_point));
        at += c.length ? c.length : 1;  // shown text is valid UTF-8; the guard keeps the loop finite
    }
    return out;
}

// ---------------------------------------------------------------- the font

struct Font {
    std::vector<unsigned char> bytes;
    stbtt_fontinfo info{};
    int ascent = 0, descent = 0;  // font units; descent is negative
};

Font load_font(const std::string& path) {
    Font font;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail("cannot read the font ", path, ": ", std::strerror(errno), " (install the Debian package ", kFontPackage,
             ", e.g. with `make deps`, or name a TrueType file in TINYFORMER_FONT)");
    font.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (font.bytes.size() < 12 || stbtt_GetFontOffsetForIndex(font.bytes.data(), 0) < 0 ||
        !stbtt_InitFont(&font.info, font.bytes.data(), stbtt_GetFontOffsetForIndex(font.bytes.data(), 0)))
        fail("the font ", path, " is not a TrueType file (the pictures use DejaVu Sans from the Debian package ",
             kFontPackage, ")");
    int line_gap = 0;
    stbtt_GetFontVMetrics(&font.info, &font.ascent, &font.descent, &line_gap);
    if (font.ascent - font.descent <= 0) fail("the font ", path, " has no line height (ascent ", font.ascent,
                                              ", descent ", font.descent, ")");
    return font;
}

// The font of the pictures, read once per path (TINYFORMER_FONT, else kFontPath).
const Font& picture_font() {
    static std::mutex mutex;
    static std::map<std::string, Font> fonts;
    const char* chosen = std::getenv("TINYFORMER_FONT");
    const std::string path = chosen && *chosen ? chosen : kFontPath;
    const std::lock_guard<std::mutex> lock(mutex);
    auto found = fonts.find(path);
    if (found == fonts.end()) found = fonts.emplace(path, load_font(path)).first;
    return found->second;
}

// One glyph placed on a line: its index (0 = missing: the replacement box)
// and its pen position in px from the line's start.
struct Placed {
    int glyph = 0;
    float x = 0.0f;
};

struct Line {
    std::vector<Placed> glyphs;
    float pixel_scale = 0.0f;  // px per font unit
    float box_advance = 0.0f;  // a replacement box's advance, px
    int64_t width = 0, height = 0, baseline = 0;
};

Line lay_out(const std::string& text, int64_t scale) {
    const Font& font = picture_font();
    Line line;
    line.height = kLineHeight * scale;
    line.pixel_scale = stbtt_ScaleForPixelHeight(&font.info, static_cast<float>(line.height));
    line.baseline = std::lround(static_cast<float>(font.ascent) * line.pixel_scale);
    line.box_advance = 0.5f * static_cast<float>(line.height);
    float pen = 0.0f;
    int previous = -1;
    for (uint32_t code : code_points(text)) {
        const int glyph = stbtt_FindGlyphIndex(&font.info, static_cast<int>(code));
        if (glyph != 0 && previous > 0)
            pen += line.pixel_scale * static_cast<float>(stbtt_GetGlyphKernAdvance(&font.info, previous, glyph));
        line.glyphs.push_back({glyph, pen});
        if (glyph == 0) {
            pen += line.box_advance;
        } else {
            int advance = 0, bearing = 0;
            stbtt_GetGlyphHMetrics(&font.info, glyph, &advance, &bearing);
            pen += line.pixel_scale * static_cast<float>(advance);
        }
        previous = glyph;
    }
    // Rounded up at scale 1, then times the scale: every length of a picture
    // at scale s is s times its length at scale 1.
    const float unscaled = pen / static_cast<float>(scale);
    line.width = scale * static_cast<int64_t>(std::ceil(unscaled - 1e-3f));
    return line;
}

}  // namespace

std::string displayed_text(const std::string& text) { return shown_text(text); }

bool font_has_glyph(char32_t code_point) {
    return stbtt_FindGlyphIndex(&picture_font().info, static_cast<int>(code_point)) != 0;
}

int64_t text_width(const std::string& text, int64_t scale) { return text.empty() ? 0 : lay_out(text, scale).width; }

TextMask draw_text(const std::string& text, int64_t scale) {
    const Font& font = picture_font();
    const Line line = lay_out(text, scale);
    TextMask mask;
    mask.width = line.width;
    mask.height = line.height;
    mask.coverage.assign(static_cast<size_t>(mask.width * mask.height), 0);
    const auto add = [&mask](int64_t x, int64_t y, int value) {
        if (x < 0 || y < 0 || x >= mask.width || y >= mask.height) return;  // ink outside the line box is cut
        uint8_t& pixel = mask.coverage[static_cast<size_t>(y * mask.width + x)];
        pixel = static_cast<uint8_t>(std::min(255, pixel + value));
    };
    std::vector<unsigned char> bitmap;
    for (const Placed& placed : line.glyphs) {
        if (placed.glyph == 0) {
            // The replacement box: an outline from the baseline up to about the capitals' height.
            const int64_t stroke = std::max<int64_t>(1, scale);
            const int64_t left = std::lround(placed.x) + stroke, right = std::lround(placed.x + line.box_advance) - stroke;
            const int64_t bottom = line.baseline, top = line.baseline - std::lround(0.63f * static_cast<float>(line.height));
            for (int64_t y = top; y < bottom; ++y)
                for (int64_t x = left; x < right; ++x)
                    if (y < top + stroke || y >= bottom - stroke || x < left + stroke || x >= right - stroke) add(x, y, 255);
            continue;
        }
        const float pen = std::floor(placed.x), shift = placed.x - pen;
        int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
        stbtt_GetGlyphBitmapBoxSubpixel(&font.info, placed.glyph, line.pixel_scale, line.pixel_scale, shift, 0.0f, &x0,
                                        &y0, &x1, &y1);
        const int width = x1 - x0, height = y1 - y0;
        if (width <= 0 || height <= 0) continue;  // a space
        bitmap.assign(static_cast<size_t>(width * height), 0);
        stbtt_MakeGlyphBitmapSubpixel(&font.info, bitmap.data(), width, height, width, line.pixel_scale,
                                      line.pixel_scale, shift, 0.0f, placed.glyph);
        const auto origin_x = static_cast<int64_t>(pen) + x0, origin_y = line.baseline + y0;
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x)
                if (const int value = bitmap[static_cast<size_t>(y * width + x)]) add(origin_x + x, origin_y + y, value);
    }
    return mask;
}

}  // namespace tinyformer
