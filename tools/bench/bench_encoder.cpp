// Suite "encoder": the forward pass of a 6-layer encoder stack, against the
// sgemm roof and against PyTorch.
//
//   6 x EncoderLayer, D=512, H=8, F=2048, post-LN, ReLU, no final LayerNorm
//   (nn.TransformerEncoder(layer, 6) has none unless `norm=` is given), no
//   mask, no padding, weights not requested (so the engine's default path).
//   x [B, T, D] with B in {1, 8}, T in {32, 128, 512}.
//
// Per (B, T) and thread count: median wall time of the 6-layer forward after
// one warm-up call, tokens per second (B*T / median), achieved GFLOP/s and the
// practical roof: cblas_sgemm (through tinyformer::gemm) timed alone at the
// layer's own matrix shapes, FLOP-weighted. Then the same modules in PyTorch
// (tools/bench/torch_encoder.py, run with Debian's /usr/bin/python3 in a
// child process per thread count, never at the same time as tinyformer); at
// 2 threads in three thread configurations, since its default one
// oversubscribes the cores (see TorchConfig), and the best one is compared.
//
// Thread counts: 1 and 2 (set_blas_threads), or only --threads N if given.
// Every measurement also says how much CPU other processes took meanwhile:
// on a 2-core machine that decides whether its number means anything.
#include "engine/matmul.h"
#include "engine/random.h"
#include "layers/encoder_layer.h"
#include "tools/bench/bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tinyformer::bench {

namespace {

constexpr int64_t kLayers = 6, kModel = 512, kHeads = 8, kFeedForward = 2048;  // D, H, F
constexpr uint64_t kWeightSeed = 42, kInputSeed = 7;

struct Size {
    int64_t batch, length;  // B, T
    int repetitions;        // timed calls after the warm-up; fewer where one call takes long
};
constexpr Size kSizes[] = {{1, 32, 15}, {1, 128, 9}, {1, 512, 5}, {8, 32, 9}, {8, 128, 5}, {8, 512, 3}};

// FLOPs of one layer: the four D x D projections (Q, K, V, out) and the two
// FFN matrices, 2 per multiply-add, plus Q K^T and A V (2 * 2 * T * T * D).
double projection_flops(const Size& size) {
    const double rows = static_cast<double>(size.batch * size.length);
    return 2.0 * rows * (4.0 * kModel * kModel + 2.0 * kModel * kFeedForward);
}
double attention_flops(const Size& size) {
    return 2.0 * 2.0 * static_cast<double>(size.batch) * static_cast<double>(size.length * size.length) * kModel;
}
double layer_flops(const Size& size) { return projection_flops(size) + attention_flops(size); }

std::string format(const char* pattern, double number) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, number);
    return text;
}

// --- the model ---

// Weights ~ N(0, 1/fan_in) so that every projection keeps unit-scale
// activations; biases the same scale; LayerNorm gain 1, shift 0 (PyTorch's).
std::vector<EncoderLayer> make_layers() {
    Random random(kWeightSeed);
    auto weight = [&](int64_t out, int64_t in) {
        return random.normal_tensor({out, in}, 1.0f / std::sqrt(static_cast<float>(in)));
    };
    auto bias = [&](int64_t out, int64_t in) {
        return random.normal_tensor({out}, 1.0f / std::sqrt(static_cast<float>(in)));
    };
    auto layer_norm = [] { return LayerNorm{Tensor::filled({kModel}, 1.0f), Tensor({kModel}), 1e-5f}; };
    std::vector<EncoderLayer> layers;
    for (int64_t i = 0; i < kLayers; ++i) {
        MultiHeadAttentionWeights attention{weight(3 * kModel, kModel), bias(3 * kModel, kModel),
                                            weight(kModel, kModel), bias(kModel, kModel)};
        Linear linear1{weight(kFeedForward, kModel), bias(kFeedForward, kModel)};
        Linear linear2{weight(kModel, kFeedForward), bias(kModel, kFeedForward)};
        layers.push_back({MultiHeadAttention(attention, kHeads), FeedForward{linear1, linear2, Activation::Relu},
                          layer_norm(), layer_norm(), /*norm_first=*/false});
    }
    return layers;
}

Tensor encoder_forward(const std::vector<EncoderLayer>& layers, const Tensor& x) {
    const Mask no_mask;
    const Padding no_padding;
    Tensor h = layers.front().forward(x, no_mask, no_padding);
    for (size_t i = 1; i < layers.size(); ++i) h = layers[i].forward(h, no_mask, no_padding);
    return h;
}

// --- the roof: sgemm alone at the layer's shapes ---

struct GemmShape {
    const char* name;
    int64_t in, out;  // [M, in] x [out, in]^T -> [M, out], as linear() calls it
    int per_layer;    // how many such products a layer makes
};
constexpr GemmShape kGemmShapes[] = {
    {"Q/K/V/out [M,512]x[512,512]^T", kModel, kModel, 4},
    {"FFN1 [M,512]x[2048,512]^T", kModel, kFeedForward, 1},
    {"FFN2 [M,2048]x[512,2048]^T", kFeedForward, kModel, 1},
};

// GFLOP/s of one shape: median over enough calls to fill ~40 ms (at least 5).
double gemm_gflops(int64_t rows, const GemmShape& shape) {
    Random random(1);
    const Tensor a = random.normal_tensor({rows, shape.in});
    const Tensor w = random.normal_tensor({shape.out, shape.in}, 0.05f);
    Tensor c({rows, shape.out});
    auto call = [&] {
        const auto start = Clock::now();
        gemm(a.matrix(), Transpose::No, w.matrix(), Transpose::Yes, c.matrix());
        return seconds_since(start);
    };
    const double first = call();  // warm-up
    const int calls = std::clamp(static_cast<int>(0.04 / std::max(first, 1e-6)), 5, 200);
    std::vector<double> seconds;
    for (int i = 0; i < calls; ++i) seconds.push_back(call());
    const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(shape.in * shape.out);
    return flops / median(seconds) / 1e9;
}

// FLOP-weighted: the rate at which a layer's projection FLOPs would run if
// each product ran at its own shape's sgemm speed = sum(flops) / sum(flops / rate).
double roof_gflops(const Size& size) {
    const int64_t rows = size.batch * size.length;
    double flops = 0.0, seconds = 0.0;
    for (const GemmShape& shape : kGemmShapes) {
        const double shape_flops = shape.per_layer * 2.0 * static_cast<double>(rows * shape.in * shape.out);
        flops += shape_flops;
        seconds += shape_flops / (gemm_gflops(rows, shape) * 1e9);
    }
    return flops / seconds / 1e9;
}

// --- PyTorch in a child process ---

struct TorchRun {
    bool ran = false;
    double others = -1.0;  // other processes' share of the CPUs during the run
    std::map<std::pair<int64_t, int64_t>, double> tokens_per_second;  // (B, T) -> tok/s
    std::map<std::pair<int64_t, int64_t>, double> median_seconds;
};

std::string sizes_argument() {
    std::string text;
    for (const Size& size : kSizes) {
        char item[64];
        std::snprintf(item, sizeof item, "%s%lld:%lld:%d", text.empty() ? "" : ",", static_cast<long long>(size.batch),
                      static_cast<long long>(size.length), size.repetitions);
        text += item;
    }
    return text;
}

// How PyTorch is run with N threads. Debian's torch has two thread pools:
// OpenMP for its own loops (torch.set_num_threads) and OpenBLAS's pthreads for
// sgemm. With N >= 2 in both, the OpenMP threads spin-wait after each loop
// while the OpenBLAS threads want the same cores; so at N >= 2 PyTorch runs in
// three configurations and its best is what tinyformer is compared with.
struct TorchConfig {
    const char* name;
    bool intra_op_one;       // torch.set_num_threads(1), OMP_NUM_THREADS=1: only sgemm uses N threads
    bool passive_wait;       // OMP_WAIT_POLICY=PASSIVE: OpenMP threads sleep instead of spinning
};
constexpr TorchConfig kTorchDefault{"default: set_num_threads(N), OMP and OpenBLAS N threads", false, false};
constexpr TorchConfig kTorchConfigs[] = {
    kTorchDefault,
    {"as default + OMP_WAIT_POLICY=PASSIVE", false, true},
    {"set_num_threads(1), OMP 1 thread, OpenBLAS N threads", true, false},
};

// Runs the script with `threads` threads and waits for it to end: PyTorch and
// tinyformer never run at the same time. Its information lines are echoed;
// its "result B T reps median_s min_s" lines become table rows.
// full_info: echo every information line (versions, BLAS); else only the
// thread settings, the path and anything unexpected.
TorchRun run_torch(const std::string& script, int threads, const TorchConfig& config, bool full_info,
                   const std::map<std::pair<int64_t, int64_t>, double>& ours) {
    TorchRun run;
    // OpenBLAS's idle threads spin for a moment after their last call: let them sleep first.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string n = std::to_string(threads), intra = config.intra_op_one ? "1" : n;
    const std::string command = "OMP_NUM_THREADS=" + intra + " OPENBLAS_NUM_THREADS=" + n +
                                (config.passive_wait ? " OMP_WAIT_POLICY=PASSIVE " : " ") + kPython + " '" + script +
                                "' --threads " + intra + " --sizes " + sizes_argument() + " --protocol 2>&1";
    const OtherLoad load;
    std::FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        std::printf("  could not start %s\n", kPython);
        return run;
    }
    const Table table({{"B", 2, Table::Align::Right},
                       {"T", 4, Table::Align::Right},
                       {"reps", 4, Table::Align::Right},
                       {"median ms", 10, Table::Align::Right},
                       {"tok/s", 9, Table::Align::Right},
                       {"tinyformer tok/s", 16, Table::Align::Right},
                       {"tinyformer/PyTorch", 18, Table::Align::Right}});
    bool header_printed = false;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe)) {
        std::string line = buffer;
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
        long long batch = 0, length = 0;
        int reps = 0;
        double median_s = 0.0, min_s = 0.0;
        if (std::sscanf(line.c_str(), "result %lld %lld %d %lf %lf", &batch, &length, &reps, &median_s, &min_s) == 5) {
            if (!header_printed) {
                std::printf("\n");
                table.print_header();
                header_printed = true;
            }
            const std::pair<int64_t, int64_t> key{batch, length};
            const double tokens = static_cast<double>(batch * length) / median_s;
            run.tokens_per_second[key] = tokens;
            run.median_seconds[key] = median_s;
            const auto mine = ours.find(key);
            table.print_row({std::to_string(batch), std::to_string(length), std::to_string(reps),
                             format("%.2f", median_s * 1e3), format("%.0f", tokens),
                             mine == ours.end() ? "-" : format("%.0f", mine->second),
                             mine == ours.end() ? "-" : format("%.2fx", mine->second / tokens)});
        } else {
            const bool repeated_info = line.starts_with("python ") || line.starts_with("torch.__config__") ||
                                       line.starts_with("torch.backends") || line.starts_with("torch's sgemm");
            if (full_info || !repeated_info) std::printf("  %s\n", line.c_str());
            std::fflush(stdout);
        }
    }
    const int status = pclose(pipe);
    run.others = load.fraction();
    std::printf("  others: other processes used %s of the CPUs during this PyTorch run\n",
                format_load(run.others).c_str());
    run.ran = status == 0 && !run.tokens_per_second.empty();
    if (!run.ran) std::printf("  (PyTorch run failed: exit status %d)\n", status);
    return run;
}

// --- tinyformer measurements ---

struct Measurement {
    Size size;
    int threads;
    double median_seconds, tokens_per_second, gflops, roof;
    double others;  // other processes' share of the CPUs meanwhile (-1: unknown)
};

Measurement measure(const std::vector<EncoderLayer>& layers, const Size& size, int threads, const Table& table) {
    const Tensor x = Random(kInputSeed).normal_tensor({size.batch, size.length, kModel});
    const OtherLoad load;
    std::vector<double> seconds;
    Tensor output;
    for (int repetition = -1; repetition < size.repetitions; ++repetition) {  // -1: the warm-up call
        const auto start = Clock::now();
        output = encoder_forward(layers, x);
        const double elapsed = seconds_since(start);
        if (repetition >= 0) seconds.push_back(elapsed);
    }
    if (!output.all_finite()) fail("encoder benchmark: the output holds a non-finite number");
    double sum_squares = 0.0;
    for (float v : output.values()) sum_squares += static_cast<double>(v) * v;
    const double rms = std::sqrt(sum_squares / static_cast<double>(output.numel()));

    Measurement m{size, threads, median(seconds), 0.0, 0.0, 0.0, -1.0};
    m.tokens_per_second = static_cast<double>(size.batch * size.length) / m.median_seconds;
    m.gflops = kLayers * layer_flops(size) / m.median_seconds / 1e9;
    m.roof = roof_gflops(size);
    m.others = load.fraction();  // over the forwards and the roof's sgemm calls
    const double min_seconds = *std::min_element(seconds.begin(), seconds.end());
    table.print_row({std::to_string(size.batch), std::to_string(size.length), std::to_string(size.repetitions),
                     format("%.2f", m.median_seconds * 1e3), format("%.2f", min_seconds * 1e3),
                     format("%.0f", m.tokens_per_second), format("%.1f", m.gflops), format("%.1f", m.roof),
                     format("%.0f%%", 100.0 * m.gflops / m.roof), format("%.3f", rms), format_load(m.others)});
    return m;
}

// --- targets ---

const Measurement* find(const std::vector<Measurement>& all, int threads, int64_t batch, int64_t length) {
    for (const Measurement& m : all)
        if (m.threads == threads && m.size.batch == batch && m.size.length == length) return &m;
    return nullptr;
}

const char* verdict(bool met) { return met ? "met" : "NOT met"; }

// 1-thread time / 2-thread time of one forward at `size`, in alternating
// rounds (one forward at 1 thread, then one at 2), the median of the rounds'
// ratios: a virtual machine's speed drifts from one minute to the next, and the table's
// 1- and 2-thread rows are minutes apart.
constexpr int kScalingRounds = 5;
double alternating_scaling(const std::vector<EncoderLayer>& layers, const Size& size) {
    const Tensor x = Random(kInputSeed).normal_tensor({size.batch, size.length, kModel});
    auto seconds_at = [&](int threads) {
        set_blas_threads(threads);
        const auto start = Clock::now();
        const Tensor out = encoder_forward(layers, x);
        return seconds_since(start);
    };
    seconds_at(1);  // warm-up at each count
    seconds_at(2);
    std::vector<double> ratios;
    for (int round = 0; round < kScalingRounds; ++round) {
        const double one = seconds_at(1);
        ratios.push_back(one / seconds_at(2));
    }
    return median(ratios);
}

void print_targets(const std::vector<Measurement>& all, const std::map<int, TorchRun>& torch,
                   std::optional<double> scaling) {
    std::printf("\ntargets (information only, never a failing exit):\n");
    int skewed = 0, total = 0;
    for (const Measurement& m : all) {
        ++total;
        skewed += m.others > kBusyWarning;
    }
    for (const auto& [threads, run] : torch) {
        ++total;
        skewed += run.others > kBusyWarning;
    }
    if (skewed > 0)
        std::printf("  WARNING: %d of %d measurements (tinyformer rows, PyTorch runs) ran while other processes used\n"
                    "  more than %.0f%% of the CPUs (marked '!'): the verdicts below may be wrong; rerun when idle\n",
                    skewed, total, 100.0 * kBusyWarning);
    auto torch_tokens = [&](int threads, const Size& size) -> std::optional<double> {
        const auto run = torch.find(threads);
        if (run == torch.end() || !run->second.ran) return std::nullopt;
        const auto found = run->second.tokens_per_second.find({size.batch, size.length});
        if (found == run->second.tokens_per_second.end()) return std::nullopt;
        return found->second;
    };

    // One thread.
    if (find(all, 1, 1, 32)) {
        bool every = true, measured = true;
        std::string worst;
        double worst_ratio = 1e30;
        for (const Size& size : kSizes) {
            const std::optional<double> theirs = torch_tokens(1, size);
            if (!theirs) {
                measured = false;
                continue;
            }
            const double ratio = find(all, 1, size.batch, size.length)->tokens_per_second / *theirs;
            every = every && ratio >= 1.3;
            if (ratio < worst_ratio) {
                worst_ratio = ratio;
                worst = "B=" + std::to_string(size.batch) + " T=" + std::to_string(size.length);
            }
        }
        if (measured) {
            std::printf("  1 thread: >= 1.3x PyTorch at every size: lowest %.2fx (%s) -> %s\n", worst_ratio,
                        worst.c_str(), verdict(every));
            // Both run their products on the same OpenBLAS sgemm: 1.3x PyTorch
            // needs 1.3 x PyTorch's share of the sgemm roof, which above 100%
            // no forward built on that sgemm can reach.
            std::printf("    the share of the sgemm roof PyTorch reaches, and what 1.3x PyTorch would need:\n   ");
            for (const Size& size : kSizes) {
                const Measurement* ours = find(all, 1, size.batch, size.length);
                const double flops_per_token = ours->gflops / ours->tokens_per_second;
                const double share = *torch_tokens(1, size) * flops_per_token / ours->roof;
                std::printf(" B%lldT%lld %.0f%% -> %.0f%%", static_cast<long long>(size.batch),
                            static_cast<long long>(size.length), 100.0 * share, 130.0 * share);
            }
            std::printf("\n");
        } else
            std::printf("  1 thread: >= 1.3x PyTorch at every size: not measured (no PyTorch figures)\n");
        const Measurement* roof_size = find(all, 1, 8, 128);
        std::printf("  1 thread: >= 90%% of the sgemm roof at B=8 T=128: %.0f%% -> %s\n",
                    100.0 * roof_size->gflops / roof_size->roof, verdict(roof_size->gflops >= 0.90 * roof_size->roof));
    } else {
        std::printf("  1-thread targets: not measured (--threads given)\n");
    }

    // Two threads.
    if (find(all, 2, 1, 32)) {
        if (find(all, 1, 1, 32)) {
            bool never_slower = true;
            double worst_ratio = 1e30;
            std::string worst;
            for (const Size& size : kSizes) {
                const double ratio = find(all, 2, size.batch, size.length)->tokens_per_second /
                                     find(all, 1, size.batch, size.length)->tokens_per_second;
                never_slower = never_slower && ratio >= 1.0;
                if (ratio < worst_ratio) {
                    worst_ratio = ratio;
                    worst = "B=" + std::to_string(size.batch) + " T=" + std::to_string(size.length);
                }
            }
            std::printf("  2 threads: tinyformer never slower than at 1 thread: lowest 2-thread/1-thread %.2fx (%s) "
                        "-> %s\n",
                        worst_ratio, worst.c_str(), verdict(never_slower));
            const double rows = find(all, 2, 8, 512)->tokens_per_second / find(all, 1, 8, 512)->tokens_per_second;
            if (scaling)
                std::printf("  2 threads: >= 1.6x the 1-thread tok/s at B=8 T=512: %.2fx, the median of %d alternating "
                            "rounds (the table's rows: %.2fx) -> %s\n",
                            *scaling, kScalingRounds, rows, verdict(*scaling >= 1.6));
        } else {
            std::printf("  2 threads: never slower than at 1 thread: not measured (--threads given)\n");
        }
        bool every = true, measured = true;
        double worst_ratio = 1e30;
        std::string worst;
        for (const Size& size : kSizes) {
            const std::optional<double> theirs = torch_tokens(2, size);
            if (!theirs) {
                measured = false;
                continue;
            }
            const double ratio = find(all, 2, size.batch, size.length)->tokens_per_second / *theirs;
            every = every && ratio >= 1.0;
            if (ratio < worst_ratio) {
                worst_ratio = ratio;
                worst = "B=" + std::to_string(size.batch) + " T=" + std::to_string(size.length);
            }
        }
        if (measured)
            std::printf("  2 threads: >= 1.0x PyTorch's best 2-thread figure at every size: lowest %.2fx (%s) -> %s\n",
                        worst_ratio, worst.c_str(), verdict(every));
        else
            std::printf("  2 threads: >= 1.0x PyTorch's best 2-thread figure: not measured (no PyTorch figures)\n");
    } else {
        std::printf("  2-thread targets: not measured (--threads given)\n");
    }
}

}  // namespace

double encoder_tokens_per_second(int64_t batch, int64_t length, int repetitions) {
    const std::vector<EncoderLayer> layers = make_layers();
    const Tensor x = Random(kInputSeed).normal_tensor({batch, length, kModel});
    std::vector<double> seconds;
    for (int rep = -1; rep < repetitions; ++rep) {
        const auto start = Clock::now();
        const Tensor y = encoder_forward(layers, x);
        if (rep >= 0) seconds.push_back(seconds_since(start));
    }
    return static_cast<double>(batch * length) / median(seconds);
}

void run_encoder_suite(const Settings& settings) {
    const int threads_before = blas_threads();
    std::vector<int> thread_counts = {1, 2};
    if (settings.threads > 0) thread_counts = {settings.threads};

    std::printf("encoder forward: %lld x EncoderLayer (post-LN, ReLU), D=%lld, H=%lld, F=%lld, no final LayerNorm,\n"
                "  no mask, no padding, attention weights not requested; x [B,T,D] ~ N(0,1) (seed %llu)\n",
                static_cast<long long>(kLayers), static_cast<long long>(kModel), static_cast<long long>(kHeads),
                static_cast<long long>(kFeedForward), static_cast<unsigned long long>(kInputSeed));
    std::printf("weights: tinyformer::Random seed %llu, W and b ~ N(0, 1/fan_in), LayerNorm gain 1, shift 0\n",
                static_cast<unsigned long long>(kWeightSeed));
    std::printf("FLOPs per layer = 2*B*T*(4*D*D + 2*D*F) + 2*2*B*T*T*D   (projections + Q K^T and A V), x %lld "
                "layers\n",
                static_cast<long long>(kLayers));
    std::printf("time: median (and min) wall time of `reps` 6-layer forwards after one warm-up forward;\n"
                "  tok/s = B*T / median; out rms = root mean square of the output (post-LN: ~1 when sane)\n");
    std::printf("roof: cblas_sgemm alone (tinyformer::gemm, beta=0) at the layer's shapes, M = B*T:\n");
    for (const GemmShape& shape : kGemmShapes) std::printf("  %d x %s\n", shape.per_layer, shape.name);
    std::printf("  FLOP-weighted: roof = sum(flops_i) / sum(flops_i / rate_i) over those products;\n"
                "  %% roof = our GFLOP/s (every FLOP above, attention included) / roof. The roof's weights stay\n"
                "  in cache from call to call; the forward's (6 layers, 75 MB) come from memory, which the roof\n"
                "  does not charge: at small B*T it is optimistic\n");
    std::printf("%s\n", blas_line().c_str());

    {
        const OtherLoad idle_check;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const double busy = idle_check.fraction();
        std::printf("machine: other processes used %s of the CPUs in the 0.5 s before the suite; each\n"
                    "  measurement below says the same for its own duration (\"others\"); above %.0f%% it is\n"
                    "  marked '!': on 2 cores such a number is skewed (tinyformer's and PyTorch's alike)\n",
                    format_load(busy).c_str(), 100.0 * kBusyWarning);
    }

    const std::vector<EncoderLayer> layers = make_layers();
    {  // the path the layers' attention takes: the MHA call EncoderLayer::forward makes, with its options
        const Tensor x = Random(kInputSeed).normal_tensor({1, 8, kModel});
        KVCache whole_sequence;
        const AttentionResult result =
            layers.front().self_attn.forward_appending(x, whole_sequence, Mask(), attention_options(Padding()));
        std::printf("attention path: %s (from one MultiHeadAttention call with EncoderLayer's options)\n",
                    path_name(result.path));
    }

    const std::optional<std::string> script = find_tool_script("torch_encoder.py");
    const bool have_torch = torch_importable();
    if (!have_torch)
        std::printf("PyTorch: `%s -c 'import torch'` fails, so no PyTorch comparison. To get it (Debian, as root):\n"
                    "  apt-get update && apt-get install -y python3-torch\n",
                    kPython);
    else if (!script)
        std::printf("PyTorch: tools/bench/torch_encoder.py not found (next to the binary's ../ or in the working "
                    "directory), so no PyTorch comparison\n");

    std::vector<Measurement> all;
    std::map<int, TorchRun> torch;  // per thread count, PyTorch's best configuration at each size
    std::map<int, std::map<std::pair<int64_t, int64_t>, double>> torch_default;  // its default configuration
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        std::printf("\n-- tinyformer, %d BLAS thread%s (blas_threads() = %d) --\n", threads, threads == 1 ? "" : "s",
                    blas_threads());
        const Table table({{"B", 2, Table::Align::Right},
                           {"T", 4, Table::Align::Right},
                           {"reps", 4, Table::Align::Right},
                           {"median ms", 10, Table::Align::Right},
                           {"min ms", 9, Table::Align::Right},
                           {"tok/s", 8, Table::Align::Right},
                           {"GFLOP/s", 7, Table::Align::Right},
                           {"roof GFLOP/s", 12, Table::Align::Right},
                           {"% roof", 6, Table::Align::Right},
                           {"out rms", 7, Table::Align::Right},
                           {"others", 6, Table::Align::Right}});
        table.print_header();
        std::map<std::pair<int64_t, int64_t>, double> ours;
        for (const Size& size : kSizes) {
            all.push_back(measure(layers, size, threads, table));
            ours[{size.batch, size.length}] = all.back().tokens_per_second;
        }
        if (have_torch && script)
            for (const TorchConfig& config : kTorchConfigs) {
                if (threads == 1 && &config != &kTorchConfigs[0]) continue;  // one thread: nothing to vary
                std::printf("\n-- PyTorch, %d thread%s, %s --\n   (child process: %s %s)\n", threads,
                            threads == 1 ? "" : "s", threads == 1 ? "set_num_threads(1), OMP and OpenBLAS 1 thread"
                                                                  : config.name,
                            kPython, script->c_str());
                std::fflush(stdout);
                TorchRun run = run_torch(*script, threads, config, /*full_info=*/torch.empty(), ours);
                TorchRun& best = torch[threads];
                best.ran = best.ran || run.ran;
                best.others = std::max(best.others, run.others);
                for (const auto& [key, tokens] : run.tokens_per_second) {
                    if (&config == &kTorchConfigs[0]) torch_default[threads][key] = tokens;
                    if (tokens > best.tokens_per_second[key]) {
                        best.tokens_per_second[key] = tokens;
                        best.median_seconds[key] = run.median_seconds[key];
                    }
                }
            }
    }
    set_blas_threads(threads_before);

    if (thread_counts.size() > 1) {
        std::printf("\nsummary, tok/s; torch = PyTorch's best configuration at that thread count (at 2 threads also\n"
                    "its default one); ratio = tinyformer / PyTorch's best at the same thread count:\n");
        const Table table({{"B", 2, Table::Align::Right},
                           {"T", 4, Table::Align::Right},
                           {"tf 1T", 7, Table::Align::Right},
                           {"torch 1T", 8, Table::Align::Right},
                           {"ratio", 6, Table::Align::Right},
                           {"tf 2T", 7, Table::Align::Right},
                           {"torch 2T default", 16, Table::Align::Right},
                           {"torch 2T best", 13, Table::Align::Right},
                           {"ratio", 6, Table::Align::Right},
                           {"tf 2T/1T", 8, Table::Align::Right}});
        table.print_header();
        for (const Size& size : kSizes) {
            const std::pair<int64_t, int64_t> key{size.batch, size.length};
            std::vector<std::string> row = {std::to_string(size.batch), std::to_string(size.length)};
            for (int threads : thread_counts) {
                const Measurement* ours = find(all, threads, size.batch, size.length);
                row.push_back(format("%.0f", ours->tokens_per_second));
                if (threads > 1) {
                    const auto& defaults = torch_default[threads];
                    row.push_back(defaults.count(key) ? format("%.0f", defaults.at(key)) : "-");
                }
                const auto run = torch.find(threads);
                const bool known = run != torch.end() && run->second.tokens_per_second.count(key);
                const double theirs = known ? run->second.tokens_per_second.at(key) : 0.0;
                row.push_back(known ? format("%.0f", theirs) : "-");
                row.push_back(known ? format("%.2fx", ours->tokens_per_second / theirs) : "-");
            }
            row.push_back(format("%.2fx", find(all, thread_counts[1], size.batch, size.length)->tokens_per_second /
                                              find(all, thread_counts[0], size.batch, size.length)->tokens_per_second));
            table.print_row(row);
        }
    }
    std::optional<double> scaling;
    if (find(all, 1, 8, 512) && find(all, 2, 8, 512)) {
        std::printf("\nB=8 T=512, 1 thread against 2 in %d alternating rounds...\n", kScalingRounds);
        std::fflush(stdout);
        scaling = alternating_scaling(layers, Size{8, 512, 1});
        set_blas_threads(threads_before);
    }
    print_targets(all, torch, scaling);
}

}  // namespace tinyformer::bench
