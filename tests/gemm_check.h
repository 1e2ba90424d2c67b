// One check for every matrix product of engine/matmul.h against the
// three-loop gemm_naive (double sums): test_matmul.cpp runs it on the BLAS
// gemm, test_matmul_blocked.cpp on the engine's own gemm_blocked.
//
// Tolerance. Both sum in float. Each output is a sum of K products; summing
// K terms in float rounds at most K times, each time by at most u = 2^-24 of
// the partial sum, so the error is at most about K u sum_k |a_ik b_kj|.
// alpha, beta and a blocked product's panel additions into C add a few
// roundings more, and the reference (a double sum rounded to float, then
// alpha * it + beta * c in float) a few of its own, so each element must be
// within  (K + 8) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|)  of gemm_naive.
// That bound is reached only by adversarial inputs; a wrong index or a lost
// term moves an element by about one |a b| ~ 0.25, hundreds of times more.
#pragma once

#include <doctest/doctest.h>

#include "engine/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace test_helpers {

using tinyformer::MatrixView;
using tinyformer::Transpose;

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // 2^-24, float's

// Deterministic numbers in [-1, 1) (a 32-bit LCG), so a failing shape reproduces.
struct Numbers {
    uint32_t state;
    float next() {
        state = state * 1664525u + 1013904223u;
        return static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
};

// A rows x cols window into a larger buffer: it starts `offset` floats in and
// each row is followed by `padding` floats that the window must never touch.
struct Strided {
    std::vector<float> buffer;
    int64_t rows, cols, stride, offset;

    Strided(int64_t rows_, int64_t cols_, int64_t padding, int64_t offset_, float fill)
        : buffer(static_cast<size_t>(offset_ + rows_ * (cols_ + padding) + 1), fill),
          rows(rows_), cols(cols_), stride(cols_ + padding), offset(offset_) {}
    MatrixView view() { return {buffer.data() + offset, rows, cols, stride}; }
    void fill_window(Numbers& numbers) {
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) view()(r, c) = numbers.next();
    }
    // The same window with every element replaced by its magnitude.
    Strided magnitudes() const {
        Strided copy = *this;
        for (float& value : copy.buffer) value = std::fabs(value);
        return copy;
    }
    // Elements outside the window that are not `sentinel` any more.
    int64_t touched_outside(float sentinel) const {
        int64_t touched = 0;
        for (size_t i = 0; i < buffer.size(); ++i) {
            const int64_t at = static_cast<int64_t>(i) - offset;
            const bool inside = at >= 0 && at / stride < rows && at % stride < cols;
            if (!inside && buffer[i] != sentinel) ++touched;
        }
        return touched;
    }
};

struct GemmCase {
    int64_t m, n, k;
};

using GemmFunction = void (*)(tinyformer::ConstMatrixView, Transpose, tinyformer::ConstMatrixView, Transpose,
                              MatrixView, float, float);

// `product` against gemm_naive on every case, both transposes of A and of B,
// three alpha/beta pairs, and contiguous and strided views (windows into a
// bigger buffer, as a head slice of a projection is): every element within
// the bound above, nothing written outside C's window. nan_when_beta_is_0:
// C starts as NaN when beta = 0, which must be ignored (BLAS's rule), not
// multiplied by 0.
inline void check_against_naive(GemmFunction product, const std::vector<GemmCase>& cases, bool nan_when_beta_is_0) {
    struct Scale {
        float alpha, beta;
    };
    const Scale scales[] = {{1.0f, 0.0f}, {0.5f, 2.0f}, {-1.5f, 1.0f}};
    const Transpose both[] = {Transpose::No, Transpose::Yes};
    const int64_t paddings[] = {0, 3};
    const float sentinel = 12345.0f;
    auto name = [](Transpose t) { return t == Transpose::Yes ? "T" : "N"; };
    uint32_t seed = 1;
    for (const GemmCase& shape : cases)
        for (Transpose ta : both)
            for (Transpose tb : both)
                for (const Scale& scale : scales)
                    for (int64_t padding : paddings) {
                        CAPTURE(shape.m);
                        CAPTURE(shape.n);
                        CAPTURE(shape.k);
                        CAPTURE(name(ta));
                        CAPTURE(name(tb));
                        CAPTURE(scale.alpha);
                        CAPTURE(scale.beta);
                        CAPTURE(padding);
                        Numbers numbers{seed++};
                        const int64_t offset = padding == 0 ? 0 : 1;
                        // op(A) is [M, K]: stored [K, M] when transposed. Likewise B.
                        Strided a(ta == Transpose::Yes ? shape.k : shape.m, ta == Transpose::Yes ? shape.m : shape.k,
                                  padding, offset, sentinel);
                        Strided b(tb == Transpose::Yes ? shape.n : shape.k, tb == Transpose::Yes ? shape.k : shape.n,
                                  padding, offset, sentinel);
                        Strided c(shape.m, shape.n, padding, offset, sentinel);
                        a.fill_window(numbers);
                        b.fill_window(numbers);
                        c.fill_window(numbers);  // the C that beta scales
                        if (nan_when_beta_is_0 && scale.beta == 0.0f)
                            for (int64_t i = 0; i < shape.m; ++i)
                                for (int64_t j = 0; j < shape.n; ++j) c.view()(i, j) = std::numeric_limits<float>::quiet_NaN();
                        Strided reference = c, bound = c.magnitudes();

                        product(a.view(), ta, b.view(), tb, c.view(), scale.alpha, scale.beta);
                        tinyformer::gemm_naive(a.view(), ta, b.view(), tb, reference.view(), scale.alpha, scale.beta);
                        // bound = |alpha| |op(A)| |op(B)| + |beta| |C|: sum_k |a_ik b_kj| by the naive loops.
                        Strided a_abs = a.magnitudes(), b_abs = b.magnitudes();
                        tinyformer::gemm_naive(a_abs.view(), ta, b_abs.view(), tb, bound.view(), std::fabs(scale.alpha),
                                               std::fabs(scale.beta));

                        const double factor = static_cast<double>(shape.k + 8) * kUnitRoundoff;
                        int64_t outside = 0;
                        double worst = 0;  // the largest |difference| / allowed
                        for (int64_t i = 0; i < shape.m; ++i)
                            for (int64_t j = 0; j < shape.n; ++j) {
                                const double got = c.view()(i, j), want = reference.view()(i, j);
                                const double allowed = factor * bound.view()(i, j) + 1e-30;
                                const double difference = std::fabs(got - want);
                                if (!(difference <= allowed)) ++outside;  // NaN counts as outside
                                worst = std::max(worst, difference / allowed);
                            }
                        CAPTURE(worst);
                        CHECK(outside == 0);
                        CHECK(c.touched_outside(sentinel) == 0);  // nothing written past the window
                    }
}

}  // namespace test_helpers
