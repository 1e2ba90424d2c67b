// tools/cli — the `tinyformer` program: this file is its entry point (the
// subcommand table, errors to exit codes, the BLAS core choice at start);
// each subcommand is one file here (attention.cpp, cost.cpp, ...), cli.h the
// contract. Its neighbours are other rooms: tools/pictures (the PNG renderer),
// tools/explore (the explorer's page), tools/measure (what --measure and the
// lessons time), tools/bench (the benchmarks), tools/python (the Python tools).
#include "engine/cpu/blas.h"
#include "engine/cpu/gemv.h"
#include "engine/cpu/kernels.h"
#include "engine/matmul.h"
#include "engine/memory/float_buffer.h"
#include "engine/memory/keep_freed.h"
#include "engine/cpu/blas_restart.h"
#include "tools/cli/cli.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>

namespace tinyformer::cli {
namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*run)(const Arguments&);
};

const Command kCommands[] = {
    {"run", "run a trained toy model on text (greedy or beam search)", run_command},
    {"eval", "measure a toy model's exact-match accuracy on fresh examples", eval_command},
    {"attention", "draw a trained model's attention weights as PNG heatmaps", attention_command},
    {"probe", "attention weights beside head ablation and token perturbation", probe_command},
    {"lens", "the logit lens per layer, direct logit attribution per head and FFN, residual stream norms", lens_command},
    {"patch", "activation patching: which layer and position carry the answer (clean vs corrupted input)", patch_command},
    {"align", "which source tokens cross-attention looks at for each output token (mean over heads)", align_command},
    {"lesson", "run the lesson's worked examples and practices (lesson 10.3)", lesson_command},
    {"forward", "run a model on a safetensors file of inputs, write logits (and attention)", forward_command},
    {"explore", "write one offline HTML file to explore a model's attention, head by head and step by step", explore_command},
    {"trace", "write every named activation of one forward pass (compare with tools/python/compare_trace.py)", trace_command},
    {"tokenize", "text -> token ids and tokens with a model's tokenizer (char, whitespace, gpt2_bpe, sentencepiece_bpe); --ids to decode", tokenize_command},
    {"info", "check a checkpoint and show its config, parameters and tensors", info_command},
    {"mask", "print a mask as the lesson draws it (causal, prefix-lm, seq2seq, ...), --output to draw it", mask_command},
    {"version", "what runs: OpenBLAS version and core (chosen, in use, why), the CPU, the kernels, the pool", nullptr},
    {"cost", "count attention's, the projections' and the FFN's MACs and bytes per T (--measure to time)", cost_command},
};

void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: tinyformer <command> [arguments]\n"
                 "       tinyformer <command> --help\n"
                 "       tinyformer version      (or --version)\n\n"
                 "An educational Transformer inference engine. Commands:\n");
    for (const Command& command : kCommands) std::fprintf(out, "  %-10s %s\n", command.name, command.summary);
    std::fprintf(out,
                 "\nEnvironment (A/B switches; 'tinyformer version' shows what runs):\n"
                 "  TINYFORMER_BLAS=keep       keep OpenBLAS's own core\n"
                 "  TINYFORMER_KERNELS=NAME    reference | auto | baseline | avx2 | avx512 row kernels\n"
                 "  TINYFORMER_POOL=off        no buffer pool\n"
                 "  TINYFORMER_MMAP=off        checkpoints read into memory and copied, not mapped\n");
}

int dispatch(const Arguments& args) {
    if (args.empty()) throw UsageError("no command given (see 'tinyformer --help' for the commands)");
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_usage(stdout);
        return 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
        if (args.size() > 1 && (args[1] == "--help" || args[1] == "-h")) {
            std::printf("usage: tinyformer version\nPrints the OpenBLAS version and configuration, the CPU and its "
                        "features, the core OpenBLAS chose by itself, the core in use and why (engine/cpu/blas.h), "
                        "the result of the sgemm self-check, the row kernels in use (engine/cpu/kernels.h), the one-row product "
                        "(engine/cpu/gemv.h) and "
                        "whether the buffer pool is on (engine/memory/float_buffer.h).\n"
                        "\nEnvironment, read at start by every tinyformer program:\n"
                        "  TINYFORMER_BLAS=keep       keep OpenBLAS's own core (no restart with a better one)\n"
                        "  TINYFORMER_KERNELS=NAME    the row kernels: reference (the plain formulas, "
                        "engine/ops.cpp), baseline, avx2, avx512, or auto (the best this CPU runs; the default)\n"
                        "  TINYFORMER_GEMV=NAME       the one-row products of decoding: engine (the engine's gemv), "
                        "blas (OpenBLAS's sgemv), or auto (the engine's when its self-check passes; the default)\n"
                        "  TINYFORMER_POOL=off        no buffer pool: every tensor's memory from the heap\n"
                        "  TINYFORMER_MMAP=off        checkpoints read into memory with every tensor copied, instead "
                        "of mapped with their aligned F32 weights read in place (engine/io/safetensors.h)\n");
            return 0;
        }
        if (args.size() > 1) throw UsageError("version takes no arguments");
        std::printf("tinyformer 0.1 (C++20, g++ %s)\n%s", __VERSION__, format_blas_report(blas_report()).c_str());
        const kernels::Variant variant = kernels::active_variant();
        std::printf("  kernels       %s (softmax/exp, LayerNorm, add, ReLU, GELU: %s), %s\n", kernels::variant_name(variant),
                    variant == kernels::Variant::Reference ? "the plain formulas, engine/ops.cpp" : "engine/cpu/kernels.h",
                    kernels::variant_choice().c_str());
        std::printf("  one-row       %s\n", gemv_description().c_str());
        std::printf("  buffer pool   %s\n", float_buffer_pool_state().c_str());
        return 0;
    }
    for (const Command& command : kCommands)
        if (args[0] == command.name && command.run) return command.run(Arguments(args.begin() + 1, args.end()));
    throw UsageError("unknown command '" + args[0] + "' (see 'tinyformer --help')");
}

}  // namespace

// The error line, printed as one line whatever the message holds: a tensor
// name or a config value comes from the file, an input from the user, so the
// message is written by the terminal text rule (tools/cli/terminal_text.h:
// a NUL, a newline or an escape sequence as \xNN, C1 and bidi controls as
// \u{XXXX}, valid UTF-8 as it is), and the line stops after the whole
// characters within kMaxErrorBytes. Written piece by piece, allocating
// nothing, so that it also works after std::bad_alloc.
constexpr size_t kMaxErrorBytes = 2000;

void print_error(std::string_view message) {
    std::fputs("tinyformer: error: ", stderr);
    const size_t written = write_terminal_text(stderr, message, kMaxErrorBytes);
    if (written < message.size()) std::fprintf(stderr, "... (%zu more bytes)", message.size() - written);
    std::fputc('\n', stderr);
}

}  // namespace tinyformer::cli

int main(int argc, char** argv) {
    using namespace tinyformer::cli;
    tinyformer::restart_for_blas_if_needed(argv);  // may re-execute with a better OpenBLAS core (engine/cpu/blas.h)
    tinyformer::keep_freed_memory();  // see engine/memory/keep_freed.h
    try {
        tinyformer::kernels::active_variant();  // reads TINYFORMER_KERNELS: a bad value is refused before any work
        const int status = dispatch(Arguments(argv + 1, argv + argc));
        print_deferred_warnings();  // after the work: a refused command prints only its error line
        return status;
    } catch (const UsageError& error) {
        print_error(error.message());
        return 2;
    } catch (const tinyformer::Error& error) {
        print_error(error.message());
        return 1;
    } catch (const std::bad_alloc&) {
        print_error("out of memory");
        return 1;
    } catch (const std::exception& error) {
        print_error(error.what());
        return 1;
    }
}
