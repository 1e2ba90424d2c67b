// Suite "decode-llama": greedy decoding of a llama2.c-shaped model, tinyformer
// against llama2.c's own run.c on the same weights (issue #23, item 5).
//
//   model: the stories15M shape with random weights (llama2c_format.h): dim
//          288, 6 layers, 6 heads, hidden 768, vocabulary 32000, max_seq_len
//          256, RMSNorm, SwiGLU, rotary (adjacent pairs, theta 10000), no
//          biases, the classifier tied to the token embedding; n_kv_heads 6
//          (multi-head) and 2 (grouped-query).
//   run:   from <s> (id 1), kSteps forward passes: every position of the
//          context, greedy (the first maximum on ties, as run.c's argmax).
//
// Both programs are timed as run.c times itself: the clock starts after the
// first forward pass (which also pages in run.c's memory-mapped weights) and
// tok/s = (kSteps - 1) / the time to the last token. tinyformer's rate is
// the median of kRoofRounds rounds, each round measuring the bandwidth roof
// first (gemv_roof.h: the step's matrices through cblas_sgemv); run.c's the
// median of kRunRounds runs, each a child process while tinyformer waits.
//
// With LLAMA2C_RUN=PATH, PATH is run as `PATH model.bin -z tokenizer.bin -t 0
// -n kSteps -i ""` with OMP_NUM_THREADS=1 and 2; it prints the ids as numbers
// (the made-up vocabulary of write_llama2c_tokenizer) and "achieved tok/s"
// on stderr. tinyformer's threads are OpenBLAS's (set_blas_threads); the rest
// of its step runs on one thread.
//
// Then what rotary adds to a step: the same weights with pos_encoding "none"
// and "rotary", alternating rounds, the median of the rounds' ratios.
#include "engine/cpu/blas.h"
#include "engine/cpu/gemv.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/row_threads.h"
#include "engine/error.h"
#include "engine/random.h"
#include "models/stepper.h"
#include "models/transformer.h"
#include "tools/bench/bench.h"
#include "tools/bench/gemv_roof.h"
#include "tools/bench/llama2c_format.h"

#include <unistd.h>

#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tinyformer::bench {

namespace {

constexpr int64_t kSteps = 256;  // forward passes: the whole context, as run.c's default -n 256
constexpr int kRoofRounds = 5;
constexpr int kRunRounds = 3;
constexpr int kRopeRounds = 5;

struct Decoded {
    double tokens_per_second = 0;
    std::vector<int64_t> tokens;  // every generated id, kSteps of them
    double others = -1;           // other processes' CPU share meanwhile
    double allocations_per_step = 0;
};

// tinyformer's greedy decoding from <s>, the loop of greedy_decode
// (models/decoding.cpp) over the engine's Stepper with the KV cache, without
// the end-token test (the count is fixed, as run.c's -n). One run, timed as
// run.c times itself (the header comment).
Decoded decode_tinyformer(const Model& model) {
    Decoded result;
    result.tokens.reserve(static_cast<size_t>(kSteps));
    std::vector<int64_t> next(1);
    const OtherLoad load;
    Clock::time_point start;
    size_t allocations_at_start = 0;
    std::unique_ptr<Stepper> stepper = make_stepper(model, {{1}}, StepMode::KvCache, kSteps);
    for (int64_t i = 0; i < kSteps; ++i) {
        const Tensor logits = stepper->next_logits();  // [1, V]
        const float* row = logits.data();
        int64_t best = 0;
        for (int64_t v = 1; v < logits.dim(1); ++v)
            if (row[v] > row[best]) best = v;
        result.tokens.push_back(best);
        if (i == 0) {
            start = Clock::now();
            allocations_at_start = heap_allocation_count();
        }
        if (i + 1 == kSteps) break;
        next[0] = best;
        stepper->append(next);
    }
    const double seconds = seconds_since(start);
    result.allocations_per_step =
        static_cast<double>(heap_allocation_count() - allocations_at_start) / static_cast<double>(kSteps - 1);
    result.tokens_per_second = static_cast<double>(kSteps - 1) / seconds;
    result.others = load.fraction();
    return result;
}

// A folder of its own under the temporary directory, removed at the end.
class TemporaryFolder {
public:
    TemporaryFolder() {
        std::string pattern = (std::filesystem::temp_directory_path() / "tinyformer-bench-llama-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw Error("decode-llama: cannot make a temporary folder like " + pattern);
        path_ = pattern;
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

struct PeerRun {
    bool ok = false;
    double tokens_per_second = 0;  // its own "achieved tok/s"
    std::vector<int64_t> tokens;   // read back from its text
    double others = -1;
    std::string failure;  // what went wrong, when not ok
};

std::string read_whole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// One run of run.c (LLAMA2C_RUN) on `folder`'s model.bin at `threads`
// OpenMP threads; its stdout is the token text, its stderr goes to a file.
PeerRun run_peer_once(const std::string& program, const TemporaryFolder& folder, int threads,
                      const std::string& model_bin = "model.bin") {
    PeerRun run;
    const std::string command = "OMP_NUM_THREADS=" + std::to_string(threads) + " '" + program + "' '" +
                                folder.file(model_bin) + "' -z '" + folder.file("tokenizer.bin") + "' -t 0 -n " +
                                std::to_string(kSteps) + " -i '' 2>'" + folder.file("run.err") + "'";
    const OtherLoad load;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) {
        run.failure = "could not start it";
        return run;
    }
    std::string text;
    char buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
    const int status = ::pclose(pipe);
    run.others = load.fraction();
    const std::string errors = read_whole(folder.file("run.err"));
    const size_t at = errors.find("achieved tok/s:");
    if (status != 0 || at == std::string::npos) {
        run.failure = "exit status " + std::to_string(status) + ", no \"achieved tok/s\" on its stderr";
        return run;
    }
    run.tokens_per_second = std::strtod(errors.c_str() + at + 15, nullptr);
    run.tokens = parse_llama2c_output(text);
    run.ok = run.tokens_per_second > 0;
    if (!run.ok) run.failure = "its \"achieved tok/s\" is not a positive number";
    return run;
}

// The median of kRunRounds runs (the tokens of the last).
PeerRun run_peer(const std::string& program, const TemporaryFolder& folder, int threads) {
    std::vector<double> rates, others;
    PeerRun last;
    for (int round = 0; round < kRunRounds; ++round) {
        last = run_peer_once(program, folder, threads);
        if (!last.ok) return last;
        rates.push_back(last.tokens_per_second);
        others.push_back(last.others);
    }
    last.tokens_per_second = median(rates);
    last.others = median(others);
    return last;
}

// "yes" or "no (first difference at i: A vs B)" over the first n tokens.
std::string same_tokens(const std::vector<int64_t>& ours, const std::vector<int64_t>& theirs) {
    size_t i = 0;
    while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
    if (i == ours.size() && i == theirs.size()) return "yes, all " + std::to_string(i);
    if (i == ours.size() || i == theirs.size())
        return "no (" + std::to_string(ours.size()) + " tokens vs " + std::to_string(theirs.size()) +
               " printed; the first " + std::to_string(i) + " agree)";
    return "no (first difference at " + std::to_string(i) + ": tinyformer " + std::to_string(ours[i]) + ", run.c " +
           std::to_string(theirs[i]) + ")";
}

// The table's short form: "all 256", or "first 55 of 256" (then the greedy paths part).
std::string agreeing_tokens(const std::vector<int64_t>& ours, const std::vector<int64_t>& theirs) {
    size_t i = 0;
    while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
    if (i == ours.size() && i == theirs.size()) return "all " + std::to_string(i);
    return "first " + std::to_string(i) + " of " + std::to_string(std::max(ours.size(), theirs.size()));
}

std::string format(const char* pattern, double value) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
}

// The LLAMA2C_RUN program, when it is set and usable; else nothing and a
// note of why in `note`.
std::optional<std::string> peer_program(std::string& note) {
    const char* value = std::getenv("LLAMA2C_RUN");
    if (!value || !*value) {
        note = "run.c not run: set LLAMA2C_RUN to a run.c binary built from upstream (https://github.com/karpathy/"
               "llama2.c; not part of this repository): gcc -Ofast -march=native -fopenmp run.c -lm -o run; then "
               "LLAMA2C_RUN=$PWD/run build/tinyformer-bench decode-llama";
        return std::nullopt;
    }
    const std::string program = value;
    if (program.find('\'') != std::string::npos) {
        note = "run.c not run: LLAMA2C_RUN holds a single quote, which this bench does not pass to a shell";
        return std::nullopt;
    }
    if (::access(program.c_str(), X_OK) != 0) {
        note = "run.c not run: LLAMA2C_RUN is not an executable file";
        return std::nullopt;
    }
    return program;
}

// The n_kv_heads part: write the model three ways, then for each thread
// count the roof and tinyformer in alternating rounds, and run.c.
void run_kv_part(int64_t n_kv_heads, const std::vector<int>& thread_counts, const std::optional<std::string>& peer) {
    Llama2cShape shape;
    shape.n_kv_heads = n_kv_heads;
    const Llama2cWeights weights = random_llama2c_weights(shape, 23 + static_cast<uint64_t>(n_kv_heads));
    const TemporaryFolder folder;
    write_tinyformer_llama(folder.file("model.safetensors"), weights, "rotary");
    if (peer) {
        write_llama2c_v0(folder.file("model.bin"), weights);
        write_llama2c_tokenizer(folder.file("tokenizer.bin"), shape.vocab_size);
    }
    // Until the engine has every piece of a llama2.c model, loading it fails:
    // then run.c alone is measured.
    std::optional<Model> model;
    try {
        model.emplace(Model::load(folder.file("model.safetensors")));
    } catch (const Error& error) {
        std::printf("\n(tinyformer cannot load the model: %s; only the roof and run.c, when given, are measured)\n", error.what());
    }
    const double bytes = llama2c_weight_bytes_per_token(shape);
    GemvRoof gemv(llama2c_step_shapes(shape));

    std::printf("\nn_kv_heads %lld (K/V width %lld): %.1f MB of weights read per token (the KV cache aside: up to "
                "%.1f MB more at the last position)\n",
                static_cast<long long>(n_kv_heads), static_cast<long long>(shape.kv_dim()), bytes / 1e6,
                4.0 * 2 * static_cast<double>(shape.n_layers * kSteps * shape.kv_dim()) / 1e6);
    const Table table({{"program", 22, Table::Align::Left},
                       {"threads", 7, Table::Align::Right},
                       {"tok/s", 8, Table::Align::Right},
                       {"roof tok/s", 10, Table::Align::Right},
                       {"of roof", 7, Table::Align::Right},
                       {"allocs/step", 11, Table::Align::Right},
                       {"others", 7, Table::Align::Right}});
    table.print_header();
    struct Summary {
        int threads;
        double ours, roof_ratio;
        PeerRun theirs;
        std::vector<int64_t> tokens;
    };
    std::vector<Summary> summaries;
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        std::vector<double> rates, roofs, ratios, others;
        Decoded ours;
        if (model) decode_tinyformer(*model);  // warm-up: OpenBLAS's threads and buffers, the pool
        for (int round = 0; round < kRoofRounds; ++round) {
            roofs.push_back(gemv.decoder_bytes_per_second() / bytes);
            if (!model) continue;
            ours = decode_tinyformer(*model);
            rates.push_back(ours.tokens_per_second);
            ratios.push_back(rates.back() / roofs.back());
            others.push_back(ours.others);
        }
        Summary summary{threads, model ? median(rates) : 0.0, model ? median(ratios) : 0.0, {}, ours.tokens};
        if (model)
            table.print_row({"tinyformer (kv-cache)", std::to_string(threads), format("%.1f", summary.ours),
                             format("%.1f", median(roofs)), format("%.0f%%", 100.0 * summary.roof_ratio),
                             format("%.1f", ours.allocations_per_step), format_load(median(others))});
        if (peer) {
            summary.theirs = run_peer(*peer, folder, threads);
            if (summary.theirs.ok)
                table.print_row({"run.c (OMP threads)", std::to_string(threads),
                                 format("%.1f", summary.theirs.tokens_per_second), format("%.1f", median(roofs)),
                                 format("%.0f%%", 100.0 * summary.theirs.tokens_per_second / median(roofs)), "",
                                 format_load(summary.theirs.others)});
            else
                table.print_row({"run.c (OMP threads)", std::to_string(threads),
                                 "failed: " + summary.theirs.failure});
        }
        summaries.push_back(std::move(summary));
    }
    for (const Summary& s : summaries) {
        if (!model) continue;
        std::printf("  %d thread(s): tinyformer %.0f%% of the roof (median of %d rounds' ratios; target >= 80%%) -> %s",
                    s.threads, 100.0 * s.roof_ratio, kRoofRounds, s.roof_ratio >= 0.8 ? "met" : "NOT met");
        if (peer && s.theirs.ok)
            std::printf("; vs run.c %.2fx (target >= 1.0x) -> %s; same tokens: %s\n",
                        s.ours / s.theirs.tokens_per_second,
                        s.ours >= s.theirs.tokens_per_second ? "met" : "NOT met",
                        same_tokens(s.tokens, s.theirs.tokens).c_str());
        else
            std::printf("\n");
    }
}

// What rotary adds to a decoding step of the base model (n_kv_heads 6): the
// same weights with pos_encoding "none" and "rotary", in alternating rounds.
void run_rope_part(const std::vector<int>& thread_counts) {
    Llama2cShape shape;
    const Llama2cWeights weights = random_llama2c_weights(shape, 29);
    const TemporaryFolder folder;
    write_tinyformer_llama(folder.file("none.safetensors"), weights, "none");
    write_tinyformer_llama(folder.file("rotary.safetensors"), weights, "rotary");
    std::optional<Model> none, rotary;
    try {
        none.emplace(Model::load(folder.file("none.safetensors")));
        rotary.emplace(Model::load(folder.file("rotary.safetensors")));
    } catch (const Error& error) {
        std::printf("\nwhat rotary adds to a decoding step: not measured (tinyformer cannot load the model: %s)\n",
                    error.what());
        return;
    }
    std::printf("\nwhat rotary adds to a decoding step (n_kv_heads 6; the same weights with pos_encoding none and "
                "rotary, %d alternating rounds each):\n",
                kRopeRounds);
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        decode_tinyformer(*none);
        decode_tinyformer(*rotary);
        std::vector<double> plain, turned, ratios, others;
        for (int round = 0; round < kRopeRounds; ++round) {
            const Decoded a = decode_tinyformer(*none);
            const Decoded b = decode_tinyformer(*rotary);
            plain.push_back(a.tokens_per_second);
            turned.push_back(b.tokens_per_second);
            ratios.push_back(a.tokens_per_second / b.tokens_per_second);  // step time rotary / none
            others.push_back(std::max(a.others, b.others));
        }
        const double added = median(ratios) - 1.0;
        std::printf("  %d thread(s): none %.1f tok/s, rotary %.1f tok/s: rotary adds %+.1f%% to a step (target < 5%%) "
                    "-> %s (others %s)\n",
                    threads, median(plain), median(turned), 100.0 * added, added < 0.05 ? "met" : "NOT met",
                    format_load(median(others)).c_str());
    }
}

// --- suite "llama" (issue #36) ---

// The step's matrices (llama2c_step_shapes: per layer Q/K/V stacked, wo, w1,
// w3, w2, then the classifier), each its own random buffer, as a step reads
// them: for the read roof and for engine gemv against OpenBLAS sgemv.
class StepMatrices {
public:
    explicit StepMatrices(const Llama2cShape& shape) {
        Random random(36);
        int64_t widest = 1, tallest = 1;
        for (const auto& [out, in] : llama2c_step_shapes(shape)) {
            weights_.push_back(random.normal_tensor({out, in}, 0.05f));
            widest = std::max(widest, in);
            tallest = std::max(tallest, out);
        }
        x_ = random.normal_tensor({widest});
        y_ = Tensor({tallest});
    }
    double bytes() const {
        double total = 0;
        for (const Tensor& w : weights_) total += 4.0 * static_cast<double>(w.numel());
        return total;
    }
    // The memory's read speed, bytes/s: every matrix read once in the step's
    // order (an XOR of every word, nothing else), split between `threads` as
    // the engine's gemv splits rows (engine/cpu/row_threads.h); the fastest
    // of 7 passes after one.
    double read_roof(int threads) {
        struct Job {
            const Tensor* w;
            uint32_t bits[1024];  // one slot per chunk: no two threads write one
        } job{};
        uint32_t seen = 0;
        return fastest([&] {
            for (const Tensor& w : weights_) {
                job.w = &w;
                for_row_chunks(w.dim(0), threads, [](void* context, int64_t first, int64_t last) {
                    Job& j = *static_cast<Job*>(context);
                    const int64_t in = j.w->dim(1);
                    const float* data = j.w->data();
                    uint32_t bits = 0;  // integer XOR: the loop vectorises, each load is all it does
                    for (int64_t i = first * in; i < last * in; ++i) bits ^= std::bit_cast<uint32_t>(data[i]);
                    j.bits[(first / kRowAlign) % 1024] ^= bits;
                }, &job);
                seen ^= job.bits[0];
            }
        }, bytes()) + 0.0 * seen;
    }
    // Bytes/s of the matrices shaped [out, in] (all layers'), through the
    // engine's gemv or OpenBLAS's cblas_sgemv, at the current thread count.
    double gemv_speed(int64_t out, int64_t in, bool engine) {
        double total = 0;
        for (const Tensor& w : weights_)
            if (w.dim(0) == out && w.dim(1) == in) total += 4.0 * static_cast<double>(w.numel());
        return fastest([&] {
            for (const Tensor& w : weights_) {
                if (w.dim(0) != out || w.dim(1) != in) continue;
                if (engine)
                    gemv(w.matrix(), x_.data(), y_.data(), blas_threads());
                else
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(out), static_cast<blasint>(in),
                                1.0f, w.data(), static_cast<blasint>(in), x_.data(), 1, 0.0f, y_.data(), 1);
            }
        }, total);
    }

private:
    template <typename Pass>
    static double fastest(Pass pass, double bytes) {
        double best = 0;
        for (int rep = 0; rep <= 7; ++rep) {
            const auto start = Clock::now();
            pass();
            const double seconds = seconds_since(start);
            if (rep > 0 && (best == 0 || seconds < best)) best = seconds;
        }
        return bytes / best;
    }
    std::vector<Tensor> weights_;
    Tensor x_, y_;
};

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    double one = 0, five = 0, fifteen = 0;
    if (!(in >> one >> five >> fifteen)) return "unknown";
    char text[64];
    std::snprintf(text, sizeof text, "%.2f %.2f %.2f", one, five, fifteen);
    return text;
}

struct NamedShape {
    const char* name;
    Llama2cShape shape;
};

std::vector<NamedShape> llama_shapes() {
    Llama2cShape small;  // stories15M: the defaults
    Llama2cShape large;
    large.dim = 768;
    large.hidden_dim = 2048;
    large.n_layers = 12;
    large.n_heads = 12;
    large.n_kv_heads = 12;
    large.max_seq_len = 1024;
    return {{"stories15M", small}, {"stories110M", large}};
}

constexpr int kLlamaRounds = 3;

// The decoding table of one form of the weights (float32 or int8): tinyformer
// and each peer on `model_bin`, the programs in turn, kLlamaRounds rounds.
void compare_decoding(const char* form, const Model& model, double bytes, StepMatrices& matrices,
                      const TemporaryFolder& folder, const std::string& model_bin, const std::vector<std::string>& peers,
                      const std::vector<int>& thread_counts) {
    std::printf("%s: greedy decoding from <s>, %lld forward passes, tok/s as run.c counts it (median of %d rounds, "
                "each program once a round, in turn); %.1f MB of weights a token; the roof: those bytes read at the "
                "memory's measured speed (a plain read of the step's float32 matrices, the fastest of 7 passes)\n",
                form, static_cast<long long>(kSteps), kLlamaRounds, bytes / 1e6);
    const Table table({{"program", 30, Table::Align::Left},
                       {"threads", 7, Table::Align::Right},
                       {"tok/s", 8, Table::Align::Right},
                       {"roof tok/s", 10, Table::Align::Right},
                       {"of roof", 7, Table::Align::Right},
                       {"tinyformer / it", 15, Table::Align::Right},
                       {"same tokens", 16, Table::Align::Left},
                       {"others", 7, Table::Align::Right}});
    table.print_header();
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        const double roof = matrices.read_roof(threads) / bytes;
        decode_tinyformer(model);  // warm-up: the threads, the pool, the pages
        std::vector<double> ours, ours_others;
        std::vector<std::vector<double>> theirs(peers.size()), theirs_others(peers.size());
        std::vector<PeerRun> last(peers.size());
        Decoded decoded;
        for (int round = 0; round < kLlamaRounds; ++round) {
            decoded = decode_tinyformer(model);
            ours.push_back(decoded.tokens_per_second);
            ours_others.push_back(decoded.others);
            for (size_t p = 0; p < peers.size(); ++p) {
                last[p] = run_peer_once(peers[p], folder, threads, model_bin);
                if (!last[p].ok) continue;
                theirs[p].push_back(last[p].tokens_per_second);
                theirs_others[p].push_back(last[p].others);
            }
        }
        const double our_rate = median(ours);
        table.print_row({"tinyformer", std::to_string(threads), format("%.1f", our_rate), format("%.1f", roof),
                         format("%.0f%%", 100.0 * our_rate / roof), "", "", format_load(median(ours_others))});
        for (size_t p = 0; p < peers.size(); ++p) {
            if (theirs[p].size() != static_cast<size_t>(kLlamaRounds)) {
                table.print_row({peers[p], std::to_string(threads), "failed: " + last[p].failure});
                continue;
            }
            const double rate = median(theirs[p]);
            table.print_row({peers[p], std::to_string(threads), format("%.1f", rate), format("%.1f", roof),
                             format("%.0f%%", 100.0 * rate / roof), format("%.2fx", our_rate / rate),
                             agreeing_tokens(decoded.tokens, last[p].tokens),
                             format_load(median(theirs_others[p]))});
        }
    }
}

void run_llama_shape(const NamedShape& named, const std::vector<int>& thread_counts,
                     const std::vector<std::string>& peers, const std::vector<std::string>& peers_q8) {
    const Llama2cShape& shape = named.shape;
    std::printf("\n== %s shape: dim %lld, %lld layers, %lld heads (%lld K/V), hidden %lld, vocabulary %lld, "
                "max_seq_len %lld (load average %s)\n",
                named.name, static_cast<long long>(shape.dim), static_cast<long long>(shape.n_layers),
                static_cast<long long>(shape.n_heads), static_cast<long long>(shape.n_kv_heads),
                static_cast<long long>(shape.hidden_dim), static_cast<long long>(shape.vocab_size),
                static_cast<long long>(shape.max_seq_len), load_average().c_str());
    const TemporaryFolder folder;
    // llama2.c export.py's group size: 64, halved until it divides dim (it then divides hidden_dim too here).
    int64_t group = 64;
    while (shape.dim % group != 0) group /= 2;
    {
        const Llama2cWeights weights = random_llama2c_weights(shape, 36);
        write_tinyformer_llama(folder.file("model.safetensors"), weights, "rotary");
        write_tinyformer_llama(folder.file("model-q8.safetensors"), weights, "rotary", group);
        if (!peers.empty()) write_llama2c_v0(folder.file("model.bin"), weights);
        if (!peers_q8.empty()) write_llama2c_v2(folder.file("model-q8.bin"), weights, group);
        write_llama2c_tokenizer(folder.file("tokenizer.bin"), shape.vocab_size);
    }
    const Model model = Model::load(folder.file("model.safetensors"));
    const double bytes = llama2c_weight_bytes_per_token(shape);
    StepMatrices matrices(shape);

    // Which one-row product is faster on each of the step's shapes.
    std::vector<std::pair<int64_t, int64_t>> distinct;
    for (const auto& s : llama2c_step_shapes(shape))
        if (std::find(distinct.begin(), distinct.end(), s) == distinct.end()) distinct.push_back(s);
    std::printf("one-row products y = W x over the step's matrices of each shape (every layer's, in order), GB/s, "
                "the fastest of 7 passes:\n");
    const Table gemv_table({{"W [out, in]", 14, Table::Align::Left},
                            {"threads", 7, Table::Align::Right},
                            {"engine", 8, Table::Align::Right},
                            {"sgemv", 8, Table::Align::Right},
                            {"faster", 7, Table::Align::Left}});
    gemv_table.print_header();
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        for (const auto& [out, in] : distinct) {
            const double engine = matrices.gemv_speed(out, in, true), blas = matrices.gemv_speed(out, in, false);
            gemv_table.print_row({"[" + std::to_string(out) + ", " + std::to_string(in) + "]", std::to_string(threads),
                                  format("%.1f", engine / 1e9), format("%.1f", blas / 1e9),
                                  engine >= blas ? "engine" : "sgemv"});
        }
    }

    compare_decoding("float32", model, bytes, matrices, folder, "model.bin", peers, thread_counts);
    if (group > 0) {
        const Model int8 = Model::load(folder.file("model-q8.safetensors"));
        compare_decoding(("int8 (Q8_0, groups of " + std::to_string(group) + ")").c_str(), int8,
                         llama2c_q8_bytes_per_token(shape, group), matrices, folder, "model-q8.bin", peers_q8,
                         thread_counts);
    }
    std::printf("(load average %s)\n", load_average().c_str());
}

}  // namespace

void run_llama_suite(const Settings& settings) {
    const std::vector<int> thread_counts =
        settings.threads > 0 ? std::vector<int>{settings.threads} : std::vector<int>{1, 2};
    std::printf("llama2.c's model shapes, float32 and int8, random weights (llama2c_format.h), tinyformer against --peer "
                "programs (llama2.c's run.c) on the same weights written as its v0 model.bin\n");
    std::printf("CPU: %s; %u hardware threads; load average %s\n", cpu_model().c_str(),
                std::thread::hardware_concurrency(), load_average().c_str());
    set_blas_threads(thread_counts.front());
    std::printf("%s\n", blas_line().c_str());
    std::printf("one-row products: %s; row kernels: %s\n", gemv_description().c_str(),
                kernels::variant_name(kernels::active_variant()));
    for (const std::string& peer : settings.peers) {
        if (peer.find('\'') != std::string::npos || ::access(peer.c_str(), X_OK) != 0)
            throw Error("llama: --peer " + peer + " is not an executable file without a single quote in its path");
        std::printf("peer: %s, run as `PATH model.bin -z tokenizer.bin -t 0 -n %lld -i ''` with OMP_NUM_THREADS = "
                    "the thread count (a build without OpenMP runs on one thread whatever it says)\n",
                    peer.c_str(), static_cast<long long>(kSteps));
    }
    for (const std::string& peer : settings.peers_q8) {
        if (peer.find('\'') != std::string::npos || ::access(peer.c_str(), X_OK) != 0)
            throw Error("llama: --peer-q8 " + peer + " is not an executable file without a single quote in its path");
        std::printf("int8 peer: %s, the same command on the weights written as llama2.c's v2 model.bin\n", peer.c_str());
    }
    if (settings.peers.empty())
        std::printf("no peer: --peer PATH runs a llama2.c run.c binary (https://github.com/karpathy/llama2.c, built "
                    "as its Makefile's runfast or runomp targets) on the same weights\n");
    for (const NamedShape& named : llama_shapes()) run_llama_shape(named, thread_counts, settings.peers, settings.peers_q8);
}

void run_decode_llama_suite(const Settings& settings) {
    const std::vector<int> thread_counts =
        settings.threads > 0 ? std::vector<int>{settings.threads} : std::vector<int>{1, 2};
    std::printf("greedy decoding of a llama2.c-shaped model (stories15M shape, random weights): dim 288, 6 layers, "
                "6 heads, hidden 768, vocabulary 32000, max_seq_len 256, RMSNorm, SwiGLU, rotary, tied classifier; "
                "%lld forward passes from <s>, B=1\n",
                static_cast<long long>(kSteps));
    std::printf("tok/s as run.c counts it: %lld tokens after the first pass over the time from there to the last\n",
                static_cast<long long>(kSteps - 1));
    set_blas_threads(thread_counts.front());  // before blas_line, which prints the count; each part sets its own
    std::printf("%s\n", blas_line().c_str());
    std::string note;
    const std::optional<std::string> peer = peer_program(note);
    if (peer)
        std::printf("run.c: %s (OMP_NUM_THREADS = the thread count), on the same weights written as llama2.c's v0 "
                    "model.bin\n",
                    peer->c_str());
    else
        std::printf("%s\n", note.c_str());
    for (int64_t n_kv_heads : {6, 2}) run_kv_part(n_kv_heads, thread_counts, peer);
    run_rope_part(thread_counts);
}

}  // namespace tinyformer::bench
