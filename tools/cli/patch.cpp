// `tinyformer patch`: activation patching (models/study/patching.h) — the
// corrupted input run again with one clean activation put back, per layer and
// position; a table, a JSON file or a diverging heatmap.

#include "tools/pictures/heatmap.h"
#include "engine/io/output_file.h"
#include "models/study/patching.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"
#include "tools/explore/study_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>
#include <filesystem>

namespace tinyformer::cli {

namespace {

const char* kPatchHelp =
    "usage: tinyformer patch MODEL.safetensors CLEAN CORRUPTED [--target TEXT | --target-ids 4,9]\n"
    "                        [--what resid|attn_out|mlp_out|head] [--output FILE.png|FILE.json] [--scale N]\n"
    "       tinyformer patch MODEL.safetensors --ids 5,17,3 --corrupted-ids 5,18,3 [...]\n"
    "\n"
    "Activation patching: which layer and position carry the answer? CLEAN and CORRUPTED\n"
    "must have the same number of tokens as the model reads them (with <bos> and the prompt\n"
    "suffix: give both with the suffix or both without). Both are teacher-forced on one\n"
    "target (--target, or CLEAN's greedy output; a decoder-only model without --target\n"
    "reads its input only) and the answer row is the first predicted position where their\n"
    "argmax differs (encoder-decoder: the first output token where the two greedy outputs\n"
    "differ; decoder-only: the next token after the input). There\n"
    "  LD     = logit(clean answer) - logit(corrupted answer)\n"
    "  effect = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted)\n"
    "where LD_patched is LD of the corrupted run with ONE activation row (one layer, one\n"
    "position) replaced by the clean run's: 1 = the clean answer fully restored, 0 = no\n"
    "effect. --what chooses the activation (default resid):\n"
    "  resid     the residual stream after the embedding and after each layer\n"
    "  attn_out  each self-attention's output before it is added (decoder layers: also\n"
    "            cross-attention's, its own row)\n"
    "  mlp_out   each FFN's output before it is added\n"
    "  head      each head's slice of Concat(heads) before W_O, one row per call and head\n"
    "Encoder rows run over the source positions, decoder rows over the decoder's input\n"
    "(<bos> + target), a decoder-only model's over input + target.\n"
    "Without --output a table is printed. --output FILE.json writes\n"
    "  {\"metric\": \"normalised_logit_diff\", \"clean\": {...}, \"corrupted\": {...}, \"what\": ...,\n"
    "   \"layers\": [names], \"positions\": [tokens], \"effect\": [[...]], ...}\n"
    "(encoder-decoder: also \"source_positions\"; each row's effects run over its own stack's\n"
    "positions: \"layer_source\" says which). --output FILE.png draws layers x positions\n"
    "(blue < 0 < red, white = 0, the scale symmetric about 0; encoder-decoder: two panels;\n"
    "rows shortened: dec1 cross = decoder.1.cross_attn.output, layer0 out = layers.0.output).\n"
    "--scale N draws text and cells N times larger (1..8). --unk reads an unknown character\n"
    "as <unk>. Refused: inputs of different lengths, and inputs with the same answer at\n"
    "every predicted position (LD_clean == LD_corrupted: nothing to restore).\n"
    "A patch is a counterfactual on one input pair: it shows where this answer is carried,\n"
    "not how the model computes it in general.\n";

std::vector<int64_t> one_input(const ParsedArguments& parsed, size_t index, const std::string& ids_flag_name,
                               const Model& model, std::vector<std::string>& warnings) {
    const bool text = parsed.positional().size() > index;
    try {
        const std::vector<int64_t> tokens =
            text ? text_tokens(ModelText(model), parsed.positional()[index], parsed.has("--unk"), "patch", warnings)
                 : ids_flag(parsed, ids_flag_name, "patch");
        model_input(model, tokens);  // refuses an id outside the vocabulary first
        return tokens;
    } catch (const UsageError&) {
        throw;
    } catch (const Error& error) {  // which of the two inputs it is
        fail("patch: ", text ? (index == 1 ? "CLEAN" : "CORRUPTED") : ids_flag_name, ": ", error.message());
    }
}

void print_report(std::FILE* out, const Model& model, const std::string& model_name, const PatchReport& report) {
    const ModelText text(model);
    std::fprintf(out, "patch: %s, %s; clean \"%s\" vs corrupted \"%s\"\n", terminal_text(model_name).c_str(),
                 patch_what_name(report.what), terminal_text(text.decode_input(report.clean.input)).c_str(),
                 terminal_text(text.decode_input(report.corrupted.input)).c_str());
    if (model.encoder_decoder && !report.clean.greedy.empty())
        std::fprintf(out, "greedy outputs \"%s\" vs \"%s\"; teacher-forced on \"%s\"\n",
                     terminal_text(text.decode_output(report.clean.greedy)).c_str(),
                     terminal_text(text.decode_output(report.corrupted.greedy)).c_str(),
                     terminal_text(text.decode_output(report.target)).c_str());
    else if (model.encoder_decoder)
        std::fprintf(out, "teacher-forced on \"%s\"\n", terminal_text(text.decode_output(report.target)).c_str());
    std::fprintf(out, "answer row %lld: clean %s vs corrupted %s; LD_clean %.4f, LD_corrupted %.4f\n",
                 static_cast<long long>(report.answer_row), token_for_table(text.output_label(report.clean.answer)).c_str(),
                 token_for_table(text.output_label(report.corrupted.answer)).c_str(), report.clean.logit_diff,
                 report.corrupted.logit_diff);
    std::fprintf(out, "effect = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted): 1 restored, 0 none\n");
    bool source_header = false, stream_header = false;
    for (size_t r = 0; r < report.rows.size(); ++r) {
        const bool source = report.rows[r].source;
        bool& printed = source ? source_header : stream_header;
        if (!printed) {
            printed = true;
            std::fprintf(out, "\n%-28s", source ? "source position:" : "position:");
            for (const std::string& label : source ? report.source_positions : report.positions)
                std::fprintf(out, " %7s", token_for_table(label).c_str());
            std::fprintf(out, "\n");
        }
        std::fprintf(out, "%-28s", report.rows[r].name.c_str());
        for (double value : report.effect[r]) std::fprintf(out, " %7.3f", value);
        std::fprintf(out, "\n");
    }
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A row's name short enough for a picture's label (16 characters): "decoder.1.cross_attn.h3" -> "dec1 cross h3".
std::string short_label(std::string name) {
    const std::pair<const char*, const char*> words[] = {
        {"encoder.", "enc"}, {"decoder.", "dec"}, {"layers.", "layer"}, {"_embed.output", " embed"},
        {"embed.output", "embed"}, {".self_attn.output", " self"}, {".cross_attn.output", " cross"},
        {".self_attn.h", " self h"}, {".cross_attn.h", " cross h"}, {".ffn.output", " ffn"}, {".output", " out"}};
    for (const auto& [from, to] : words)
        if (const size_t at = name.find(from); at != std::string::npos) name.replace(at, std::strlen(from), to);
    return name;
}

// One panel per stack of positions (encoder-decoder: source, then decoder).
HeatmapGrid patch_picture(const Model& model, const std::string& model_name, const PatchReport& report, int64_t scale) {
    const ModelText text(model);
    double largest = 0.0;
    for (const std::vector<double>& row : report.effect)
        for (double value : row) largest = std::max(largest, std::fabs(value));
    const auto bound = static_cast<float>(std::max(largest, 1.0));  // symmetric about 0, at least -1..1
    HeatmapGrid grid;
    grid.scale = scale;
    grid.title = model_name + ": patching " + patch_what_name(report.what) + ", \"" +
                 text.decode_input(report.clean.input) + "\" into \"" + text.decode_input(report.corrupted.input) +
                 "\": effect on logit(" + text.output_label(report.clean.answer) + ") - logit(" +
                 text.output_label(report.corrupted.answer) + ") at row " + std::to_string(report.answer_row) +
                 " (1 = restored)";
    for (bool source : {true, false}) {
        HeatmapSpec spec;
        spec.palette = Palette::Diverging;
        spec.scale_min = -bound;
        spec.scale_max = bound;
        spec.column_labels = source ? report.source_positions : report.positions;
        spec.cols = static_cast<int64_t>(spec.column_labels.size());
        for (size_t r = 0; r < report.rows.size(); ++r) {
            if (report.rows[r].source != source) continue;
            spec.row_labels.push_back(short_label(report.rows[r].name));
            for (double value : report.effect[r]) spec.weights.push_back(static_cast<float>(value));
        }
        spec.rows = static_cast<int64_t>(spec.row_labels.size());
        if (spec.rows == 0) continue;
        spec.title = source ? "encoder (source positions)" : model.encoder_decoder ? "decoder (<bos> + target)" : "positions";
        spec.row_axis = "patched activation";
        spec.column_axis = "position";
        grid.panels.push_back(std::move(spec));
    }
    return grid;
}


}  // namespace

int patch_command(const Arguments& args) {
    const ParsedArguments parsed(args,
                                 {"--target", "--target-ids", "--ids", "--corrupted-ids", "--what", "--output", "--scale"},
                                 {"--unk"}, "patch");
    if (parsed.help()) {
        std::printf("%s", kPatchHelp);
        return 0;
    }
    const size_t given = parsed.positional().size();
    const bool ids = parsed.has("--ids") || parsed.has("--corrupted-ids");
    if (!(given == 3 && !ids) && !(given == 1 && parsed.has("--ids") && parsed.has("--corrupted-ids")))
        throw UsageError("patch: expected MODEL CLEAN CORRUPTED, or MODEL --ids ... --corrupted-ids ... "
                         "(see 'tinyformer patch --help')");
    const std::string output = parsed.value_or("--output", "");
    const bool json = ends_with(output, ".json"), picture = ends_with(output, ".png");
    if (!output.empty() && !json && !picture)
        throw UsageError("patch: --output must end in .png or .json, got '" + terminal_text(output) + "'");
    const int64_t scale = parsed.integer("--scale", 1, 1, 8);
    const PatchWhat what = [&] {
        try {
            return parse_patch_what(parsed.value_or("--what", "resid"));
        } catch (const Error& error) {
            throw UsageError(error.message());
        }
    }();
    const std::string& path = parsed.positional()[0];
    if (!output.empty()) check_outputs("patch", {path}, {output});
    Model model = Model::load(path);
    std::vector<std::string> warnings;
    const std::vector<int64_t> clean = one_input(parsed, 1, "--ids", model, warnings);
    const std::vector<int64_t> corrupted = one_input(parsed, 2, "--corrupted-ids", model, warnings);
    const std::optional<std::vector<int64_t>> target = target_tokens(parsed, model, "patch");
    const std::string model_name = std::filesystem::path(path).stem().string();
    // The picture's size is known, but for its colour key, once the rows and positions are: with
    // every effect 0 the key is at its narrowest (-1..1), so a picture too large then is refused
    // before the rows x positions patched passes. An effect beyond +-1 only widens the key's
    // labels: checked again once drawn.
    const auto refuse_large_picture = [&](const PatchReport& sized) {
        const HeatmapSize size = heatmap_grid_size(patch_picture(model, model_name, sized, scale));
        if (size.pixels() > kMaxHeatmapPixels)
            fail("patch: the picture would be ", size.width, "x", size.height, " pixels, more than the limit of ",
                 kMaxHeatmapPixels >> 20, " megapixels; nothing was written: choose a smaller --scale or a shorter input");
    };
    const PatchReport report =
        activation_patching(model, clean, corrupted, target, what, picture ? BeforePatching(refuse_large_picture) : nullptr);
    if (json) {
        write_file(output, patch_report_json(model, model_name, report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "patch");
    } else if (picture) {
        refuse_large_picture(report);
        write_heatmap_grid_png(patch_picture(model, model_name, report, scale), output);
    }
    defer_warnings(warnings);
    print_report(!output.empty() && is_standard_output(output) ? stderr : stdout, model, model_name, report);
    if (!output.empty()) std::fprintf(stderr, "tinyformer patch: wrote %s\n", terminal_text(output).c_str());
    return 0;
}

}  // namespace tinyformer::cli
