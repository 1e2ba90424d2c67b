// Heatmap rendering: see heatmap.h for the picture's contract and layout.

#include "tools/pictures/heatmap.h"

#include "tools/pictures/font.h"
#include "engine/io/output_file.h"

#include <stb_image_write.h>


#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace tinyformer {

const Rgb kMaskedColour{240, 240, 240};
const Rgb kMaskedHatchColour{0, 0, 0};
const Rgb kPaddingColour{240, 240, 240};
const Rgb kPaddingHatchColour{0, 0, 0};
const Rgb kPrefixLineColour{0, 0, 0};
const Rgb kAllowedColour{33, 145, 140};  // viridis(0.5)
const Rgb kBackgroundColour{255, 255, 255};

namespace {

// Viridis, 256 entries: matplotlib's _viridis_data (lib/matplotlib/_cm_listed.py,
// by Nathaniel J. Smith, Stefan van der Walt and Eric Firing, CC0), each float
// channel v stored as round(255 * v).
const Rgb kViridis[256] = {
    {68, 1, 84}, {68, 2, 86}, {69, 4, 87}, {69, 5, 89}, {70, 7, 90}, {70, 8, 92}, {70, 10, 93}, {70, 11, 94},
    {71, 13, 96}, {71, 14, 97}, {71, 16, 99}, {71, 17, 100}, {71, 19, 101}, {72, 20, 103}, {72, 22, 104}, {72, 23, 105},
    {72, 24, 106}, {72, 26, 108}, {72, 27, 109}, {72, 28, 110}, {72, 29, 111}, {72, 31, 112}, {72, 32, 113}, {72, 33, 115},
    {72, 35, 116}, {72, 36, 117}, {72, 37, 118}, {72, 38, 119}, {72, 40, 120}, {72, 41, 121}, {71, 42, 122}, {71, 44, 122},
    {71, 45, 123}, {71, 46, 124}, {71, 47, 125}, {70, 48, 126}, {70, 50, 126}, {70, 51, 127}, {70, 52, 128}, {69, 53, 129},
    {69, 55, 129}, {69, 56, 130}, {68, 57, 131}, {68, 58, 131}, {68, 59, 132}, {67, 61, 132}, {67, 62, 133}, {66, 63, 133},
    {66, 64, 134}, {66, 65, 134}, {65, 66, 135}, {65, 68, 135}, {64, 69, 136}, {64, 70, 136}, {63, 71, 136}, {63, 72, 137},
    {62, 73, 137}, {62, 74, 137}, {62, 76, 138}, {61, 77, 138}, {61, 78, 138}, {60, 79, 138}, {60, 80, 139}, {59, 81, 139},
    {59, 82, 139}, {58, 83, 139}, {58, 84, 140}, {57, 85, 140}, {57, 86, 140}, {56, 88, 140}, {56, 89, 140}, {55, 90, 140},
    {55, 91, 141}, {54, 92, 141}, {54, 93, 141}, {53, 94, 141}, {53, 95, 141}, {52, 96, 141}, {52, 97, 141}, {51, 98, 141},
    {51, 99, 141}, {50, 100, 142}, {50, 101, 142}, {49, 102, 142}, {49, 103, 142}, {49, 104, 142}, {48, 105, 142}, {48, 106, 142},
    {47, 107, 142}, {47, 108, 142}, {46, 109, 142}, {46, 110, 142}, {46, 111, 142}, {45, 112, 142}, {45, 113, 142}, {44, 113, 142},
    {44, 114, 142}, {44, 115, 142}, {43, 116, 142}, {43, 117, 142}, {42, 118, 142}, {42, 119, 142}, {42, 120, 142}, {41, 121, 142},
    {41, 122, 142}, {41, 123, 142}, {40, 124, 142}, {40, 125, 142}, {39, 126, 142}, {39, 127, 142}, {39, 128, 142}, {38, 129, 142},
    {38, 130, 142}, {38, 130, 142}, {37, 131, 142}, {37, 132, 142}, {37, 133, 142}, {36, 134, 142}, {36, 135, 142}, {35, 136, 142},
    {35, 137, 142}, {35, 138, 141}, {34, 139, 141}, {34, 140, 141}, {34, 141, 141}, {33, 142, 141}, {33, 143, 141}, {33, 144, 141},
    {33, 145, 140}, {32, 146, 140}, {32, 146, 140}, {32, 147, 140}, {31, 148, 140}, {31, 149, 139}, {31, 150, 139}, {31, 151, 139},
    {31, 152, 139}, {31, 153, 138}, {31, 154, 138}, {30, 155, 138}, {30, 156, 137}, {30, 157, 137}, {31, 158, 137}, {31, 159, 136},
    {31, 160, 136}, {31, 161, 136}, {31, 161, 135}, {31, 162, 135}, {32, 163, 134}, {32, 164, 134}, {33, 165, 133}, {33, 166, 133},
    {34, 167, 133}, {34, 168, 132}, {35, 169, 131}, {36, 170, 131}, {37, 171, 130}, {37, 172, 130}, {38, 173, 129}, {39, 173, 129},
    {40, 174, 128}, {41, 175, 127}, {42, 176, 127}, {44, 177, 126}, {45, 178, 125}, {46, 179, 124}, {47, 180, 124}, {49, 181, 123},
    {50, 182, 122}, {52, 182, 121}, {53, 183, 121}, {55, 184, 120}, {56, 185, 119}, {58, 186, 118}, {59, 187, 117}, {61, 188, 116},
    {63, 188, 115}, {64, 189, 114}, {66, 190, 113}, {68, 191, 112}, {70, 192, 111}, {72, 193, 110}, {74, 193, 109}, {76, 194, 108},
    {78, 195, 107}, {80, 196, 106}, {82, 197, 105}, {84, 197, 104}, {86, 198, 103}, {88, 199, 101}, {90, 200, 100}, {92, 200, 99},
    {94, 201, 98}, {96, 202, 96}, {99, 203, 95}, {101, 203, 94}, {103, 204, 92}, {105, 205, 91}, {108, 205, 90}, {110, 206, 88},
    {112, 207, 87}, {115, 208, 86}, {117, 208, 84}, {119, 209, 83}, {122, 209, 81}, {124, 210, 80}, {127, 211, 78}, {129, 211, 77},
    {132, 212, 75}, {134, 213, 73}, {137, 213, 72}, {139, 214, 70}, {142, 214, 69}, {144, 215, 67}, {147, 215, 65}, {149, 216, 64},
    {152, 216, 62}, {155, 217, 60}, {157, 217, 59}, {160, 218, 57}, {162, 218, 55}, {165, 219, 54}, {168, 219, 52}, {170, 220, 50},
    {173, 220, 48}, {176, 221, 47}, {178, 221, 45}, {181, 222, 43}, {184, 222, 41}, {186, 222, 40}, {189, 223, 38}, {192, 223, 37},
    {194, 223, 35}, {197, 224, 33}, {200, 224, 32}, {202, 225, 31}, {205, 225, 29}, {208, 225, 28}, {210, 226, 27}, {213, 226, 26},
    {216, 226, 25}, {218, 227, 25}, {221, 227, 24}, {223, 227, 24}, {226, 228, 24}, {229, 228, 25}, {231, 228, 25}, {234, 229, 26},
    {236, 229, 27}, {239, 229, 28}, {241, 229, 29}, {244, 230, 30}, {246, 230, 32}, {248, 230, 33}, {251, 231, 35}, {253, 231, 37},
};

// Near black, a little blue: its anti-aliased edges over white are never the
// hatches' grey ground (240, 240, 240) nor their black lines.
const Rgb kTextColour{20, 20, 36};
const Rgb kFrameColour{64, 64, 64};

// Sizes at scale 1; every one is multiplied by the picture's scale s.
constexpr int64_t kMargin = 12;           // around the picture
constexpr int64_t kLabelGap = 6;          // between labels and the matrix
constexpr int64_t kKeyGap = 20;           // between the matrix and the key
constexpr int64_t kPanelGap = 24;         // between panels of a grid
constexpr int64_t kTitleBand = 30;        // a title line and the space under it
constexpr int64_t kBarWidth = 16;
constexpr int64_t kMinBarHeight = 128;
constexpr int64_t kHatchPeriod = 8;       // hatching: a 2 px line every 8 px (at scale 1)
constexpr int64_t kRowAxisWrap = 360;     // axis titles wrap at the matrix's side, or this if longer
constexpr int64_t kColumnAxisWrap = 480;
constexpr int64_t kTitleWrap = 640;       // titles wrap at the picture's width, or this if wider
constexpr int64_t kSlideWidth = 1600;     // an automatic grid stays this wide where it can
// Not scaled.
constexpr int64_t kMaxScale = 8;
constexpr int64_t kMaxCells = 1024;
constexpr int64_t kMaxPanels = 64;
constexpr size_t kMaxLabelChars = 16;
constexpr size_t kMaxTitleLines = 3;      // a longer title (or axis title) ends in "…"

// ---------------------------------------------------------------- text

// The code points of valid UTF-8 `text`, each as its own string.
std::vector<std::string> characters(const std::string& text) {
    std::vector<std::string> out;
    for (unsigned char byte : text) {
        if ((byte & 0xC0) == 0x80 && !out.empty())
            out.back().push_back(static_cast<char>(byte));
        else
            out.emplace_back(1, static_cast<char>(byte));
    }
    return out;
}

// A label as it is drawn (see heatmap.h): control characters escaped
// (tools/pictures/font.h), a label of spaces as one U+2423 OPEN BOX per space, and
// a label longer than `max_chars` characters cut, its last shown as U+2026 "…".
std::string label_text(const std::string& label, size_t max_chars) {
    std::string text = displayed_text(label);
    if (!text.empty() && text.find_first_not_of(' ') == std::string::npos) {
        const size_t spaces = text.size();
        text.clear();
        for (size_t i = 0; i < spaces; ++i) text.append("\u2423");
    }
    std::vector<std::string> chars = characters(text);
    if (chars.size() <= max_chars) return text;
    chars.resize(max_chars);
    chars.back() = "\u2026";
    text.clear();
    for (const std::string& c : chars) text.append(c);
    return text;
}

// `text` cut into lines at spaces, each at most `width` px at `scale` where
// the words allow; a word wider than `width` is broken between characters
// when `break_words`, else it stays whole on its own line. At most
// `max_lines` lines (0 = no limit): the last one then ends in "…".
std::vector<std::string> wrap(const std::string& text, int64_t width, int64_t scale, bool break_words = false,
                              size_t max_lines = 0) {
    // Words between single spaces: "" between two spaces, so that a run of
    // spaces inside a line stays as it was.
    std::vector<std::string> words, lines;
    std::string word;
    for (char c : text) {
        if (c != ' ') {
            word.push_back(c);
        } else {
            words.push_back(word);
            word.clear();
        }
    }
    words.push_back(word);
    if (break_words) {  // pieces of at most `width`, measured a character at a time
        std::vector<std::string> pieces;
        for (const std::string& whole : words) {
            if (text_width(whole, scale) <= width) {
                pieces.push_back(whole);
                continue;
            }
            std::string piece;
            int64_t piece_width = 0;
            for (const std::string& c : characters(whole)) {
                const int64_t c_width = text_width(c, scale);
                if (!piece.empty() && piece_width + c_width > width) {
                    pieces.push_back(piece);
                    piece.clear();
                    piece_width = 0;
                }
                piece.append(c);
                piece_width += c_width;
            }
            if (!piece.empty()) pieces.push_back(piece);
        }
        words = std::move(pieces);
    }
    std::string line;
    bool started = false;  // the line holds a word (a new line starts at a word, never at a space)
    for (const std::string& next : words) {
        if (!started) {
            line = next;
            started = !next.empty();
            continue;
        }
        const std::string longer = line + " " + next;
        if (!next.empty() && text_width(longer, scale) > width) {
            lines.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
            line = next;
        } else {
            line = longer;
        }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    if (!line.empty()) lines.push_back(line);
    if (max_lines > 0 && lines.size() > max_lines) {
        lines.resize(max_lines);
        std::vector<std::string> last = characters(lines.back());
        while (!last.empty()) {
            std::string cut;
            for (const std::string& c : last) cut.append(c);
            if (text_width(cut + "\u2026", scale) <= width) break;
            last.pop_back();
        }
        lines.back().clear();
        for (const std::string& c : last) lines.back().append(c);
        lines.back().append("\u2026");
    }
    return lines;
}

int64_t widest(const std::vector<std::string>& lines, int64_t scale) {
    int64_t width = 0;
    for (const std::string& line : lines) width = std::max(width, text_width(line, scale));
    return width;
}

struct Rect {
    int64_t x = 0, y = 0, width = 0, height = 0;
};

// ---------------------------------------------------------------- canvas

enum class Hatch { Masked, Padding };

class Canvas {
public:
    Canvas(int64_t width, int64_t height, int64_t scale) : scale_(scale) {
        image_.width = width;
        image_.height = height;
        image_.rgb.assign(static_cast<size_t>(width * height * 3), 255);
    }

    void set(int64_t x, int64_t y, Rgb colour) {
        if (x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
        uint8_t* pixel = &image_.rgb[static_cast<size_t>(3 * (y * image_.width + x))];
        pixel[0] = colour.r;
        pixel[1] = colour.g;
        pixel[2] = colour.b;
    }
    void fill(const Rect& rect, Rgb colour) {
        for (int64_t y = rect.y; y < rect.y + rect.height; ++y)
            for (int64_t x = rect.x; x < rect.x + rect.width; ++x) set(x, y, colour);
    }
    // Hatching in picture coordinates, so continuous across neighbouring
    // cells: masked "/" lines, padding "/" and "\" lines.
    void hatch(const Rect& rect, Hatch kind) {
        const int64_t period = kHatchPeriod * scale_, line = 2 * scale_;
        for (int64_t y = rect.y; y < rect.y + rect.height; ++y)
            for (int64_t x = rect.x; x < rect.x + rect.width; ++x) {
                const bool rising = (x + y) % period < line;
                const bool falling = ((x - y) % period + period) % period < line;
                if (kind == Hatch::Masked)
                    set(x, y, rising ? kMaskedHatchColour : kMaskedColour);
                else
                    set(x, y, rising || falling ? kPaddingHatchColour : kPaddingColour);
            }
    }
    // `colour` over the pixel at `coverage` / 255.
    void blend(int64_t x, int64_t y, Rgb colour, uint8_t coverage) {
        if (coverage == 0 || x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
        uint8_t* pixel = &image_.rgb[static_cast<size_t>(3 * (y * image_.width + x))];
        const uint8_t channels[3] = {colour.r, colour.g, colour.b};
        for (int i = 0; i < 3; ++i) pixel[i] = static_cast<uint8_t>((pixel[i] * (255 - coverage) + channels[i] * coverage + 127) / 255);
    }
    // A 1-pixel line just outside `rect`.
    void frame(const Rect& rect, Rgb colour) {
        fill({rect.x - 1, rect.y - 1, rect.width + 2, 1}, colour);
        fill({rect.x - 1, rect.y + rect.height, rect.width + 2, 1}, colour);
        fill({rect.x - 1, rect.y, 1, rect.height}, colour);
        fill({rect.x + rect.width, rect.y, 1, rect.height}, colour);
    }
    // One line of `text` (tools/pictures/font.h) with its line box's top-left corner
    // at (x, y), anti-aliased over what is there.
    void text(int64_t x, int64_t y, const std::string& text, int64_t scale, Rgb colour) {
        const TextMask mask = draw_text(text, scale);
        for (int64_t my = 0; my < mask.height; ++my)
            for (int64_t mx = 0; mx < mask.width; ++mx) blend(x + mx, y + my, colour, mask.at(mx, my));
    }
    // The same line turned 90 degrees counter-clockwise (read bottom to top):
    // the top of the letters faces left at x, the text starts at y (the
    // bottom of its box) and runs up.
    void text_up(int64_t x, int64_t y, const std::string& text, int64_t scale, Rgb colour) {
        const TextMask mask = draw_text(text, scale);
        for (int64_t my = 0; my < mask.height; ++my)
            for (int64_t mx = 0; mx < mask.width; ++mx) blend(x + my, y - 1 - mx, colour, mask.at(mx, my));
    }

    Image take() { return std::move(image_); }

private:
    Image image_;
    int64_t scale_;
};

// ---------------------------------------------------------------- checks

void check_size(const std::vector<uint8_t>& flags, int64_t expected, const char* name, const char* op) {
    if (!flags.empty() && static_cast<int64_t>(flags.size()) != expected)
        fail(op, ": ", name, " has ", flags.size(), " entries, expected ", expected, " (or none)");
}

void check_scale(int64_t scale, const char* op) {
    if (scale < 1 || scale > kMaxScale) fail(op, ": scale must be 1..", kMaxScale, ", got ", scale);
}

void check_spec(const HeatmapSpec& spec, const char* op) {
    if (spec.rows < 1 || spec.rows > kMaxCells || spec.cols < 1 || spec.cols > kMaxCells)
        fail(op, ": a heatmap needs 1..", kMaxCells, " rows (L) and columns (S), got [", spec.rows, ",", spec.cols,
             "]");
    const int64_t cells = spec.rows * spec.cols;
    if (!spec.weights.empty() && static_cast<int64_t>(spec.weights.size()) != cells)
        fail(op, ": weights has ", spec.weights.size(), " values, expected L*S = ", cells, " for [", spec.rows, ",",
             spec.cols, "]");
    check_size(spec.allowed, cells, "allowed", op);
    check_size(spec.row_padding, spec.rows, "row_padding", op);
    check_size(spec.column_padding, spec.cols, "column_padding", op);
    if (!spec.row_labels.empty() && static_cast<int64_t>(spec.row_labels.size()) != spec.rows)
        fail(op, ": row_labels has ", spec.row_labels.size(), " labels, expected L = ", spec.rows, " (or none)");
    if (!spec.column_labels.empty() && static_cast<int64_t>(spec.column_labels.size()) != spec.cols)
        fail(op, ": column_labels has ", spec.column_labels.size(), " labels, expected S = ", spec.cols, " (or none)");
    if (spec.prefix < 0 || spec.prefix > std::max(spec.rows, spec.cols))
        fail(op, ": prefix must be 0..max(L, S) = ", std::max(spec.rows, spec.cols), ", got ", spec.prefix);
    if (spec.matrix_size < 40 || spec.matrix_size > 600)
        fail(op, ": matrix_size must be 40..600, got ", spec.matrix_size);
    if (spec.weights.empty()) return;
    if (!std::isfinite(spec.scale_min) || !std::isfinite(spec.scale_max) || !(spec.scale_min < spec.scale_max))
        fail(op, ": the colour scale needs finite scale_min < scale_max, got ", spec.scale_min, " .. ",
             spec.scale_max);
}

// ---------------------------------------------------------------- cells

enum class CellKind { Weight, Allowed, Masked, Padding };

CellKind cell_kind(const HeatmapSpec& spec, int64_t l, int64_t s) {
    const bool padding = (!spec.row_padding.empty() && spec.row_padding[static_cast<size_t>(l)]) ||
                         (!spec.column_padding.empty() && spec.column_padding[static_cast<size_t>(s)]);
    if (padding) return CellKind::Padding;
    if (!spec.allowed.empty() && !spec.allowed[static_cast<size_t>(l * spec.cols + s)]) return CellKind::Masked;
    return spec.weights.empty() ? CellKind::Allowed : CellKind::Weight;
}

float weight_at(const HeatmapSpec& spec, int64_t l, int64_t s, const char* op) {
    const float weight = spec.weights[static_cast<size_t>(l * spec.cols + s)];
    if (!std::isfinite(weight)) fail(op, ": weight at query ", l, ", key ", s, " is ", weight);
    return weight;
}

// ---------------------------------------------------------------- layout

// One panel: title, axis titles, labels and matrix, positioned relative to
// its own top-left corner (the outer margin included on the left and top only).
struct PanelGeometry {
    int64_t scale = 1, cell_width = 0, cell_height = 0, row_step = 0, column_step = 0;
    bool columns_rotated = false;                    // some column label is turned
    int64_t matrix_x = 0, matrix_y = 0, matrix_width = 0, matrix_height = 0;
    int64_t width = 0;   // the right edge of whatever is furthest right
    std::vector<std::string> title_lines;
    std::vector<std::string> row_text, column_text;  // "" where no label is drawn
    std::vector<bool> column_turned;                 // [S]: this column's label reads bottom to top
    std::vector<std::string> row_axis_lines, column_axis_lines;
    int64_t row_axis_x = 0, row_axis_bottom = 0;  // rotated lines: the first at row_axis_x, bottom ends at row_axis_bottom
    int64_t column_axis_x = 0, column_axis_y = 0;
    std::vector<Rect> row_boxes, column_boxes, row_axis_boxes, column_axis_boxes;  // relative to the panel
};

// "q3", "k0": the labels of a heatmap without tokens.
std::string index_label(char prefix, int64_t index) { return std::string(1, prefix).append(std::to_string(index)); }

// The lines of a title at most `width` px wide (words broken when they must be), at most kMaxTitleLines.
std::vector<std::string> title_lines(const std::string& title, int64_t width, int64_t scale) {
    return wrap(displayed_text(title), width, scale, /*break_words=*/true, kMaxTitleLines);
}

// The height of a title band of `lines` lines: 30s for one, each more adds a line.
int64_t title_band(size_t lines, int64_t scale) {
    return lines == 0 ? 0 : (kTitleBand + kLineHeight * static_cast<int64_t>(lines - 1)) * scale;
}

PanelGeometry panel_geometry(const HeatmapSpec& spec, int64_t scale) {
    PanelGeometry panel;
    panel.scale = scale;
    // Each axis its own cell size, so that a short axis keeps every label.
    panel.cell_width = std::clamp<int64_t>(spec.matrix_size / spec.cols, 4, 40) * scale;
    panel.cell_height = std::clamp<int64_t>(spec.matrix_size / spec.rows, 4, 40) * scale;
    const int64_t cell_width = panel.cell_width, cell_height = panel.cell_height;
    const int64_t line = kLineHeight * scale;  // a line box, and the pitch of lines
    const int64_t gap = kLabelGap * scale, margin = kMargin * scale;

    // Rows: every row_step-th row, so that lines of text never overlap.
    panel.row_step = (line + cell_height - 1) / cell_height;
    int64_t row_band = 0;
    for (int64_t l = 0; l < spec.rows; ++l) {
        std::string text;
        if (l % panel.row_step == 0)
            text = label_text(spec.row_labels.empty() ? index_label('q', l) : spec.row_labels[static_cast<size_t>(l)],
                              kMaxLabelChars);
        row_band = std::max(row_band, text_width(text, scale));
        panel.row_text.push_back(std::move(text));
    }
    // Columns: each label horizontal when it fits its cell or is narrower
    // than a line, else turned (then a line wide). Every column_step-th, so
    // that the widest of those footprints (a horizontal label and 2s) fits.
    std::vector<std::string> all_columns;
    int64_t footprint = 0;
    for (int64_t s = 0; s < spec.cols; ++s) {
        all_columns.push_back(label_text(
            spec.column_labels.empty() ? index_label('k', s) : spec.column_labels[static_cast<size_t>(s)], kMaxLabelChars));
        const int64_t width = text_width(all_columns.back(), scale);
        const bool turned = width > cell_width - 2 * scale && width > line;
        panel.column_turned.push_back(turned);
        panel.columns_rotated = panel.columns_rotated || turned;
        footprint = std::max(footprint, turned ? line : width + 2 * scale);
    }
    panel.column_step = std::max<int64_t>(1, (footprint + cell_width - 1) / cell_width);
    int64_t column_band = 0;
    for (int64_t s = 0; s < spec.cols; ++s) {
        std::string text = s % panel.column_step == 0 ? all_columns[static_cast<size_t>(s)] : "";
        if (!text.empty())
            column_band = std::max(column_band, panel.column_turned[static_cast<size_t>(s)] ? text_width(text, scale) : line);
        panel.column_text.push_back(std::move(text));
    }

    panel.matrix_width = spec.cols * cell_width;
    panel.matrix_height = spec.rows * cell_height;
    panel.row_axis_lines =
        wrap(displayed_text(spec.row_axis), std::max(panel.matrix_height, kRowAxisWrap * scale), scale, true, kMaxTitleLines);
    panel.column_axis_lines =
        wrap(displayed_text(spec.column_axis), std::max(panel.matrix_width, kColumnAxisWrap * scale), scale, true, kMaxTitleLines);
    const auto row_axis_lines = static_cast<int64_t>(panel.row_axis_lines.size());
    const auto column_axis_lines = static_cast<int64_t>(panel.column_axis_lines.size());
    const int64_t row_axis_band = row_axis_lines ? row_axis_lines * line + gap : 0;
    const int64_t column_axis_band = column_axis_lines ? column_axis_lines * line + gap : 0;
    const int64_t row_axis_length = widest(panel.row_axis_lines, scale);

    panel.matrix_x = margin + row_axis_band + row_band + gap;
    // The title wraps at the panel's width without it (at least kTitleWrap).
    const int64_t content_width = std::max(panel.matrix_x + panel.matrix_width,
                                           panel.matrix_x + widest(panel.column_axis_lines, scale));
    panel.title_lines = title_lines(spec.title, std::max(content_width - margin, kTitleWrap * scale), scale);
    const int64_t title = title_band(panel.title_lines.size(), scale);
    panel.matrix_y = margin + title + column_axis_band + column_band + gap;
    // A row axis title longer than the matrix is tall ends at the matrix's
    // bottom and runs up; the matrix moves down until it fits under the title band.
    if (row_axis_length > panel.matrix_height)
        panel.matrix_y = std::max(panel.matrix_y, margin + title + row_axis_length - panel.matrix_height);
    panel.row_axis_x = margin;
    panel.row_axis_bottom = row_axis_length > panel.matrix_height
                                ? panel.matrix_y + panel.matrix_height
                                : panel.matrix_y + (panel.matrix_height + row_axis_length) / 2;
    panel.column_axis_x = panel.matrix_x;
    panel.column_axis_y = panel.matrix_y - gap - column_band - column_axis_band;

    // Boxes of what is drawn, relative to the panel: a line box is `line` tall.
    for (int64_t l = 0; l < spec.rows; ++l) {
        const std::string& text = panel.row_text[static_cast<size_t>(l)];
        if (text.empty()) continue;
        const int64_t width = text_width(text, scale);
        panel.row_boxes.push_back(
            {panel.matrix_x - gap - width, panel.matrix_y + l * cell_height + (cell_height - line) / 2, width, line});
    }
    for (int64_t s = 0; s < spec.cols; ++s) {
        const std::string& text = panel.column_text[static_cast<size_t>(s)];
        if (text.empty()) continue;
        const int64_t width = text_width(text, scale);
        if (panel.column_turned[static_cast<size_t>(s)])
            panel.column_boxes.push_back(
                {panel.matrix_x + s * cell_width + (cell_width - line) / 2, panel.matrix_y - gap - width, line, width});
        else
            panel.column_boxes.push_back(
                {panel.matrix_x + s * cell_width + (cell_width - width) / 2, panel.matrix_y - gap - line, width, line});
    }
    for (int64_t i = 0; i < row_axis_lines; ++i) {
        const int64_t length = text_width(panel.row_axis_lines[static_cast<size_t>(i)], scale);
        panel.row_axis_boxes.push_back({panel.row_axis_x + i * line, panel.row_axis_bottom - length, line, length});
    }
    for (int64_t i = 0; i < column_axis_lines; ++i)
        panel.column_axis_boxes.push_back({panel.column_axis_x, panel.column_axis_y + i * line,
                                           text_width(panel.column_axis_lines[static_cast<size_t>(i)], scale), line});

    panel.width = std::max(content_width, margin + widest(panel.title_lines, scale));
    return panel;
}

// The key: a colour bar with three numbers (weights), then a legend of the
// cell kinds in use (and the prefix line). Positioned relative to its own
// top-left corner.
enum class LegendItem { Allowed, Masked, Padding, Prefix };

struct KeyGeometry {
    bool colour_bar = false;
    float scale_min = 0.0f, scale_max = 1.0f;
    Palette palette = Palette::Viridis;
    int64_t scale = 1, bar_height = 0;
    std::vector<LegendItem> legend;
    int64_t width = 0, height = 0;
};

const char* legend_text(LegendItem item) {
    switch (item) {
        case LegendItem::Allowed: return "allowed";
        case LegendItem::Masked: return "masked: not allowed";
        case LegendItem::Padding: return "padding";
        case LegendItem::Prefix: return "prefix boundary";
    }
    return "";
}

// "0.50": two decimals, or three significant digits for a narrow range.
std::string scale_number(float value, float range) {
    char text[32];
    std::snprintf(text, sizeof text, range >= 0.1f ? "%.2f" : "%.3g", static_cast<double>(value));
    return text;
}

KeyGeometry key_geometry(const std::vector<HeatmapSpec>& panels, int64_t scale, int64_t matrix_height) {
    KeyGeometry key;
    key.scale = scale;
    key.colour_bar = !panels.front().weights.empty();
    key.scale_min = panels.front().scale_min;
    key.scale_max = panels.front().scale_max;
    key.palette = panels.front().palette;
    bool any[4] = {};
    bool prefix = false;
    for (const HeatmapSpec& spec : panels) {
        for (int64_t l = 0; l < spec.rows; ++l)
            for (int64_t s = 0; s < spec.cols; ++s) any[static_cast<int>(cell_kind(spec, l, s))] = true;
        prefix = prefix || spec.prefix > 0;
    }
    if (!key.colour_bar) key.legend.push_back(LegendItem::Allowed);
    if (any[static_cast<int>(CellKind::Masked)]) key.legend.push_back(LegendItem::Masked);
    if (any[static_cast<int>(CellKind::Padding)]) key.legend.push_back(LegendItem::Padding);
    if (prefix) key.legend.push_back(LegendItem::Prefix);

    const int64_t swatch = kLineHeight * scale;
    if (key.colour_bar) {
        key.bar_height = std::max(matrix_height, kMinBarHeight * scale);
        const float range = key.scale_max - key.scale_min;
        int64_t numbers = 0;
        for (float value : {key.scale_min, key.scale_min + range / 2, key.scale_max})
            numbers = std::max(numbers, text_width(scale_number(value, range), scale));
        key.width = kBarWidth * scale + 8 * scale + numbers;
        key.height = key.bar_height + (key.legend.empty() ? 0 : swatch);
    }
    for (size_t i = 0; i < key.legend.size(); ++i) {
        key.width = std::max(key.width, swatch + kLabelGap * scale + text_width(legend_text(key.legend[i]), scale));
        key.height += swatch + (i + 1 < key.legend.size() ? swatch / 2 : 0);
    }
    return key;
}

// ---------------------------------------------------------------- drawing

// The prefix-LM boundary: black, white, black, across the matrix after P
// rows and after P columns.
void draw_prefix_line(Canvas& canvas, const Rect& matrix, int64_t cell_width, int64_t cell_height, int64_t prefix,
                      int64_t scale) {
    const int64_t at_x = matrix.x + prefix * cell_width, at_y = matrix.y + prefix * cell_height;
    const int64_t outer = scale, inner = 2 * scale, half = outer + inner / 2;
    if (prefix * cell_width < matrix.width) {
        canvas.fill({at_x - half, matrix.y, 2 * outer + inner, matrix.height}, kPrefixLineColour);
        canvas.fill({at_x - inner / 2, matrix.y, inner, matrix.height}, kBackgroundColour);
    }
    if (prefix * cell_height < matrix.height) {
        canvas.fill({matrix.x, at_y - half, matrix.width, 2 * outer + inner}, kPrefixLineColour);
        canvas.fill({matrix.x, at_y - inner / 2, matrix.width, inner}, kBackgroundColour);
    }
}

void draw_panel(Canvas& canvas, int64_t x, int64_t y, const HeatmapSpec& spec, const PanelGeometry& panel,
                const char* op) {
    const int64_t cell_width = panel.cell_width, cell_height = panel.cell_height, scale = panel.scale;
    for (size_t i = 0; i < panel.title_lines.size(); ++i)
        canvas.text(x + kMargin * scale, y + kMargin * scale + static_cast<int64_t>(i) * kLineHeight * scale,
                    panel.title_lines[i], scale, kTextColour);
    const int64_t matrix_x = x + panel.matrix_x, matrix_y = y + panel.matrix_y;

    for (int64_t l = 0; l < spec.rows; ++l)
        for (int64_t s = 0; s < spec.cols; ++s) {
            const Rect rect{matrix_x + s * cell_width, matrix_y + l * cell_height, cell_width, cell_height};
            switch (cell_kind(spec, l, s)) {
                case CellKind::Padding: canvas.hatch(rect, Hatch::Padding); break;
                case CellKind::Masked: canvas.hatch(rect, Hatch::Masked); break;
                case CellKind::Allowed: canvas.fill(rect, kAllowedColour); break;
                case CellKind::Weight: {
                    const float weight = weight_at(spec, l, s, op);
                    canvas.fill(rect, palette_colour(spec.palette, (weight - spec.scale_min) / (spec.scale_max - spec.scale_min)));
                    break;
                }
            }
        }
    const Rect matrix{matrix_x, matrix_y, panel.matrix_width, panel.matrix_height};
    if (spec.prefix > 0) draw_prefix_line(canvas, matrix, cell_width, cell_height, spec.prefix, scale);
    canvas.frame(matrix, kFrameColour);

    // Row labels right-aligned and centred on their row; column labels
    // centred on their column, horizontal or read bottom to top.
    size_t box = 0;
    for (const std::string& text : panel.row_text) {
        if (text.empty()) continue;
        const Rect& at = panel.row_boxes[box++];
        canvas.text(x + at.x, y + at.y, text, scale, kTextColour);
    }
    box = 0;
    for (size_t s = 0; s < panel.column_text.size(); ++s) {
        const std::string& text = panel.column_text[s];
        if (text.empty()) continue;
        const Rect& at = panel.column_boxes[box++];
        if (panel.column_turned[s])
            canvas.text_up(x + at.x, y + at.y + at.height, text, scale, kTextColour);
        else
            canvas.text(x + at.x, y + at.y, text, scale, kTextColour);
    }
    for (size_t i = 0; i < panel.row_axis_lines.size(); ++i) {
        const Rect& at = panel.row_axis_boxes[i];
        canvas.text_up(x + at.x, y + at.y + at.height, panel.row_axis_lines[i], scale, kTextColour);
    }
    for (size_t i = 0; i < panel.column_axis_lines.size(); ++i) {
        const Rect& at = panel.column_axis_boxes[i];
        canvas.text(x + at.x, y + at.y, panel.column_axis_lines[i], scale, kTextColour);
    }
}

void draw_key(Canvas& canvas, int64_t x, int64_t y, const KeyGeometry& key) {
    const int64_t scale = key.scale, swatch = kLineHeight * scale, bar = kBarWidth * scale;
    if (key.colour_bar) {
        const int64_t height = key.bar_height;
        for (int64_t row = 0; row < height; ++row)  // top = scale_max
            canvas.fill({x, y + row, bar, 1}, palette_colour(key.palette, 1.0f - static_cast<float>(row) / static_cast<float>(height - 1)));
        canvas.frame({x, y, bar, height}, kFrameColour);
        const float range = key.scale_max - key.scale_min;
        const float values[3] = {key.scale_max, key.scale_min + range / 2, key.scale_min};
        const int64_t ticks[3] = {y, y + (height - 1) / 2, y + height - 1};
        for (int i = 0; i < 3; ++i) {
            canvas.fill({x + bar, ticks[i], 4 * scale, scale}, kFrameColour);
            canvas.text(x + bar + 8 * scale, ticks[i] - swatch / 2, scale_number(values[i], range), scale, kTextColour);
        }
        y += height + swatch;
    }
    for (LegendItem item : key.legend) {
        const Rect rect{x, y, swatch, swatch};
        switch (item) {
            case LegendItem::Padding: canvas.hatch(rect, Hatch::Padding); break;
            case LegendItem::Masked: canvas.hatch(rect, Hatch::Masked); break;
            case LegendItem::Allowed: canvas.fill(rect, kAllowedColour); break;
            case LegendItem::Prefix:
                canvas.fill(rect, kBackgroundColour);
                draw_prefix_line(canvas, {x, y, swatch, swatch}, swatch / 2, swatch / 2, 1, scale);
                break;
        }
        canvas.frame(rect, kFrameColour);
        canvas.text(x + swatch + kLabelGap * scale, y, legend_text(item), scale, kTextColour);
        y += swatch + swatch / 2;
    }
}

// Everything a picture of one or more panels needs; heatmap_layout reports
// the one-panel case.
struct GridGeometry {
    int64_t scale = 1;
    std::vector<PanelGeometry> panels;
    KeyGeometry key;
    int64_t columns = 1, slot_width = 0, slot_height = 0, top = 0;
    std::vector<std::string> title_lines;
    int64_t key_x = 0, key_y = 0, width = 0, height = 0;
};

GridGeometry grid_geometry(const std::string& title, const std::vector<HeatmapSpec>& panels, int64_t columns,
                           int64_t scale, const char* op, bool check_pixels = true) {
    check_scale(scale, op);
    if (panels.empty() || static_cast<int64_t>(panels.size()) > kMaxPanels)
        fail(op, ": a grid needs 1..", kMaxPanels, " panels, got ", panels.size());
    if (columns < 0) fail(op, ": columns must be >= 0 (0 = automatic), got ", columns);
    for (const HeatmapSpec& spec : panels) check_spec(spec, op);
    for (size_t i = 1; i < panels.size(); ++i) {
        if (panels[i].weights.empty() != panels[0].weights.empty())
            fail(op, ": panel ", i, (panels[i].weights.empty() ? " is a mask picture" : " has weights"),
                 " but panel 0 ", (panels[0].weights.empty() ? "is a mask picture" : "has weights"),
                 "; a grid shares one key");
        if (!panels[0].weights.empty() &&
            (panels[i].scale_min != panels[0].scale_min || panels[i].scale_max != panels[0].scale_max))
            fail(op, ": panel ", i, " has the colour scale ", panels[i].scale_min, " .. ", panels[i].scale_max,
                 " but panel 0 has ", panels[0].scale_min, " .. ", panels[0].scale_max,
                 "; a grid shares one colour bar");
        if (panels[i].palette != panels[0].palette)
            fail(op, ": panel ", i, " has another palette than panel 0; a grid shares one colour bar");
    }

    GridGeometry grid;
    grid.scale = scale;
    const auto count = static_cast<int64_t>(panels.size());
    int64_t matrix_right = 0, matrix_height = 0;
    for (const HeatmapSpec& spec : panels) {
        PanelGeometry panel = panel_geometry(spec, scale);
        matrix_right = std::max(matrix_right, panel.matrix_x + panel.matrix_width);
        matrix_height = std::max(matrix_height, panel.matrix_height);
        grid.slot_width = std::max(grid.slot_width, panel.width + kPanelGap * scale);
        grid.slot_height = std::max(grid.slot_height, panel.matrix_y + panel.matrix_height);
        grid.panels.push_back(std::move(panel));
    }
    grid.key = key_geometry(panels, scale, matrix_height);
    const int64_t margin = kMargin * scale;
    // The picture without its title, for `columns` columns (the title's band is added at the top).
    const auto width_for = [&](int64_t columns) {
        return std::max((columns - 1) * grid.slot_width + matrix_right + kKeyGap * scale + grid.key.width,
                        columns * grid.slot_width - kPanelGap * scale) + margin;
    };
    const auto height_for = [&](int64_t columns) {
        const int64_t rows = (count + columns - 1) / columns;
        return std::max(rows * grid.slot_height, grid.panels.front().matrix_y + grid.key.height) + margin;
    };
    if (columns == 0) {
        // Automatic: the column count whose picture is closest to 16:9 among
        // those at most kSlideWidth*s wide (if none is, one column); a count
        // that needs as many rows as one column fewer is skipped (it would
        // only add empty slots).
        grid.columns = 1;
        double best = 0.0;
        for (int64_t c = 1; c <= count; ++c) {
            if (c > 1 && (count + c - 2) / (c - 1) == (count + c - 1) / c) continue;
            if (c > 1 && width_for(c) > kSlideWidth * scale) break;
            const double aspect = static_cast<double>(width_for(c)) / static_cast<double>(height_for(c));
            const double distance = std::fabs(std::log(aspect / (16.0 / 9.0)));
            if (c == 1 || distance < best) {
                grid.columns = c;
                best = distance;
            }
        }
    } else {
        grid.columns = std::min(columns, count);
    }
    const int64_t content_width = width_for(grid.columns);
    grid.title_lines = title_lines(title, std::max(content_width - 2 * margin, kTitleWrap * scale), scale);
    grid.top = title_band(grid.title_lines.size(), scale);  // the panels bring their own top margin
    grid.key_x = (grid.columns - 1) * grid.slot_width + matrix_right + kKeyGap * scale;
    grid.key_y = grid.top + grid.panels.front().matrix_y;
    grid.width = std::max(content_width, 2 * margin + widest(grid.title_lines, scale));
    grid.height = grid.top + height_for(grid.columns);
    if (check_pixels && grid.width * grid.height > kMaxHeatmapPixels)
        fail(op, ": the picture would be ", grid.width, "x", grid.height, " pixels, more than ",
             kMaxHeatmapPixels / (1024 * 1024), " megapixels");
    return grid;
}

Image render_grid(const std::string& title, const std::vector<HeatmapSpec>& panels, int64_t columns, int64_t scale,
                  const char* op) {
    const GridGeometry grid = grid_geometry(title, panels, columns, scale, op);
    Canvas canvas(grid.width, grid.height, scale);
    for (size_t i = 0; i < grid.title_lines.size(); ++i)
        canvas.text(kMargin * scale, kMargin * scale + static_cast<int64_t>(i) * kLineHeight * scale, grid.title_lines[i],
                    scale, kTextColour);
    for (size_t i = 0; i < panels.size(); ++i) {
        const auto index = static_cast<int64_t>(i);
        draw_panel(canvas, (index % grid.columns) * grid.slot_width, grid.top + (index / grid.columns) * grid.slot_height,
                   panels[i], grid.panels[i], op);
    }
    draw_key(canvas, grid.key_x, grid.key_y, grid.key);
    return canvas.take();
}

}  // namespace

double luminance(Rgb colour) { return 0.299 * colour.r + 0.587 * colour.g + 0.114 * colour.b; }

Rgb viridis(float t) {
    if (!(t > 0.0f)) return kViridis[0];  // also NaN
    if (t >= 1.0f) return kViridis[255];
    return kViridis[static_cast<int>(std::lround(t * 255.0f))];
}

Rgb diverging(float t) {
    // ColorBrewer RdBu's ends and a near-white middle; each half a straight line.
    constexpr Rgb kBlue{33, 102, 172}, kWhite{247, 247, 247}, kRed{178, 24, 43};
    if (std::isnan(t)) return kWhite;
    t = std::clamp(t, 0.0f, 1.0f);
    const Rgb& from = t < 0.5f ? kBlue : kWhite;
    const Rgb& to = t < 0.5f ? kWhite : kRed;
    const float u = t < 0.5f ? t * 2.0f : (t - 0.5f) * 2.0f;
    const auto mix = [u](uint8_t a, uint8_t b) {
        return static_cast<uint8_t>(std::lround(static_cast<float>(a) + (static_cast<float>(b) - static_cast<float>(a)) * u));
    };
    return {mix(from.r, to.r), mix(from.g, to.g), mix(from.b, to.b)};
}

Rgb palette_colour(Palette palette, float t) { return palette == Palette::Diverging ? diverging(t) : viridis(t); }

HeatmapSpec weights_heatmap(ConstMatrixView weights) {
    HeatmapSpec spec;
    spec.rows = weights.rows;
    spec.cols = weights.cols;
    for (int64_t l = 0; l < weights.rows; ++l) spec.weights.insert(spec.weights.end(), weights.row(l), weights.row(l) + weights.cols);
    return spec;
}

std::vector<uint8_t> allowed_cells(const Mask& mask, int64_t queries, int64_t keys, int64_t batch, int64_t head) {
    const Shape& shape = mask.shape();
    if (batch < 0 || head < 0 || (shape[0] != 1 && batch >= shape[0]) || (shape[1] != 1 && head >= shape[1]))
        fail("allowed_cells: batch ", batch, ", head ", head, " outside mask ", shape_string(shape));
    mask.check_broadcasts_to({shape[0], shape[1], queries, keys}, "allowed_cells");
    std::vector<uint8_t> allowed(static_cast<size_t>(queries * keys));
    for (int64_t l = 0; l < queries; ++l)
        for (int64_t s = 0; s < keys; ++s) allowed[static_cast<size_t>(l * keys + s)] = mask.allows(batch, head, l, s);
    return allowed;
}

HeatmapSpec mask_heatmap(const Mask& mask, int64_t queries, int64_t keys, int64_t batch, int64_t head) {
    HeatmapSpec spec;
    spec.rows = queries;
    spec.cols = keys;
    spec.allowed = allowed_cells(mask, queries, keys, batch, head);
    return spec;
}

std::vector<uint8_t> padding_flags(const Padding& padding, int64_t batch) {
    if (batch < 0 || batch >= padding.batch())
        fail("padding_flags: batch ", batch, " outside padding [", padding.batch(), ",", padding.length(), "]");
    std::vector<uint8_t> flags(static_cast<size_t>(padding.length()));
    for (int64_t t = 0; t < padding.length(); ++t) flags[static_cast<size_t>(t)] = padding.is_padding(batch, t);
    return flags;
}

float largest_shown_weight(const HeatmapSpec& spec) {
    check_spec(spec, "largest_shown_weight");
    float largest = 0.0f;
    if (spec.weights.empty()) return largest;
    for (int64_t l = 0; l < spec.rows; ++l)
        for (int64_t s = 0; s < spec.cols; ++s)
            if (cell_kind(spec, l, s) == CellKind::Weight)
                largest = std::max(largest, weight_at(spec, l, s, "largest_shown_weight"));
    return largest;
}

HeatmapLayout heatmap_layout(const HeatmapSpec& spec) {
    const GridGeometry grid = grid_geometry("", {spec}, 1, spec.scale, "heatmap_layout");
    const PanelGeometry& panel = grid.panels.front();
    HeatmapLayout layout;
    layout.cell_width = panel.cell_width;
    layout.cell_height = panel.cell_height;
    layout.font_scale = panel.scale;
    layout.row_step = panel.row_step;
    layout.column_step = panel.column_step;
    layout.columns_rotated = panel.columns_rotated;
    const auto boxes = [](const std::vector<Rect>& rects) {
        std::vector<LabelBox> out;
        for (const Rect& rect : rects) out.push_back({rect.x, rect.y, rect.width, rect.height});
        return out;
    };
    layout.row_labels = boxes(panel.row_boxes);
    layout.column_labels = boxes(panel.column_boxes);
    size_t drawn = 0;
    for (size_t s = 0; s < panel.column_text.size(); ++s)
        if (!panel.column_text[s].empty()) layout.column_labels[drawn++].turned = panel.column_turned[s];
    layout.row_axis = boxes(panel.row_axis_boxes);
    layout.column_axis = boxes(panel.column_axis_boxes);
    layout.matrix_x = panel.matrix_x;
    layout.matrix_y = panel.matrix_y;
    layout.matrix_width = panel.matrix_width;
    layout.matrix_height = panel.matrix_height;
    layout.key_x = grid.key_x;
    layout.key_width = grid.key.width;
    layout.key_height = grid.key.height;
    layout.width = grid.width;
    layout.height = grid.height;
    return layout;
}

HeatmapSize heatmap_size(const HeatmapSpec& spec) {
    const GridGeometry grid = grid_geometry("", {spec}, 1, spec.scale, "heatmap_size", /*check_pixels=*/false);
    return {grid.width, grid.height};
}

HeatmapSize heatmap_grid_size(const HeatmapGrid& grid) {
    const GridGeometry geometry =
        grid_geometry(grid.title, grid.panels, grid.columns, grid.scale, "heatmap_grid_size", /*check_pixels=*/false);
    return {geometry.width, geometry.height};
}

Image render_heatmap(const HeatmapSpec& spec) { return render_grid("", {spec}, 1, spec.scale, "render_heatmap"); }

Image render_heatmap_grid(const HeatmapGrid& grid) {
    return render_grid(grid.title, grid.panels, grid.columns, grid.scale, "render_heatmap_grid");
}

void write_png(const Image& image, const std::string& path) {
    if (!path.ends_with(".png") && !is_stream_output(path))
        fail("write_png: ", path, " does not end in .png; the picture is PNG, so its name must say so");
    if (image.width < 1 || image.height < 1 || static_cast<int64_t>(image.rgb.size()) != image.width * image.height * 3)
        fail("write_png: ", path, ": image is ", image.width, "x", image.height, " with ", image.rgb.size(),
             " bytes, expected width*height*3 > 0");
    std::vector<uint8_t> png;
    auto append = [](void* context, void* data, int size) {
        auto* out = static_cast<std::vector<uint8_t>*>(context);
        const auto* bytes = static_cast<const uint8_t*>(data);
        out->insert(out->end(), bytes, bytes + size);
    };
    const int width = static_cast<int>(image.width), height = static_cast<int>(image.height);
    if (!stbi_write_png_to_func(append, &png, width, height, 3, image.rgb.data(), width * 3))
        fail("write_png: ", path, ": PNG encoding failed");
    write_file(path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()), "write_png");
}

void write_heatmap_png(const HeatmapSpec& spec, const std::string& path) { write_png(render_heatmap(spec), path); }

void write_heatmap_grid_png(const HeatmapGrid& grid, const std::string& path) {
    write_png(render_heatmap_grid(grid), path);
}

}  // namespace tinyformer
