// `tinyformer probe`: attention weights beside two interventions — head
// ablation and token perturbation — on a trained model (models/study/probe.h).

#include "tools/pictures/heatmap.h"
#include "engine/io/output_file.h"
#include "models/study/probe.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace tinyformer::cli {

namespace {

const char* kProbeHelp =
    "usage: tinyformer probe MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                        [--with TOKEN | --with-id N] [--output FILE.png] [--scale N] [--unk]\n"
    "\n"
    "Is a high attention weight an explanation? Scores the model's output on TEXT (its\n"
    "greedy output, or --target) by the teacher-forced log-probability of the target and\n"
    "<eos>, log p, then intervenes and reports each change d log p beside the weights:\n"
    "  head ablation       every head of every attention call in turn: its output (its\n"
    "                      slice of Concat(heads), before W_O) set to 0 at every position.\n"
    "                      Beside it: the head's mean max weight (the mean over its queries\n"
    "                      of the largest weight; 1 = each query looks at one key) and the\n"
    "                      key it gives the most weight in total, with that weight's share.\n"
    "  token perturbation  every input token in turn replaced by <unk>, or by --with TOKEN\n"
    "                      (encoder-decoder: the source; decoder-only: the prompt's\n"
    "                      characters after <bos>). <unk> never occurred in training: an\n"
    "                      ordinary token (--with a) is the gentler counterfactual.\n"
    "                      Beside it: the token's attention share, the mean over layers,\n"
    "                      heads and scored queries of the weight it receives (encoder-\n"
    "                      decoder: cross-attention; decoder-only: self-attention from the\n"
    "                      positions that predict the output).\n"
    "'changed' marks an intervention after which the greedy output differs.\n"
    "--output FILE.png draws the weights and the effects side by side (viridis, 0..1):\n"
    "heads (mean max weight | |d log p| / the largest) and tokens (share / the largest |\n"
    "|d log p| / the largest). --png is another name for --output; a name not ending in\n"
    ".png is refused. --scale N draws text and cells N times larger (1..8, default 1).\n"
    "A picture over 64 megapixels is refused, and then nothing is printed or written; when\n"
    "its heads and input tokens alone make it too large, before the probe runs.\n"
    "Decoder-only models read TEXT as the prompt: probe data/models/reverse-causal.safetensors abc=\n"
    "--ids, --target-ids and --with-id give the input, the target and the replacement as\n"
    "token ids (for any model, also one without a vocabulary: labels then show the ids).\n"
    "--unk reads a character of TEXT outside the vocabulary as <unk>, with a warning (as `run`).\n"
    "The model's config needs bos_id and eos_id (the target is scored with <eos>).\n"
    "A weight is one head's coefficient of its value mixture (lesson 10.3, section 11).\n";


std::string shown(const std::string& output) { return output.empty() ? "(empty)" : terminal_text(output); }

void print_report(std::FILE* out, const std::string& model_name, const ProbeReport& report) {
    std::fprintf(out, "probe: %s on \"%s\"\n", terminal_text(model_name).c_str(), terminal_text(report.text).c_str());
    std::fprintf(out, "target \"%s\" (%s); log p(target, <eos>) = %.4g over %lld tokens\n", terminal_text(report.target).c_str(),
                report.target_given ? "given" : "the greedy output", report.log_prob,
                static_cast<long long>(report.scored_tokens));
    if (report.target_given) std::fprintf(out, "greedy output \"%s\"\n", terminal_text(report.greedy_output).c_str());

    std::fprintf(out, "\nhead ablation: the head's output set to 0 before W_O at every position\n");
    std::fprintf(out, "%-20s %4s %9s  %-16s %10s  %-8s %s\n", "attention", "head", "mean max", "top key (share)", "d log p",
                "changed", "greedy output");
    for (const HeadProbe& head : report.heads) {
        char share[32];  // a string, not a fixed buffer: a long token must not be cut inside a character
        std::snprintf(share, sizeof share, " (%.2f)", head.top_key_share);
        const std::string top = token_for_table(head.top_key) + "@" + std::to_string(head.top_key_position) + share;
        std::fprintf(out, "%-20s %4lld %9.3f  %-16s %10.4f  %-8s %s\n", head.attention.c_str(),
                    static_cast<long long>(head.head), head.mean_max_weight, top.c_str(), head.delta_log_prob,
                    head.output_changed ? "changed" : "", shown(head.greedy_output).c_str());
    }

    std::fprintf(out, "\ntoken perturbation: the token replaced by %s; share = mean %s weight it receives\n",
                terminal_text(report.replacement).c_str(), report.share_source.c_str());
    std::fprintf(out, "%4s  %-6s %7s %10s  %-8s %s\n", "pos", "token", "share", "d log p", "changed", "greedy output");
    for (const TokenProbe& token : report.tokens)
        std::fprintf(out, "%4lld  %-6s %7.3f %10.4f  %-8s %s\n", static_cast<long long>(token.position),
                    token_for_table(token.token).c_str(), token.attention_share, token.delta_log_prob,
                    token.output_changed ? "changed" : "", shown(token.greedy_output).c_str());
}

// "|d log p| / 3.21": effects divided by the largest, so that they share the 0..1 colour bar.
std::vector<float> scaled(const std::vector<double>& values, double* largest) {
    *largest = 0.0;
    for (double value : values) *largest = std::max(*largest, std::fabs(value));
    std::vector<float> out;
    for (double value : values) out.push_back(*largest > 0.0 ? static_cast<float>(std::fabs(value) / *largest) : 0.0f);
    return out;
}

// rows x 2 weights: column 0 the weight, column 1 the effect.
HeatmapSpec two_columns(const std::string& title, const std::vector<float>& weight, const std::vector<float>& effect,
                        std::vector<std::string> labels) {
    HeatmapSpec spec;
    spec.title = title;
    spec.rows = static_cast<int64_t>(weight.size());
    spec.cols = 2;
    for (size_t i = 0; i < weight.size(); ++i) {
        spec.weights.push_back(weight[i]);
        spec.weights.push_back(effect[i]);
    }
    spec.row_labels = std::move(labels);
    spec.column_labels = {"weight", "effect"};
    return spec;
}

// The picture: heads and tokens, each weight beside its effect.
HeatmapGrid probe_picture(const std::string& model_name, const ProbeReport& report, int64_t scale) {
    std::vector<float> head_weight;
    std::vector<double> head_effect;
    std::vector<std::string> head_labels;
    for (const HeadProbe& head : report.heads) {
        head_weight.push_back(static_cast<float>(head.mean_max_weight));
        head_effect.push_back(head.delta_log_prob);
        std::string label = head.stack == "encoder" ? "enc" : head.stack == "decoder" ? "dec" : "layer";
        label.append(std::to_string(head.layer));
        if (head.stack == "decoder") label.append(" ").append(head.kind);
        head_labels.push_back(label.append(" h").append(std::to_string(head.head)));
    }
    std::vector<double> token_share, token_effect;
    std::vector<std::string> token_labels;
    for (const TokenProbe& token : report.tokens) {
        token_share.push_back(token.attention_share);
        token_effect.push_back(token.delta_log_prob);
        token_labels.push_back(std::to_string(token.position).append(" ").append(token.token));
    }
    double head_largest = 0.0, share_largest = 0.0, token_largest = 0.0;
    const std::vector<float> head_scaled = scaled(head_effect, &head_largest);
    const std::vector<float> share_scaled = scaled(token_share, &share_largest);
    const std::vector<float> token_scaled = scaled(token_effect, &token_largest);
    char head_title[96], token_title[96];
    std::snprintf(head_title, sizeof head_title, "heads (mean max weight, effect/%.3g)", head_largest);
    std::snprintf(token_title, sizeof token_title, "tokens (share/%.3g, effect/%.3g)", share_largest, token_largest);
    HeatmapGrid grid;
    grid.scale = scale;
    grid.title = model_name;
    grid.title.append(": \"").append(report.text).append("\" -> \"").append(report.target);
    grid.title.append("\": weight vs effect = abs(d log p) of zeroing the head / replacing the token by ");
    grid.title.append(report.replacement);
    grid.panels.push_back(two_columns(head_title, head_weight, head_scaled, head_labels));
    if (!report.tokens.empty()) grid.panels.push_back(two_columns(token_title, share_scaled, token_scaled, token_labels));
    return grid;
}

// Before the probe runs: the picture of a report with every head and every
// input token the probe will have (their effects not known yet, the output
// not known yet, so the title is shorter) is a lower bound of the real one;
// above the limit, nothing needs to run.
void refuse_picture_before_the_probe(const Model& model, const std::string& model_name, const std::vector<int64_t>& tokens,
                                     int64_t scale) {
    const ModelText text(model);
    ProbeReport bound;
    bound.text = text.decode_input(tokens);  // as the report will show it
    const ModelConfig& c = model.config;
    const auto add_heads = [&](const char* stack, const char* kind, int64_t layers) {
        for (int64_t layer = 0; layer < layers; ++layer)
            for (int64_t head = 0; head < c.nhead; ++head) {
                HeadProbe probe;
                probe.stack = stack, probe.kind = kind, probe.layer = layer, probe.head = head;
                bound.heads.push_back(probe);
            }
    };
    if (c.arch == Architecture::EncoderDecoder) {
        add_heads("encoder", "self", c.num_encoder_layers);
        add_heads("decoder", "self", c.num_decoder_layers);
        add_heads("decoder", "cross", c.num_decoder_layers);
    } else {
        add_heads("layers", "self", c.num_layers);
    }
    constexpr size_t kMaxRows = 1024;  // a heatmap's rows (tools/pictures/heatmap.h)
    if (tokens.size() > kMaxRows || bound.heads.size() > kMaxRows)
        fail("probe: the picture shows one row per input token and per head, at most ", kMaxRows, "; this input has ",
             tokens.size(), " tokens and the model ", bound.heads.size(), " heads; nothing was run or written: probe a "
             "shorter input, or leave out --output");
    for (size_t i = 0; i < tokens.size(); ++i)
        bound.tokens.push_back({static_cast<int64_t>(i), text.input_label(tokens[i]), 0.0, 0.0, "", false});
    const HeatmapSize size = heatmap_grid_size(probe_picture(model_name, bound, scale));
    if (size.pixels() > kMaxHeatmapPixels)
        fail("probe: the picture would be at least ", size.width, "x", size.height, " pixels, more than the limit of ",
             kMaxHeatmapPixels >> 20, " megapixels (", bound.heads.size(), " heads, ", tokens.size(),
             " input tokens at --scale ", scale, "; known before the probe); nothing was run or written: choose a "
             "smaller --scale or a shorter input");
}

}  // namespace

int probe_command(const Arguments& args) {
    const ParsedArguments parsed(
        args, {"--target", "--target-ids", "--ids", "--with", "--with-id", "--output", "--png", "--scale"}, {"--unk"}, "probe");
    if (parsed.help()) {
        std::printf("%s", kProbeHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("probe: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer probe --help')");
    if (parsed.has("--with") && parsed.has("--with-id"))
        throw UsageError("probe: give the replacement as --with or as --with-id, not both");
    const std::string picture = parsed.picture_output("--png");
    const int64_t scale = parsed.integer("--scale", 1, 1, 8);
    const std::string& path = parsed.positional()[0];
    if (!picture.empty()) check_outputs("probe", {path}, {picture});
    Model model = Model::load(path);
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "probe");
    ProbeOptions options;
    options.target = target_tokens(parsed, model, "probe");
    options.replacement = parsed.value_or("--with", options.replacement);
    if (parsed.has("--with-id")) options.replacement_id = parsed.integer("--with-id", 0, 0, INT64_MAX);
    const std::string model_name = std::filesystem::path(path).stem().string();
    if (!picture.empty())
        refuse_picture_before_the_probe(model, model_name, tokens, scale);
    const ProbeReport report = probe(model, tokens, options);
    if (!picture.empty()) {  // first: a failure prints no table
        const HeatmapGrid grid = probe_picture(model_name, report, scale);
        const HeatmapSize size = heatmap_grid_size(grid);
        if (size.pixels() > kMaxHeatmapPixels)
            fail("probe: the picture would be ", size.width, "x", size.height, " pixels, more than the limit of ",
                 kMaxHeatmapPixels >> 20, " megapixels (", report.heads.size(), " heads, ", report.tokens.size(),
                 " input tokens at --scale ", scale, "); nothing was written: choose a smaller --scale or a shorter input");
        write_heatmap_grid_png(grid, picture);
    }
    // The report on stdout, unless the picture itself goes there (--output /dev/stdout).
    print_report(!picture.empty() && is_standard_output(picture) ? stderr : stdout, model_name, report);
    if (!picture.empty()) std::fprintf(stderr, "tinyformer probe: wrote %s\n", terminal_text(picture).c_str());
    return 0;
}

}  // namespace tinyformer::cli
