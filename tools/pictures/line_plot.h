// Line plots — a few curves y(x) over whole-number x, e.g. a language model's
// loss per position, one line per model (docs/EXTRAPOLATION.md). PNG through
// the heatmaps' writer (tools/pictures/heatmap.h: write_png, the one safe writer).
//
// Layout, in pixels from the top-left corner (line_plot_layout computes it):
//   the plot area   plot_x .. plot_x + plot_width - 1 across, plot_y ..
//                   plot_y + plot_height - 1 down, framed by a 1-px black line
//                   just outside it; left margin 70 (the y numbers and the
//                   turned y title), right 16, top 40 (the title), bottom 56
//                   (the x numbers and the x title)
//   x -> column     plot_x + round((x - x_min) * (plot_width - 1) / (x_max - x_min))
//   y -> row        plot_y + round((y_max - y) * (plot_height - 1) / (y_max - y_min)),
//                   y clamped to y_min..y_max (so y_max is the top row)
//   ticks           x at the multiples of x_step, y every y_step from y_min,
//                   numbers beside them
//   marks           a dashed grey vertical line at each x in `marks`
//                   (e.g. the last trained position)
//   legend          at the plot's top left: per line a 24-px stroke of its
//                   colour and its label
// Curves are straight segments between neighbouring points, 3 px wide,
// drawn in the order given (the last on top).
#pragma once

#include "tools/pictures/heatmap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tinyformer {

struct PlotLine {
    std::string label;
    std::vector<double> y;  // y[i] is the value at x = x_min + i (finite)
    Rgb colour;
};

struct LinePlotSpec {
    std::string title, x_axis, y_axis;
    int64_t width = 800, height = 480;  // 240..4000 x 180..4000
    int64_t x_min = 0, x_max = 1;       // 0 <= x_min < x_max; every line has x_max - x_min + 1 values
    double y_min = 0.0, y_max = 1.0;    // y_min < y_max, finite
    int64_t x_step = 1;                 // >= 1
    double y_step = 1.0;                // > 0, at most 50 ticks
    std::vector<double> marks;          // x positions of dashed vertical lines
    std::vector<PlotLine> lines;        // 1..12
};

struct LinePlotLayout {
    int64_t plot_x = 0, plot_y = 0, plot_width = 0, plot_height = 0;
    int64_t column(const LinePlotSpec& spec, double x) const;  // see "x -> column"
    int64_t row(const LinePlotSpec& spec, double y) const;     // see "y -> row"
};

// Error naming what is wrong with a spec (sizes, ranges, steps, a line's
// length or a non-finite value).
LinePlotLayout line_plot_layout(const LinePlotSpec& spec);
Image render_line_plot(const LinePlotSpec& spec);
void write_line_plot_png(const LinePlotSpec& spec, const std::string& path);

// A tick step for an axis from 0 (or any start) across `span` > 0 (finite):
// the smallest of 1, 2 or 5 times a power of ten giving at most `most` steps
// (1..50), e.g. span 3.5, most 10 -> 0.5; span 30 -> 5; span 1 -> 0.1. So any
// finite range gets a few round numbers. Error unless span > 0 and finite.
double tick_step(double span, int64_t most);

// Eight colours told apart by colour-blind readers (Okabe and Ito), for lines.
Rgb line_colour(int64_t index);

}  // namespace tinyformer
