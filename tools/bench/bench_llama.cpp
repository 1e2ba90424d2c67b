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
#include "engine/error.h"
#include "models/stepper.h"
#include "models/transformer.h"
#include "tools/bench/bench.h"
#include "tools/bench/gemv_roof.h"
#include "tools/bench/llama2c_format.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
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
PeerRun run_peer_once(const std::string& program, const TemporaryFolder& folder, int threads) {
    PeerRun run;
    const std::string command = "OMP_NUM_THREADS=" + std::to_string(threads) + " '" + program + "' '" +
                                folder.file("model.bin") + "' -z '" + folder.file("tokenizer.bin") + "' -t 0 -n " +
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

}  // namespace

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
