// `tinyformer cost`: what attention, the projections and the FFN cost at
// several sequence lengths (lesson 10.3, section 10 and practice 5). The
// counting is models/cost.h; this file is the command: it prints the counts
// and, with --measure, the times and memory tools/measure/ takes of the layer
// the model runs at the same sizes.

#include "engine/attention.h"
#include "engine/matmul.h"
#include "engine/memory/available.h"
#include "engine/random.h"
#include "models/cost.h"
#include "tools/cli/arguments.h"
#include "tools/measure/layer_timing.h"
#include "tools/measure/measure.h"

#include <unistd.h>  // sysconf

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace tinyformer::cli {

namespace {

const char* kCostHelp =
    "usage: tinyformer cost [--batch B] [--d-model D] [--heads H] [--kv-heads K] [--ff F]\n"
    "                       [--layers N] [--seq T1,T2,...] [--src-len S] [--measure]\n"
    "\n"
    "Counts what an encoder layer (self-attention over T, then the FFN) costs at each\n"
    "sequence length T, part by part: the Q, K, V and output projections, the scores Q K^T,\n"
    "softmax, weights x V, and the FFN (lesson 10.3, section 10 and practice 5). Per layer\n"
    "and for N layers; which part dominates; the memory of the scores [B,H,T,T] against the\n"
    "activations [B,T,D]; and the T where attention's T^2 terms overtake the rest:\n"
    "  attention T^2 terms (Q K^T, weights x V)  2*B*T^2*D MACs\n"
    "  projections + FFN                         B*T*(4D^2 + 2DF) MACs\n"
    "  equal at T* = (4D^2 + 2DF) / (2D) = 2D + F\n"
    "\n"
    "What is counted:\n"
    "  MACs   multiply-adds of the matrix products (1 MAC = 2 FLOPs). Softmax has none; its\n"
    "         B*H*T^2 exponentials are shown beside it. Bias adds, LayerNorm, residual adds\n"
    "         and the activation are not counted.\n"
    "  bytes  float32 memory traffic of each part: parameters read + activations read +\n"
    "         activations written, 4 bytes per float, every tensor moved once per part (no\n"
    "         reuse between parts). The attention core is counted as the materialized path:\n"
    "         scores [B,H,T,T] written by Q K^T, read and written by softmax, read by\n"
    "         weights x V. The streaming path's core traffic (no scores in memory) is shown\n"
    "         below each table. Formulas: models/cost.h.\n"
    "  memory the size of one layer's scores [B,H,T,T] and activations [B,T,D], float32.\n"
    "M, G = 10^6, 10^9 MACs; KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes.\n"
    "\n"
    "Flags:\n"
    "  --batch B     batch, 1..4096, default 1\n"
    "  --d-model D   model dimension, 1..65536, default 512\n"
    "  --heads H     attention heads, must divide D, default 8\n"
    "  --kv-heads K  key/value heads (grouped-query attention; 1: multi-query), must divide H,\n"
    "                default H: K and V are K*Dh wide, so the K/V projections and the KV cache\n"
    "                (2*K*Dh*4 bytes per position per layer) shrink by H/K; the scores do not\n"
    "                (every query head still attends). Counted only: not with --measure\n"
    "  --ff F        feed-forward dimension, 1..1048576, default 2048\n"
    "  --layers N    layers, 1..1024, default 1 (totals are N times a layer)\n"
    "  --seq LIST    sequence lengths T, comma-separated, each 1..1048576, default 128,512,2048\n"
    "  --src-len S   also count a decoder layer at each T: self-attention T x T, cross-attention\n"
    "                of the T target positions over S source positions (Q and output projections\n"
    "                over T, K and V over S, scores [B,H,T,S]), FFN; with its own crossover\n"
    "                T^2 - (3D+F+S) T - S D = 0 (self-attention T^2 terms against all the rest).\n"
    "                A full forward over T positions: a KV cache changes per-step decoding.\n"
    "  --measure     also run the engine: an N-layer stack of EncoderLayer (post-LN, ReLU,\n"
    "                random weights, no mask) on random [B,T,D] inputs, run as a model runs\n"
    "                it: the calls of EncoderLayer::forward, each timed at the caller (the\n"
    "                layer's self-attention call: Q, K and V in one product, K and V kept,\n"
    "                the core on the engine's default streaming path, W_O; the FFN;\n"
    "                LayerNorm + residual adds), checked once against EncoderLayer::forward.\n"
    "                The core is timed again alone, on the operands the layer hands it.\n"
    "                Measured time shares print beside the predicted (MAC) shares. Then, per\n"
    "                T, the memory of one attention-core call on each path: materialized\n"
    "                keeping the weights [B,H,T,T], materialized without them, streaming.\n"
    "                Shown two ways: the bytes the call allocates by the\n"
    "                engine's documented formulas (engine/attention.h), and the growth of the\n"
    "                peak resident set (VmHWM in /proc/self/status) of a forked child process\n"
    "                that runs the call once to warm up (OpenBLAS's buffers and threads),\n"
    "                empties the tensor pool, hands freed heap pages back (malloc_trim),\n"
    "                resets VmHWM (/proc/self/clear_refs) and runs it again: earlier work can\n"
    "                neither hide nor inflate the growth. RSS rather than a counting allocator\n"
    "                because the heap counter of tools/bench replaces operator new in the\n"
    "                bench binary only; RSS needs nothing from the engine. It counts whole 4\n"
    "                KiB pages and whatever else the call touches (a few hundred KiB). A path\n"
    "                that would allocate over 1 GiB is skipped.\n"
    "                Each part's time is its fastest of 2..50 passes (half a second at least),\n"
    "                which a busy machine disturbs least. Progress goes to stderr.\n";

constexpr int64_t kMaxLength = int64_t{1} << 20;
constexpr int64_t kMeasureMemoryLimit = int64_t{1} << 30;  // skip a path that would allocate more

// --- formatting ---

std::string format(const char* pattern, double value) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
}

// 456, 419.4 M, 10.7 G
std::string count_text(double value) {
    if (value < 1000) return format("%.0f", value);
    const char* units[] = {"K", "M", "G", "T", "P", "E"};
    int unit = -1;
    while (value >= 1000 && unit < 5) {
        value /= 1000;
        ++unit;
    }
    return format("%.1f ", value).append(units[unit]);
}

using measure::bytes_text;

std::string percent_text(double part, double whole) {
    return whole > 0 ? format("%.1f%%", 100.0 * part / whole) : std::string("-");
}

std::string shape_text(std::initializer_list<int64_t> dims) { return shape_string(std::vector<int64_t>(dims)); }

// --- arguments ---

struct Settings {
    CostShape shape;
    int64_t layers = 1;
    std::vector<int64_t> lengths{128, 512, 2048};
    int64_t source_length = 0;  // 0: no decoder layer
    bool measure = false;
};

std::vector<int64_t> parse_lengths(const std::string& text) {
    std::vector<int64_t> lengths;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
        const ParsedArguments one({"--seq", item}, {"--seq"}, {}, "cost");
        lengths.push_back(one.integer("--seq", 0, 1, kMaxLength));
    }
    if (lengths.empty() || text.back() == ',')
        throw UsageError("cost: --seq needs comma-separated lengths like 128,512,2048, got '" + text + "'");
    return lengths;
}

Settings parse_settings(const ParsedArguments& parsed) {
    if (!parsed.positional().empty())
        throw UsageError("cost: unexpected argument '" + parsed.positional()[0] + "' (see 'tinyformer cost --help')");
    Settings settings;
    settings.shape.batch = parsed.integer("--batch", 1, 1, 4096);
    settings.shape.d_model = parsed.integer("--d-model", 512, 1, 65536);
    settings.shape.heads = parsed.integer("--heads", 8, 1, 65536);
    settings.shape.kv_heads = parsed.integer("--kv-heads", settings.shape.heads, 1, 65536);
    settings.shape.ff = parsed.integer("--ff", 2048, 1, kMaxLength);
    settings.layers = parsed.integer("--layers", 1, 1, 1024);
    if (parsed.has("--seq")) settings.lengths = parse_lengths(parsed.value("--seq"));
    settings.source_length = parsed.integer("--src-len", 0, 1, kMaxLength);
    settings.measure = parsed.has("--measure");
    if (settings.measure && settings.shape.kv_heads != settings.shape.heads)
        throw UsageError("cost: --measure runs layers with H key/value heads; leave out --kv-heads or --measure");
    try {
        check_cost_shape(settings.shape);
    } catch (const Error& error) {
        throw UsageError(error.message());  // a bad flag value: exit 2
    }
    return settings;
}

// --- --measure's memory table: each attention path's bytes, by formula and
// as tools/measure/measure.h measures them ---

using measure::PartTimes;
using measure::Timing;

struct PathCase {
    const char* name;
    AttentionPath path;
    bool want_weights;
};

constexpr PathCase kPathCases[] = {
    {"materialized, weights kept", AttentionPath::Materialized, true},
    {"materialized", AttentionPath::Materialized, false},
    {"streaming", AttentionPath::Streaming, false},
};

void print_path_memory(const Settings& settings, int64_t T) {
    const CostShape& shape = settings.shape;
    std::printf("  one attention-core call at T=%lld (B*H = %lld slices of [%lld,%lld]), measured in a child "
                "process:\n",
                static_cast<long long>(T), static_cast<long long>(shape.batch * shape.heads),
                static_cast<long long>(T), static_cast<long long>(T));
    std::printf("    %-28s %-44s %12s\n", "path", "allocates: output + weights + scratch", "RSS growth");
    for (const PathCase& path_case : kPathCases) {
        AttentionOptions options;
        options.path = path_case.path;
        options.want_weights = path_case.want_weights;
        const AttentionPathBytes bytes = attention_path_bytes(shape, T, T, options);
        std::string formula = bytes_text(static_cast<double>(bytes.output));
        formula.append(" + ").append(bytes.weights ? bytes_text(static_cast<double>(bytes.weights)) : "0");
        formula.append(" + ").append(bytes.scratch ? bytes_text(static_cast<double>(bytes.scratch)) : "0");
        formula.append(" = ").append(bytes_text(static_cast<double>(bytes.total())));
        if (bytes.total() > kMeasureMemoryLimit) {
            std::printf("    %-28s %-44s %12s\n", path_case.name, formula.c_str(), "skipped: > 1 GiB");
            continue;
        }
        std::fprintf(stderr, "tinyformer cost: T=%lld: memory of the %s path\n", static_cast<long long>(T),
                     path_case.name);
        const measure::PeakMemory memory =
            measure::attention_peak_memory(shape.batch, T, T, shape.d_model, shape.heads, options);
        if (memory.measured)
            std::printf("    %-28s %-44s %12s\n", path_case.name, formula.c_str(),
                        bytes_text(static_cast<double>(memory.rss_growth_bytes)).c_str());
        else
            std::printf("    %-28s %-44s n/a: %s\n", path_case.name, formula.c_str(), memory.note);
    }
}

// --- printing ---

// One row of a layer's table: counts, and with --measure the measured time.
struct Row {
    std::string name;
    int64_t macs = 0;
    int64_t bytes = 0;
    bool counted = true;      // false: not part of the count ("other" time)
    double seconds = -1;      // < 0: not measured on its own
};

class LayerTable {
public:
    // timing: nullptr when not measured; layers: N, for GFLOP/s of a pass over N layers.
    LayerTable(const LayerCost& layer, const Timing* timing, int64_t layers)
        : layer_(layer), timing_(timing), layers_(layers) {}

    void print_header() const {
        std::printf("    %-30s %10s %7s %11s %7s", "part", "MACs", "share", "bytes", "share");
        if (timing_) std::printf("  | %10s %7s %8s", "measured", "share", "GFLOP/s");
        std::printf("\n");
    }

    void print(const Row& row, int indent) const {
        const std::string name = std::string(static_cast<size_t>(indent), ' ').append(row.name);
        if (row.counted)
            std::printf("    %-30s %10s %7s %11s %7s", name.c_str(), count_text(row.macs).c_str(),
                        percent_text(static_cast<double>(row.macs), static_cast<double>(layer_.macs())).c_str(),
                        bytes_text(static_cast<double>(row.bytes)).c_str(),
                        percent_text(static_cast<double>(row.bytes), static_cast<double>(layer_.bytes())).c_str());
        else
            std::printf("    %-30s %10s %7s %11s %7s", name.c_str(), "-", "", "-", "");
        if (timing_ && row.seconds >= 0) {
            const double total = timing_->per_pass.total();
            std::printf("  | %7.2f ms %7s", row.seconds * 1e3, percent_text(row.seconds, total).c_str());
            if (row.macs > 0 && row.seconds > 0)  // a pass runs N layers; 2 FLOPs per MAC
                std::printf(" %8.1f", 2.0 * static_cast<double>(row.macs) * static_cast<double>(layers_) /
                                          row.seconds / 1e9);
        } else if (timing_) {
            std::printf("  |");
        }
        std::printf("\n");
    }

private:
    const LayerCost& layer_;
    const Timing* timing_;
    int64_t layers_;
};

Row part_row(const PartCost& part, double seconds = -1) {
    std::string name = part.name;
    if (part.exps > 0) name.append(" (").append(count_text(part.exps)).append(" exp)");
    return {name, part.macs, part.bytes, true, seconds};
}

// times: the measured self-attention (nullptr when not measured): the core
// timed alone on its row, the layer's whole call on a row of its own.
void print_attention(const LayerTable& table, const AttentionCost& attention, const PartTimes* times) {
    std::printf("    %s (L=%lld queries, S=%lld keys)\n", attention.label.c_str(),
                static_cast<long long>(attention.queries), static_cast<long long>(attention.keys));
    int64_t macs = 0, bytes = 0;
    for (const PartCost& part : attention.parts()) {
        table.print(part_row(part), 2);
        macs += part.macs;
        bytes += part.bytes;
    }
    table.print({"= core (scores..weights x V)", attention.core_macs(), attention.core_bytes(), true,
                 times ? times->core : -1},
                2);
    if (times) table.print({"= self-attention (all above)", macs, bytes, true, times->self_attention}, 2);
}

void print_layer(const Settings& settings, const LayerCost& layer, const Timing* timing) {
    const CostShape& shape = settings.shape;
    const LayerTable table(layer, timing, settings.layers);
    table.print_header();
    const PartTimes* times = timing ? &timing->per_pass : nullptr;
    print_attention(table, layer.self_attention, times);
    if (layer.cross_attention) print_attention(table, *layer.cross_attention, nullptr);
    table.print(part_row(layer.feed_forward, times ? times->feed_forward : -1), 0);
    if (timing) table.print({"LayerNorm + residual adds", 0, 0, false, times->other}, 0);
    table.print({"layer", layer.macs(), layer.bytes(), true, times ? times->total() : -1}, 0);

    const int64_t B = shape.batch, H = shape.heads, D = shape.d_model, T = layer.length;
    const auto groups = layer.groups();
    int64_t largest_macs = 0, largest_bytes = 0;
    for (const CostGroup& group : groups) {
        largest_macs = std::max(largest_macs, group.macs);
        largest_bytes = std::max(largest_bytes, group.bytes);
    }
    std::printf("  dominant: by MACs %s (%s), by bytes %s (%s)\n", dominant_by_macs(layer).c_str(),
                percent_text(static_cast<double>(largest_macs), static_cast<double>(layer.macs())).c_str(),
                dominant_by_bytes(layer).c_str(),
                percent_text(static_cast<double>(largest_bytes), static_cast<double>(layer.bytes())).c_str());
    std::printf("  self-attention T^2 terms %s MACs vs the rest %s MACs (%s of the layer)\n",
                count_text(layer.quadratic_macs()).c_str(), count_text(layer.linear_macs()).c_str(),
                percent_text(static_cast<double>(layer.quadratic_macs()), static_cast<double>(layer.macs())).c_str());
    const AttentionCost& self = layer.self_attention;
    std::printf("  memory per layer: scores [B,H,T,T] = %s %s vs activations [B,T,D] = %s %s (%.1fx); "
                "FFN hidden [B,T,F] %s\n",
                shape_text({B, H, T, T}).c_str(), bytes_text(static_cast<double>(self.score_bytes)).c_str(),
                shape_text({B, T, D}).c_str(), bytes_text(static_cast<double>(layer.activation_bytes)).c_str(),
                static_cast<double>(self.score_bytes) / static_cast<double>(layer.activation_bytes),
                bytes_text(static_cast<double>(layer.hidden_bytes)).c_str());
    if (layer.cross_attention)
        std::printf("  cross-attention scores [B,H,T,S] = %s %s\n",
                    shape_text({B, H, T, layer.cross_attention->keys}).c_str(),
                    bytes_text(static_cast<double>(layer.cross_attention->score_bytes)).c_str());
    const int64_t W = shape.key_value_width();
    std::printf("  KV cache (decoding): K and V [B,T,%lld] (Hkv=%lld heads of Dh=%lld) = %s per layer, %s per "
                "position per sequence per layer\n",
                static_cast<long long>(W), static_cast<long long>(shape.key_value_heads()),
                static_cast<long long>(D / H), bytes_text(static_cast<double>(self.kv_cache_bytes)).c_str(),
                bytes_text(static_cast<double>(kv_cache_bytes_per_position(shape))).c_str());
    std::printf("  streaming path: the self-attention core moves %s instead of %s, scores never in memory\n",
                bytes_text(static_cast<double>(self.streaming_core_bytes)).c_str(),
                bytes_text(static_cast<double>(self.core_bytes())).c_str());
    if (settings.layers > 1)
        std::printf("  all N=%lld layers: %s MACs, %s moved\n", static_cast<long long>(settings.layers),
                    count_text(static_cast<double>(layer.macs()) * static_cast<double>(settings.layers)).c_str(),
                    bytes_text(static_cast<double>(layer.bytes()) * static_cast<double>(settings.layers)).c_str());
}

void print_crossover(const Settings& settings) {
    const CostShape& shape = settings.shape;
    const long long D = shape.d_model, F = shape.ff, H = shape.heads;
    std::printf("Where attention's T^2 terms overtake (lesson 10.3, section 10):\n");
    std::printf("  attention T^2 terms (Q K^T and weights x V)   2*B*T^2*D MACs\n");
    const long long W = shape.key_value_width();
    if (W == D) {
        std::printf("  projections + FFN                             B*T*(4D^2 + 2DF) MACs\n");
        std::printf("  equal at T* = (4D^2 + 2DF)/(2D) = 2D + F = 2*%lld + %lld = %lld (B and H cancel)\n", D, F,
                    static_cast<long long>(encoder_crossover_length(shape)));
    } else {  // grouped-query attention: K and V are W = Hkv*Dh wide
        std::printf("  projections + FFN                             B*T*(2D^2 + 2DW + 2DF) MACs, W = Hkv*Dh = %lld\n", W);
        std::printf("  equal at T* = D + W + F = %lld + %lld + %lld = %lld (B cancels)\n", D, W, F,
                    static_cast<long long>(encoder_crossover_length(shape)));
    }
    std::printf("  the core alone overtakes the FFN at T = F = %lld and the projections at T = 2D = %lld\n", F,
                2 * D);
    std::printf("  the scores [B,H,T,T] outgrow the activations [B,T,D] at T = D/H = %lld\n", D / H);
    if (settings.source_length > 0) {
        const long long S = settings.source_length;
        if (W == D)
            std::printf("  decoder layer, S=%lld: T^2 - (3D+F+S) T - S D = 0 -> T* = %.1f\n", S,
                        decoder_crossover_length(shape, settings.source_length));
        else
            std::printf("  decoder layer, S=%lld: T^2 - (2D+W+F+S) T - S W = 0 -> T* = %.1f\n", S,
                        decoder_crossover_length(shape, settings.source_length));
    }
    std::printf("\n");
}

void print_summary(const Settings& settings) {
    std::printf("Summary, per encoder layer:\n");
    std::printf("  %8s %10s %12s %12s %14s %14s   %s\n", "T", "MACs", "T^2 share", "bytes", "scores", "activations",
                "dominant (MACs)");
    for (int64_t T : settings.lengths) {
        const LayerCost layer = encoder_layer_cost(settings.shape, T);
        std::printf("  %8lld %10s %12s %12s %14s %14s   %s\n", static_cast<long long>(T),
                    count_text(layer.macs()).c_str(),
                    percent_text(static_cast<double>(layer.quadratic_macs()), static_cast<double>(layer.macs()))
                        .c_str(),
                    bytes_text(static_cast<double>(layer.bytes())).c_str(),
                    bytes_text(static_cast<double>(layer.self_attention.score_bytes)).c_str(),
                    bytes_text(static_cast<double>(layer.activation_bytes)).c_str(),
                    dominant_by_macs(layer).c_str());
    }
}

// --measure builds N layers of random weights and runs them as the model does
// (tools/measure/layer_timing.h: the streaming path, no weights recorded);
// refused before allocating when that might not fit: the weights, plus a
// pass's working memory at the longest T by models/cost.h's pass_memory (the
// estimate every model pass is guarded with), counted with the weights
// recorded: more than the streaming pass needs, never less.
void refuse_measuring_beyond_memory(const Settings& settings) {
    const int64_t longest = *std::max_element(settings.lengths.begin(), settings.lengths.end());
    const LayerCost layer = encoder_layer_cost(settings.shape, longest);
    const double weights = 4.0 * static_cast<double>(layer.parameter_count) * static_cast<double>(settings.layers);
    const double working = pass_memory(settings.shape, longest, longest, settings.layers, true, 0).total();
    require_available(weights + working,
                      text_of("cost --measure: needs about ", bytes_text(weights + working), " (weights ",
                              bytes_text(weights), " for ", settings.layers, " layer(s), working memory at T=",
                              longest, " ", bytes_text(working),
                              "; leave out --measure to count only, or use smaller sizes)"));
}

}  // namespace

int cost_command(const Arguments& args) {
    const ParsedArguments parsed(args,
                                 {"--batch", "--d-model", "--heads", "--kv-heads", "--ff", "--layers", "--seq", "--src-len"},
                                 {"--measure"}, "cost");
    if (parsed.help()) {
        std::printf("%s", kCostHelp);
        return 0;
    }
    const Settings settings = parse_settings(parsed);
    const CostShape& shape = settings.shape;
    const LayerCost first = encoder_layer_cost(shape, settings.lengths.front());
    if (settings.measure) refuse_measuring_beyond_memory(settings);
    std::printf("tinyformer cost: B=%lld, D=%lld, H=%lld (Dh=%lld), Hkv=%lld, F=%lld, N=%lld layer(s), float32\n",
                static_cast<long long>(shape.batch), static_cast<long long>(shape.d_model),
                static_cast<long long>(shape.heads), static_cast<long long>(shape.d_model / shape.heads),
                static_cast<long long>(shape.key_value_heads()),
                static_cast<long long>(shape.ff), static_cast<long long>(settings.layers));
    std::printf("  %s parameters per encoder layer (%s); MACs = multiply-adds, bytes = float32 traffic "
                "(see --help)\n\n",
                count_text(first.parameter_count).c_str(),
                bytes_text(4.0 * static_cast<double>(first.parameter_count)).c_str());
    print_crossover(settings);

    std::vector<measure::RandomLayer> layers;
    if (settings.measure) {
        std::fprintf(stderr, "tinyformer cost: building %lld encoder layer(s) with random weights\n",
                     static_cast<long long>(settings.layers));
        Random random(42);
        for (int64_t i = 0; i < settings.layers; ++i) layers.push_back(measure::make_random_layer(random, shape));
        std::printf("--measure: BLAS %s, %d thread(s); times are per forward pass of the N-layer stack\n",
                    blas_description().c_str(), blas_threads());
        double load[1] = {0};
        if (getloadavg(load, 1) == 1)  // other work on the cores makes every time longer, and noisy
            std::printf("  load average %.1f on %ld CPU(s) before measuring\n", load[0], sysconf(_SC_NPROCESSORS_ONLN));
        std::printf("\n");
    }

    bool checked = false;
    for (int64_t T : settings.lengths) {
        const LayerCost layer = encoder_layer_cost(shape, T);
        std::printf("T = %lld: encoder layer, per layer\n", static_cast<long long>(T));
        if (!settings.measure) {
            print_layer(settings, layer, nullptr);
        } else {
            Random random(1000 + static_cast<uint64_t>(T));
            const Tensor input = random.normal_tensor({shape.batch, T, shape.d_model});
            if (!checked) {  // the timed steps are the model's layer: EncoderLayer::forward's calls
                const measure::StackCheck check = measure::check_against_forward(layers, input);
                std::printf("  (the timed steps are EncoderLayer::forward's calls, as the model runs them: largest "
                            "difference %.1e; self-attention on the %s path)\n",
                            check.largest_difference, path_name(check.path));
                checked = true;
            }
            const Timing timing = measure::time_stack(layers, input, T);
            print_layer(settings, layer, &timing);
            std::printf("  measured: each part's fastest of %d passes; self-attention is the layer's own call (Q, K, V\n"
                        "  in one product, K and V kept, the core, W_O), the core timed again alone on the same\n"
                        "  operands; predicted shares count MACs only: the core also does the softmax's exp per\n"
                        "  score and runs H small per-head products (see GFLOP/s)\n",
                        timing.passes);
            print_path_memory(settings, T);
        }
        if (settings.source_length > 0) {
            std::printf("\nT = %lld, S = %lld: decoder layer, per layer (counted, not measured)\n",
                        static_cast<long long>(T), static_cast<long long>(settings.source_length));
            print_layer(settings, decoder_layer_cost(shape, T, settings.source_length), nullptr);
        }
        std::printf("\n");
    }
    print_summary(settings);
    return 0;
}

}  // namespace tinyformer::cli
