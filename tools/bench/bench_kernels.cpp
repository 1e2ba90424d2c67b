// Suite "kernels": the row kernels of engine/cpu/kernels.* in every variant this
// CPU runs, and their plain reference twins (engine/ops.cpp), in the same run: softmax (softmax_row over [64, 2048]) and
// LayerNorm (layer_norm on [256, 512]) in nanoseconds per element — 512 KiB
// each, in the L2 cache, so that the arithmetic shows rather than memory — the
// baseline x86-64 variant (what the build did before the variants) beside
// AVX2+FMA and AVX-512; and GELU (on [256, 512]) beside the scalar std::erf
// loop it replaced. Then a second table, one row per remaining row operation
// (the Annotated Transformer's LayerNorm, RMSNorm, the tanh GELU, SiLU, SwiGLU's
// product; each on [256, 512]): ns per element in every variant and the best
// fast variant's speed-up over the reference. The calls of the variants alternate.
#include "engine/cpu/kernels.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tools/bench/bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tinyformer::bench {

namespace {

// One row per operation: each run `passes` times on a copy of [256, 512]
// activations (copied outside the timing), median of 15 calls per variant,
// the variants alternating; ns per element and reference / best fast variant.
void print_other_kernels(const std::vector<kernels::Variant>& variants, const Tensor& activations, int passes) {
    const Tensor weight = Random(5).normal_tensor({512}), up = Random(6).normal_tensor({256, 512});
    const Tensor bias = Random(7).normal_tensor({512});
    struct Operation {
        const char* name;
        std::function<Tensor(Tensor)> run;  // one pass; its output is the next pass's input
    };
    // The norms renormalise their own output and SiLU / SwiGLU shrink or keep it: each
    // pass's input stays an ordinary float row (no subnormals, no inf) after 8 passes.
    const std::vector<Operation> operations = {
        {"layer_norm_std", [&](Tensor x) { return layer_norm_std(std::move(x), weight, bias, 1e-6f); }},
        {"rms_norm", [&](Tensor x) { return rms_norm(std::move(x), weight, 1e-5f); }},
        {"gelu_tanh", [&](Tensor x) { return gelu_tanh(std::move(x)); }},
        {"silu", [&](Tensor x) { return silu(std::move(x)); }},
        {"swiglu", [&](Tensor x) { return swiglu(std::move(x), up); }},
    };
    std::vector<Table::Column> columns = {{"operation", 16, Table::Align::Left}};
    for (kernels::Variant v : variants)
        columns.push_back({std::string(kernels::variant_name(v)) + " ns/el", 20, Table::Align::Right});
    columns.push_back({"best vs reference", 17, Table::Align::Right});
    const Table table(columns);
    table.print_header();
    const double elements = static_cast<double>(passes) * static_cast<double>(activations.numel());
    for (const Operation& operation : operations) {
        std::vector<std::vector<double>> seconds(variants.size());
        for (int rep = -1; rep < 15; ++rep)
            for (size_t v = 0; v < variants.size(); ++v) {
                kernels::set_variant(variants[v]);
                Tensor x = activations;
                const auto start = Clock::now();
                for (int pass = 0; pass < passes; ++pass) x = operation.run(std::move(x));
                const double time = seconds_since(start);
                if (rep >= 0) seconds[v].push_back(time);
            }
        std::vector<std::string> cells = {operation.name};
        for (size_t v = 0; v < variants.size(); ++v) {
            char cell[32];
            std::snprintf(cell, sizeof cell, "%.3f", median(seconds[v]) * 1e9 / elements);
            cells.push_back(cell);
        }
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.2fx", median(seconds.front()) / median(seconds.back()));
        cells.push_back(ratio);
        table.print_row(cells);
    }
}

}  // namespace

void run_kernels_suite(const Settings&) {
    using kernels::Variant;
    std::printf("row kernels (engine/cpu/kernels.*): ns per element, median of 15 calls per variant; variants alternate\n");
    std::printf("variant in use: %s (%s)\n", kernels::variant_name(kernels::active_variant()),
                kernels::variant_choice().c_str());
    const Variant before = kernels::active_variant();
    std::vector<Variant> variants;
    // The reference (engine/ops.cpp's plain formulas) first: its "vs base" ratios say how
    // much the fast loops are worth.
    for (Variant v : {Variant::Reference, Variant::Baseline, Variant::Avx2, Variant::Avx512})
        if (kernels::variant_supported(v)) variants.push_back(v);
    constexpr size_t kBase = 1;  // variants[1]: baseline x86-64
    constexpr int kInner = 8;  // passes per timed call
    const Tensor scores = Random(1).normal_tensor({64, 2048}, 3.0f);
    const Tensor activations = Random(2).normal_tensor({256, 512});
    const Tensor gamma = Random(3).normal_tensor({512}), beta = Random(4).normal_tensor({512});
    std::vector<std::vector<double>> softmax_seconds(variants.size()), norm_seconds(variants.size()),
        gelu_seconds(variants.size());
    std::vector<double> erf_seconds;  // the scalar loop before the kernel: x (1 + std::erf(x / sqrt 2)) / 2
    const OtherLoad load;
    for (int rep = -1; rep < 15; ++rep)
        for (size_t v = 0; v < variants.size(); ++v) {
            kernels::set_variant(variants[v]);
            Tensor x = scores, y = activations;  // copied outside the timing
            auto start = Clock::now();
            for (int pass = 0; pass < kInner; ++pass)  // softmax of a softmax is still a valid input
                for (int64_t r = 0; r < 64; ++r) softmax_row(x.data() + r * 2048, 2048);
            const double softmax = seconds_since(start);
            start = Clock::now();
            for (int pass = 0; pass < kInner; ++pass) y = layer_norm(std::move(y), gamma, beta, 1e-5f);
            const double norm = seconds_since(start);
            Tensor z = activations;
            start = Clock::now();
            for (int pass = 0; pass < kInner; ++pass) z = gelu(std::move(z));
            const double gelu_time = seconds_since(start);
            if (rep >= 0) {
                softmax_seconds[v].push_back(softmax);
                norm_seconds[v].push_back(norm);
                gelu_seconds[v].push_back(gelu_time);
            }
            if (v + 1 == variants.size()) {
                Tensor w = activations;
                start = Clock::now();
                for (int pass = 0; pass < kInner; ++pass)
                    for (int64_t i = 0; i < w.numel(); ++i)
                        w.data()[i] = w.data()[i] * 0.5f * (1.0f + std::erf(w.data()[i] * 0.70710678f));
                const double erf_time = seconds_since(start);
                if (rep >= 0) erf_seconds.push_back(erf_time);
            }
        }
    kernels::set_variant(before);
    const Table table({{"variant", 16, Table::Align::Left},
                       {"softmax ns/el", 13, Table::Align::Right},
                       {"LayerNorm ns/el", 15, Table::Align::Right},
                       {"softmax vs base", 15, Table::Align::Right},
                       {"LN vs base", 10, Table::Align::Right},
                       {"GELU ns/el", 10, Table::Align::Right}});
    table.print_header();
    const double elements = kInner * 64.0 * 2048.0;  // both tensors hold 2^17 floats, kInner passes
    const double base_softmax = median(softmax_seconds[kBase]), base_norm = median(norm_seconds[kBase]);
    for (size_t v = 0; v < variants.size(); ++v) {
        char a[32], b[32], c[32], d[32], e[32];
        std::snprintf(a, sizeof a, "%.3f", median(softmax_seconds[v]) * 1e9 / elements);
        std::snprintf(b, sizeof b, "%.3f", median(norm_seconds[v]) * 1e9 / elements);
        std::snprintf(c, sizeof c, "%.2fx", base_softmax / median(softmax_seconds[v]));
        std::snprintf(d, sizeof d, "%.2fx", base_norm / median(norm_seconds[v]));
        std::snprintf(e, sizeof e, "%.3f", median(gelu_seconds[v]) * 1e9 / elements);
        table.print_row({kernels::variant_name(variants[v]), a, b, c, d, e});
    }
    std::printf("GELU with scalar std::erf (the loop before engine/kernels had GELU): %.3f ns/el; the best variant "
                "is %.1fx faster\n",
                median(erf_seconds) * 1e9 / elements, median(erf_seconds) / median(gelu_seconds.back()));
    std::printf("\nthe other row kernels, on [256, 512], %d passes per call: ns per element, median of 15 calls; "
                "\"best vs reference\" = the plain formula's time / the %s variant's\n",
                kInner, kernels::variant_name(variants.back()));
    print_other_kernels(variants, activations, kInner);
    kernels::set_variant(before);
    std::printf("others: %s of the CPUs were used by other processes meanwhile\n", format_load(load.fraction()).c_str());
}

}  // namespace tinyformer::bench
