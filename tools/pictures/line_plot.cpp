#include "tools/pictures/line_plot.h"

#include "engine/error.h"
#include "tools/pictures/font.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tinyformer {

namespace {

constexpr int64_t kLeft = 70, kRight = 16, kTop = 40, kBottom = 56;
const Rgb kInk{0, 0, 0};
const Rgb kGrid{225, 225, 225};
const Rgb kMarkColour{120, 120, 120};

class Canvas {
public:
    Canvas(int64_t width, int64_t height)
        : image_{width, height, std::vector<uint8_t>(static_cast<size_t>(width * height * 3), 255)} {}

    void set(int64_t x, int64_t y, Rgb colour) { blend(x, y, colour, 255); }
    void blend(int64_t x, int64_t y, Rgb colour, uint8_t coverage) {
        if (coverage == 0 || x < 0 || y < 0 || x >= image_.width || y >= image_.height) return;
        uint8_t* pixel = &image_.rgb[static_cast<size_t>(3 * (y * image_.width + x))];
        const uint8_t channels[3] = {colour.r, colour.g, colour.b};
        for (int i = 0; i < 3; ++i)
            pixel[i] = static_cast<uint8_t>((pixel[i] * (255 - coverage) + channels[i] * coverage + 127) / 255);
    }
    void fill(int64_t x, int64_t y, int64_t width, int64_t height, Rgb colour) {
        for (int64_t row = y; row < y + height; ++row)
            for (int64_t col = x; col < x + width; ++col) set(col, row, colour);
    }
    // A straight segment `thickness` px wide: a square brush stepped along the longer axis.
    void segment(double x0, double y0, double x1, double y1, int64_t thickness, Rgb colour) {
        const int64_t steps = std::max<int64_t>(1, std::llround(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))));
        for (int64_t i = 0; i <= steps; ++i) {
            const double t = static_cast<double>(i) / static_cast<double>(steps);
            const int64_t x = std::llround(x0 + t * (x1 - x0)), y = std::llround(y0 + t * (y1 - y0));
            fill(x - thickness / 2, y - thickness / 2, thickness, thickness, colour);
        }
    }
    // One line of text with its box's top-left corner at (x, y).
    void text(int64_t x, int64_t y, const std::string& text, Rgb colour) {
        const TextMask mask = draw_text(text, 1);
        for (int64_t my = 0; my < mask.height; ++my)
            for (int64_t mx = 0; mx < mask.width; ++mx) blend(x + mx, y + my, colour, mask.at(mx, my));
    }
    // The same, turned to read bottom to top, its box's bottom-left corner at (x, y).
    void text_up(int64_t x, int64_t y, const std::string& text, Rgb colour) {
        const TextMask mask = draw_text(text, 1);
        for (int64_t my = 0; my < mask.height; ++my)
            for (int64_t mx = 0; mx < mask.width; ++mx) blend(x + my, y - 1 - mx, colour, mask.at(mx, my));
    }
    Image take() { return std::move(image_); }

private:
    Image image_;
};

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

}  // namespace

int64_t LinePlotLayout::column(const LinePlotSpec& spec, double x) const {
    return plot_x + std::llround((x - static_cast<double>(spec.x_min)) * static_cast<double>(plot_width - 1) /
                                 static_cast<double>(spec.x_max - spec.x_min));
}

int64_t LinePlotLayout::row(const LinePlotSpec& spec, double y) const {
    const double clamped = std::clamp(y, spec.y_min, spec.y_max);
    return plot_y + std::llround((spec.y_max - clamped) * static_cast<double>(plot_height - 1) / (spec.y_max - spec.y_min));
}

LinePlotLayout line_plot_layout(const LinePlotSpec& spec) {
    if (spec.width < 240 || spec.width > 4000 || spec.height < 180 || spec.height > 4000)
        fail("line plot: size must be 240..4000 x 180..4000 px, got ", spec.width, "x", spec.height);
    if (spec.x_min < 0) fail("line plot: x_min must be >= 0, got ", spec.x_min);
    if (spec.x_min >= spec.x_max) fail("line plot: x_min must be < x_max, got ", spec.x_min, " and ", spec.x_max);
    if (!std::isfinite(spec.y_min) || !std::isfinite(spec.y_max) || spec.y_min >= spec.y_max)
        fail("line plot: y_min must be < y_max (finite), got ", spec.y_min, " and ", spec.y_max);
    if (spec.x_step < 1) fail("line plot: x_step must be >= 1, got ", spec.x_step);
    if (!(spec.y_step > 0) || (spec.y_max - spec.y_min) / spec.y_step > 50)
        fail("line plot: y_step must be > 0 with at most 50 ticks, got ", spec.y_step, " for ", spec.y_min, "..",
             spec.y_max);
    if (spec.lines.empty() || spec.lines.size() > 12) fail("line plot: 1..12 lines, got ", spec.lines.size());
    const size_t points = static_cast<size_t>(spec.x_max - spec.x_min + 1);
    for (const PlotLine& line : spec.lines) {
        if (line.y.size() != points)
            fail("line plot: line '", line.label, "' has ", line.y.size(), " values, x ", spec.x_min, "..", spec.x_max,
                 " needs ", points);
        for (size_t i = 0; i < points; ++i)
            if (!std::isfinite(line.y[i]))
                fail("line plot: line '", line.label, "' has a non-finite value at x = ", spec.x_min + static_cast<int64_t>(i));
    }
    return {kLeft, kTop, spec.width - kLeft - kRight, spec.height - kTop - kBottom};
}

Image render_line_plot(const LinePlotSpec& spec) {
    const LinePlotLayout layout = line_plot_layout(spec);
    Canvas canvas(spec.width, spec.height);
    const int64_t left = layout.plot_x, top = layout.plot_y;
    const int64_t right = left + layout.plot_width - 1, bottom = top + layout.plot_height - 1;
    // Grid lines and numbers: y every y_step from y_min, x every x_step from x_min.
    const int64_t y_ticks = static_cast<int64_t>(std::floor((spec.y_max - spec.y_min) / spec.y_step + 1e-9));
    for (int64_t i = 0; i <= y_ticks; ++i) {
        const double y = spec.y_min + static_cast<double>(i) * spec.y_step;
        const int64_t row = layout.row(spec, y);
        canvas.fill(left, row, layout.plot_width, 1, kGrid);
        const std::string label = number_text(y);
        canvas.text(left - 6 - text_width(label, 1), row - kLineHeight / 2, label, kInk);
    }
    const int64_t first_tick = (spec.x_min + spec.x_step - 1) / spec.x_step * spec.x_step;  // x_min >= 0 here
    for (int64_t x = first_tick; x <= spec.x_max; x += spec.x_step) {
        const int64_t column = layout.column(spec, static_cast<double>(x));
        canvas.fill(column, top, 1, layout.plot_height, kGrid);
        const std::string label = std::to_string(x);
        canvas.text(column - text_width(label, 1) / 2, bottom + 4, label, kInk);
    }
    for (double mark : spec.marks) {  // dashed: 6 px on, 4 off
        const int64_t column = layout.column(spec, mark);
        for (int64_t row = top; row <= bottom; ++row)
            if ((row - top) % 10 < 6) canvas.fill(column, row, 2, 1, kMarkColour);
    }
    // The frame, just outside the plot area.
    canvas.fill(left - 1, top - 1, layout.plot_width + 2, 1, kInk);
    canvas.fill(left - 1, bottom + 1, layout.plot_width + 2, 1, kInk);
    canvas.fill(left - 1, top - 1, 1, layout.plot_height + 2, kInk);
    canvas.fill(right + 1, top - 1, 1, layout.plot_height + 2, kInk);
    // The curves, clipped to the plot area by the clamp in row().
    for (const PlotLine& line : spec.lines)
        for (size_t i = 0; i + 1 < line.y.size(); ++i) {
            const double x0 = static_cast<double>(spec.x_min + static_cast<int64_t>(i));
            canvas.segment(static_cast<double>(layout.column(spec, x0)), static_cast<double>(layout.row(spec, line.y[i])),
                           static_cast<double>(layout.column(spec, x0 + 1)),
                           static_cast<double>(layout.row(spec, line.y[i + 1])), 3, line.colour);
        }
    // Legend, top left inside the plot, on white.
    int64_t widest = 0;
    for (const PlotLine& line : spec.lines) widest = std::max(widest, text_width(line.label, 1));
    const int64_t legend_height = static_cast<int64_t>(spec.lines.size()) * kLineHeight + 8;
    canvas.fill(left + 8, top + 8, widest + 48, legend_height, kBackgroundColour);
    for (size_t i = 0; i < spec.lines.size(); ++i) {
        const int64_t y = top + 12 + static_cast<int64_t>(i) * kLineHeight;
        canvas.fill(left + 14, y + kLineHeight / 2 - 1, 24, 3, spec.lines[i].colour);
        canvas.text(left + 44, y, spec.lines[i].label, kInk);
    }
    // Titles.
    canvas.text((spec.width - text_width(spec.title, 1)) / 2, 10, spec.title, kInk);
    canvas.text(left + (layout.plot_width - text_width(spec.x_axis, 1)) / 2, bottom + 4 + kLineHeight + 4, spec.x_axis,
                kInk);
    canvas.text_up(8, top + (layout.plot_height + text_width(spec.y_axis, 1)) / 2, spec.y_axis, kInk);
    return canvas.take();
}

double tick_step(double span, int64_t most) {
    if (!std::isfinite(span) || !(span > 0)) fail("tick step: span must be > 0 and finite, got ", span);
    if (most < 1 || most > 50) fail("tick step: most must be 1..50, got ", most);
    // The power of ten just below span / most, then the first of 1, 2, 5, 10 times it that is enough.
    const double power = std::pow(10.0, std::floor(std::log10(span / static_cast<double>(most))));
    for (double factor : {1.0, 2.0, 5.0, 10.0})
        if (span / (factor * power) <= static_cast<double>(most) * (1 + 1e-9)) return factor * power;
    return 10.0 * power;  // not reached: 10 * power >= span / most
}

void write_line_plot_png(const LinePlotSpec& spec, const std::string& path) { write_png(render_line_plot(spec), path); }

Rgb line_colour(int64_t index) {
    static const Rgb colours[8] = {{230, 159, 0},  {86, 180, 233}, {0, 158, 115}, {213, 94, 0},
                                   {0, 114, 178},  {204, 121, 167}, {0, 0, 0},    {240, 228, 66}};
    return colours[((index % 8) + 8) % 8];
}

}  // namespace tinyformer
