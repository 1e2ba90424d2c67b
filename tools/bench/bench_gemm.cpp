// Suite "gemm": the three matrix products side by side, in GFLOP/s — gemm_naive
// (the three-loop reference, double sums), gemm_blocked (the engine's own
// cache-blocked product, engine/cpu/matmul_blocked.cpp: what the WebAssembly engine
// runs) and gemm (OpenBLAS) — at the toy models' linear() shapes: y [M, N] =
// x [M, K] W^T with W [N, K], M in {1, 8, 32} (one decoding step, a short
// batch, a sequence), K, N in {64, 256}; and one bigger square product,
// 256 x 256 x 256, in both layouts of B. OpenBLAS runs on 1 thread (the
// others never thread) unless --threads says otherwise. Each timing repeats the
// product for about 20 ms; median of 7, the three products alternating.
#include "engine/matmul.h"
#include "engine/random.h"
#include "tools/bench/bench.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace tinyformer::bench {

namespace {

using Gemm = void (*)(ConstMatrixView, Transpose, ConstMatrixView, Transpose, MatrixView, float, float);

struct Shape3 {
    int64_t m, k, n;
    Transpose tb;  // Yes: B is W [N, K] (linear); No: B is [K, N]
};

std::string format_number(const char* format, double value) {
    char text[32];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

}  // namespace

void run_gemm_suite(const Settings& settings) {
    const int before = blas_threads();
    set_blas_threads(settings.threads > 0 ? settings.threads : 1);
    std::printf("matrix products: GFLOP/s (2 M N K flops per product), median of 7 timings of ~20 ms each,\n"
                "gemm_naive / gemm_blocked / OpenBLAS gemm alternating; B is W [N,K] (linear) unless marked [K,N]\n");
    std::printf("gemm_blocked: the engine's own (engine/cpu/matmul_blocked.cpp), 1 thread, plain C++ inner loops here\n");
    std::printf("%s\n", blas_line().c_str());
    std::vector<Shape3> shapes;
    for (int64_t m : {1, 8, 32})
        for (int64_t k : {64, 256})
            for (int64_t n : {64, 256}) shapes.push_back({m, k, n, Transpose::Yes});
    shapes.push_back({256, 256, 256, Transpose::Yes});
    shapes.push_back({256, 256, 256, Transpose::No});
    const Gemm products[] = {gemm_naive, gemm_blocked, gemm};
    const Table table({{"M x K x N", 22, Table::Align::Left},
                       {"naive", 8, Table::Align::Right},
                       {"blocked", 8, Table::Align::Right},
                       {"OpenBLAS", 9, Table::Align::Right},
                       {"blocked/naive", 14, Table::Align::Right},
                       {"OpenBLAS/blocked", 17, Table::Align::Right}});
    table.print_header();
    const OtherLoad load;
    Random random(1);
    for (const Shape3& s : shapes) {
        const Tensor x = random.normal_tensor({s.m, s.k});
        const Tensor w = s.tb == Transpose::Yes ? random.normal_tensor({s.n, s.k}) : random.normal_tensor({s.k, s.n});
        Tensor y(Shape{s.m, s.n});
        const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
        int repeats[3];
        for (int p = 0; p < 3; ++p) {  // how many products make ~20 ms, from one timed call (also a warm-up)
            const auto start = Clock::now();
            products[p](x.matrix(), Transpose::No, w.matrix(), s.tb, y.matrix(), 1.0f, 0.0f);
            repeats[p] = static_cast<int>(std::clamp(0.02 / std::max(1e-9, seconds_since(start)), 1.0, 1e6));
        }
        std::vector<double> seconds[3];
        for (int rep = 0; rep < 7; ++rep)
            for (int p = 0; p < 3; ++p) {
                const auto start = Clock::now();
                for (int r = 0; r < repeats[p]; ++r)
                    products[p](x.matrix(), Transpose::No, w.matrix(), s.tb, y.matrix(), 1.0f, 0.0f);
                seconds[p].push_back(seconds_since(start) / repeats[p]);
            }
        double gflops[3];
        for (int p = 0; p < 3; ++p) gflops[p] = flops / median(seconds[p]) / 1e9;
        const std::string name = std::to_string(s.m) + " x " + std::to_string(s.k) + " x " + std::to_string(s.n) +
                                 (s.tb == Transpose::No ? " [K,N]" : "");
        table.print_row({name, format_number("%.2f", gflops[0]), format_number("%.2f", gflops[1]),
                         format_number("%.2f", gflops[2]), format_number("%.1fx", gflops[1] / gflops[0]),
                         format_number("%.2fx", gflops[2] / gflops[1])});
    }
    std::printf("others: %s of the CPUs were used by other processes meanwhile\n", format_load(load.fraction()).c_str());
    set_blas_threads(before);
}

}  // namespace tinyformer::bench
