// `tinyformer attention`: a trained model's attention, drawn as PNG heatmaps.

#include "engine/heatmap.h"
#include "models/attention_maps.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace tinyformer::cli {

namespace {

const char* kAttentionHelp =
    "usage: tinyformer attention MODEL.safetensors (TEXT | --ids 5,17,3) --output DIR\n"
    "                            [--target TEXT | --target-ids 4,9] [--layer L] [--head H]\n"
    "                            [--kind self|cross|all] [--average-heads] [--grids-only]\n"
    "                            [--positions] [--scale N] [--unk]\n"
    "\n"
    "Runs the model once on TEXT (or on token ids, --ids: for any model, also one without\n"
    "a vocabulary; labels then show the ids) and writes its attention weights as PNG\n"
    "heatmaps into DIR (created if missing; --out is another name for --output):\n"
    "  STACK-layerL-KIND-headH.png   one picture per stack, layer, kind and head\n"
    "  STACK-layerL-KIND-heads.png   all heads of that layer side by side\n"
    "  overview.png                  every layer (rows) x every head (columns), per kind\n"
    "  index.md                      every picture, inline, with what it shows\n"
    "STACK is encoder / decoder (encoder-decoder models) or layers (decoder-only and\n"
    "encoder-only models). DIR is written afresh: pictures of these names that an earlier\n"
    "run left there and this run does not write are removed; other files are left alone.\n"
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
    "Rows are queries, columns keys, labelled with their tokens and titled on each axis\n"
    "(a decoder row is the decoder's input at that position, which predicts the NEXT\n"
    "token); the title names the model, the input and the attention. The colour bar runs\n"
    "from 0 to 1 (viridis). Cells the mask forbids are hatched (one diagonal), padding is\n"
    "cross-hatched: 'not allowed' is not 'weight 0', also in black and white. A prefix-LM\n"
    "model's prefix ends at a black-white-black line. Weights are per head, never\n"
    "averaged, unless --average-heads is given (then one picture per layer and kind,\n"
    "titled 'average of H heads', and no overview).\n"
    "--grids-only       only the all-heads pictures and the overview\n"
    "--positions        labels carry the position: 'l:3' is token l at position 3\n"
    "--scale N          text and cells N times larger, 1..8 (default 1: text 14 px tall)\n"
    "--unk              read a character of TEXT outside the vocabulary as <unk>, with a\n"
    "                   warning (as `run`)\n"
    "Cells adapt to the lengths, per axis: clamp(600 / S, 4, 40) * N px wide and\n"
    "clamp(600 / L, 4, 40) * N px tall; labels are thinned per axis so that they never\n"
    "overlap; column labels turn 90 degrees when one is wider than its cell.\n"
    "A high weight is not an explanation: see lesson 10.3, section 11.\n";

// "decoder layer 1 cross-attention"; single-stack models: "layer 3 self-attention".
std::string attention_name(const AttentionMap& map) {
    std::string name = map.stack == "layers" ? "" : map.stack + " ";
    name.append("layer ").append(std::to_string(map.layer)).append(" ");
    name.append(map.kind == "self" ? "self-attention" : "cross-attention");
    if (map.stack == "layers" && map.mask_name.starts_with("causal")) name.append(", causal mask");
    if (map.prefix > 0) name.append(", prefix-LM mask");
    return name;
}

// What the rows and the columns are, per attention kind.
void axis_titles(const AttentionMap& map, HeatmapSpec& spec) {
    if (map.stack == "encoder") {
        spec.row_axis = "query: source token";
        spec.column_axis = "key: source token";
    } else if (map.stack == "decoder" && map.kind == "cross") {
        spec.row_axis = "query: decoder input (predicts the next token)";
        spec.column_axis = "key: source token (encoder output)";
    } else if (map.stack == "decoder") {
        spec.row_axis = "query: decoder input (predicts the next token)";
        spec.column_axis = "key: decoder input, this or an earlier position";
    } else if (map.mask_name.starts_with("none")) {
        spec.row_axis = "query: token";
        spec.column_axis = "key: token";
    } else {
        spec.row_axis = "query: token (predicts the next token)";
        spec.column_axis = map.prefix > 0 ? "key: token (the whole prefix, else this or an earlier one)"
                                          : "key: token, this or an earlier position";
    }
}

std::vector<std::string> with_positions(const std::vector<std::string>& tokens, bool positions) {
    if (!positions) return tokens;
    std::vector<std::string> labels;
    for (size_t i = 0; i < tokens.size(); ++i) labels.push_back(tokens[i] + ":" + std::to_string(i));
    return labels;
}

// One head's [L, S] slice, or the mean over heads, as a heatmap spec.
HeatmapSpec head_picture(const AttentionMap& map, int64_t head, bool average, bool positions) {
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
    spec.row_labels = with_positions(map.query_tokens, positions);
    spec.column_labels = with_positions(map.key_tokens, positions);
    spec.prefix = map.prefix;
    return spec;
}

// The file names this command writes (and so may remove from an earlier run):
// {encoder,decoder,layers}-layer<N>-{self,cross}-{head<N>,heads,average}.png and overview.png.
bool is_attention_picture(const std::string& name) {
    if (name == "overview.png") return true;
    std::string_view rest = name;
    auto take = [&](std::string_view word) {
        if (!rest.starts_with(word)) return false;
        rest.remove_prefix(word.size());
        return true;
    };
    auto take_number = [&] {
        size_t digits = 0;
        while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
        rest.remove_prefix(digits);
        return digits > 0;
    };
    const bool stack = take("encoder") || take("decoder") || take("layers");
    const bool layer = stack && take("-layer") && take_number() && take("-");
    const bool kind = layer && (take("self") || take("cross")) && take("-");
    const bool what = kind && (take("heads") || take("average") || (take("head") && take_number()));
    return what && rest == ".png";
}

constexpr size_t kMaxOverviewPanels = 64;

}  // namespace

int attention_command(const Arguments& args) {
    const ParsedArguments parsed(args,
                                 {"--output", "--out", "--target", "--target-ids", "--ids", "--layer", "--head", "--kind",
                                  "--scale"},
                                 {"--average-heads", "--grids-only", "--positions", "--unk"}, "attention");
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
    const int64_t scale = parsed.integer("--scale", 1, 1, 8);
    const bool average = parsed.has("--average-heads");
    const bool grids_only = parsed.has("--grids-only");
    const bool positions = parsed.has("--positions");
    if ((average && only_head >= 0) || (average && grids_only) || (grids_only && only_head >= 0))
        throw UsageError("attention: --head, --average-heads and --grids-only exclude each other");
    const std::string out = parsed.output("--out");
    if (out.empty()) throw UsageError("attention: --output DIR is required (the folder for the pictures)");

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
    // The title's head: the model and the input, e.g. reverse  "hello".
    const std::string heading = model_name + "  \"" + (parsed.has("--ids") ? parsed.value("--ids") : input) + "\"";
    const bool given = parsed.has("--target") || parsed.has("--target-ids");
    std::string index = "# Attention of " + model_name + "\n\ninput: `" + input + "`, " +
                        (model.config.arch == Architecture::EncoderOnly ? "no target"
                                                                        : (given ? "target" : "greedy output") +
                                                                              std::string(": `") + run.output + "`") +
                        "\n\nRows are queries, columns keys. " +
                        (model.config.arch == Architecture::EncoderDecoder
                             ? "A decoder row is the decoder's input at that position, which predicts the next token. "
                             : model.config.arch == Architecture::DecoderOnly
                                   ? "A row is the token at that position, which predicts the next token. "
                                   : "") +
                        "Viridis 0..1; hatched = masked (not allowed), cross-hatched = padding.\n";
    std::vector<std::string> written;
    int64_t layers_seen = 0;
    HeatmapGrid overview;
    overview.title = heading + "  every layer (rows) x head (columns)";
    overview.columns = heads;
    overview.scale = scale;
    std::vector<std::pair<int, HeatmapSpec>> overview_panels;  // (kind order, panel), ordered stably below
    auto add = [&](const std::string& file, const std::string& shows) {
        const std::string name = std::filesystem::path(file).filename().string();
        std::string alt;  // the title, with the brackets that would end the alt text escaped
        for (char c : shows) alt += (c == '[' || c == ']' || c == '\\') ? std::string("\\") + c : std::string(1, c);
        index += "\n## " + name + "\n\n" + shows + "\n\n![" + alt + "](" + name + ")\n";
        std::printf("%s\n", terminal_text(file).c_str());
        written.push_back(name);
    };
    for (const AttentionMap& map : run.maps) {
        if ((only_layer >= 0 && map.layer != only_layer) || (kind != "all" && map.kind != kind)) continue;
        ++layers_seen;
        const std::string stem = out + "/" + map.stack + "-layer" + std::to_string(map.layer) + "-" + map.kind;
        const std::string name = attention_name(map);
        if (average) {
            HeatmapSpec spec = head_picture(map, 0, true, positions);
            axis_titles(map, spec);
            spec.title = heading + "  " + name + "  average of " + std::to_string(heads) + " heads";
            spec.scale = scale;
            write_heatmap_png(spec, stem + "-average.png");
            add(stem + "-average.png", spec.title);
            continue;
        }
        HeatmapGrid grid;
        grid.title = heading + "  " + name + "  all " + std::to_string(heads) + " heads";
        grid.scale = scale;
        const int order = map.stack == "decoder" ? (map.kind == "self" ? 1 : 2) : 0;
        for (int64_t h = 0; h < heads; ++h) {
            HeatmapSpec spec = head_picture(map, h, false, positions);
            HeatmapSpec small = spec;
            small.title = (map.stack == "layers" ? "layer " + std::to_string(map.layer)
                                                 : map.stack + " " + std::to_string(map.layer) + " " + map.kind) +
                          "  head " + std::to_string(h);
            small.matrix_size = 240;
            overview_panels.emplace_back(order, std::move(small));
            axis_titles(map, spec);
            spec.title = "head " + std::to_string(h);
            grid.panels.push_back(spec);
            if (grids_only || (only_head >= 0 && h != only_head)) continue;
            spec.title = heading + "  " + name + "  head " + std::to_string(h);
            spec.scale = scale;
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
    if (!overview_panels.empty() && overview_panels.size() <= kMaxOverviewPanels) {
        std::stable_sort(overview_panels.begin(), overview_panels.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [order, panel] : overview_panels) overview.panels.push_back(std::move(panel));
        write_heatmap_grid_png(overview, out + "/overview.png");
        add(out + "/overview.png", overview.title);
    } else if (!overview_panels.empty()) {
        std::fprintf(stderr, "tinyformer attention: no overview.png: %zu panels, more than %zu (choose --layer or --kind)\n",
                     overview_panels.size(), kMaxOverviewPanels);
    }
    // Written afresh: this command's pictures from an earlier run that this run did not write go.
    int64_t removed = 0;
    for (const auto& entry : std::filesystem::directory_iterator(out)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && is_attention_picture(name) &&
            std::find(written.begin(), written.end(), name) == written.end()) {
            std::filesystem::remove(entry.path());
            ++removed;
        }
    }
    std::ofstream(out + "/index.md") << index;
    std::fprintf(stderr, "tinyformer attention: %s -> %s; wrote %zu pictures and %s/index.md",
                 terminal_text(input).c_str(), terminal_text(run.output).c_str(), written.size(),
                 terminal_text(out).c_str());
    if (removed) std::fprintf(stderr, "; removed %lld older pictures", static_cast<long long>(removed));
    std::fprintf(stderr, "\n");
    return 0;
}

}  // namespace tinyformer::cli
