// `tinyformer mask KIND`: a mask the way lesson 10.3 draws it, one line per
// query (`q2: k0 k1 k2`), and with --png as a picture (tools/pictures/heatmap.h).

#include "tools/pictures/heatmap.h"
#include "engine/mask.h"
#include "engine/io/output_file.h"
#include "models/mask_policy.h"
#include "tools/cli/arguments.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tinyformer::cli {

namespace {

const char* kMaskHelp =
    "usage: tinyformer mask KIND [--len T] [--prefix P] [--src-len S] [--pad N] [--window W]\n"
    "                       [--output FILE.png] [--scale N]\n"
    "\n"
    "Prints a mask as lesson 10.3 draws it: one line per query, listing the keys it may\n"
    "attend (the engine's one meaning: true = may attend), e.g. `q2: k0 k1 k2`.\n"
    "KIND:\n"
    "  causal         [1,1,T,T]  query l sees keys 0..l\n"
    "  prefix-lm      [1,1,T,T]  the first P positions see each other, the rest is causal\n"
    "                 (also spelled prefix_lm, as a config says it)\n"
    "  seq2seq        an encoder-decoder's two masks: decoder self-attention [1,1,T,T]\n"
    "                 (causal AND target padding) and cross-attention [1,1,1,S] (source\n"
    "                 padding), whose queries are the T target and keys the S source positions\n"
    "  padding        [1,1,1,T]  key padding: every query sees the real keys\n"
    "  local          [1,1,T,T]  query l sees keys l-W..l+W\n"
    "  bidirectional  [1,1,1,1]  no mask: every query sees every key\n"
    "Flags:\n"
    "  --len T      sequence length (the target length for seq2seq), 1..1024, default 6\n"
    "  --prefix P   prefix-lm only: length of the bidirectional prefix, 0..T, default T/2\n"
    "  --src-len S  seq2seq only: source length, 1..1024, default 5\n"
    "  --pad N      the last N positions are padding (for seq2seq: of the source). Their keys\n"
    "               are masked for every query, padded queries are marked (attention sets\n"
    "               their outputs to 0). At most T-1 (S-1); default 2 for padding, else 0\n"
    "  --window W   local only: the window radius, 0..1024, default 1\n"
    "  --output FILE.png  also draw the mask as a PNG (--png is another name for it; a\n"
    "               name not ending in .png is refused): allowed cells teal, masked cells\n"
    "               hatched, padding cross-hatched, rows = queries, columns = keys, with\n"
    "               axis titles; a prefix-lm picture marks the prefix's end with a line.\n"
    "               seq2seq draws ONE file with both masks side by side (decoder self\n"
    "               left, cross right). Cells are clamp(600 / columns, 4, 40) px wide and\n"
    "               clamp(600 / rows, 4, 40) px tall (integer division); labels are\n"
    "               thinned per axis so that they never overlap. A picture over 64\n"
    "               megapixels is refused before anything is written. The file is\n"
    "               written to a temporary name and renamed.\n"
    "  --scale N    text and cells N times larger, 1..8 (default 1)\n";

const char* kKinds = "causal, prefix-lm (or prefix_lm), seq2seq, padding, local, bidirectional";

// One mask slice to print and draw.
struct MaskView {
    std::string title;
    Mask mask;
    int64_t queries = 0, keys = 0;
    std::vector<uint8_t> row_padding, column_padding;  // empty = none
    std::string row_axis, column_axis;
    int64_t prefix = 0;
};

// Mask::to_ascii, with padded queries marked.
std::string ascii_with_padding(const MaskView& view) {
    std::istringstream lines(view.mask.to_ascii(view.queries, view.keys));
    std::string text;
    int64_t l = 0;
    for (std::string line; std::getline(lines, line); ++l) {
        text.append(line);
        if (!view.row_padding.empty() && view.row_padding[static_cast<size_t>(l)])
            text.append("   (padding query: attention sets its output to 0)");
        text.append("\n");
    }
    return text;
}

// The last `pad` of `length` positions are padding (one batch row).
Padding last_padded(int64_t length, int64_t pad) { return Padding::from_lengths({length - pad}, length); }

std::string padding_note(int64_t pad, const char* of) {
    if (pad == 0) return "";
    if (pad == 1) return text_of(", the last", of, " position is padding");
    return text_of(", the last ", pad, of, " positions are padding");
}

}  // namespace

int mask_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--len", "--prefix", "--src-len", "--pad", "--window", "--output", "--png", "--scale"},
                                 {}, "mask");
    if (parsed.help()) {
        std::printf("%s", kMaskHelp);
        return 0;
    }
    if (parsed.positional().size() != 1)
        throw UsageError(text_of("mask: expected one KIND (", kKinds, "), see 'tinyformer mask --help'"));
    // prefix_lm is how a config spells it.
    const std::string kind = parsed.positional()[0] == "prefix_lm" ? "prefix-lm" : parsed.positional()[0];
    const std::string picture = parsed.picture_output("--png");
    const int64_t scale = parsed.integer("--scale", 1, 1, 8);
    if (!picture.empty()) check_outputs("mask", {}, {picture});
    if (kind != "causal" && kind != "prefix-lm" && kind != "seq2seq" && kind != "padding" && kind != "local" &&
        kind != "bidirectional")
        throw UsageError(text_of("mask: unknown KIND '", kind, "' (expected one of ", kKinds, ")"));
    const auto only_for = [&](const char* flag, const char* for_kind) {
        if (parsed.has(flag) && kind != for_kind)
            throw UsageError(text_of("mask: ", flag, " applies only to ", for_kind, ", not to ", kind));
    };
    only_for("--prefix", "prefix-lm");
    only_for("--src-len", "seq2seq");
    only_for("--window", "local");

    const int64_t length = parsed.integer("--len", 6, 1, 1024);
    const int64_t source_length = parsed.integer("--src-len", 5, 1, 1024);
    const char* padded_flag = kind == "seq2seq" ? "--src-len" : "--len";
    const int64_t padded_length = kind == "seq2seq" ? source_length : length;
    const int64_t pad = parsed.integer("--pad", kind == "padding" ? std::min<int64_t>(2, length - 1) : 0, 0, 1024);
    if (pad >= padded_length)
        throw UsageError(text_of("mask: --pad ", pad, " leaves no real position in ", padded_flag, " ", padded_length,
                                " (at most ", padded_length - 1, ")"));
    const int64_t prefix = parsed.integer("--prefix", length / 2, 0, 1024);
    if (prefix > length) throw UsageError(text_of("mask: --prefix ", prefix, " is longer than --len ", length));
    const int64_t window = parsed.integer("--window", 1, 0, 1024);

    std::vector<MaskView> views;
    std::string heading;  // printed
    std::string title;    // the picture's, shorter
    if (kind == "seq2seq") {
        const Padding source = last_padded(source_length, pad);
        // The masks an encoder-decoder model uses (models/mask_policy.h): one batch row, the target unpadded.
        ModelConfig config;
        config.arch = Architecture::EncoderDecoder;
        MaskInputs inputs;
        inputs.length = length;
        inputs.source_length = source_length;
        inputs.source_padding = source;
        const Seq2SeqMasks masks{attention_mask(config, AttentionCall::DecoderSelf, inputs),
                                 attention_mask(config, AttentionCall::Cross, inputs)};
        heading = text_of("seq2seq masks, target T=", length, ", source S=", source_length,
                         padding_note(pad, " source"));
        title = text_of("seq2seq masks  T=", length, "  S=", source_length, pad ? text_of("  source pad=", pad) : "");
        views.push_back({"decoder self-attention [T,T]", masks.decoder_self, length, length, {}, {},
                         "query: decoder input", "key: decoder input", 0});
        views.push_back({"cross-attention [T,S]", masks.cross, length, source_length, {}, padding_flags(source, 0),
                         "query: decoder input", "key: source position", 0});
    } else {
        // causal and prefix-lm: the mask a decoder-only model with that config uses (models/mask_policy.h)
        const auto model_mask = [&](SelfAttentionKind attention, std::vector<int64_t> prefix_lengths) {
            ModelConfig config;
            config.arch = Architecture::DecoderOnly;
            config.attention = attention;
            MaskInputs inputs;
            inputs.length = length;
            inputs.prefix_lengths = std::move(prefix_lengths);
            return attention_mask(config, AttentionCall::Self, inputs);
        };
        Mask mask;  // bidirectional and padding: no mask but the padding
        if (kind == "causal") {
            mask = model_mask(SelfAttentionKind::Causal, {});
            heading = text_of("causal mask, T=", length, ": query l sees keys 0..l");
            title = text_of("causal mask  T=", length);
        } else if (kind == "prefix-lm") {
            mask = model_mask(SelfAttentionKind::PrefixLm, {prefix});
            heading = text_of("prefix-LM mask, T=", length, ", P=", prefix,
                             ": the prefix sees itself both ways, the rest is causal");
            title = text_of("prefix-LM mask  T=", length, "  P=", prefix);
        } else if (kind == "local") {
            mask = Mask::local_window(length, window);
            heading = text_of("local window mask, T=", length, ", W=", window, ": query l sees keys l-W..l+W");
            title = text_of("local window mask  T=", length, "  W=", window);
        } else if (kind == "padding") {
            heading = text_of("key padding mask, T=", length, ": every query sees the real keys");
            title = text_of("key padding mask  T=", length);
        } else {
            heading = text_of("bidirectional (no mask), T=", length, ": every query sees every key");
            title = text_of("bidirectional (no mask)  T=", length);
        }
        const Padding padding = last_padded(length, pad);
        if (pad > 0 || kind == "padding") mask = mask & Mask::key_padding(padding);
        heading.append(padding_note(pad, ""));
        if (pad > 0) title.append(text_of("  pad=", pad));
        const std::vector<uint8_t> flags = pad > 0 ? padding_flags(padding, 0) : std::vector<uint8_t>{};
        views.push_back({title, mask, length, length, flags, flags, "query position", "key position",
                         kind == "prefix-lm" ? prefix : 0});
    }

    if (!picture.empty()) {
        const std::string& path = picture;
        HeatmapGrid grid;
        grid.scale = scale;
        for (const MaskView& view : views) {
            HeatmapSpec panel = mask_heatmap(view.mask, view.queries, view.keys);
            panel.title = view.title;
            panel.row_padding = view.row_padding;
            panel.column_padding = view.column_padding;
            panel.row_axis = view.row_axis;
            panel.column_axis = view.column_axis;
            panel.prefix = view.prefix;
            panel.scale = scale;
            grid.panels.push_back(std::move(panel));
        }
        if (views.size() > 1) grid.title = title;
        // Laid out first: a picture over the limit is refused before anything is written or printed.
        const HeatmapSize size = views.size() == 1 ? heatmap_size(grid.panels.front()) : heatmap_grid_size(grid);
        if (size.pixels() > kMaxHeatmapPixels)
            fail("mask: the picture would be ", size.width, "x", size.height, " pixels, more than the limit of ",
                 kMaxHeatmapPixels >> 20, " megapixels (--len ", length,
                 kind == "seq2seq" ? text_of(", --src-len ", source_length) : std::string(), " at --scale ", scale,
                 "); nothing was written: choose a smaller --scale or --len");
        if (views.size() == 1)
            write_heatmap_png(grid.panels.front(), path);
        else
            write_heatmap_grid_png(grid, path);
        std::fprintf(stderr, "tinyformer mask: wrote %s\n", terminal_text(path).c_str());
    }
    // Printed after the picture is written, so that a failed write prints nothing but the error;
    // on stderr when the picture itself goes to stdout (--output /dev/stdout).
    std::FILE* out = !picture.empty() && is_standard_output(picture) ? stderr : stdout;
    std::fprintf(out, "%s\n", heading.c_str());
    for (const MaskView& view : views) {
        if (views.size() > 1) std::fprintf(out, "\n%s", view.title.c_str());
        std::fprintf(out, "%sMask %s, true = may attend; rows are queries:\n%s", views.size() > 1 ? ", " : "",
                     shape_string(view.mask.shape()).c_str(), ascii_with_padding(view).c_str());
    }
    return 0;
}

}  // namespace tinyformer::cli
