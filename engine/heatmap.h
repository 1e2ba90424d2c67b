// Heatmaps — attention weights and masks drawn as PNG pictures.
//
// A heatmap shows one [L, S] matrix: row l is query l, column s is key s,
// the value is the weight query l gives key s. Each cell is drawn as
//   padding  light grey with dark diagonal hatching — row l or column s is a
//            padding position (padding wins over everything else);
//   masked   plain mid grey — the mask forbids query l to attend key s, so
//            "not allowed" never looks like "weight 0";
//   a weight the viridis colour of (w - scale_min) / (scale_max - scale_min),
//            clamped to [0, 1]: dark purple = scale_min ... yellow = scale_max.
// Viridis (perceptually uniform; every entry has a channel spread max-min of
// at least 69 out of 255) never produces a grey, so the three kinds cannot be
// confused. A spec without weights is a mask picture: allowed cells are one
// viridis teal, with the same masked and padding greys.
//
// Layout, in pixels (heatmap_layout computes it). Text is stb_easy_font at
// an integer scale f; at f = 1 a capital is 7 px tall and a line 10 px.
//   cell        = clamp(600 / max(L, S), 4, 40)  (integer division): up to
//                 15x15 cells are 40 px, 60x60 10 px, 150x150 and more 4 px;
//   label_step  = ceil(10 / cell): with cells of 10 px or more every row and
//                 column is labelled, otherwise rows and columns 0, k, 2k, ...
//   f           = 2 when cell >= 20, else 1; the title is always at scale 2.
//   width  = 12 + row_label_band + S*cell + 20 + key_width + 12,
//            or 12 + the title's width + 12 if that is wider
//   height = 12 + title_band + column_label_band + max(L*cell, key_height) + 12
// where row_label_band = the widest drawn row label + 6; column labels stand
// upright, one character under the other, ending 6 px above the matrix, so
// column_label_band = (most characters in a drawn column label) * 10f + 6;
// title_band = 30 with a title, else 0. The key right of the matrix is the
// colour bar (16 px wide, max(L*cell, 128) px tall, scale_max at the top,
// with the scale_min, middle and scale_max numbers), then a legend of the
// greys in use; a mask picture's key is the legend alone.
//
// Labels: row_labels are the query tokens (left), column_labels the key
// tokens (top), drawn as given — special tokens as "<bos>", "<eos>", "<pad>".
// The font is ASCII only: a byte outside 32..126 (a UTF-8 character counts
// once) is drawn as '?', a label of spaces as '_' per space, and labels are
// cut to 16 (rows) / 8 (columns) characters, the last shown as '~'.
// Without labels, rows are "q0", "q1", ... and columns "k0", "k1", ...
//
// Files are written atomically: the PNG is encoded in memory
// (stbi_write_png_to_func), written to "<path>.tmp-<pid>" next to the target
// and renamed over it; on any failure tinyformer::Error names the path and
// the reason, and no file is left behind.
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

struct HeatmapSpec {
    std::string title;          // one line, composed by the caller (model, layer, head, mask kind)
    int64_t rows = 0, cols = 0; // L queries, S keys: 1..1024 each
    std::vector<float> weights; // [L, S] row-major; empty = a mask picture
    std::vector<uint8_t> allowed;                       // [L, S], 0 = masked; empty = all allowed
    std::vector<uint8_t> row_padding, column_padding;   // [L] / [S], 1 = padding; empty = none
    std::vector<std::string> row_labels, column_labels; // [L] / [S]; empty = q0.. / k0..
    float scale_min = 0.0f, scale_max = 1.0f;           // the colour bar's range (weights only)
};

// A weight heatmap of one [L, S] matrix, e.g. one head's slice of the
// attention weights [B, H, L, S]: weights_heatmap(w.matrix(b * H + h)).
HeatmapSpec weights_heatmap(ConstMatrixView weights);
// A mask picture of the (batch, head) slice of `mask`, broadcast to [L, S].
HeatmapSpec mask_heatmap(const Mask& mask, int64_t queries, int64_t keys, int64_t batch = 0, int64_t head = 0);
// The [L, S] allowed flags of a mask slice (for HeatmapSpec::allowed).
std::vector<uint8_t> allowed_cells(const Mask& mask, int64_t queries, int64_t keys, int64_t batch = 0,
                                   int64_t head = 0);
// The [T] padding flags of batch row `batch` (for row_padding / column_padding).
std::vector<uint8_t> padding_flags(const Padding& padding, int64_t batch);
// The largest weight in a cell drawn with the colour map (not masked, not
// padding), or 0 when there is none: `spec.scale_max = largest_shown_weight(spec)`
// stretches the colour bar to the data.
float largest_shown_weight(const HeatmapSpec& spec);

// Several heatmaps in one picture, e.g. every head of a layer: panels are
// placed left to right in `columns` columns (0 = min(panels, 4)), each with
// its own title and labels, under the grid title, with ONE key at the right.
// Panels must all have weights (and then the same scale) or all be masks.
struct HeatmapGrid {
    std::string title;
    std::vector<HeatmapSpec> panels;
    int64_t columns = 0;
};

// Where things go (see the formulas above), in pixels from the top-left corner.
struct HeatmapLayout {
    int64_t cell = 0, label_step = 0, font_scale = 0;
    int64_t matrix_x = 0, matrix_y = 0;           // top-left corner of cell (0, 0)
    int64_t matrix_width = 0, matrix_height = 0;  // S*cell, L*cell
    int64_t key_x = 0, key_width = 0, key_height = 0;  // the key's top is matrix_y
    int64_t width = 0, height = 0;                // the whole picture
};
HeatmapLayout heatmap_layout(const HeatmapSpec& spec);

// An 8-bit RGB picture, rows top to bottom: pixel (x, y) is rgb[3*(y*width + x) ...].
struct Image {
    int64_t width = 0, height = 0;
    std::vector<uint8_t> rgb;
};

// Rendering checks the spec and throws Error naming what is wrong (sizes that
// disagree with rows/cols, a non-finite weight in a drawn cell, scale_min >=
// scale_max, more than 1024 rows or columns, a picture over 64 megapixels).
Image render_heatmap(const HeatmapSpec& spec);
Image render_heatmap_grid(const HeatmapGrid& grid);
// PNG encode and atomic write (see above).
void write_png(const Image& image, const std::string& path);
void write_heatmap_png(const HeatmapSpec& spec, const std::string& path);
void write_heatmap_grid_png(const HeatmapGrid& grid, const std::string& path);

// The colours, for tests and legends.
struct Rgb {
    uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb&) const = default;
};
Rgb viridis(float t);  // t in [0, 1], clamped; the 256-entry table, nearest entry
extern const Rgb kMaskedColour;       // plain mid grey
extern const Rgb kPaddingColour;      // hatching background
extern const Rgb kPaddingHatchColour; // hatching lines
extern const Rgb kAllowedColour;      // mask pictures: an allowed cell
extern const Rgb kBackgroundColour;   // white

}  // namespace tinyformer
