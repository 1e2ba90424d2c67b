// Tests for tools/pictures/heatmap.* and the masks `tinyformer mask` prints. Pictures
// are written as PNG, read back with stb_image and checked pixel by pixel at
// the places heatmap_layout() reports: the centre of cell (l, s) is
//     (matrix_x + s*cell + cell/2, matrix_y + l*cell + cell/2).
#include <doctest/doctest.h>

#include "engine/attention.h"
#include "tools/pictures/font.h"
#include "tools/pictures/heatmap.h"
#include "engine/mask.h"
#include "engine/random.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <stb_image.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

using tinyformer::allowed_cells;
using tinyformer::AttentionOptions;
using tinyformer::Error;
using tinyformer::HeatmapGrid;
using tinyformer::HeatmapLayout;
using tinyformer::HeatmapSpec;
using tinyformer::Image;
using tinyformer::Mask;
using tinyformer::Padding;
using tinyformer::Rgb;
using tinyformer::Tensor;
using test_helpers::TempDirectory;

namespace {

// A PNG as read back from disk.
struct Picture {
    int64_t width = 0, height = 0;
    std::vector<uint8_t> rgb;

    Rgb at(int64_t x, int64_t y) const {
        const uint8_t* pixel = &rgb[static_cast<size_t>(3 * (y * width + x))];
        return {pixel[0], pixel[1], pixel[2]};
    }
    // Pixels in [x0, x1) x [y0, y1) that are not the white background.
    int64_t drawn_pixels(int64_t x0, int64_t y0, int64_t x1, int64_t y1) const {
        int64_t count = 0;
        for (int64_t y = y0; y < y1; ++y)
            for (int64_t x = x0; x < x1; ++x) count += !(at(x, y) == tinyformer::kBackgroundColour);
        return count;
    }
    int64_t pixels_of(Rgb colour) const {
        int64_t count = 0;
        for (int64_t y = 0; y < height; ++y)
            for (int64_t x = 0; x < width; ++x) count += at(x, y) == colour;
        return count;
    }
};

Picture read_png(const std::string& path) {
    int width = 0, height = 0, channels = 0;
    unsigned char* data = stbi_load(path.c_str(), &width, &height, &channels, 3);
    REQUIRE_MESSAGE(data != nullptr, "stb_image cannot read ", path);
    Picture picture{width, height, std::vector<uint8_t>(data, data + 3 * width * height)};
    stbi_image_free(data);
    return picture;
}

// Writes `spec` to a PNG in `dir` and reads it back.
Picture round_trip(const HeatmapSpec& spec, const TempDirectory& dir) {
    const std::string path = dir.file("heatmap.png");
    tinyformer::write_heatmap_png(spec, path);
    return read_png(path);
}

bool is_viridis(Rgb colour) {
    for (int i = 0; i < 256; ++i)
        if (tinyformer::viridis(static_cast<float>(i) / 255.0f) == colour) return true;
    return false;
}

Rgb cell_centre(const Picture& picture, const HeatmapLayout& layout, int64_t l, int64_t s) {
    return picture.at(layout.matrix_x + s * layout.cell_width + layout.cell_width / 2,
                      layout.matrix_y + l * layout.cell_height + layout.cell_height / 2);
}

// What a cell shows, judged from every one of its pixels (scale 1):
//   Flat     one colour throughout (a weight, or a mask picture's allowed cell)
//   Masked   ground and black lines only, every black pixel on a "/" line ((x + y) % 8 < 2)
//   Padding  ground and black lines only, some black pixel off the "/" lines (the "\\" lines)
enum class Seen { Flat, Masked, Padding, Other };

Seen seen_cell(const Picture& picture, const HeatmapLayout& layout, int64_t l, int64_t s, Rgb* flat_colour = nullptr) {
    const int64_t x0 = layout.matrix_x + s * layout.cell_width, y0 = layout.matrix_y + l * layout.cell_height;
    const Rgb first = picture.at(x0, y0);
    bool flat = true, hatch_only = true, off_rising = false;
    int64_t dark = 0;
    for (int64_t y = y0; y < y0 + layout.cell_height; ++y)
        for (int64_t x = x0; x < x0 + layout.cell_width; ++x) {
            const Rgb colour = picture.at(x, y);
            flat = flat && colour == first;
            if (colour == tinyformer::kMaskedHatchColour) {
                ++dark;
                off_rising = off_rising || (x + y) % 8 >= 2;
            } else if (!(colour == tinyformer::kMaskedColour)) {
                hatch_only = false;
            }
        }
    if (flat) {
        if (flat_colour) *flat_colour = first;
        return Seen::Flat;
    }
    if (hatch_only && dark > 0) return off_rising ? Seen::Padding : Seen::Masked;
    return Seen::Other;
}

bool is_weight_cell(const Picture& picture, const HeatmapLayout& layout, int64_t l, int64_t s) {
    Rgb colour;
    return seen_cell(picture, layout, l, s, &colour) == Seen::Flat && is_viridis(colour);
}

// Two boxes share a pixel.
bool overlap(const tinyformer::LabelBox& a, const tinyformer::LabelBox& b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

// DejaVu Sans (fonts-dejavu-core), read by hand from its tables: a 20 px line
// is ascent 1901 + descent 483 = 2384 font units; 'a' advances 1255 units,
// 10.53 px, so a label "a" is 11 px wide. The test "The font's numbers ..."
// checks these against the font file itself.
constexpr int64_t kAWidth = 11;

// Causal self-attention weights of random Q = K = V [1, T, 8].
Tensor causal_attention_weights(int64_t length) {
    tinyformer::Random random(7);
    const Tensor x = random.normal_tensor({1, length, 8}, 2.0f);
    AttentionOptions options;
    options.want_weights = true;
    return tinyformer::scaled_dot_product_attention(x, x, x, Mask::causal(length), options).weights;  // [1, T, T]
}

HeatmapSpec causal_heatmap(int64_t length) {
    const Tensor weights = causal_attention_weights(length);
    HeatmapSpec spec = tinyformer::weights_heatmap(weights.matrix(0));
    spec.allowed = allowed_cells(Mask::causal(length), length, length);
    spec.title = "causal self-attention";
    return spec;
}

}  // namespace

TEST_CASE("The colours: viridis runs from dark purple to yellow and the hatches are none of its entries") {
    CHECK(tinyformer::viridis(0.0f) == Rgb{68, 1, 84});      // #440154
    CHECK(tinyformer::viridis(0.5f) == Rgb{33, 145, 140});   // #21918c
    CHECK(tinyformer::viridis(1.0f) == Rgb{253, 231, 37});   // #fde725
    CHECK(tinyformer::viridis(-3.0f) == tinyformer::viridis(0.0f));
    CHECK(tinyformer::viridis(7.0f) == tinyformer::viridis(1.0f));
    CHECK(tinyformer::viridis(std::numeric_limits<float>::quiet_NaN()) == tinyformer::viridis(0.0f));
    for (Rgb grey : {tinyformer::kMaskedColour, tinyformer::kMaskedHatchColour, tinyformer::kPaddingColour,
                     tinyformer::kPaddingHatchColour, tinyformer::kBackgroundColour})
        CHECK_FALSE(is_viridis(grey));
}

TEST_CASE("In greyscale print no viridis colour looks like a hatched cell, and masked differs from padding") {
    // Luminance by hand: viridis(0) = (68, 1, 84) -> 0.299*68 + 0.587*1 + 0.114*84 = 30.495;
    // viridis(1) = (253, 231, 37) -> 75.647 + 135.597 + 4.218 = 215.462.
    CHECK(tinyformer::luminance(tinyformer::viridis(0.0f)) == doctest::Approx(30.495));
    CHECK(tinyformer::luminance(tinyformer::viridis(1.0f)) == doctest::Approx(215.462));
    double darkest = 255, lightest = 0;
    for (int i = 0; i < 256; ++i) {
        const double y = tinyformer::luminance(tinyformer::viridis(static_cast<float>(i) / 255.0f));
        darkest = std::min(darkest, y);
        lightest = std::max(lightest, y);
    }
    CHECK(darkest == doctest::Approx(30.495));
    CHECK(lightest == doctest::Approx(215.462));
    // A causal picture with a padded last row and column, read back: every
    // pixel of a masked or padded cell prints outside viridis's greys, by a
    // margin of 20 levels of 255, and both kinds of cell hold both of them.
    HeatmapSpec spec = causal_heatmap(8);
    spec.row_padding = {0, 0, 0, 0, 0, 0, 0, 1};
    spec.column_padding = spec.row_padding;
    TempDirectory dir;
    const Picture picture = round_trip(spec, dir);
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    int64_t masked_cells = 0, padding_cells = 0;
    for (int64_t l = 0; l < 8; ++l)
        for (int64_t s = 0; s < 8; ++s) {
            CAPTURE(l);
            CAPTURE(s);
            const Seen seen = seen_cell(picture, layout, l, s);
            if (l == 7 || s == 7) {
                REQUIRE(seen == Seen::Padding);
                ++padding_cells;
            } else if (s > l) {
                REQUIRE(seen == Seen::Masked);
                ++masked_cells;
            } else {
                REQUIRE(is_weight_cell(picture, layout, l, s));
                continue;
            }
            double low = 255, high = 0;
            for (int64_t y = 0; y < layout.cell_height; ++y)
                for (int64_t x = 0; x < layout.cell_width; ++x) {
                    const double grey = tinyformer::luminance(
                        picture.at(layout.matrix_x + s * layout.cell_width + x, layout.matrix_y + l * layout.cell_height + y));
                    CHECK((grey < darkest - 20 || grey > lightest + 20));
                    low = std::min(low, grey);
                    high = std::max(high, grey);
                }
            CHECK(low < darkest - 20);   // the lines
            CHECK(high > lightest + 20); // the ground
        }
    CHECK(masked_cells == 21);   // above the diagonal of the 7 real rows
    CHECK(padding_cells == 15);  // the last row and column
    // The legend names both hatches.
    CHECK(picture.drawn_pixels(layout.key_x, layout.matrix_y + layout.key_height - 80, layout.width,
                               layout.matrix_y + layout.key_height) > 0);
}

TEST_CASE("Cells are sized per axis, labels thinned per axis, and the picture follows the layout formula") {
    struct Case {
        int64_t rows, cols, cell_width, cell_height, row_step, column_step;
        bool rotated;
    };
    // Labels "a": 11 px wide (kAWidth); a column label stands horizontal when it fits, 11 <= cell_width - 2,
    // and also when it does not, being narrower than a 20 px line: then every
    // column_step = ceil((11 + 2) / cell_width)-th column is labelled. Never turned here.
    const Case cases[] = {
        {1, 1, 40, 40, 1, 1, false},    {6, 6, 40, 40, 1, 1, false},    {16, 16, 37, 37, 1, 1, false},
        {3, 20, 30, 40, 1, 1, false},   {30, 30, 20, 20, 1, 1, false},  {31, 31, 19, 19, 2, 1, false},
        {60, 60, 10, 10, 2, 2, false},  {61, 61, 9, 9, 3, 2, false},    {100, 7, 40, 6, 4, 1, false},
        {3, 100, 6, 40, 1, 3, false},   {150, 150, 4, 4, 5, 4, false},  {1024, 1024, 4, 4, 5, 4, false},
    };
    TempDirectory dir;
    for (const Case& c : cases) {
        CAPTURE(c.rows);
        CAPTURE(c.cols);
        HeatmapSpec spec;
        spec.rows = c.rows;
        spec.cols = c.cols;
        spec.weights.assign(static_cast<size_t>(c.rows * c.cols), 0.5f);
        spec.row_labels.assign(static_cast<size_t>(c.rows), "a");
        spec.column_labels.assign(static_cast<size_t>(c.cols), "a");
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(layout.cell_width == c.cell_width);
        CHECK(layout.cell_height == c.cell_height);
        CHECK(layout.row_step == c.row_step);
        CHECK(layout.row_step == (20 + layout.cell_height - 1) / layout.cell_height);
        CHECK(layout.column_step == c.column_step);
        CHECK(layout.columns_rotated == c.rotated);
        CHECK(layout.font_scale == 1);
        CHECK(static_cast<int64_t>(layout.row_labels.size()) == (c.rows + c.row_step - 1) / c.row_step);
        CHECK(static_cast<int64_t>(layout.column_labels.size()) == (c.cols + c.column_step - 1) / c.column_step);
        CHECK(layout.matrix_width == c.cols * c.cell_width);
        CHECK(layout.matrix_height == c.rows * c.cell_height);
        CHECK(layout.matrix_x == 12 + kAWidth + 6);  // margin, row label band, gap
        CHECK(layout.matrix_y == 12 + 20 + 6);       // margin, column label band (a line), gap (no title)
        CHECK(layout.key_x == layout.matrix_x + layout.matrix_width + 20);
        CHECK(layout.key_height == std::max<int64_t>(layout.matrix_height, 128));  // the colour bar alone
        CHECK(layout.width == layout.key_x + layout.key_width + 12);
        CHECK(layout.height == layout.matrix_y + std::max(layout.matrix_height, layout.key_height) + 12);
        if (c.rows <= 200) {
            const Picture picture = round_trip(spec, dir);
            CHECK(picture.width == layout.width);
            CHECK(picture.height == layout.height);
        }
    }

    SUBCASE("a title adds a 30 px band; a long one wraps at 640 px into at most 3 lines, 20 px each") {
        HeatmapSpec spec;
        spec.rows = spec.cols = 2;
        spec.weights = {1, 0, 0.5f, 0.5f};
        const HeatmapLayout plain = tinyformer::heatmap_layout(spec);
        spec.title = "short";
        CHECK(tinyformer::heatmap_layout(spec).matrix_y == plain.matrix_y + 30);
        CHECK(tinyformer::heatmap_layout(spec).width == plain.width);
        // 'x' advances 1212 of 2384 units per 20 px line: 10.2 px, so 64 of them are wider than 640 px.
        spec.title = std::string(64, 'x');
        const HeatmapLayout two = tinyformer::heatmap_layout(spec);
        CHECK(two.matrix_y == plain.matrix_y + 30 + 20);
        CHECK(two.width <= 640 + 24);
        CHECK(two.width > 600);
        spec.title = std::string(200, 'x');
        const HeatmapLayout three = tinyformer::heatmap_layout(spec);
        CHECK(three.matrix_y == plain.matrix_y + 30 + 2 * 20);
        spec.title = std::string(20000, 'x');  // cut after three lines, ending in "…"
        CHECK(tinyformer::heatmap_layout(spec).matrix_y == three.matrix_y);
        CHECK(tinyformer::heatmap_layout(spec).width <= 640 + 24);
        spec.title = "a  b";  // a run of spaces is kept
        const Image two_spaces = tinyformer::render_heatmap(spec);
        spec.title = "a b";
        CHECK(two_spaces.rgb != tinyformer::render_heatmap(spec).rgb);
    }
    SUBCASE("--scale N: every length N times, the picture too") {
        HeatmapSpec spec = causal_heatmap(5);
        spec.row_labels = {"<bos>", "h", "e", "l", "o"};
        spec.column_labels = spec.row_labels;
        spec.row_axis = "query: decoder input (predicts the next token)";
        spec.column_axis = "key: decoder input";
        const HeatmapLayout one = tinyformer::heatmap_layout(spec);
        spec.scale = 3;
        const HeatmapLayout three = tinyformer::heatmap_layout(spec);
        CHECK(three.cell_width == 3 * one.cell_width);
        CHECK(three.font_scale == 3);
        CHECK(three.matrix_x == 3 * one.matrix_x);
        CHECK(three.matrix_y == 3 * one.matrix_y);
        CHECK(three.width == 3 * one.width);
        CHECK(three.height == 3 * one.height);
        const Picture picture = round_trip(spec, dir);
        CHECK(picture.width == three.width);
        CHECK(picture.height == three.height);
        spec.scale = 9;
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(spec), "scale must be 1..8, got 9");
    }
}

TEST_CASE("Each column label stands horizontal when it fits, else turns 90 degrees as one run of text; no label box overlaps another") {
    // A cross-attention of 11 decoder rows over 3 source columns, labelled like the toy models.
    HeatmapSpec spec;
    spec.rows = 11;
    spec.cols = 3;
    spec.weights.assign(33, 1.0f / 3.0f);
    spec.row_labels = {"<bos>", "1", "9", "7", "9", "-", "0", "5", "-", "0", "3"};
    spec.row_axis = "query: decoder input (predicts the next token)";
    spec.column_axis = "key: source token (encoder output)";
    spec.title = "dates  \"3 may 1979\"  decoder layer 1 cross-attention  head 2";
    TempDirectory dir;
    SUBCASE("one character per column: horizontal, every column labelled") {
        spec.column_labels = {"a", "b", "c"};
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK_FALSE(layout.columns_rotated);
        REQUIRE(layout.column_labels.size() == 3);
        for (const auto& box : layout.column_labels) CHECK(box.height == 20);  // one line
    }
    SUBCASE("<bos> and <eos> turned (60 px, wider than their 38 px), k10 (32 px) horizontal: one wide label turns only itself") {
        spec.column_labels = {"<bos>", "k10", "<eos>"};
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(layout.columns_rotated);
        CHECK(layout.column_step == 1);
        REQUIRE(layout.column_labels.size() == 3);
        const Picture picture = round_trip(spec, dir);
        for (const auto& box : layout.column_labels) {
            CAPTURE(box.x);
            CHECK(picture.drawn_pixels(box.x, box.y, box.x + box.width, box.y + box.height) > 20);
        }
        // The whole label in one run: <bos> (1716 + 1300 + 1253 + 1067 + 1716) units = 59.2 px,
        // <eos> (1716 + 1260 + 1253 + 1067 + 1716) units = 58.8 px (DejaVu Sans kerns none of these pairs).
        const int64_t lengths[3] = {60, 0, 59};
        for (size_t turned : {0, 2}) {
            const auto& box = layout.column_labels[turned];
            CHECK(box.turned);
            CHECK(box.width == 20);  // one line of text, turned
            CHECK(box.height == lengths[turned]);
        }
        CHECK_FALSE(layout.column_labels[1].turned);
        CHECK(layout.column_labels[1].height == 20);
        CHECK(layout.column_labels[1].width == 32);  // (1186 + 1303 + 1303) units = 31.8 px
        // It stands on the matrix, as the turned ones do.
        CHECK(layout.column_labels[1].y + 20 == layout.column_labels[0].y + 60);
        CHECK(layout.column_labels[2].y + 59 == layout.column_labels[0].y + 60);
        // "<bos>" read bottom to top: the '<' is at the bottom of its box, drawn in its lowest 12 px.
        const auto& bos = layout.column_labels[0];
        CHECK(picture.drawn_pixels(bos.x, bos.y + bos.height - 12, bos.x + bos.width, bos.y + bos.height) > 0);
    }
    SUBCASE("every drawn box is apart from every other, and holds drawn pixels") {
        spec.column_labels = {"<bos>", "k10", "<eos>"};
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        const Picture picture = round_trip(spec, dir);
        std::vector<tinyformer::LabelBox> boxes = layout.row_labels;
        boxes.insert(boxes.end(), layout.column_labels.begin(), layout.column_labels.end());
        boxes.insert(boxes.end(), layout.row_axis.begin(), layout.row_axis.end());
        boxes.insert(boxes.end(), layout.column_axis.begin(), layout.column_axis.end());
        boxes.push_back({layout.matrix_x, layout.matrix_y, layout.matrix_width, layout.matrix_height});
        REQUIRE(layout.row_labels.size() == 11);
        REQUIRE_FALSE(layout.row_axis.empty());
        REQUIRE_FALSE(layout.column_axis.empty());
        for (size_t i = 0; i < boxes.size(); ++i) {
            CAPTURE(i);
            CHECK(boxes[i].x >= 12);
            CHECK(boxes[i].y >= 12 + 30);  // under the title
            CHECK(boxes[i].x + boxes[i].width <= picture.width - 12);
            CHECK(boxes[i].y + boxes[i].height <= picture.height - 12);
            CHECK(picture.drawn_pixels(boxes[i].x, boxes[i].y, boxes[i].x + boxes[i].width, boxes[i].y + boxes[i].height) > 0);
            for (size_t j = i + 1; j < boxes.size(); ++j) {
                CAPTURE(j);
                CHECK_FALSE(overlap(boxes[i], boxes[j]));
            }
        }
        // The row axis title is turned: taller than wide.
        for (const auto& box : layout.row_axis) CHECK(box.height > box.width);
        // The title's pixels.
        CHECK(picture.drawn_pixels(12, 12, picture.width, 12 + 18) > 200);
    }
    SUBCASE("--positions labels l:3 still fit: may:0 turned, the short ones horizontal") {
        spec.column_labels = {"may:0", " :1", "3:2"};
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(layout.columns_rotated);
        REQUIRE(layout.column_labels.size() == 3);
        CHECK(layout.column_labels[0].turned);
        CHECK_FALSE(layout.column_labels[1].turned);
        CHECK_FALSE(layout.column_labels[2].turned);
    }
    SUBCASE("one-character labels in narrow cells stay upright and are thinned; a long one among them turns") {
        HeatmapSpec wide;
        wide.rows = 2;
        wide.cols = 40;  // cells 15 px: "m" (16.7 px) does not fit, but is narrower than a line
        wide.weights.assign(80, 0.5f);
        for (int64_t s = 0; s < 40; ++s) wide.column_labels.push_back(s == 0 ? "<bos>" : s % 2 ? "m" : "l");
        const HeatmapLayout layout = tinyformer::heatmap_layout(wide);
        CHECK(layout.cell_width == 15);
        CHECK(layout.column_step == 2);  // ceil(max(20, 17 + 2) / 15)
        for (size_t i = 0; i < layout.column_labels.size(); ++i) {
            CAPTURE(i);
            CHECK(layout.column_labels[i].turned == (i == 0));
        }
        for (size_t i = 1; i < layout.column_labels.size(); ++i) CHECK_FALSE(overlap(layout.column_labels[i - 1], layout.column_labels[i]));
    }
}

TEST_CASE("A prefix-LM boundary is a black-white-black line after the prefix, named in the legend") {
    HeatmapSpec spec = tinyformer::mask_heatmap(Mask::prefix_lm({3}, 6), 6, 6);
    spec.prefix = 3;
    TempDirectory dir;
    const Picture picture = round_trip(spec, dir);
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    const int64_t x = layout.matrix_x + 3 * layout.cell_width, y = layout.matrix_y + 3 * layout.cell_height;
    for (int64_t row = layout.matrix_y; row < layout.matrix_y + layout.matrix_height; ++row) {
        if (row >= y - 2 && row <= y + 1) continue;  // where the two lines cross
        CHECK(picture.at(x - 2, row) == tinyformer::kPrefixLineColour);
        CHECK(picture.at(x, row) == tinyformer::kBackgroundColour);
        CHECK(picture.at(x + 1, row) == tinyformer::kPrefixLineColour);
    }
    for (int64_t column = layout.matrix_x; column < layout.matrix_x + layout.matrix_width; ++column) {
        if (column >= x - 2 && column <= x + 1) continue;
        CHECK(picture.at(column, y - 2) == tinyformer::kPrefixLineColour);
        CHECK(picture.at(column, y) == tinyformer::kBackgroundColour);
    }
    spec.prefix = 0;
    CHECK(tinyformer::heatmap_layout(spec).key_height < layout.key_height);  // one legend entry fewer
    spec.prefix = 7;
    CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(spec), "prefix must be 0..max(L, S) = 6, got 7");
}

TEST_CASE("In a causal self-attention heatmap exactly the cells above the diagonal are drawn as masked") {
    TempDirectory dir;
    for (int64_t length : {7, 70}) {
        CAPTURE(length);
        const HeatmapSpec spec = causal_heatmap(length);
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        const Picture picture = round_trip(spec, dir);
        for (int64_t l = 0; l < length; ++l)
            for (int64_t s = 0; s < length; ++s) {
                if (s > l) {
                    CHECK_MESSAGE(seen_cell(picture, layout, l, s) == Seen::Masked, "cell (", l, ",", s, ") above the diagonal");
                } else {
                    CHECK_MESSAGE(is_weight_cell(picture, layout, l, s), "cell (", l, ",", s, ") on or below the diagonal");
                }
            }
    }
}

TEST_CASE("The cell of the largest weight has the colour map's top colour") {
    const HeatmapSpec causal = causal_heatmap(9);  // query 0 sees only key 0: weight exactly 1
    TempDirectory dir;
    {
        const Picture picture = round_trip(causal, dir);
        CHECK(cell_centre(picture, tinyformer::heatmap_layout(causal), 0, 0) == tinyformer::viridis(1.0f));
    }

    SUBCASE("with the scale stretched to the largest shown weight") {
        HeatmapSpec spec;
        spec.rows = 5;
        spec.cols = 8;
        tinyformer::Random random(3);
        for (int64_t i = 0; i < spec.rows * spec.cols; ++i)
            spec.weights.push_back(0.3f * static_cast<float>(random.uniform()));
        spec.weights[13] = 0.9f;  // masked below, so it must not set the scale
        spec.allowed.assign(spec.weights.size(), 1);
        spec.allowed[13] = 0;
        spec.scale_max = tinyformer::largest_shown_weight(spec);
        int64_t largest = 0;  // the largest shown (not masked) weight
        for (int64_t i = 1; i < spec.rows * spec.cols; ++i)
            if (i != 13 && spec.weights[static_cast<size_t>(i)] > spec.weights[static_cast<size_t>(largest)]) largest = i;
        CHECK(spec.scale_max == spec.weights[static_cast<size_t>(largest)]);
        CHECK(spec.scale_max < 0.9f);
        const Picture picture = round_trip(spec, dir);
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(cell_centre(picture, layout, largest / spec.cols, largest % spec.cols) == tinyformer::viridis(1.0f));
        CHECK(seen_cell(picture, layout, 13 / spec.cols, 13 % spec.cols) == Seen::Masked);
    }
}

TEST_CASE("Padded rows and columns are drawn as padding, hatched, never as a weight or as masked") {
    HeatmapSpec spec = causal_heatmap(6);
    spec.row_padding = {0, 0, 0, 0, 1, 1};
    spec.column_padding = {0, 0, 0, 0, 0, 1};
    TempDirectory dir;
    const Picture picture = round_trip(spec, dir);
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    for (int64_t l = 0; l < 6; ++l)
        for (int64_t s = 0; s < 6; ++s) {
            const bool padded = spec.row_padding[l] || spec.column_padding[s];
            CAPTURE(l);
            CAPTURE(s);
            const Seen seen = seen_cell(picture, layout, l, s);
            if (padded)
                CHECK(seen == Seen::Padding);
            else
                CHECK(seen == (s > l ? Seen::Masked : Seen::Flat));
        }
    CHECK(tinyformer::largest_shown_weight(spec) == 1.0f);  // query 0 -> key 0 is not padding
}

TEST_CASE("Label bands, the title and the colour bar's numbers contain drawn pixels") {
    HeatmapSpec spec = causal_heatmap(7);
    spec.title = "toy  decoder layer 0  self  head 1  mask causal";
    spec.row_labels = {"<bos>", "h", "e", "l", "l", "o", "<eos>"};
    spec.column_labels = spec.row_labels;
    TempDirectory dir;
    const Picture picture = round_trip(spec, dir);
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    const int64_t cell = layout.cell_height;
    CHECK(picture.drawn_pixels(12, 12, picture.width, 12 + 18) > 0);  // title
    for (int64_t l = 0; l < 7; ++l) {
        CAPTURE(l);
        CHECK(picture.drawn_pixels(12, layout.matrix_y + l * cell, layout.matrix_x - 6, layout.matrix_y + (l + 1) * cell) > 0);
    }
    for (int64_t s = 0; s < 7; ++s) {
        CAPTURE(s);
        CHECK(picture.drawn_pixels(layout.matrix_x + s * cell, 12 + 30, layout.matrix_x + (s + 1) * cell, layout.matrix_y - 6) > 0);
    }
    const int64_t numbers_x = layout.key_x + 16 + 8;
    CHECK(picture.drawn_pixels(numbers_x, layout.matrix_y - 8, layout.key_x + layout.key_width, layout.matrix_y + 8) > 0);
    CHECK(picture.drawn_pixels(numbers_x, layout.matrix_y + layout.matrix_height - 8, layout.key_x + layout.key_width,
                               layout.matrix_y + layout.matrix_height + 8) > 0);
    // the 12 px margins stay empty but for the 1 px frames drawn just outside the matrix and the swatches
    CHECK(picture.drawn_pixels(0, 0, 11, picture.height) == 0);
    CHECK(picture.drawn_pixels(0, picture.height - 11, picture.width, picture.height) == 0);
    CHECK(picture.drawn_pixels(picture.width - 11, 0, picture.width, picture.height) == 0);
}

TEST_CASE("The font's numbers the layout tests use are those of the installed DejaVu Sans") {
    // Read with stb_truetype directly, not through tools/pictures/font.*.
    const std::string bytes = test_helpers::read_file(tinyformer::kFontPath);
    REQUIRE_MESSAGE(!bytes.empty(), tinyformer::kFontPath, " is missing: install ", tinyformer::kFontPackage);
    stbtt_fontinfo font;
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    REQUIRE(stbtt_InitFont(&font, data, stbtt_GetFontOffsetForIndex(data, 0)));
    int ascent = 0, descent = 0, gap = 0;
    stbtt_GetFontVMetrics(&font, &ascent, &descent, &gap);
    CHECK(ascent == 1901);
    CHECK(descent == -483);
    const auto advance = [&](int code) {
        int width = 0, bearing = 0;
        stbtt_GetCodepointHMetrics(&font, code, &width, &bearing);
        return width;
    };
    CHECK(advance('a') == 1255);
    CHECK(advance('x') == 1212);
    CHECK(advance('k') == 1186);
    CHECK(advance('1') == 1303);
    CHECK(advance('m') == 1995);
    CHECK(tinyformer::text_width("a", 1) == kAWidth);
    CHECK(tinyformer::text_width("a", 3) == 3 * kAWidth);  // rounded at scale 1, then scaled
    CHECK(tinyformer::draw_text("a", 2).height == 40);
    // CJK is not in DejaVu Sans: the pictures draw it as a replacement box.
    CHECK(stbtt_FindGlyphIndex(&font, 0x4E2D) == 0);
}

namespace {

// The ink of one line of text, and its bounding box.
struct Ink {
    int64_t total = 0, left = 0, top = 0, right = -1, bottom = -1;  // right/bottom inclusive
    int64_t width() const { return right - left + 1; }
    int64_t height() const { return bottom - top + 1; }
};

Ink ink_of(const tinyformer::TextMask& mask, int64_t x0 = 0, int64_t x1 = -1) {
    Ink ink;
    ink.left = mask.width;
    ink.top = mask.height;
    for (int64_t y = 0; y < mask.height; ++y)
        for (int64_t x = x0; x < (x1 < 0 ? mask.width : x1); ++x)
            if (const int value = mask.at(x, y); value > 0) {
                ink.total += value;
                ink.left = std::min(ink.left, x);
                ink.right = std::max(ink.right, x);
                ink.top = std::min(ink.top, y);
                ink.bottom = std::max(ink.bottom, y);
            }
    return ink;
}

}  // namespace

TEST_CASE("Text is drawn as it is: accents, the euro sign and CJK are not '?', controls are escaped") {
    using tinyformer::draw_text;
    const auto pixels = [](const std::string& text) { return draw_text(text, 1).coverage; };
    SUBCASE("e, é and ? alone: three different inks; é is e with ink above it") {
        const Ink e = ink_of(draw_text("e", 1)), accented = ink_of(draw_text("\xc3\xa9", 1)), question = ink_of(draw_text("?", 1));
        CHECK(pixels("\xc3\xa9") != pixels("e"));
        CHECK(pixels("\xc3\xa9") != pixels("?"));
        CHECK(accented.total > e.total);
        CHECK(accented.top < e.top - 2);        // the acute accent over the x-height
        CHECK(accented.bottom == e.bottom);     // the same letter under it
        CHECK(question.top < e.top);            // '?' is as tall as a capital
        // "zéro" is not "z?ro", nor "zero"
        CHECK(pixels("z\xc3\xa9ro") != pixels("z?ro"));
        CHECK(pixels("z\xc3\xa9ro") != pixels("zero"));
        CHECK(draw_text("z\xc3\xa9ro", 1).width == draw_text("zero", 1).width);  // é advances as e does
    }
    SUBCASE("the euro sign is drawn from the font, not as the replacement box") {
        const std::string euro = "\xe2\x82\xac", cjk = "\xe4\xb8\xad", other_cjk = "\xe4\xba\x8c";  // €, 中, 二
        CHECK(pixels(euro) != pixels(cjk));
        CHECK(pixels(euro) != pixels("?"));
        CHECK(ink_of(draw_text(euro, 1)).total > 0);
        // CJK, which DejaVu Sans lacks: each character a visible box, never dropped
        const Ink box = ink_of(draw_text(cjk, 1));
        CHECK(box.total > 0);
        CHECK(pixels(cjk) == pixels(other_cjk));  // the same box for every missing character
        CHECK(draw_text(cjk + cjk, 1).width == 2 * draw_text(cjk, 1).width);
        CHECK(ink_of(draw_text(cjk + cjk, 1)).total == 2 * box.total);
        // a box: its outline drawn, its middle empty
        const tinyformer::TextMask mask = draw_text(cjk, 1);
        CHECK(mask.at((box.left + box.right) / 2, (box.top + box.bottom) / 2) == 0);
        CHECK(mask.at(box.left, (box.top + box.bottom) / 2) == 255);
        CHECK(box.height() >= 10);
    }
    SUBCASE("control characters, bidi controls and invalid bytes are drawn escaped, as the terminal shows them") {
        CHECK(tinyformer::displayed_text("a\nb\x7f") == "a\\x0ab\\x7f");
        CHECK(tinyformer::displayed_text("\x1b]0;x\x07") == "\\x1b]0;x\\x07");
        CHECK(tinyformer::displayed_text("abc\xe2\x80\xae" "def") == "abc\\u{202e}def");     // RIGHT-TO-LEFT OVERRIDE
        CHECK(tinyformer::displayed_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u{2066}x\\u{2069}");  // isolates
        CHECK(tinyformer::displayed_text("\xc2\x85") == "\\u{0085}");                          // C1 NEXT LINE
        CHECK(tinyformer::displayed_text("\xff\xc3") == "\\xff\\xc3");                         // invalid, cut short
        CHECK(tinyformer::displayed_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");               // a lone surrogate
        CHECK(tinyformer::displayed_text("z\xc3\xa9ro \xe2\x82\xac \xe4\xb8\xad") == "z\xc3\xa9ro \xe2\x82\xac \xe4\xb8\xad");
        CHECK(pixels("a\nb") == pixels("a\\x0ab"));
        CHECK(pixels("abc\xe2\x80\xae" "def") == pixels("abc\\u{202e}def"));
    }
    SUBCASE("logical order, left to right: right-to-left letters are not reordered") {
        const std::string alef = "\xd7\x90", bet = "\xd7\x91";
        const tinyformer::TextMask both = draw_text(alef + bet, 1), first = draw_text(alef, 1);
        CHECK(both.coverage != draw_text(bet + alef, 1).coverage);
        // alef is drawn first, at the left, as it is drawn alone
        const Ink alone = ink_of(first), in_line = ink_of(both, 0, first.width - 1);
        CHECK(in_line.total == alone.total);
        CHECK(in_line.left == alone.left);
    }
}

TEST_CASE("Labels as drawn: controls escaped, blank labels as open boxes, long ones cut with an ellipsis") {
    const auto render_with_label = [](const std::string& label) {
        HeatmapSpec spec;
        spec.rows = spec.cols = 1;
        spec.weights = {1.0f};
        spec.row_labels = {label};
        spec.column_labels = {label};
        return tinyformer::render_heatmap(spec).rgb;
    };
    CHECK(render_with_label("\xc3\xa9t\xc3\xa9") != render_with_label("?t?"));  // "été"
    CHECK(render_with_label("a\nb\x7f") == render_with_label("a\\x0ab\\x7f"));
    CHECK(render_with_label("  ") == render_with_label("\xe2\x90\xa3\xe2\x90\xa3"));  // U+2423 OPEN BOX per space
    CHECK(render_with_label("  ") != render_with_label("__"));
    HeatmapSpec spec;
    spec.rows = spec.cols = 1;
    spec.weights = {1.0f};
    spec.column_labels = {"abcdefghijklmnopqrstuvwxyz"};
    const Image cut = tinyformer::render_heatmap(spec);
    spec.column_labels = {"abcdefghijklmno\xe2\x80\xa6"};  // 16 characters, the last "…"
    CHECK(cut.rgb == tinyformer::render_heatmap(spec).rgb);
    spec.column_labels = {"abcdefghijklmnop"};  // 16 characters fit whole
    CHECK(cut.rgb != tinyformer::render_heatmap(spec).rgb);
    spec.column_labels = {};
    spec.row_labels = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"};  // 17 x é: counted in characters
    const Image cut_row = tinyformer::render_heatmap(spec);
    spec.row_labels = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x80\xa6"};
    CHECK(cut_row.rgb == tinyformer::render_heatmap(spec).rgb);
    // a title and axis titles escape too
    spec.title = "t\x1b[2J";
    const Image escaped = tinyformer::render_heatmap(spec);
    spec.title = "t\\x1b[2J";
    CHECK(escaped.rgb == tinyformer::render_heatmap(spec).rgb);
}

TEST_CASE("A turned label reads as its letters: a turned l is tall and thin in the text's frame, a turned _ is flat") {
    // The row axis title is always turned: counter-clockwise, read bottom to
    // top, so the text's up is the picture's left. By hand, from the font:
    // 'l' is a stem from the baseline (16 px below the line's top) up 1556
    // units = 13 px, 184 units = 1.5 px thick; '_' is a bar 1064 units = 9 px
    // long at the bottom of the line (the descender), 143 units = 1.2 px thick.
    const auto turned_ink = [](const std::string& letter) {
        HeatmapSpec spec;
        spec.rows = spec.cols = 1;
        spec.weights = {1.0f};
        spec.row_axis = letter;
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        REQUIRE(layout.row_axis.size() == 1);
        const tinyformer::LabelBox box = layout.row_axis[0];
        const Image image = tinyformer::render_heatmap(spec);
        // the ink as a mask in the picture's frame, relative to the box
        tinyformer::TextMask mask;
        mask.width = box.width;
        mask.height = box.height;
        for (int64_t y = box.y; y < box.y + box.height; ++y)
            for (int64_t x = box.x; x < box.x + box.width; ++x)
                mask.coverage.push_back(static_cast<uint8_t>(255 - image.rgb[static_cast<size_t>(3 * (y * image.width + x) + 1)]));
        return ink_of(mask);
    };
    const Ink l = turned_ink("l"), underscore = turned_ink("_");
    // In the picture: picture x is the text's height (0 = the letters' top), picture y its length.
    CHECK(l.width() >= 12);       // tall in the text's frame
    CHECK(l.height() <= 3);       // thin
    CHECK(l.right <= 16);         // ends at the baseline
    CHECK(underscore.width() <= 3);
    CHECK(underscore.height() >= 8);  // long
    CHECK(underscore.left >= 16);     // below the baseline
}

TEST_CASE("A 1x1 and a 200x200 matrix both render") {
    TempDirectory dir;
    SUBCASE("1x1") {
        HeatmapSpec spec = tinyformer::weights_heatmap(Tensor({1, 1}, {1.0f}).matrix());
        const Picture picture = round_trip(spec, dir);
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(layout.cell_width == 40);
        CHECK(picture.width == layout.width);
        CHECK(picture.height == layout.height);
        CHECK(cell_centre(picture, layout, 0, 0) == tinyformer::viridis(1.0f));
    }
    SUBCASE("200x200, with padding and every fifth label") {
        HeatmapSpec spec = causal_heatmap(200);
        spec.row_padding.assign(200, 0);
        spec.row_padding[199] = 1;
        const Picture picture = round_trip(spec, dir);
        const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
        CHECK(layout.cell_width == 4);
        CHECK(layout.row_step == 5);
        CHECK(layout.column_step == 5);
        CHECK(picture.width == layout.width);
        CHECK(picture.height == layout.height);
        CHECK(seen_cell(picture, layout, 0, 2) == Seen::Masked);
        CHECK(is_weight_cell(picture, layout, 198, 0));
        CHECK(seen_cell(picture, layout, 199, 0) == Seen::Padding);
    }
}

TEST_CASE("A mask picture draws allowed cells in one colour and masked cells hatched") {
    const Mask mask = Mask::prefix_lm({2}, 4);
    HeatmapSpec spec = tinyformer::mask_heatmap(mask, 4, 4);
    CHECK(spec.weights.empty());
    CHECK(spec.allowed == std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1});
    TempDirectory dir;
    const Picture picture = round_trip(spec, dir);
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    for (int64_t l = 0; l < 4; ++l)
        for (int64_t s = 0; s < 4; ++s)
            if (mask.allows(0, 0, l, s))
                CHECK(cell_centre(picture, layout, l, s) == tinyformer::kAllowedColour);
            else
                CHECK(seen_cell(picture, layout, l, s) == Seen::Masked);

    SUBCASE("a slice of a batched mask, and padding flags of one batch row") {
        const Padding padding = Padding::from_lengths({3, 1}, 3);
        const Mask batched = Mask::key_padding(padding);  // [2,1,1,3]
        CHECK(allowed_cells(batched, 2, 3, 1) == std::vector<uint8_t>{1, 0, 0, 1, 0, 0});
        CHECK(tinyformer::padding_flags(padding, 1) == std::vector<uint8_t>{0, 1, 1});
        CHECK_ERROR_CONTAINS(allowed_cells(batched, 2, 3, 2), "batch 2", "[2,1,1,3]");
        CHECK_ERROR_CONTAINS(tinyformer::padding_flags(padding, 2), "batch 2", "[2,3]");
        CHECK_ERROR_CONTAINS(allowed_cells(Mask::causal(3), 4, 4), "[1,1,3,3]");
    }
}

TEST_CASE("A grid draws every panel side by side with one shared key") {
    HeatmapGrid grid;
    grid.title = "decoder layer 0 self-attention, all heads";
    grid.columns = 3;
    for (int head = 0; head < 3; ++head) {
        HeatmapSpec panel = causal_heatmap(5);
        panel.title = std::string("head ").append(std::to_string(head));
        grid.panels.push_back(panel);
    }
    const Image single = tinyformer::render_heatmap(grid.panels.front());
    TempDirectory dir;
    const std::string path = dir.file("grid.png");
    tinyformer::write_heatmap_grid_png(grid, path);
    const Picture picture = read_png(path);
    const Picture one{single.width, single.height, single.rgb};
    // Each panel has 10 masked cells of 40x40 px; the legend's masked swatch (20x20) appears once.
    // Hatching is the ground and the black lines, and black is used by nothing else here.
    const auto hatched = [](const Picture& p) {
        return p.pixels_of(tinyformer::kMaskedColour) + p.pixels_of(tinyformer::kMaskedHatchColour);
    };
    const int64_t swatch = 20 * 20;
    REQUIRE(hatched(one) == 10 * 40 * 40 + swatch);
    CHECK(hatched(picture) == 3 * 10 * 40 * 40 + swatch);
    CHECK(picture.pixels_of(tinyformer::viridis(1.0f)) > 3 * 40 * 40);  // three weight-1 cells and one bar
    CHECK(picture.width > 3 * 5 * 40 + 100);
    CHECK(picture.height < 2 * single.height);  // one row of panels
    const tinyformer::HeatmapSize size = tinyformer::heatmap_grid_size(grid);
    CHECK(size.width == picture.width);
    CHECK(size.height == picture.height);

    SUBCASE("automatic columns: the picture closest to 16:9 that is at most 1600 px wide") {
        // By hand: a panel is about 264 px wide and 268 tall with its gap, the key
        // 176 wide; 1, 2, 3 columns give about 446x816, 710x548, 974x280 px:
        // aspects 0.55, 1.30, 3.5, and 1.30 is the closest to 1.78.
        grid.columns = 0;
        const Image automatic = tinyformer::render_heatmap_grid(grid);
        grid.columns = 2;
        CHECK(automatic.rgb == tinyformer::render_heatmap_grid(grid).rgb);
        // Eight panels of 600 px matrices: never wider than 1600 px while fewer columns fit.
        HeatmapGrid heads;
        for (int head = 0; head < 8; ++head) heads.panels.push_back(causal_heatmap(20));
        const Image eight = tinyformer::render_heatmap_grid(heads);
        CHECK(eight.width <= 1600);
        CHECK(eight.height > eight.width);  // a 600 px matrix and its labels: only two fit in 1600 px
    }

    SUBCASE("columns wrap the panels onto rows") {
        grid.columns = 1;
        const Image stacked = tinyformer::render_heatmap_grid(grid);
        CHECK(stacked.height > 3 * 5 * 40);
        CHECK(stacked.width < picture.width);
    }
    SUBCASE("panels must share one key") {
        grid.panels[1].scale_max = 0.5f;
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap_grid(grid), "panel 1", "colour scale", "one colour bar");
        grid.panels[1] = tinyformer::mask_heatmap(Mask::causal(5), 5, 5);
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap_grid(grid), "panel 1 is a mask picture");
        grid.panels.clear();
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap_grid(grid), "1..64 panels, got 0");
    }
}

TEST_CASE("A spec that does not add up is refused with a message naming the problem") {
    HeatmapSpec spec;
    spec.rows = 2;
    spec.cols = 3;
    spec.weights = {1, 0, 0, 0.5f, 0.5f, 0};
    CHECK_NOTHROW(tinyformer::render_heatmap(spec));
    SUBCASE("sizes") {
        HeatmapSpec bad = spec;
        bad.weights.pop_back();
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "weights has 5 values, expected L*S = 6", "[2,3]");
        bad = spec;
        bad.allowed = {1, 1};
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "allowed has 2 entries, expected 6");
        bad = spec;
        bad.row_padding = {0, 0, 0};
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "row_padding has 3 entries, expected 2");
        bad = spec;
        bad.column_labels = {"a"};
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "column_labels has 1 labels, expected S = 3");
        bad = spec;
        bad.rows = 0;
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "1..1024 rows (L) and columns (S), got [0,3]");
        bad = spec;
        bad.rows = 1025;
        bad.weights.assign(1025 * 3, 0.0f);
        CHECK_ERROR_CONTAINS(tinyformer::heatmap_layout(bad), "got [1025,3]");
    }
    SUBCASE("a non-finite weight in a drawn cell; masked and padded cells are not read") {
        HeatmapSpec bad = spec;
        bad.weights[4] = std::numeric_limits<float>::quiet_NaN();
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "weight at query 1, key 1 is nan");
        bad.allowed = {1, 1, 1, 1, 0, 1};
        CHECK_NOTHROW(tinyformer::render_heatmap(bad));
        bad.allowed = {};
        bad.column_padding = {0, 1, 0};
        CHECK_NOTHROW(tinyformer::render_heatmap(bad));
    }
    SUBCASE("the colour scale") {
        HeatmapSpec bad = spec;
        bad.scale_max = 0.0f;
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "scale_min < scale_max, got 0 .. 0");
        bad.scale_max = std::numeric_limits<float>::infinity();
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap(bad), "finite scale_min < scale_max");
    }
    SUBCASE("a picture too large") {
        HeatmapGrid grid;
        HeatmapSpec big;
        big.rows = big.cols = 1024;
        grid.panels.assign(8, big);
        CHECK_ERROR_CONTAINS(tinyformer::render_heatmap_grid(grid), "megapixels");
    }
}

TEST_CASE("Writing a PNG to a path that cannot be written fails clearly and leaves no file behind") {
    const HeatmapSpec spec = causal_heatmap(4);
    TempDirectory dir;
    const auto entries = [&dir] {
        std::vector<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
            names.push_back(entry.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    };

    SUBCASE("inside a directory that does not exist") {
        const std::string path = dir.file("missing/heatmap.png");
        CHECK_ERROR_CONTAINS(tinyformer::write_heatmap_png(spec, path), "cannot write", path.c_str(),
                             "No such file or directory");
        CHECK(entries().empty());
    }
    SUBCASE("when a directory has the old predictable temporary name, it is left alone") {
        const std::string path = dir.file("heatmap.png");
        const std::string old_name = std::string("heatmap.png.tmp-").append(std::to_string(::getpid()));
        std::filesystem::create_directory(dir.file(old_name));
        tinyformer::write_heatmap_png(spec, path);
        CHECK(entries() == std::vector<std::string>{"heatmap.png", old_name});
        CHECK(std::filesystem::is_empty(dir.file(old_name)));
    }
    SUBCASE("when the target is a directory: refused by name, nothing written") {
        std::filesystem::create_directory(dir.file("target"));
        std::filesystem::create_directory(dir.file("target.png"));
        CHECK_ERROR_CONTAINS(tinyformer::write_heatmap_png(spec, dir.file("target.png")), "cannot write",
                             "target.png: it is a directory");
        CHECK(entries() == std::vector<std::string>{"target", "target.png"});
    }
    SUBCASE("a name that does not end in .png is refused, naming it, and nothing is written") {
        CHECK_ERROR_CONTAINS(tinyformer::write_heatmap_png(spec, dir.file("heatmap.jpg")), "heatmap.jpg does not end in .png");
        CHECK(entries().empty());
    }
    SUBCASE("a good path is replaced whole, with no temporary file left") {
        const std::string path = dir.file("heatmap.png");
        tinyformer::write_heatmap_png(causal_heatmap(30), path);
        tinyformer::write_heatmap_png(spec, path);
        CHECK(entries() == std::vector<std::string>{"heatmap.png"});
        CHECK(read_png(path).width == tinyformer::heatmap_layout(spec).width);
    }
}

// The masks `tinyformer mask KIND` prints with its defaults (T=6, S=5) and
// some flags, as Mask::to_ascii draws them.
TEST_CASE("The mask command's kinds print as the lesson draws them") {
    SUBCASE("causal") {
        CHECK(Mask::causal(6).to_ascii(6, 6) ==
              "q0: k0\n"
              "q1: k0 k1\n"
              "q2: k0 k1 k2\n"
              "q3: k0 k1 k2 k3\n"
              "q4: k0 k1 k2 k3 k4\n"
              "q5: k0 k1 k2 k3 k4 k5\n");
    }
    SUBCASE("prefix-lm, P = T/2 = 3") {
        CHECK(Mask::prefix_lm({3}, 6).to_ascii(6, 6) ==
              "q0: k0 k1 k2\n"
              "q1: k0 k1 k2\n"
              "q2: k0 k1 k2\n"
              "q3: k0 k1 k2 k3\n"
              "q4: k0 k1 k2 k3 k4\n"
              "q5: k0 k1 k2 k3 k4 k5\n");
    }
    SUBCASE("seq2seq --pad 2: decoder self is causal, cross-attention skips the padded source keys") {
        const tinyformer::Seq2SeqMasks masks =
            tinyformer::seq2seq_masks(Padding::from_lengths({6}, 6), Padding::from_lengths({3}, 5));
        CHECK(masks.decoder_self.to_ascii(6, 6) == Mask::causal(6).to_ascii(6, 6));
        CHECK(masks.cross.to_ascii(6, 5) ==
              "q0: k0 k1 k2\n"
              "q1: k0 k1 k2\n"
              "q2: k0 k1 k2\n"
              "q3: k0 k1 k2\n"
              "q4: k0 k1 k2\n"
              "q5: k0 k1 k2\n");
    }
    SUBCASE("padding, the last 2 of 6 positions") {
        const Mask mask = Mask() & Mask::key_padding(Padding::from_lengths({4}, 6));
        CHECK(mask.to_ascii(3, 6) ==
              "q0: k0 k1 k2 k3\n"
              "q1: k0 k1 k2 k3\n"
              "q2: k0 k1 k2 k3\n");
    }
    SUBCASE("local, W = 1") {
        CHECK(Mask::local_window(6, 1).to_ascii(6, 6) ==
              "q0: k0 k1\n"
              "q1: k0 k1 k2\n"
              "q2: k1 k2 k3\n"
              "q3: k2 k3 k4\n"
              "q4: k3 k4 k5\n"
              "q5: k4 k5\n");
    }
    SUBCASE("bidirectional") {
        CHECK(Mask().to_ascii(2, 3) == "q0: k0 k1 k2\nq1: k0 k1 k2\n");
    }
    SUBCASE("causal --pad 2: padded keys vanish from every row, padded queries still see the real keys") {
        const Mask mask = Mask::causal(5) & Mask::key_padding(Padding::from_lengths({3}, 5));
        CHECK(mask.to_ascii(5, 5) ==
              "q0: k0\n"
              "q1: k0 k1\n"
              "q2: k0 k1 k2\n"
              "q3: k0 k1 k2\n"
              "q4: k0 k1 k2\n");
    }
}

TEST_CASE("The diverging palette: blue, near-white in the middle, red; a diverging picture draws 0 white and a grid shares one palette") {
    using tinyformer::diverging;
    CHECK(diverging(0.0f) == Rgb{33, 102, 172});   // ColorBrewer RdBu's blue end
    CHECK(diverging(0.5f) == Rgb{247, 247, 247});  // the middle: the value 0 of a symmetric scale
    CHECK(diverging(1.0f) == Rgb{178, 24, 43});    // its red end
    CHECK(diverging(0.25f) == Rgb{140, 175, 210}); // halfway to white: (33 + 247) / 2, (102 + 247) / 2, (172 + 247) / 2
    CHECK(diverging(-2.0f) == diverging(0.0f));
    CHECK(diverging(9.0f) == diverging(1.0f));
    CHECK(diverging(std::numeric_limits<float>::quiet_NaN()) == diverging(0.5f));

    HeatmapSpec spec;
    spec.rows = 1;
    spec.cols = 3;
    spec.weights = {-1.0f, 0.0f, 1.0f};
    spec.scale_min = -1.0f;
    spec.scale_max = 1.0f;
    spec.palette = tinyformer::Palette::Diverging;
    const Image image = tinyformer::render_heatmap(spec);
    const Picture picture{image.width, image.height, image.rgb};
    const HeatmapLayout layout = tinyformer::heatmap_layout(spec);
    CHECK(cell_centre(picture, layout, 0, 0) == diverging(0.0f));
    CHECK(cell_centre(picture, layout, 0, 1) == diverging(0.5f));
    CHECK(cell_centre(picture, layout, 0, 2) == diverging(1.0f));

    HeatmapGrid grid;
    grid.panels = {spec, spec};
    grid.panels[1].palette = tinyformer::Palette::Viridis;
    CHECK(test_helpers::error_message([&] { tinyformer::render_heatmap_grid(grid); }).find("another palette") !=
          std::string::npos);
}
