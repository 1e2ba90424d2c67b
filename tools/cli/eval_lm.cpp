// `tinyformer eval --task lm`: a language model's mean negative log-likelihood
// per position range on held-out text (models/study/lm_loss.h), one row per
// model, and with --plot the loss at every position as a line plot
// (tools/pictures/line_plot.h). docs/EXTRAPOLATION.md's second experiment.

#include "tools/cli/eval_lm.h"

#include "engine/io/output_file.h"
#include "models/study/lm_loss.h"
#include "tools/cli/terminal_text.h"
#include "tools/pictures/line_plot.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace tinyformer::cli {

namespace {

constexpr uint64_t kMaxDataBytes = 64ULL * 1024 * 1024;
constexpr size_t kMaxPlotLines = 12;  // line_plot.h: 1..12 lines

// The sequences of --data, read once with the first model's vocabulary and
// max_len, no further than `limit` (see read_lm_sequences: a line too long for
// the model is refused as it is read, so memory stays within limit * (max_len + 1)).
std::vector<std::vector<int64_t>> read_data_file(const std::string& path, const Model& model, int64_t limit) {
    const std::string what = "eval: --data " + path;
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) fail(what, ": no such file");
    if (!std::filesystem::is_regular_file(status)) fail(what, ": not a regular file");
    const uint64_t size = std::filesystem::file_size(path, error);
    if (error) fail(what, ": cannot read its size: ", error.message());
    if (size > kMaxDataBytes) fail(what, ": ", size, " bytes, more than the limit of ", kMaxDataBytes, " bytes");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(what, ": cannot open: ", std::strerror(errno));
    std::vector<std::vector<int64_t>> sequences = read_lm_sequences(model, in, limit);
    if (in.bad()) fail(what, ": cannot read it: ", std::strerror(errno));
    return sequences;
}

// The model's name in the table and the legend: its file name without ".safetensors".
std::string short_name(const std::string& path) {
    std::string name = std::filesystem::path(path).filename().string();
    if (name.ends_with(".safetensors")) name.resize(name.size() - std::string(".safetensors").size());
    return name;
}

}  // namespace

const char* const kEvalLmHelp =
    "\n"
    "usage: tinyformer eval MODEL.safetensors... --task lm --data FILE --positions A-B[,C-D...] [--n N]\n"
    "                       [--plot FILE.png]\n"
    "--task lm  language-model loss per position (docs/EXTRAPOLATION.md): FILE holds held-out\n"
    "           sequences, one a line, all of one length T ('#' lines are comments), each\n"
    "           character a token of the model's vocabulary. A decoder_only causal model reads\n"
    "           tokens 0..T-2 at positions 0..T-2; the NLL at position p is\n"
    "           -log softmax(logits[p])[token p+1] in nats (position p predicts token p+1).\n"
    "           Prints one row per model: the mean NLL over each range of positions (both\n"
    "           ends included) and every sequence. A range past max_len - 1 or past T - 2,\n"
    "           reversed (9-3) or empty is refused. FILE is read once, with the first model's\n"
    "           vocabulary (every model must have the same), a line of more than max_len + 1\n"
    "           tokens refused as it is read.\n"
    "  --n N    the first N sequences only (default: all)\n"
    "  --plot FILE.png  the mean NLL at every position of the ranges' span (at least two positions),\n"
    "                  one line per model (at most 12), a dashed line after the last trained\n"
    "                  position (the models' train_max_len)\n";

int eval_lm(const ParsedArguments& parsed) {
    if (parsed.positional().empty()) throw UsageError("eval: expected a MODEL file (see 'tinyformer eval --help')");
    for (const char* flag : {"--lengths", "--beam", "--seed", "--per-token"})
        if (parsed.has(flag)) throw UsageError(std::string("eval: ") + flag + " is for the reverse, sort and dates tasks, not lm");
    if (!parsed.has("--data")) throw UsageError("eval: --task lm needs --data FILE (held-out sequences, one a line)");
    if (!parsed.has("--positions")) throw UsageError("eval: --task lm needs --positions A-B[,C-D...]");
    std::vector<PositionRange> ranges;
    try {
        ranges = parse_position_ranges(parsed.value("--positions"));
    } catch (const Error& error) {
        throw UsageError("eval: --" + error.message());
    }
    const std::string plot = parsed.value_or("--plot", "");
    if (parsed.has("--plot") && !is_stream_output(plot) && (!plot.ends_with(".png") || plot.ends_with("/.png") || plot == ".png"))
        throw UsageError("eval: the picture path '" + plot + "' does not end in .png; tinyformer writes PNG pictures, name them NAME.png");
    if (!plot.empty()) {
        std::vector<std::string> inputs = parsed.positional();
        inputs.push_back(parsed.value("--data"));
        check_outputs("eval", inputs, {plot});
    }
    int64_t first = ranges[0].first, last = ranges[0].last;  // the span the plot shows
    for (const PositionRange& range : ranges) first = std::min(first, range.first), last = std::max(last, range.last);
    // Everything the picture needs that is known now is checked now, before any model runs.
    if (!plot.empty() && first == last)
        throw UsageError("eval: --plot draws the loss across positions, and --positions " + parsed.value("--positions") +
                         " is a single position; give at least two (e.g. " + std::to_string(first) + "-" +
                         std::to_string(first + 1) + ")");
    if (!plot.empty() && parsed.positional().size() > kMaxPlotLines)
        throw UsageError("eval: --plot draws at most " + std::to_string(kMaxPlotLines) + " models (one line each), got " +
                         std::to_string(parsed.positional().size()));
    const bool all = !parsed.has("--n");
    const int64_t n = all ? std::numeric_limits<int64_t>::max() : parsed.integer("--n", 1, 1, 1000000);

    std::vector<std::string> names;
    std::vector<std::vector<double>> rows, curves;
    std::vector<std::vector<int64_t>> sequences;  // read once, with the first model's vocabulary
    std::vector<std::string> vocab;
    int64_t trained = 0;
    for (const std::string& path : parsed.positional()) {
        const Model model = Model::load(path);
        for (const PositionRange& range : ranges)
            if (range.last > model.config.max_len - 1)
                fail("eval: --positions ", position_range_text(range), " goes past ", path, "'s last position ",
                     model.config.max_len - 1, " (max_len ", model.config.max_len, ")");
        if (sequences.empty()) {
            sequences = read_data_file(parsed.value("--data"), model, n);
            vocab = model.text.input_vocab();
            if (!all && n > static_cast<int64_t>(sequences.size()))
                fail("eval: --n ", n, " but ", parsed.value("--data"), " has ", sequences.size(), " sequences");
        } else if (model.text.input_vocab() != vocab) {
            fail("eval: ", path, "'s vocabulary differs from ", parsed.positional()[0],
                 "'s; --task lm reads --data once, so every model must have the same one");
        }
        const std::vector<double> per_position = mean_nll_per_position(model, sequences);
        rows.push_back(mean_nll_per_range(per_position, ranges));
        curves.emplace_back(per_position.begin() + first, per_position.begin() + last + 1);
        names.push_back(short_name(path));
        trained = std::max(trained, model.text.train_max_len);
    }
    const int64_t count = static_cast<int64_t>(sequences.size()), length = static_cast<int64_t>(sequences[0].size());
    std::printf("mean NLL (nats) per position range, %lld sequences of %lld tokens in %s (position p predicts "
                "token p+1):\n",
                static_cast<long long>(count), static_cast<long long>(length),
                terminal_text(parsed.value("--data")).c_str());
    size_t width = 5;
    for (const std::string& name : names) width = std::max(width, terminal_text(name).size());
    std::printf("%-*s", static_cast<int>(width), "model");
    for (const PositionRange& range : ranges) std::printf("  %7s", position_range_text(range).c_str());
    std::printf("\n");
    for (size_t m = 0; m < names.size(); ++m) {
        std::printf("%-*s", static_cast<int>(width), terminal_text(names[m]).c_str());
        for (double mean : rows[m]) std::printf("  %7.4f", mean);
        std::printf("\n");
    }
    if (!plot.empty()) {
        LinePlotSpec spec;
        spec.title = "mean NLL per position on " + std::to_string(count) + " held-out sequences";
        spec.x_axis = "position p (predicts token p+1)";
        spec.y_axis = "mean NLL (nats)";
        spec.width = 900;
        spec.height = 520;
        spec.x_min = first;
        spec.x_max = last;
        spec.x_step = 1;  // a power of two giving at most 10 ticks
        while ((last - first) / spec.x_step >= 10) spec.x_step *= 2;
        double top = 0.0;
        for (size_t m = 0; m < names.size(); ++m) {
            spec.lines.push_back({names[m], curves[m], line_colour(static_cast<int64_t>(m))});
            for (double y : curves[m]) top = std::max(top, y);
        }
        // 0 up to the highest mean (at least 1 nat), in at most 10 round steps: 0.5 for 2.5..5 nats.
        const double span = std::max(1.0, top);
        spec.y_min = 0.0;
        spec.y_step = tick_step(span, 10);
        spec.y_max = std::ceil(span / spec.y_step - 1e-9) * spec.y_step;
        // The models' train_max_len (checkpoint metadata): the dashed line after the last trained position.
        if (trained > first && trained <= last) spec.marks.push_back(static_cast<double>(trained) - 0.5);
        write_line_plot_png(spec, plot);
        std::printf("wrote %s\n", terminal_text(plot).c_str());
    }
    return 0;
}

}  // namespace tinyformer::cli
