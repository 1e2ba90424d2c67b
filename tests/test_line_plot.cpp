// Line plots (tools/pictures/line_plot.*): the layout's numbers by hand, a
// line's pixels where the mapping puts them, the frame, and refused specs.

#include "tools/pictures/line_plot.h"

#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

using namespace tinyformer;

namespace {

Rgb pixel(const Image& image, int64_t x, int64_t y) {
    const uint8_t* p = &image.rgb[static_cast<size_t>(3 * (y * image.width + x))];
    return {p[0], p[1], p[2]};
}

// 400 x 300, x 0..10, y 0..2: a flat line at 1 and a rising one 0 -> 2.
LinePlotSpec two_lines() {
    LinePlotSpec spec;
    spec.width = 400;
    spec.height = 300;
    spec.x_min = 0;
    spec.x_max = 10;
    spec.y_min = 0.0;
    spec.y_max = 2.0;
    spec.x_step = 5;
    spec.y_step = 1.0;
    spec.lines.push_back({"flat", std::vector<double>(11, 1.0), Rgb{200, 0, 0}});
    std::vector<double> rising;
    for (int i = 0; i <= 10; ++i) rising.push_back(0.2 * i);
    spec.lines.push_back({"rising", rising, Rgb{0, 0, 200}});
    return spec;
}

}  // namespace

TEST_CASE("line_plot_layout: the plot area and the mapping, worked by hand") {
    const LinePlotSpec spec = two_lines();
    const LinePlotLayout layout = line_plot_layout(spec);
    // Margins 70 left, 16 right, 40 top, 56 bottom: 400 - 86 = 314 wide, 300 - 96 = 204 tall.
    CHECK(layout.plot_x == 70);
    CHECK(layout.plot_y == 40);
    CHECK(layout.plot_width == 314);
    CHECK(layout.plot_height == 204);
    // x = 0 is column 70, x = 10 column 70 + 313 = 383, x = 5 column 70 + round(156.5) = 227.
    CHECK(layout.column(spec, 0) == 70);
    CHECK(layout.column(spec, 10) == 383);
    CHECK(layout.column(spec, 5) == 227);
    // y = 2 (y_max) is row 40, y = 0 row 40 + 203 = 243, y = 1 row 40 + round(101.5) = 142;
    // values outside 0..2 are clamped to the edges.
    CHECK(layout.row(spec, 2.0) == 40);
    CHECK(layout.row(spec, 0.0) == 243);
    CHECK(layout.row(spec, 1.0) == 142);
    CHECK(layout.row(spec, 7.0) == 40);
    CHECK(layout.row(spec, -1.0) == 243);
}

TEST_CASE("render_line_plot draws each line where the layout maps it, framed, on white") {
    const LinePlotSpec spec = two_lines();
    const Image image = render_line_plot(spec);
    CHECK(image.width == 400);
    CHECK(image.height == 300);
    CHECK(image.rgb.size() == 400u * 300u * 3u);
    CHECK(pixel(image, 399, 0) == Rgb{255, 255, 255});  // the corner: background
    CHECK(pixel(image, 69, 150) == Rgb{0, 0, 0});       // the frame just left of the plot area
    CHECK(pixel(image, 384, 150) == Rgb{0, 0, 0});      // and just right of it (383 + 1)
    // The flat line (y = 1, row 142, 3 px wide: rows 141..143) at x = 8 (column 70 + round(250.4) = 320).
    CHECK(pixel(image, 320, 141) == Rgb{200, 0, 0});
    CHECK(pixel(image, 320, 142) == Rgb{200, 0, 0});
    CHECK(pixel(image, 320, 143) == Rgb{200, 0, 0});
    CHECK(pixel(image, 320, 150) != Rgb{200, 0, 0});
    // The rising line, drawn after (on top): at x = 9 (column 70 + round(281.7) = 352), y = 1.8,
    // row 40 + round(0.2 * 101.5) = 60.
    CHECK(pixel(image, 352, 60) == Rgb{0, 0, 200});
}

TEST_CASE("line plots refuse sizes, ranges and values they cannot draw, by name") {
    LinePlotSpec spec = two_lines();
    spec.lines[0].y[3] = std::nan("");
    CHECK(test_helpers::error_message([&] { render_line_plot(spec); }) == "line plot: line 'flat' has a non-finite value at x = 3");
    spec = two_lines();
    spec.lines[1].y.pop_back();
    CHECK(test_helpers::error_message([&] { render_line_plot(spec); }) == "line plot: line 'rising' has 10 values, x 0..10 needs 11");
    spec = two_lines();
    spec.y_max = 0.0;
    CHECK(test_helpers::error_message([&] { render_line_plot(spec); }) == "line plot: y_min must be < y_max (finite), got 0 and 0");
    spec = two_lines();
    spec.width = 100;
    CHECK(test_helpers::error_message([&] { render_line_plot(spec); }) == "line plot: size must be 240..4000 x 180..4000 px, got 100x300");
    spec = two_lines();
    spec.lines.clear();
    CHECK(test_helpers::error_message([&] { render_line_plot(spec); }) == "line plot: 1..12 lines, got 0");
    CHECK(test_helpers::error_message([&] { write_line_plot_png(two_lines(), "/tmp/plot.txt"); }).find("does not end in .png") !=
          std::string::npos);
}

TEST_CASE("tick_step: 1, 2 or 5 times a power of ten, at most `most` steps across the span") {
    // span / most, then the first of 1, 2, 5, 10 times its power of ten that is at least that:
    // 3.5 / 10 = 0.35 -> 0.5 (the committed loss picture: 0..3.5 nats in halves);
    // 1 / 10 = 0.1 -> 0.1; 7 -> 1; 12 -> 2; 25.3 / 10 = 2.53 -> 5; 60 -> 10; 1000 -> 100; 0.04 -> 0.005.
    CHECK(tick_step(3.5, 10) == doctest::Approx(0.5));
    CHECK(tick_step(1.0, 10) == doctest::Approx(0.1));
    CHECK(tick_step(7.0, 10) == doctest::Approx(1.0));
    CHECK(tick_step(12.0, 10) == doctest::Approx(2.0));
    CHECK(tick_step(25.3, 10) == doctest::Approx(5.0));
    CHECK(tick_step(60.0, 10) == doctest::Approx(10.0));
    CHECK(tick_step(1000.0, 10) == doctest::Approx(100.0));
    CHECK(tick_step(0.04, 10) == doctest::Approx(0.005));
    CHECK(tick_step(1e30, 10) == doctest::Approx(1e29));
    CHECK(tick_step(3.0, 1) == doctest::Approx(5.0));
    CHECK(test_helpers::error_message([] { tick_step(0.0, 10); }) == "tick step: span must be > 0 and finite, got 0");
    CHECK(test_helpers::error_message([] { tick_step(INFINITY, 10); }) == "tick step: span must be > 0 and finite, got inf");
    CHECK(test_helpers::error_message([] { tick_step(1.0, 0); }) == "tick step: most must be 1..50, got 0");
}
