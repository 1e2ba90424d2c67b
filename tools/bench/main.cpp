// tools/bench — tinyformer-bench: runs benchmark suites and prints what they measured.
//
//   tinyformer-bench [options] [suite ...]     no suite = every suite
//
// It first prints what it runs on (BLAS, its threads, CPU, compiler), since a
// number without its machine means little. Nothing is asserted: targets are
// printed as information and the exit status is 0 whatever they say.
// Exit 2 for bad usage, 1 for an error while running.
#include "engine/cpu/blas.h"
#include "engine/cpu/kernels.h"
#include "engine/matmul.h"
#include "engine/memory/float_buffer.h"
#include "engine/memory/keep_freed.h"
#include "engine/cpu/blas_restart.h"
#include "tools/bench/bench.h"

#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using tinyformer::bench::Settings;

struct Suite {
    const char* name;
    const char* summary;
    void (*run)(const Settings&);
    bool in_every = true;  // run when no suite is named (false: a part of another suite, run alone)
};

// Every suite, in the order `no argument` runs them. A new suite is a file
// bench_<name>.cpp plus one line here.
const Suite kSuites[] = {
    {"cores", "default OpenBLAS core vs forced OPENBLAS_CORETYPE: sgemm 1024^3 and encoder B=8 T=128, 1 thread",
     tinyformer::bench::run_cores_suite},
    {"attention", "scaled dot-product attention, materialized vs streaming, L=S in {128, 512, 2048, 8192}",
     tinyformer::bench::run_attention_suite},
    {"encoder", "6-layer encoder forward (D=512, H=8, F=2048), B in {1, 8}, T in {32, 128, 512}: vs sgemm and PyTorch",
     tinyformer::bench::run_encoder_suite},
    {"kernels", "softmax and LayerNorm ns/element in each CPU variant (baseline x86-64, AVX2, AVX-512)",
     tinyformer::bench::run_kernels_suite},
    {"gemm", "matrix products: gemm_naive vs the engine's gemm_blocked vs OpenBLAS, GFLOP/s at the toy models' shapes",
     tinyformer::bench::run_gemm_suite},
    {"decode", "greedy decoding tokens/s: toy reverse model, a base-size encoder-decoder, a nanoGPT-shaped model, vs PyTorch",
     tinyformer::bench::run_decode_suite},
    {"decode-gpt", "the decode suite's nanoGPT-shaped model alone (1 thread or --threads N), vs PyTorch",
     tinyformer::bench::run_decode_gpt_suite, false},
    {"decode-llama", "a llama2.c-shaped model (stories15M shape, n_kv_heads 6 and 2): vs run.c (LLAMA2C_RUN), roof, rotary's cost",
     tinyformer::bench::run_decode_llama_suite},
    {"llama", "llama2.c's stories15M and stories110M shapes, float32 and int8, 1 and 2 threads: tok/s, % of the read roof, vs --peer / --peer-q8",
     tinyformer::bench::run_llama_suite},
};

void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: tinyformer-bench [options] [suite ...]\n"
                 "Runs the named benchmark suites, or every suite when none is named.\n"
                 "\n"
                 "suites:\n");
    for (const Suite& suite : kSuites) std::fprintf(out, "  %-12s %s\n", suite.name, suite.summary);
    std::fprintf(out,
                 "\n"
                 "options:\n"
                 "  --threads N       BLAS threads (set_blas_threads); default: OpenBLAS's own choice\n"
                 "  --query-block N   attention, streaming path: queries per block (default: the engine's)\n"
                 "  --key-tile N      attention, streaming path: keys per tile (default: the engine's)\n"
                 "  --peer PATH       llama: also run this llama2.c run.c binary (repeatable), interleaved\n"
                 "  --peer-q8 PATH    llama: also run this llama2.c runq.c binary (int8, repeatable), interleaved\n"
                 "  -h, --help        show this help\n"
                 "\n"
                 "tinyformer-bench live MODEL.safetensors REQUEST.json [--n N]\n"
                 "  runs the page's engine call (live_run, docs/FORMAT.md section 4's request) N times\n"
                 "  (default 30) natively and prints the median: the page benchmark's native column\n");
}

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "tinyformer-bench: error: %s\n", message.c_str());
    std::fprintf(stderr, "try 'tinyformer-bench --help'\n");
    std::exit(2);
}

int64_t parse_positive(std::string_view flag, std::string_view text) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > (1 << 20))
        usage_error(std::string(flag) + " needs a whole number from 1 to 1048576, got '" + std::string(text) + "'");
    return value;
}

struct CommandLine {
    Settings settings;
    std::vector<const Suite*> suites;
};

CommandLine parse_command_line(int argc, char** argv) {
    CommandLine command_line;
    for (int i = 1; i < argc; ++i) {
        const std::string_view argument = argv[i];
        if (argument == "-h" || argument == "--help") {
            print_usage(stdout);
            std::exit(0);
        }
        if (argument.starts_with("-")) {
            // "--flag N" or "--flag=N"
            const size_t equals = argument.find('=');
            const std::string_view flag = argument.substr(0, equals);
            if (flag != "--threads" && flag != "--query-block" && flag != "--key-tile" && flag != "--peer" &&
                flag != "--peer-q8")
                usage_error("unknown option '" + std::string(argument) + "'");
            std::string_view value;
            if (equals != std::string_view::npos)
                value = argument.substr(equals + 1);
            else if (i + 1 < argc)
                value = argv[++i];
            else
                usage_error(std::string(flag) + " needs a value");
            if (flag == "--peer" || flag == "--peer-q8") {
                if (value.empty()) usage_error(std::string(flag) + " needs a path to a run.c or runq.c binary");
                (flag == "--peer" ? command_line.settings.peers : command_line.settings.peers_q8).emplace_back(value);
                continue;
            }
            const int64_t number = parse_positive(flag, value);
            if (flag == "--threads")
                command_line.settings.threads = static_cast<int>(number);
            else if (flag == "--query-block")
                command_line.settings.query_block = number;
            else
                command_line.settings.key_tile = number;
            continue;
        }
        const Suite* found = nullptr;
        for (const Suite& suite : kSuites)
            if (argument == suite.name) found = &suite;
        if (!found) {
            std::string names;
            for (const Suite& suite : kSuites) names += std::string(names.empty() ? "" : ", ") + suite.name;
            usage_error("unknown suite '" + std::string(argument) + "' (suites: " + names + ")");
        }
        command_line.suites.push_back(found);
    }
    if (command_line.suites.empty())
        for (const Suite& suite : kSuites)
            if (suite.in_every) command_line.suites.push_back(&suite);
    return command_line;
}

std::string compiler_description() {
#if defined(__clang__)
    std::string text = __VERSION__;  // already says "clang ..."
#elif defined(__GNUC__)
    std::string text = std::string("GCC ") + __VERSION__;
#else
    std::string text = __VERSION__;
#endif
#if defined(__OPTIMIZE__)
    return text + " (optimized build)";
#else
    return text + " (UNOPTIMIZED build: numbers are not representative)";
#endif
}

void print_machine() {
    std::printf("tinyformer-bench\n");
    std::printf("%s", tinyformer::format_blas_report(tinyformer::blas_report()).c_str());
    std::printf("  kernels       %s (softmax/exp, LayerNorm, add, ReLU, GELU), %s\n",
                tinyformer::kernels::variant_name(tinyformer::kernels::active_variant()),
                tinyformer::kernels::variant_choice().c_str());
    std::printf("  buffer pool   %s\n", tinyformer::float_buffer_pool_state().c_str());
    std::printf("  logical CPUs  %u\n", std::thread::hardware_concurrency());
    std::printf("  compiler      %s\n", compiler_description().c_str());
    std::fflush(stdout);
}

// `tinyformer-bench live MODEL REQUEST.json [--n N]` (bench_live.cpp): the
// page's engine call natively, for the page benchmark (make bench-page).
int live_command(int argc, char** argv) {
    std::vector<std::string> positional;
    int64_t runs = 30;
    for (int i = 2; i < argc; ++i) {
        const std::string_view argument = argv[i];
        if (argument == "--n") {
            if (i + 1 >= argc) usage_error("live: --n needs a value");
            runs = parse_positive("--n", argv[++i]);
        } else if (argument.starts_with("-")) {
            usage_error("live: unknown option '" + std::string(argument) + "'");
        } else {
            positional.emplace_back(argument);
        }
    }
    if (positional.size() != 2) usage_error("live: expected MODEL.safetensors REQUEST.json [--n N]");
    try {
        print_machine();
        tinyformer::bench::run_live_command(positional[0], positional[1], runs);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "tinyformer-bench: error: %s\n", error.what());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    tinyformer::restart_for_blas_if_needed(argv);  // may re-execute with a better OpenBLAS core (engine/cpu/blas.h)
    tinyformer::keep_freed_memory();  // as the `tinyformer` program does; see engine/memory/keep_freed.h
    if (argc == 2 && std::string_view(argv[1]) == "--probe") {  // a child of the "cores" suite
        tinyformer::bench::run_probe();
        return 0;
    }
    if (argc >= 2 && std::string_view(argv[1]) == "live") return live_command(argc, argv);
    const CommandLine command_line = parse_command_line(argc, argv);
    if (command_line.settings.threads > 0) tinyformer::set_blas_threads(command_line.settings.threads);
    try {
        print_machine();  // reads TINYFORMER_KERNELS: a bad value is an error here
        for (const Suite* suite : command_line.suites) {
            std::printf("\n== %s ==\n", suite->name);
            suite->run(command_line.settings);
        }
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "tinyformer-bench: error: %s\n", error.what());
        return 1;
    }
    return 0;
}
