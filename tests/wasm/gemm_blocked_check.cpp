// A standalone check of gemm_blocked's WebAssembly SIMD kernel: compiled by
// em++ with -msimd128, it compares gemm_blocked with gemm_naive over shapes,
// the four transposes, strided windows and alpha/beta (NaN in C for beta = 0),
// exits 1 on any element off by more than 2e-6 (K + 4), and prints GFLOP/s of
// both under node. Not part of the native build (the doctests cover the plain
// C++ kernel); from the repository's top directory:
//
//   em++ -std=c++20 -O2 -fexceptions -msimd128 -DTINYFORMER_OWN_GEMM -sSINGLE_FILE=1 -I. \
//       tests/wasm/gemm_blocked_check.cpp engine/cpu/matmul_blocked.cpp engine/matmul.cpp engine/tensor.cpp \
//       -o build/gemm_blocked_check.cjs && node build/gemm_blocked_check.cjs
//
// (.cjs: the repository's package.json makes .js files ES modules; NODE_PATH=/usr/share/nodejs
// in the environment for Debian's emscripten.)
#include "engine/matmul.h"
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <chrono>
#include <vector>
using namespace tinyformer;
static uint32_t st = 7;
static float rnd() { st = st * 1664525u + 1013904223u; return (float)((int32_t)(st >> 8) % 2001 - 1000) / 1000.0f; }
static void print_timings() {
    const int64_t shapes[][3] = {{1, 256, 256}, {8, 64, 64}, {32, 256, 256}, {256, 256, 256}};
    for (auto& s : shapes) {
        const int64_t m = s[0], k = s[1], n = s[2];
        std::vector<float> A(m * k), W(n * k), C(m * n);
        for (auto& x : A) x = rnd(); for (auto& x : W) x = rnd();
        double g[2];
        for (int p = 0; p < 2; ++p) {
            int reps = std::max<int64_t>(1, 20000000 / (2 * m * n * k));
            auto t0 = std::chrono::steady_clock::now();
            for (int r = 0; r < reps; ++r)
                (p ? gemm_blocked : gemm_naive)({A.data(), m, k, k}, Transpose::No, {W.data(), n, k, k}, Transpose::Yes, {C.data(), m, n, n}, 1, 0);
            double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
            g[p] = 2.0 * m * n * k / sec / 1e9;
        }
        std::printf("wasm %lldx%lldx%lld (W [N,K]): naive %.2f GFLOP/s, blocked %.2f GFLOP/s, %.1fx\n", (long long)m, (long long)k, (long long)n, g[0], g[1], g[1] / g[0]);
    }
}

int main() {
    const int shapes[][3] = {{1,1,1},{1,64,64},{1,256,64},{1,37,29},{8,64,64},{32,256,256},{5,1,7},{65,129,33},{300,70,257},{4,8,256},{13,17,600},{7,1,1},{1,1,9}};
    int bad = 0, runs = 0;
    for (auto& s : shapes) for (int t = 0; t < 4; ++t) for (int ab = 0; ab < 2; ++ab) {
        const int64_t m = s[0], n = s[1], k = s[2];
        Transpose ta = (t & 1) ? Transpose::Yes : Transpose::No, tb = (t & 2) ? Transpose::Yes : Transpose::No;
        int64_t ar = ta == Transpose::Yes ? k : m, ac = ta == Transpose::Yes ? m : k;
        int64_t br = tb == Transpose::Yes ? n : k, bc = tb == Transpose::Yes ? k : n;
        int64_t as = ac + 3, bs = bc + 5, cs = n + 2;
        std::vector<float> A(ar * as), B(br * bs), C(m * cs), R;
        for (auto& x : A) x = rnd(); for (auto& x : B) x = rnd(); for (auto& x : C) x = ab ? rnd() : NAN;
        R = C;
        float alpha = ab ? 0.5f : 1.0f, beta = ab ? -2.0f : 0.0f;
        gemm_blocked({A.data(), ar, ac, as}, ta, {B.data(), br, bc, bs}, tb, {C.data(), m, n, cs}, alpha, beta);
        gemm_naive({A.data(), ar, ac, as}, ta, {B.data(), br, bc, bs}, tb, {R.data(), m, n, cs}, alpha, beta);
        double worst = 0;
        for (int64_t i = 0; i < m; ++i) for (int64_t j = 0; j < n; ++j) {
            double d = std::fabs((double)C[i * cs + j] - R[i * cs + j]);
            if (!(d <= 1e-6 * (k + 4) * 2)) ++bad;
            if (d > worst || std::isnan(d)) worst = d;
        }
        ++runs;
        if (m == 300) std::printf("%lldx%lldx%lld ta=%d tb=%d ab=%d worst %.2e\n", (long long)m, (long long)n, (long long)k, t & 1, t >> 1, ab, worst);
    }
    std::printf("%s: %d runs, %d bad elements\n", blas_description().c_str(), runs, bad);
    if (bad == 0) print_timings();
    return bad != 0;
}
