// `tinyformer attention`: a trained model's attention, drawn as PNG heatmaps.

#include "tools/pictures/heatmap.h"
#include "engine/io/output_file.h"
#include "models/study/attention_maps.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <sys/stat.h>

namespace tinyformer::cli {

namespace {

const char* kAttentionHelp =
    "usage: tinyformer attention MODEL.safetensors (TEXT | --ids 5,17,3) --output DIR\n"
    "                            [--target TEXT | --target-ids 4,9] [--layer L] [--head H]\n"
    "                            [--kind self|cross|all] [--average-heads] [--grids-only]\n"
    "                            [--positions] [--scale N] [--unk] [--overrides FILE.json]\n"
    "                            [--block ...] [--allow ...] [--ablate ...]\n"
    "\n"
    "Runs the model once on TEXT (or on token ids, --ids: for any model, also one without\n"
    "a vocabulary; labels then show the ids) and writes its attention weights as PNG\n"
    "heatmaps into DIR (created if missing; --out is another name for --output):\n"
    "  CALL.headH.png   one picture per attention call and head\n"
    "  CALL.heads.png   all heads of that call, in rows that fit a slide\n"
    "  overview.png     every layer (rows) x every head (columns), per kind\n"
    "  index.md         every picture, inline, with what it shows\n"
    "CALL is the call's name in a trace: encoder.L.self_attn, decoder.L.self_attn and\n"
    "decoder.L.cross_attn (encoder-decoder models), layers.L.self_attn (decoder-only and\n"
    "encoder-only models). DIR is written afresh: pictures of these names that an earlier\n"
    "run left there and this run does not write are removed; other files are left alone,\n"
    "and so is an index.md that this command did not write (its first line says so).\n"
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
    "averaged, unless --average-heads is given (then one picture per call,\n"
    "CALL.average.png, titled 'average of H heads', and no overview).\n"
    "--grids-only       only the all-heads pictures and the overview\n"
    "--positions        labels carry the position: 'l:3' is token l at position 3\n"
    "--scale N          text and cells N times larger, 1..8 (default 1: a line of text 20 px)\n"
    "--unk              read a character of TEXT outside the vocabulary as <unk>, with a\n"
    "                   warning (as `run`)\n"
    "Cells adapt to the lengths, per axis: clamp(600 / S, 4, 40) * N px wide and\n"
    "clamp(600 / L, 4, 40) * N px tall; labels are thinned per axis so that they never\n"
    "overlap; a column label turns 90 degrees when it is wider than its cell and a line.\n"
    "Labels and titles show the text as it is (any UTF-8, DejaVu Sans; control\n"
    "characters escaped as \\x1b). The all-heads picture wraps its heads into rows to fit\n"
    "a slide. A picture over 64 megapixels is refused before anything is written: before\n"
    "the pass when the lengths known then (the input, a --target) already make its\n"
    "matrices too large, else after it, once every picture is laid out.\n"
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
// <call>.{head<N>,heads,average}.png, <call> an attention call's name
// ({encoder,decoder,layers}.<N>.{self_attn,cross_attn}), and overview.png.
// index.md is this command's own file only when a run of it wrote it: its
// first line is this marker. Any other index.md (a user's notes, a symlink)
// is left alone.
constexpr std::string_view kIndexMarker = "<!-- written by tinyformer attention: each run writes this file afresh -->";

bool index_is_ours_or_absent(const std::string& index_path) {
    struct stat info {};
    if (::lstat(index_path.c_str(), &info) != 0) return errno == ENOENT;
    if (!S_ISREG(info.st_mode)) return false;
    std::ifstream in(index_path, std::ios::binary);
    std::string first_line;
    std::getline(in, first_line);
    return first_line == kIndexMarker;
}

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
    const bool layer = stack && take(".") && take_number() && take(".");
    const bool kind = layer && (take("self_attn") || take("cross_attn")) && take(".");
    const bool what = kind && (take("heads") || take("average") || (take("head") && take_number()));
    return what && rest == ".png";
}

// The side of n cells along one axis of a matrix (tools/pictures/heatmap.h):
// exact for a known length, else the least it can be for any length >= n.
int64_t matrix_extent(int64_t n, bool exact, int64_t matrix_size, int64_t scale) {
    const auto extent = [&](int64_t m) { return m * std::clamp<int64_t>(matrix_size / m, 4, 40) * scale; };
    int64_t least = extent(n);
    for (int64_t m = n + 1; !exact && m <= 1024; ++m) least = std::min(least, extent(m));
    return least;
}

// What the command is asked to draw.
struct PictureChoice {
    std::string kind;  // self, cross or all
    int64_t only_layer = -1, only_head = -1, scale = 1;
    bool average = false, grids_only = false;
};

// Before the pass, from the lengths known then (the input; a given target,
// else at least <bos>): a picture whose matrices and the margins around them
// alone are over the limit is refused. A single heatmap is at least its
// matrix + 74s wide (margin, gap, key gap, colour bar, numbers' room,
// margin) and + 80s tall (margin, title band, a label line, gap, margin);
// an all-heads picture at least H times its panels' matrix + 18s by + 68s.
// The exact layout is checked after the pass, before anything is written.
void refuse_before_the_pass(const Model& model, const std::vector<int64_t>& tokens,
                            const std::optional<std::vector<int64_t>>& target, const PictureChoice& choice,
                            int64_t grid_matrix_size) {
    if (target && model.config.arch == Architecture::EncoderOnly) return;  // refused by the pass, with its reason
    const auto input = static_cast<int64_t>(model_input(model, tokens).size());
    const bool given = target.has_value();
    const int64_t decoder = given && model.config.arch == Architecture::EncoderDecoder
                                ? static_cast<int64_t>(decoder_input(model, *target).size())
                                : 1;
    const int64_t sequence = input + (given ? static_cast<int64_t>(target->size()) : 0);
    const bool sequence_exact = given || model.config.arch == Architecture::EncoderOnly;
    const int64_t heads = model.config.nhead, s = choice.scale;
    for (const NamedAttentionCall& map : model.attention_calls()) {
        if ((choice.only_layer >= 0 && map.layer != choice.only_layer) || (choice.kind != "all" && map.kind != choice.kind))
            continue;
        int64_t rows = sequence, cols = sequence;
        bool rows_exact = sequence_exact, cols_exact = sequence_exact;
        if (map.stack == "encoder") {
            rows = cols = input;
            rows_exact = cols_exact = true;
        } else if (map.stack == "decoder") {
            rows = decoder;
            rows_exact = given;
            cols = map.kind == "cross" ? input : decoder;
            cols_exact = map.kind == "cross" || given;
        }
        const std::string& stem = map.name;
        const auto refuse_if = [&](const std::string& file, int64_t panels, int64_t matrix_size, int64_t extra_width,
                                   int64_t extra_height) {
            const int64_t pixels = panels * (matrix_extent(cols, cols_exact, matrix_size, s) + extra_width * s) *
                                   (matrix_extent(rows, rows_exact, matrix_size, s) + extra_height * s);
            if (pixels <= kMaxHeatmapPixels) return;
            fail("attention: ", file, " would be more than the limit of ", kMaxHeatmapPixels >> 20, " megapixels: ",
                 panels, panels == 1 ? " matrix" : " matrices", " of ", rows, rows_exact ? "" : " or more", " queries x ",
                 cols, cols_exact ? "" : " or more", " keys and their margins alone take ", pixels,
                 " pixels at --scale ", s, " (known before the pass: the input has ", tokens.size(), " tokens",
                 given ? text_of(", the target ", target->size()) : std::string(),
                 "); nothing was run or written: choose a smaller --scale, --head H, --layer L or --kind, or a shorter "
                 "input", model.config.arch == Architecture::EncoderOnly ? "" : " or --target");
        };
        if (choice.average) {
            refuse_if(stem + ".average.png", 1, 600, 74, 80);
            continue;
        }
        if (!choice.grids_only)
            refuse_if(stem + ".head" + std::to_string(std::max<int64_t>(choice.only_head, 0)) + ".png", 1, 600, 74, 80);
        if (choice.only_head < 0) refuse_if(stem + ".heads.png", heads, grid_matrix_size, 18, 68);
    }
}

constexpr size_t kMaxOverviewPanels = 64;
// The all-heads picture's panels: smaller than a single head's 600, so that
// two fit side by side on a slide (tools/pictures/heatmap.h chooses the columns).
constexpr int64_t kGridMatrixSize = 480;

// --- parse: the command line, into what is asked ---

struct AttentionRequest {
    std::string model_path, model_name;  // data/models/reverse.safetensors, reverse
    std::string out;                     // DIR
    std::string input;                   // as index.md names it: TEXT, or "ids 5,17,3"
    std::string heading;                 // every title starts with it: reverse  "hello"
    bool target_given = false;           // --target or --target-ids: else the greedy output
    bool positions = false;
    PictureChoice choice;
};

// Flags only (bad usage: exit 2); the model is not read yet.
AttentionRequest parse_attention_request(const ParsedArguments& parsed) {
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("attention: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer attention --help')");
    AttentionRequest request;
    PictureChoice& choice = request.choice;
    choice.kind = parsed.value_or("--kind", "all");
    if (choice.kind != "self" && choice.kind != "cross" && choice.kind != "all")
        throw UsageError("attention: --kind must be self, cross or all, got '" + choice.kind + "'");
    choice.only_layer = parsed.integer("--layer", -1, 0, 1 << 20);
    choice.only_head = parsed.integer("--head", -1, 0, 1 << 20);
    choice.scale = parsed.integer("--scale", 1, 1, 8);
    choice.average = parsed.has("--average-heads");
    choice.grids_only = parsed.has("--grids-only");
    request.positions = parsed.has("--positions");
    if ((choice.average && choice.only_head >= 0) || (choice.average && choice.grids_only) ||
        (choice.grids_only && choice.only_head >= 0))
        throw UsageError("attention: --head, --average-heads and --grids-only exclude each other");
    request.out = parsed.output("--out");
    if (request.out.empty()) throw UsageError("attention: --output DIR is required (the folder for the pictures)");

    request.model_path = parsed.positional()[0];
    request.model_name = std::filesystem::path(request.model_path).stem().string();
    const bool ids = parsed.has("--ids");
    const std::string text = parsed.positional().size() > 1 ? parsed.positional()[1] : "";  // none: input_tokens says so
    request.input = ids ? "ids " + parsed.value("--ids") : text;
    request.heading = request.model_name + "  \"" + (ids ? parsed.value("--ids") : text) + "\"";
    request.target_given = parsed.has("--target") || parsed.has("--target-ids");
    return request;
}

// Before any work: DIR is a folder (or not there yet), and none of the
// files this run may write or remove in it is the model.
void check_output_folder(const AttentionRequest& request) {
    std::error_code error;
    if (std::filesystem::exists(request.out, error) && !std::filesystem::is_directory(request.out, error))
        fail("attention: --output ", request.out, " is not a folder (the pictures go into a folder)");
    if (std::filesystem::is_directory(request.out, error))
        for (const auto& entry : std::filesystem::directory_iterator(request.out, error)) {
            const std::string name = entry.path().filename().string();
            if (is_attention_picture(name)) check_outputs("attention", {request.model_path}, {entry.path().string()});
        }
}

// --- run: the one teacher-forced pass ---

struct AttentionPass {
    std::vector<int64_t> tokens;  // the input, as the model reads it
    AttentionRun run;             // every layer's weights, the target, the output text
};

AttentionPass run_attention(const ParsedArguments& parsed, const Model& model, const AttentionRequest& request) {
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "attention");
    const int64_t heads = model.config.nhead, only_head = request.choice.only_head;
    if (only_head >= heads) throw UsageError("attention: --head " + std::to_string(only_head) + " but the model has " +
                                             std::to_string(heads) + " heads (0.." + std::to_string(heads - 1) + ")");
    const std::optional<std::vector<int64_t>> target = target_tokens(parsed, model, "attention");
    refuse_before_the_pass(model, tokens, target, request.choice, kGridMatrixSize);
    return {tokens, attention_maps(model, tokens, target)};
}

// --- lay out: every picture, before anything is written ---

struct Picture {
    std::string file, shows;  // DIR/name.png, and what it shows (its title)
    HeatmapGrid grid;         // a single heatmap is a grid of one panel without a grid title: the same pixels
};

struct PictureSet {
    std::vector<Picture> pictures;
    HeatmapGrid overview;
    bool with_overview = false;
};

HeatmapGrid single(const HeatmapSpec& spec) {
    HeatmapGrid grid;
    grid.panels = {spec};
    grid.columns = 1;
    grid.scale = spec.scale;
    return grid;
}

bool too_large(const HeatmapGrid& grid) { return heatmap_grid_size(grid).pixels() > kMaxHeatmapPixels; }

// A picture over the limit refuses the whole run: nothing is written.
void refuse_too_large(const std::vector<Picture>& pictures, const Model& model, const AttentionPass& pass,
                      const AttentionRequest& request) {
    for (const Picture& picture : pictures) {
        if (!too_large(picture.grid)) continue;
        const HeatmapSize size = heatmap_grid_size(picture.grid);
        const HeatmapSpec& panel = picture.grid.panels.front();
        const std::string target_part =
            model.config.arch == Architecture::EncoderOnly
                ? ""
                : text_of(", ", request.target_given ? "the target" : "the greedy output", " has ",
                          pass.run.target.size(), " tokens");
        fail("attention: ", std::filesystem::path(picture.file).filename().string(), " would be ", size.width, "x",
             size.height, " pixels, more than the limit of ", kMaxHeatmapPixels >> 20, " megapixels (",
             picture.grid.panels.size(), picture.grid.panels.size() == 1 ? " panel" : " panels", " of ", panel.rows,
             " queries x ", panel.cols, " keys at --scale ", request.choice.scale, "; the input has ",
             pass.tokens.size(), " tokens", target_part, "); nothing was written: choose a smaller --scale, --head H, "
             "--layer L or --kind, or a shorter input", model.config.arch == Architecture::EncoderOnly ? "" : " or --target");
    }
}

PictureSet lay_out_pictures(const Model& model, const AttentionPass& pass, const AttentionRequest& request) {
    const PictureChoice& choice = request.choice;
    const int64_t heads = model.config.nhead, scale = choice.scale;
    PictureSet set;
    set.overview.title = request.heading + "  every layer (rows) x head (columns)";
    set.overview.columns = heads;
    set.overview.scale = scale;
    std::vector<std::pair<int, HeatmapSpec>> overview_panels;  // (kind order, panel), ordered stably below
    int64_t layers_seen = 0;
    for (const AttentionMap& map : pass.run.maps) {
        if ((choice.only_layer >= 0 && map.layer != choice.only_layer) || (choice.kind != "all" && map.kind != choice.kind))
            continue;
        ++layers_seen;
        const std::string stem = request.out + "/" + map.name;
        const std::string name = attention_name(map);
        if (choice.average) {
            HeatmapSpec spec = head_picture(map, 0, true, request.positions);
            axis_titles(map, spec);
            spec.title = request.heading + "  " + name + "  average of " + std::to_string(heads) + " heads";
            spec.scale = scale;
            set.pictures.push_back({stem + ".average.png", spec.title, single(spec)});
            continue;
        }
        HeatmapGrid grid;
        grid.title = request.heading + "  " + name + "  all " + std::to_string(heads) + " heads";
        grid.scale = scale;
        const int order = map.stack == "decoder" ? (map.kind == "self" ? 1 : 2) : 0;
        for (int64_t h = 0; h < heads; ++h) {
            HeatmapSpec spec = head_picture(map, h, false, request.positions);
            HeatmapSpec small = spec;
            small.title = (map.stack == "layers" ? "layer " + std::to_string(map.layer)
                                                 : map.stack + " " + std::to_string(map.layer) + " " + map.kind) +
                          "  head " + std::to_string(h);
            small.matrix_size = 240;
            overview_panels.emplace_back(order, std::move(small));
            axis_titles(map, spec);
            HeatmapSpec panel = spec;
            panel.title = "head " + std::to_string(h);
            panel.matrix_size = kGridMatrixSize;
            grid.panels.push_back(std::move(panel));
            if (choice.grids_only || (choice.only_head >= 0 && h != choice.only_head)) continue;
            spec.title = request.heading + "  " + name + "  head " + std::to_string(h);
            spec.scale = scale;
            set.pictures.push_back({stem + ".head" + std::to_string(h) + ".png", spec.title, single(spec)});
        }
        if (choice.only_head < 0) set.pictures.push_back({stem + ".heads.png", grid.title, grid});
    }
    if (layers_seen == 0) throw UsageError("attention: no attention matches --layer/--kind for this model");
    refuse_too_large(set.pictures, model, pass, request);

    set.with_overview = !overview_panels.empty() && overview_panels.size() <= kMaxOverviewPanels;
    if (set.with_overview) {
        std::stable_sort(overview_panels.begin(), overview_panels.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [order, panel] : overview_panels) set.overview.panels.push_back(std::move(panel));
        set.with_overview = !too_large(set.overview);
        if (!set.with_overview)
            std::fprintf(stderr, "tinyformer attention: no overview.png: it would be more than %lld megapixels "
                                 "(choose --layer or --kind, or a smaller --scale)\n",
                         static_cast<long long>(kMaxHeatmapPixels >> 20));
    } else if (!overview_panels.empty()) {
        std::fprintf(stderr, "tinyformer attention: no overview.png: %zu panels, more than %zu (choose --layer or --kind)\n",
                     overview_panels.size(), kMaxOverviewPanels);
    }
    return set;
}

// --- write: the pictures, index.md, and the older pictures pruned ---

// index.md's head: what was run; each picture adds its own section. Every
// text from the user or the model goes in through markdown_text or
// markdown_code (tools/cli/terminal_text.h): a token cannot leave its code
// span, start a heading or a link, or put a control character in the file.
std::string index_head(const Model& model, const AttentionPass& pass, const AttentionRequest& request) {
    const Architecture arch = model.config.arch;
    return std::string(kIndexMarker) + "\n# Attention of " + markdown_text(request.model_name) + "\n\ninput: " +
           markdown_code(request.input) + ", " +
           (arch == Architecture::EncoderOnly
                ? "no target"
                : (request.target_given ? "target" : "greedy output") + std::string(": ") + markdown_code(pass.run.output)) +
           "\n\nRows are queries, columns keys. " +
           (arch == Architecture::EncoderDecoder
                ? "A decoder row is the decoder's input at that position, which predicts the next token. "
            : arch == Architecture::DecoderOnly ? "A row is the token at that position, which predicts the next token. "
                                                : "") +
           "Viridis 0..1; hatched = masked (not allowed), cross-hatched = padding.\n";
}

// index.md's section for one picture: its name (this command's own file
// name), what it shows (its title, which holds the model's name and the
// input), the picture inline with the title as its alt text.
std::string index_section(const std::string& name, const std::string& shows) {
    const std::string title = markdown_text(shows);  // brackets escaped too: the alt text cannot end early
    return "\n## " + name + "\n\n" + title + "\n\n![" + title + "](" + name + ")\n";
}

// DIR is written afresh: this command's pictures from an earlier run that
// this run did not write go. Returns how many went.
int64_t remove_older_pictures(const std::string& out, const std::vector<std::string>& written) {
    int64_t removed = 0;
    for (const auto& entry : std::filesystem::directory_iterator(out)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && is_attention_picture(name) &&
            std::find(written.begin(), written.end(), name) == written.end()) {
            std::filesystem::remove(entry.path());
            ++removed;
        }
    }
    return removed;
}

void write_pictures(const PictureSet& set, const Model& model, const AttentionPass& pass,
                    const AttentionRequest& request) {
    const std::string& out = request.out;
    std::error_code error;
    std::filesystem::create_directories(out, error);
    if (error || !std::filesystem::is_directory(out)) fail(out, ": cannot create the output folder: ", error.message());
    std::vector<Picture> pictures = set.pictures;
    if (set.with_overview) pictures.push_back({out + "/overview.png", set.overview.title, set.overview});
    // Every file about to be written is a file we may write (not a folder, not the model).
    std::vector<std::string> files;
    for (const Picture& picture : pictures) files.push_back(picture.file);
    check_outputs("attention", {request.model_path}, files);

    std::string index = index_head(model, pass, request);
    std::vector<std::string> written;
    for (const Picture& picture : pictures) {
        write_heatmap_grid_png(picture.grid, picture.file);
        const std::string name = std::filesystem::path(picture.file).filename().string();
        index += index_section(name, picture.shows);
        std::printf("%s\n", terminal_text(picture.file).c_str());
        written.push_back(name);
    }
    const int64_t removed = remove_older_pictures(out, written);
    const std::string index_path = out + "/index.md";
    const bool index_ours = index_is_ours_or_absent(index_path);
    if (index_ours) write_file(index_path, index, "attention");

    std::fprintf(stderr, "tinyformer attention: %s -> %s; wrote %zu pictures", terminal_text(request.input).c_str(),
                 terminal_text(pass.run.output).c_str(), written.size());
    if (index_ours) std::fprintf(stderr, " and %s", terminal_text(index_path).c_str());
    if (removed) std::fprintf(stderr, "; removed %lld older pictures", static_cast<long long>(removed));
    std::fprintf(stderr, "\n");
    if (!index_ours)
        std::fprintf(stderr, "tinyformer attention: note: %s is not one this command wrote (no marker line): left "
                     "alone, the pictures' index not written\n", terminal_text(index_path).c_str());
}

}  // namespace

const char* kAttentionHelpInterventions =
    "The pass (and the greedy output it reads) runs with the interventions below; the hatched\n"
    "cells are the mask used:\n";

// Parse, run once, lay out, write: each step refuses before the next does any work.
int attention_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--output", "--out",  "--target", "--target-ids", "--ids",
                                         "--layer",  "--head", "--kind",   "--scale"};
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags, {"--average-heads", "--grids-only", "--positions", "--unk"},
                                 "attention");
    if (parsed.help()) {
        std::printf("%s%s%s", kAttentionHelp, kAttentionHelpInterventions, kInterventionFlagsHelp);
        return 0;
    }
    const AttentionRequest request = parse_attention_request(parsed);
    check_output_folder(request);
    const Interventions interventions = intervention_flags(parsed, "attention");
    Model model = Model::load(request.model_path);
    const AppliedInterventions applied(model, interventions);  // the pictures are of the intervened pass
    const AttentionPass pass = run_attention(parsed, model, request);
    const PictureSet pictures = lay_out_pictures(model, pass, request);
    write_pictures(pictures, model, pass, request);
    return 0;
}

}  // namespace tinyformer::cli
