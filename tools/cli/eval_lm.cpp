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

namespace tinyformer::cli {

namespace {

constexpr uint64_t kMaxDataBytes = 64ULL * 1024 * 1024;

std::string read_data_file(const std::string& path) {
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
    std::string text(size, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(size)) || in.peek() != std::char_traits<char>::eof())
        fail(what, ": cannot read its ", size, " bytes (file changed while reading?)");
    return text;
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
    "           reversed (9-3) or empty is refused.\n"
    "  --n N    the first N sequences only (default: all)\n"
    "  --plot FILE.png  the mean NLL at every position of the ranges' span, one line per model,\n"
    "                  a dashed line after the last trained position (the models' train_max_len)\n";

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
    const std::string text = read_data_file(parsed.value("--data"));
    int64_t first = ranges[0].first, last = ranges[0].last;  // the span the plot shows
    for (const PositionRange& range : ranges) first = std::min(first, range.first), last = std::max(last, range.last);

    std::vector<std::string> names;
    std::vector<std::vector<double>> rows, curves;
    int64_t count = 0, length = 0, trained = 0;
    for (const std::string& path : parsed.positional()) {
        const Model model = Model::load(path);
        for (const PositionRange& range : ranges)
            if (range.last > model.config.max_len - 1)
                fail("eval: --positions ", position_range_text(range), " goes past ", path, "'s last position ",
                     model.config.max_len - 1, " (max_len ", model.config.max_len, ")");
        std::vector<std::vector<int64_t>> sequences = read_lm_sequences(model, text);
        const int64_t n = parsed.integer("--n", static_cast<int64_t>(sequences.size()), 1, 1000000);
        if (n > static_cast<int64_t>(sequences.size()))
            fail("eval: --n ", n, " but ", parsed.value("--data"), " has ", sequences.size(), " sequences");
        sequences.resize(static_cast<size_t>(n));
        count = n;
        length = static_cast<int64_t>(sequences[0].size());
        const std::vector<double> per_position = mean_nll_per_position(model, sequences);
        rows.push_back(mean_nll_per_range(per_position, ranges));
        curves.emplace_back(per_position.begin() + first, per_position.begin() + last + 1);
        names.push_back(short_name(path));
        trained = std::max(trained, model.text.train_max_len);
    }
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
        spec.y_min = 0.0;
        spec.y_max = std::max(1.0, std::ceil(top * 2.0) / 2.0);  // the next half nat up
        spec.y_step = 0.5;
        // The models' train_max_len (checkpoint metadata): the dashed line after the last trained position.
        if (trained > first && trained <= last) spec.marks.push_back(static_cast<double>(trained) - 0.5);
        write_line_plot_png(spec, plot);
        std::printf("wrote %s\n", terminal_text(plot).c_str());
    }
    return 0;
}

}  // namespace tinyformer::cli
