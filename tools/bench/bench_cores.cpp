// Suite "cores": does the core tinyformer runs on by default (engine/cpu/blas.h)
// come within 5% of the best core one could force with OPENBLAS_CORETYPE?
//
// OpenBLAS picks its core when it loads, so each configuration runs in a
// child process of this benchmark (`tinyformer-bench --probe`, one at a
// time, never alongside each other), in 5 rounds that alternate the
// configurations; per configuration the median and the best of the rounds.
// The target compares the best: on a virtual machine the same configuration
// can measure quite differently from one process to the next (the speed is
// steady within a process; docs/PERFORMANCE.md has the spread measured), and
// interference only ever slows a run down, so the best of several processes
// is what the core can do.
//   default     a fresh start: no OPENBLAS_CORETYPE, no marker (tinyformer chooses)
//   keep        TINYFORMER_BLAS=keep: OpenBLAS's own choice
//   X           OPENBLAS_CORETYPE=X for Haswell, SkylakeX, Cooperlake (those this CPU runs)
// Each child measures, on one BLAS thread: sgemm 1024x1024x1024 GFLOP/s and
// the encoder suite's 6-layer forward at B=8, T=128 in tokens per second.
#include "engine/cpu/blas.h"
#include "engine/matmul.h"
#include "engine/random.h"
#include "tools/bench/bench.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tinyformer::bench {

void run_probe() {
    set_blas_threads(1);
    const Tensor a = Random(1).normal_tensor({1024, 1024}), b = Random(2).normal_tensor({1024, 1024});
    Tensor c({1024, 1024});
    std::vector<double> seconds;
    for (int rep = -1; rep < 7; ++rep) {
        const auto start = Clock::now();
        gemm(a.matrix(), Transpose::No, b.matrix(), Transpose::No, c.matrix());
        if (rep >= 0) seconds.push_back(seconds_since(start));
    }
    const double sgemm = 2.0 * 1024 * 1024 * 1024 / median(seconds) / 1e9;
    const double encoder = encoder_tokens_per_second(8, 128, 3);
    std::printf("probe %s %.2f %.1f\n", openblas_get_corename(), sgemm, encoder);
}

void run_cores_suite(const Settings&) {
    std::printf("the OpenBLAS core: default start vs forced OPENBLAS_CORETYPE, each in a child process, 1 thread,\n"
                "5 rounds alternating the configurations; sgemm 1024^3 GFLOP/s and encoder B=8 T=128 tok/s,\n"
                "median and best of the rounds (one process each; the target compares the best)\n");
    std::printf("%s\n", blas_line().c_str());
    char self[4096];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) {
        std::printf("  not run: cannot find this program (/proc/self/exe)\n");
        return;
    }
    self[length] = '\0';
    const CpuFeatures features = cpu_features();
    struct Config {
        std::string name, environment;
        std::vector<double> sgemm, encoder;
        std::string core;
        double others = -1;
    };
    const std::string clean = "env -u OPENBLAS_CORETYPE -u TINYFORMER_BLAS -u TINYFORMER_BLAS_RESTART ";
    std::vector<Config> configs = {{"default", clean, {}, {}, "", -1}, {"keep", clean + "TINYFORMER_BLAS=keep ", {}, {}, "", -1}};
    const bool avx512 = features.avx512f && features.avx512bw && features.avx512dq && features.avx512vl;
    if (features.avx2 && features.fma) configs.push_back({"Haswell", clean + "OPENBLAS_CORETYPE=Haswell ", {}, {}, "", -1});
    if (avx512) configs.push_back({"SkylakeX", clean + "OPENBLAS_CORETYPE=SkylakeX ", {}, {}, "", -1});
    if (avx512 && features.avx512bf16)
        configs.push_back({"Cooperlake", clean + "OPENBLAS_CORETYPE=Cooperlake ", {}, {}, "", -1});
    const OtherLoad load;
    for (int round = 0; round < 5; ++round)
        for (Config& config : configs) {
            const std::string command = config.environment + "'" + self + "' --probe 2>&1";
            std::FILE* pipe = popen(command.c_str(), "r");
            if (!pipe) continue;
            char line[512];
            while (std::fgets(line, sizeof line, pipe)) {
                char core[64] = {};
                double sgemm = 0, encoder = 0;
                if (std::sscanf(line, "probe %63s %lf %lf", core, &sgemm, &encoder) == 3) {
                    config.core = core;
                    config.sgemm.push_back(sgemm);
                    config.encoder.push_back(encoder);
                }
            }
            pclose(pipe);
        }
    const Table table({{"configuration", 14, Table::Align::Left},
                       {"core", 12, Table::Align::Left},
                       {"sgemm median", 12, Table::Align::Right},
                       {"best", 7, Table::Align::Right},
                       {"encoder tok/s median", 20, Table::Align::Right},
                       {"best", 7, Table::Align::Right}});
    table.print_header();
    const auto best = [](const std::vector<double>& samples) { return *std::max_element(samples.begin(), samples.end()); };
    double best_sgemm = 0, best_encoder = 0;
    for (const Config& config : configs) {
        if (config.sgemm.empty()) {
            table.print_row({config.name, "(failed)", "", "", "", ""});
            continue;
        }
        char a[32], b[32], c[32], d[32];
        std::snprintf(a, sizeof a, "%.1f", median(config.sgemm));
        std::snprintf(b, sizeof b, "%.1f", best(config.sgemm));
        std::snprintf(c, sizeof c, "%.1f", median(config.encoder));
        std::snprintf(d, sizeof d, "%.1f", best(config.encoder));
        table.print_row({config.name, config.core, a, b, c, d});
        if (config.name != "default" && config.name != "keep") {
            best_sgemm = std::max(best_sgemm, best(config.sgemm));
            best_encoder = std::max(best_encoder, best(config.encoder));
        }
    }
    std::printf("others: %s of the CPUs were used by other processes during the probes\n",
                format_load(load.fraction()).c_str());
    if (!configs[0].sgemm.empty() && best_sgemm > 0)
        std::printf("target: default within 5%% of the best forced core (best of the rounds): sgemm %.1f%%, "
                    "encoder B=8 T=128 %.1f%% -> %s\n",
                    100.0 * best(configs[0].sgemm) / best_sgemm, 100.0 * best(configs[0].encoder) / best_encoder,
                    best(configs[0].sgemm) >= 0.95 * best_sgemm && best(configs[0].encoder) >= 0.95 * best_encoder
                        ? "met"
                        : "NOT met");
}

}  // namespace tinyformer::bench
