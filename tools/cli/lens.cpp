// `tinyformer lens`: the logit lens, direct logit attribution and the residual
// stream's norms on a trained model (models/study/lens.h).

#include "engine/io/output_file.h"
#include "models/study/lens.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"
#include "tools/explore/study_json.h"
#include "tools/pictures/heatmap.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace tinyformer::cli {

namespace {

const char* kLensHelp =
    "usage: tinyformer lens MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                       [--top K] [--attribute TOKEN | --attribute-id N] [--output FILE.png|FILE.json] [--unk]\n"
    "\n"
    "The logit lens: what the residual stream would predict after each layer. The model\n"
    "reads TEXT and its greedy output (or --target), teacher-forced; after the embedding\n"
    "and after each layer of the stack that feeds the head (decoder-only: layers.i; an\n"
    "encoder-decoder: decoder.i), the model's own final norm and unembedding are applied\n"
    "to the stream at every position. For each position it prints, per layer, the --top K\n"
    "tokens (default 5, 1..100) with their probabilities, and the rank and probability of\n"
    "the answer: the model's own next token there (the argmax of its real logits). The\n"
    "last layer's lens is the model's logits, exactly. Then the L2 norm of the stream per\n"
    "layer and position.\n"
    "--attribute TOKEN: the direct contribution of the embedding, each head of each\n"
    "attention call, each FFN and the biases to TOKEN's logit at the answer position (the\n"
    "one predicting the first output token), through the final norm frozen at the actual\n"
    "stream (its mean and scale taken as constants, as TransformerLens does); the parts\n"
    "sum to the logit but for float rounding. Pre-LN models only: in a post-LN model the\n"
    "stream after the last layer is normed inside each layer and is not a sum of parts.\n"
    "--output FILE.json writes everything above; FILE.png draws two panels, layers x\n"
    "positions: the answer's probability and the stream's norm / the largest (one 0..1 bar).\n"
    "--ids, --target-ids and --attribute-id give tokens as ids (also for a model without a\n"
    "vocabulary).\n"
    "Example: tinyformer lens data/models/reverse-causal.safetensors abc=\n";

std::string fixed(double value, int digits) {
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

void print_report(std::FILE* out, const std::string& model_name, const LensReport& report) {
    std::fprintf(out, "lens: %s on \"%s\" -> \"%s\"; the stack %s, %zu layers\n", terminal_text(model_name).c_str(),
                 terminal_text(report.text).c_str(), terminal_text(report.target).c_str(), report.stack.c_str(),
                 report.layers.size() - 1);
    for (size_t p = 0; p < report.positions.size(); ++p) {
        std::fprintf(out, "\nposition %zu reads %s, the model answers %s%s\n", p,
                     token_for_table(report.positions[p]).c_str(), token_for_table(report.answer_labels[p]).c_str(),
                     static_cast<int64_t>(p) == report.answer_position ? " (the answer position)" : "");
        std::fprintf(out, "  %-12s %5s %7s  %s\n", "layer", "rank", "p", "top tokens (p)");
        for (size_t l = 0; l < report.layers.size(); ++l) {
            const LensCell& cell = report.cells[l][p];
            std::string top;
            for (const LensToken& token : cell.top)
                top.append(top.empty() ? "" : " ").append(token_for_table(token.label)).append(" ").append(fixed(token.probability, 3));
            std::fprintf(out, "  %-12s %5lld %7.4f  %s\n", report.layers[l].c_str(),
                         static_cast<long long>(cell.answer_rank), cell.answer_probability, top.c_str());
        }
    }
    std::fprintf(out, "\nresidual stream norm ||x||_2 (rows: layers, columns: positions)\n%-12s", "");
    for (const std::string& label : report.positions) std::fprintf(out, " %7s", token_for_table(label).c_str());
    for (size_t l = 0; l < report.layers.size(); ++l) {
        std::fprintf(out, "\n%-12s", report.layers[l].c_str());
        for (double norm : report.norms[l]) std::fprintf(out, " %7.2f", norm);
    }
    std::fprintf(out, "\n");
    if (!report.attribution) return;
    const Attribution& a = *report.attribution;
    std::fprintf(out, "\ndirect logit attribution of %s at position %lld (final norm %s frozen at s = %.4g)\n",
                 token_for_table(a.label).c_str(), static_cast<long long>(a.position), a.norm.c_str(), a.scale);
    for (const AttributionPart& part : a.parts) std::fprintf(out, "  %-28s %10.4f\n", part.name.c_str(), part.logit);
    std::fprintf(out, "  %-28s %10.4f\n  %-28s %10.4f\n", "sum of the parts", a.sum, "the model's logit", a.logit);
}

HeatmapSpec panel(const std::string& title, const LensReport& report, const std::vector<float>& values) {
    HeatmapSpec spec;
    spec.title = title;
    spec.rows = static_cast<int64_t>(report.layers.size());
    spec.cols = static_cast<int64_t>(report.positions.size());
    spec.weights = values;  // 0..1: the panels of a grid share one colour bar
    spec.row_labels = report.layers;
    for (size_t p = 0; p < report.positions.size(); ++p)
        spec.column_labels.push_back(std::to_string(p).append(" ").append(report.positions[p]));
    spec.row_axis = "layer";
    spec.column_axis = "position (the token it reads)";
    return spec;
}

HeatmapGrid lens_picture(const std::string& model_name, const LensReport& report) {
    std::vector<float> probability, norm;
    float largest = 0.0f;
    for (size_t l = 0; l < report.layers.size(); ++l)
        for (size_t p = 0; p < report.positions.size(); ++p) {
            probability.push_back(static_cast<float>(report.cells[l][p].answer_probability));
            norm.push_back(static_cast<float>(report.norms[l][p]));
            largest = std::max(largest, norm.back());
        }
    if (largest > 0.0f)
        for (float& each : norm) each /= largest;
    char norm_title[64];
    std::snprintf(norm_title, sizeof norm_title, "residual stream norm ||x||_2 / %.4g", largest);
    HeatmapGrid grid;
    grid.title = model_name + ": \"" + report.text + "\" -> \"" + report.target + "\": the logit lens";
    grid.panels.push_back(panel("p(the model's answer) through the lens", report, probability));
    grid.panels.push_back(panel(norm_title, report, norm));
    return grid;
}

}  // namespace

int lens_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--target", "--target-ids", "--ids", "--top", "--attribute", "--attribute-id", "--output"},
                                 {"--unk"}, "lens");
    if (parsed.help()) {
        std::printf("%s", kLensHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("lens: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer lens --help')");
    const std::string output = parsed.value_or("--output", "");
    const auto ends_with = [&](const char* suffix) {
        const std::string s(suffix);
        return output.size() > s.size() && output.compare(output.size() - s.size(), s.size(), s) == 0;
    };
    if (!output.empty() && !ends_with(".png") && !ends_with(".json"))
        throw UsageError("lens: --output must end in .png or .json, got '" + terminal_text(output) + "'");
    LensOptions options;
    options.top = parsed.integer("--top", 5, 1, 100);
    const std::string& path = parsed.positional()[0];
    if (!output.empty()) check_outputs("lens", {path}, {output});
    Model model = Model::load(path);
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "lens");
    options.target = target_tokens(parsed, model, "lens");
    if (parsed.has("--attribute") && parsed.has("--attribute-id"))
        throw UsageError("lens: give the token to attribute as --attribute or as --attribute-id, not both");
    if (parsed.has("--attribute-id")) {  // an id of the output vocabulary
        const int64_t V = model.encoder_decoder ? model.config.tgt_vocab_size : model.config.vocab_size;
        const int64_t id = parsed.integer("--attribute-id", 0, std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max());
        if (id < 0 || id >= V) fail("lens: --attribute-id ", id, " is outside the output vocabulary 0..", V - 1);
        options.attribute = id;
    }
    if (parsed.has("--attribute")) {
        const std::string& token = parsed.value("--attribute");
        const ModelText text(model);
        std::vector<int64_t> ids;
        try {
            ids = text.encode_output(token);
        } catch (const Error& error) {
            fail("lens: --attribute ", terminal_text(token), ": ", error.message());
        }
        if (ids.size() != 1)
            fail("lens: --attribute takes one token of the output vocabulary; '", terminal_text(token), "' is ", ids.size(),
                 " tokens");
        options.attribute = ids[0];
    }
    const std::string model_name = std::filesystem::path(path).stem().string();
    const LensReport report = logit_lens(model, tokens, options);
    if (ends_with(".json")) {
        write_file(output, lens_report_json(model_name, report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                   "lens");
    } else if (!output.empty()) {
        const HeatmapGrid grid = lens_picture(model_name, report);
        const HeatmapSize size = heatmap_grid_size(grid);
        if (size.pixels() > kMaxHeatmapPixels)
            fail("lens: the picture would be ", size.width, "x", size.height, " pixels, more than the limit of ",
                 kMaxHeatmapPixels >> 20, " megapixels; nothing was written: choose a shorter input");
        write_heatmap_grid_png(grid, output);
    }
    print_report(!output.empty() && is_standard_output(output) ? stderr : stdout, model_name, report);
    if (!output.empty()) std::fprintf(stderr, "tinyformer lens: wrote %s\n", terminal_text(output).c_str());
    return 0;
}

}  // namespace tinyformer::cli
