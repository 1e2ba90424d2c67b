// `tinyformer attention`: a trained model's attention, drawn as PNG heatmaps.

#include "engine/heatmap.h"
#include "models/attention_maps.h"
#include "tools/cli/inputs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tinyformer::cli {

namespace {

const char* kAttentionHelp =
    "usage: tinyformer attention MODEL.safetensors (TEXT | --ids 5,17,3) --out DIR\n"
    "                            [--target TEXT | --target-ids 4,9] [--layer L] [--head H]\n"
    "                            [--kind self|cross|all] [--average-heads] [--grids-only]\n"
    "\n"
    "Runs the model once on TEXT (or on token ids, --ids: for any model, also one without\n"
    "a vocabulary; labels then show the ids) and writes its attention weights as PNG\n"
    "heatmaps into DIR (created if missing):\n"
    "  STACK-layerL-KIND-headH.png   one picture per stack, layer, kind and head\n"
    "  STACK-layerL-KIND-heads.png   all heads of that layer side by side\n"
    "  index.md                      what every file shows\n"
    "STACK is encoder / decoder (encoder-decoder models) or layers (decoder-only and\n"
    "encoder-only models).\n"
    "What the model reads:\n"
    "  encoder-decoder  the encoder reads TEXT; the decoder reads <bos> + the target, so\n"
    "                   decoder row t is the position that predicts target token t\n"
    "  decoder-only     <bos> + TEXT (+ the model's prompt suffix) + the continuation\n"
    "  encoder-only     TEXT, bidirectional; no target\n"
    "--target TEXT      the target the decoder reads (teacher forcing) instead of the\n"
    "                   model's own greedy output; for decoder-only models, the\n"
    "                   continuation after the prompt. --target-ids gives it as ids.\n"
    "                   A model whose config has no bos_id or eos_id cannot generate: an\n"
    "                   encoder-decoder one then needs a target (its decoder reads the\n"
    "                   target as given), a decoder-only one is drawn on its prompt.\n"
    "Rows are queries, columns keys, labelled with their tokens; the colour bar runs\n"
    "from 0 to 1 (viridis). Cells the mask forbids are plain grey: 'not allowed' is not\n"
    "'weight 0'. Weights are per head, never averaged, unless --average-heads is given\n"
    "(then one picture per layer and kind, titled 'average of H heads').\n"
    "--grids-only writes only the all-heads pictures.\n"
    "Cell size adapts to the length: cell = clamp(600 / max(L, S), 4, 40) px; with cells\n"
    "under 10 px only every ceil(10/cell)-th row and column is labelled.\n"
    "A high weight is not an explanation: see lesson 10.3, section 11.\n";

std::string picture_title(const std::string& model_name, const AttentionMap& map, const std::string& head) {
    std::string title = model_name;
    title.append("  ").append(map.stack).append(" layer ").append(std::to_string(map.layer)).append("  ");
    title.append(map.kind == "self" ? "self-attention" : "cross-attention").append("  ").append(head);
    return title.append("  mask: ").append(map.mask_name);
}

// One head's [L, S] slice, or the mean over heads, as a heatmap spec.
HeatmapSpec head_picture(const AttentionMap& map, int64_t head, bool average) {
    const int64_t H = map.weights.dim(1), L = map.weights.dim(2), S = map.weights.dim(3);
    HeatmapSpec spec;
    if (average) {
        Tensor mean({L, S});
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < L * S; ++i) mean.data()[i] += map.weights.data()[h * L * S + i] / static_cast<float>(H);
        spec = weights_heatmap(mean.matrix());
    } else {
        spec = weights_heatmap(map.weights.matrix(head));
    }
    spec.allowed = allowed_cells(map.mask, L, S);
    spec.row_labels = map.query_tokens;
    spec.column_labels = map.key_tokens;
    return spec;
}

}  // namespace

int attention_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--out", "--target", "--target-ids", "--ids", "--layer", "--head", "--kind"},
                                 {"--average-heads", "--grids-only"}, "attention");
    if (parsed.help()) {
        std::printf("%s", kAttentionHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("attention: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer attention --help')");
    const std::string kind = parsed.value_or("--kind", "all");
    if (kind != "self" && kind != "cross" && kind != "all")
        throw UsageError("attention: --kind must be self, cross or all, got '" + kind + "'");
    const int64_t only_layer = parsed.integer("--layer", -1, 0, 1 << 20);
    const int64_t only_head = parsed.integer("--head", -1, 0, 1 << 20);
    const bool average = parsed.has("--average-heads");
    const bool grids_only = parsed.has("--grids-only");
    if ((average && only_head >= 0) || (average && grids_only) || (grids_only && only_head >= 0))
        throw UsageError("attention: --head, --average-heads and --grids-only exclude each other");
    const std::string& out = parsed.value("--out");

    const std::string& path = parsed.positional()[0];
    const Model model = Model::load(path);
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "attention");
    const AttentionRun run = attention_maps(model, tokens, target_tokens(parsed, model, "attention"));
    const int64_t heads = model.config.nhead;
    if (only_head >= heads) throw UsageError("attention: --head " + std::to_string(only_head) + " but the model has " +
                                             std::to_string(heads) + " heads (0.." + std::to_string(heads - 1) + ")");
    std::error_code error;
    std::filesystem::create_directories(out, error);
    if (error || !std::filesystem::is_directory(out)) fail(out, ": cannot create the output folder: ", error.message());

    const std::string model_name = std::filesystem::path(path).stem().string();
    const std::string input = parsed.has("--ids") ? "ids " + parsed.value("--ids") : parsed.positional()[1];
    const bool given = parsed.has("--target") || parsed.has("--target-ids");
    std::string index = "# Attention of " + model_name + "\n\ninput: `" + input + "`, " +
                        (model.config.arch == Architecture::EncoderOnly ? "no target"
                                                                        : (given ? "target" : "greedy output") +
                                                                              std::string(": `") + run.output + "`") +
                        "\n\n| file | shows |\n|---|---|\n";
    int64_t written = 0, layers_seen = 0;
    for (const AttentionMap& map : run.maps) {
        if ((only_layer >= 0 && map.layer != only_layer) || (kind != "all" && map.kind != kind)) continue;
        ++layers_seen;
        const std::string stem = out + "/" + map.stack + "-layer" + std::to_string(map.layer) + "-" + map.kind;
        auto add = [&](const std::string& file, const std::string& shows) {
            index += "| " + std::filesystem::path(file).filename().string() + " | " + shows + " |\n";
            std::printf("%s\n", file.c_str());
            ++written;
        };
        if (average) {
            HeatmapSpec spec = head_picture(map, 0, true);
            spec.title = picture_title(model_name, map, "average of " + std::to_string(heads) + " heads");
            write_heatmap_png(spec, stem + "-average.png");
            add(stem + "-average.png", spec.title);
            continue;
        }
        HeatmapGrid grid;
        grid.title = picture_title(model_name, map, "all " + std::to_string(heads) + " heads");
        for (int64_t h = 0; h < heads; ++h) {
            HeatmapSpec spec = head_picture(map, h, false);
            spec.title = "head " + std::to_string(h);
            grid.panels.push_back(spec);
            if (grids_only || (only_head >= 0 && h != only_head)) continue;
            spec.title = picture_title(model_name, map, "head " + std::to_string(h));
            const std::string file = stem + "-head" + std::to_string(h) + ".png";
            write_heatmap_png(spec, file);
            add(file, spec.title);
        }
        if (only_head < 0) {
            write_heatmap_grid_png(grid, stem + "-heads.png");
            add(stem + "-heads.png", grid.title);
        }
    }
    if (layers_seen == 0) throw UsageError("attention: no attention matches --layer/--kind for this model");
    std::ofstream(out + "/index.md") << index;
    std::fprintf(stderr, "tinyformer attention: %s -> %s; wrote %lld pictures and %s/index.md\n", input.c_str(),
                 run.output.c_str(), static_cast<long long>(written), out.c_str());
    return 0;
}

}  // namespace tinyformer::cli
