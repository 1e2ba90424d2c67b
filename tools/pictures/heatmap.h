// Heatmaps — attention weights and masks drawn as PNG pictures, made to be
// read on a slide and printed in black and white.
//
// A heatmap shows one [L, S] matrix: row l is query l, column s is key s,
// the value is the weight query l gives key s. Each cell is drawn as
//   padding  cross-hatched: black lines in both diagonals on light grey —
//            row l or column s is a padding position (padding wins);
//   masked   hatched: black lines in one diagonal ("/") on light grey — the
//            mask forbids query l to attend key s: "not allowed" is not
//            "weight 0";
//   a weight the viridis colour of (w - scale_min) / (scale_max - scale_min),
//            clamped to [0, 1]: dark purple = scale_min ... yellow = scale_max.
// In greyscale (luminance 0.299 R + 0.587 G + 0.114 B) every viridis entry
// lies in 30.5 .. 215.4 and a weight cell is one flat colour, while a hatched
// cell mixes pixels of luminance 0 (the lines) and 240 (the ground), both
// outside that range: no viridis colour prints like a hatched cell. The
// legend says which hatch is which. A spec without weights is a mask
// picture: allowed cells are one viridis teal, masked and padding hatched.
// A prefix-LM boundary (prefix = P > 0) is a black-white-black line after
// row P-1 and after column P-1: the keys left of it are the prefix.
//
// Layout, in pixels (heatmap_layout computes it), at an integer scale
// s = 1..8 (spec.scale; a grid's scale for all its panels). Text is one
// module, tools/pictures/font.h: DejaVu Sans, anti-aliased, a line 20s px tall
// (capitals about 12.5s px); every length is s times its length at s = 1.
//   cells       per axis: cell_width = clamp(matrix_size / S, 4, 40) * s,
//               cell_height = clamp(matrix_size / L, 4, 40) * s (integer
//               division; matrix_size is 600 unless the spec says less), so
//               that a short axis keeps its cells and labels large;
//   rows        labelled every row_step = ceil(20s / cell_height) rows;
//   columns     decided per label: horizontal, centred on its column, when
//               it is at most cell_width - 2s wide or narrower than a line
//               (20s); else turned 90 degrees (read bottom to top) as one run
//               of text, a line wide. Every column_step-th column is labelled,
//               column_step = ceil(F / cell_width) for the widest footprint F
//               (a horizontal label's width + 2s, a turned one's 20s): so one
//               wide label turns only itself, and "l" stays an upright "l".
//               Thinning is per axis.
//   axis titles row_axis left of the row labels (turned), column_axis above
//               the column labels, each wrapped into lines at word breaks
//               (at the matrix's height or 360s, its width or 480s).
//   title       above everything, wrapped at the picture's width without it
//               (or 640s if that is wider; a word too long is broken between
//               characters), at most 3 lines, the last then ending in "…";
//               a 30s px band, 20s more per further line. So no title makes a
//               picture wider, and none makes it more than 70s px taller.
// Axis titles keep to 3 lines the same way.
// Margins are 12s, gaps between labels and matrix 6s, between the matrix and
// the key 20s. The key right of the matrix is the colour bar (16s px wide,
// max(L*cell, 128s) px tall, scale_max at the top, with the scale_min,
// middle and scale_max numbers), then a legend of the hatches (and the
// prefix line) in use; a mask picture's key is the legend alone.
//
// Palettes (spec.palette): Viridis for weights (0..1, above), or Diverging
// for signed values such as activation patching's effects: diverging(t) runs
// from blue (t = 0) through near-white (t = 0.5) to red (t = 1), each half a
// straight line in RGB, so with scale_min = -m and scale_max = m the value 0
// is the white middle and the sign is the hue. Its ends and middle print as
// different greys (luminance 89, 247, 72), so sign is read from hue, size
// from depth: a diverging picture is for colour slides. Panels of a grid
// share one palette as they share one key.
//
// Labels: row_labels are the query tokens (left), column_labels the key
// tokens (top), drawn as they are (tools/pictures/font.h: any UTF-8; control
// characters, bidi controls and invalid bytes escaped as "\x1b", "\u{202e}";
// a character the font lacks as a replacement box; logical order, left to
// right, so nothing reorders a label) — special tokens as "<bos>", "<eos>",
// "<pad>". A label of spaces is drawn as one "␣" (U+2423) per space, and
// labels are cut to 16 characters, the last shown as "…".
// Without labels, rows are "q0", "q1", ... and columns "k0", "k1", ...
//
// Files are written by engine/io/output_file.h: the PNG is encoded in memory
// (stbi_write_png_to_func), then written to an unpredictable temporary name
// next to the target and renamed over it; on any failure tinyformer::Error
// names the path and the reason, and no file is left behind. A path that does not end in
// ".png" is refused, naming it (the bytes are PNG whatever the name says).
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

enum class Palette { Viridis, Diverging };

struct HeatmapSpec {
    std::string title;          // one line, composed by the caller (model, layer, head, mask kind)
    int64_t rows = 0, cols = 0; // L queries, S keys: 1..1024 each
    std::vector<float> weights; // [L, S] row-major; empty = a mask picture
    std::vector<uint8_t> allowed;                       // [L, S], 0 = masked; empty = all allowed
    std::vector<uint8_t> row_padding, column_padding;   // [L] / [S], 1 = padding; empty = none
    std::vector<std::string> row_labels, column_labels; // [L] / [S]; empty = q0.. / k0..
    float scale_min = 0.0f, scale_max = 1.0f;           // the colour bar's range (weights only)
    std::string row_axis, column_axis;  // axis titles, e.g. "query: decoder input ..."; empty = none
    int64_t prefix = 0;                 // prefix-LM boundary after P rows and columns; 0 = none
    int64_t scale = 1;                  // integer scale of text and cells, 1..8 (single pictures)
    int64_t matrix_size = 600;          // the matrix's target side at scale 1, 40..600 px
    Palette palette = Palette::Viridis; // the weights' colours (see Palettes above)
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
// placed left to right in `columns` columns, each with its own title and
// labels, under the grid title, with ONE key at the right. columns = 0 is
// automatic: of the column counts that need fewer rows than one column
// fewer would, the one whose picture's width : height is closest to 16:9
// (by |log|) among those at most 1600s px wide (one column if none is), so
// that the picture fits a slide: 4 heads of a toy model two by two.
// Panels must all have weights (and then the same scale) or all be masks.
struct HeatmapGrid {
    std::string title;
    std::vector<HeatmapSpec> panels;
    int64_t columns = 0;
    int64_t scale = 1;  // for every panel (their own scale is not used)
};

// A drawn label's box, in pixels from the picture's top-left corner.
struct LabelBox {
    int64_t x = 0, y = 0, width = 0, height = 0;
    bool turned = false;  // a column label read bottom to top
};

// Where things go (see the formulas above), in pixels from the top-left corner.
struct HeatmapLayout {
    int64_t cell_width = 0, cell_height = 0, font_scale = 0;  // font_scale: the text's scale, the picture's s
    int64_t row_step = 0, column_step = 0;        // every row_step-th row / column_step-th column labelled
    bool columns_rotated = false;                 // some column label reads bottom to top (see its box)
    std::vector<LabelBox> row_labels, column_labels, row_axis, column_axis;  // drawn boxes
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

// The size a picture would have, from the spec alone (nothing is drawn):
// what a command checks against kMaxHeatmapPixels before it does any work.
// Error for a spec that rendering would refuse for any other reason.
struct HeatmapSize {
    int64_t width = 0, height = 0;
    int64_t pixels() const { return width * height; }
};
constexpr int64_t kMaxHeatmapPixels = 64LL * 1024 * 1024;
HeatmapSize heatmap_size(const HeatmapSpec& spec);
HeatmapSize heatmap_grid_size(const HeatmapGrid& grid);

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
Rgb diverging(float t);  // t in [0, 1], clamped (NaN: 0.5); blue -> near-white -> red (see Palettes)
Rgb palette_colour(Palette palette, float t);
double luminance(Rgb colour);  // 0.299 R + 0.587 G + 0.114 B, as greyscale print sees it
extern const Rgb kMaskedColour;       // masked hatching: the ground
extern const Rgb kMaskedHatchColour;  // masked hatching: the lines
extern const Rgb kPaddingColour;      // padding cross-hatching: the ground
extern const Rgb kPaddingHatchColour; // padding cross-hatching: the lines
extern const Rgb kPrefixLineColour;   // the prefix-LM boundary's outer lines (its middle is white)
extern const Rgb kAllowedColour;      // mask pictures: an allowed cell
extern const Rgb kBackgroundColour;   // white

}  // namespace tinyformer
