// Q8_0 — int8 weights in groups, each group with one float32 scale (the
// scheme of llama2.c's runq.c, and of ggml's Q8_0).
//
// A matrix W [rows, cols] is cut along its input axis (cols, K) into groups
// of G numbers (G divides cols). A group x_0..x_{G-1} is stored as
//   scale s = max|x_i| / 127,   q_i = round(x_i / s)   (int8, in -127..127)
// and read back as q_i * s. Rounding moves each number by at most s / 2, so
// a group's largest number survives exactly and the others move by at most
// max|x| / 254 (a group of zeros has s = 0 and q_i = 0: no division by zero).
//
// A product y = W x with a Q8_0 W computes as runq.c does: x is quantized
// the same way at run time (per group of G, its own scales sx_g), each group's
// dot product is a sum of int8 x int8 products in int32 (exact), and the
// groups' sums are scaled and added in float32, group by group:
//   y_r = sum_g  sw_{r,g} * sx_g * (sum_{i in g} qw_{r,i} * qx_i)
//
// q8_matvec_reference is that formula as plain loops; q8_matvec runs the
// AVX2 kernel (engine/quant/q8_0_avx2.cpp) when the CPU has it and the row
// kernels' variant (engine/cpu/kernels.h, TINYFORMER_KERNELS) is AVX2 or
// AVX-512, and the reference otherwise. The kernel forms the same int32 sums
// (integer sums do not depend on their order) and adds the groups in the same
// order, so the two give the same floats bit for bit (tests/test_q8_0.cpp).
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tinyformer {

constexpr int kQ8Max = 127;  // the largest |q|: int8 without -128, so that q and -q are both int8
constexpr int64_t kQ8MaxGroup = 65536;  // the largest group size G (a group's int32 sum: Q8Matrix::check)

// A read-only view of a Q8_0 matrix [rows, cols] in groups of `group`.
struct Q8View {
    const int8_t* values = nullptr;  // rows * cols, row-major
    const float* scales = nullptr;   // rows * (cols / group), row-major
    int64_t rows = 0, cols = 0, group = 0;

    int64_t groups_per_row() const { return cols / group; }
    // Rows [first, first + count) — e.g. W_Q, W_K or W_V of a fused in_proj.
    Q8View rows_range(int64_t first, int64_t count) const;
};

// A Q8_0 matrix with its own storage (or the checkpoint's bytes, kept by `owner`).
class Q8Matrix {
public:
    Q8Matrix() = default;  // empty: no quantized weight
    // Checked: rows, cols, group > 0, group divides cols, as many values and
    // scales as the shape needs, every scale >= 0 with 127 times it finite, every
    // value in -127..127, group <= kQ8MaxGroup. `what` names the
    // weight in the Error.
    static Q8Matrix from(const std::string& what, int64_t rows, int64_t cols, int64_t group,
                         std::vector<int8_t> values, std::vector<float> scales);
    // The same, reading the values where they lie (a checkpoint's mapped
    // bytes: int8 needs no alignment), `owner` keeping them alive; the scales
    // (1/G as many) are held here.
    static Q8Matrix in_place(const std::string& what, int64_t rows, int64_t cols, int64_t group,
                             const int8_t* values, std::shared_ptr<const void> owner, std::vector<float> scales);

    bool empty() const { return view_.rows == 0; }
    const Q8View& view() const { return view_; }
    int64_t rows() const { return view_.rows; }
    int64_t cols() const { return view_.cols; }
    int64_t group() const { return view_.group; }

private:
    static void check(const std::string& what, const Q8View& view);
    // What view_ points into, shared by copies (so a copied Linear reads the same bytes).
    struct Storage {
        std::vector<int8_t> values;       // empty when the values are read in place
        std::vector<float> scales;
        std::shared_ptr<const void> file;  // keeps values read in place alive
    };
    std::shared_ptr<const Storage> storage_;
    Q8View view_;
};

// One row of n numbers in groups of `group` (group divides n): q[n] and
// scales[n / group], by the rule above. Used for weights and for activations.
// A group holding a NaN or an infinity gets the scale NaN and q = 0, so that
// its products are NaN and reach the logits' check.
void quantize_q8_0_row(const float* x, int64_t n, int64_t group, int8_t* q, float* scales);
// W [rows, cols] (a float32 matrix view) quantized row by row.
Q8Matrix quantize_q8_0(ConstMatrixView weight, int64_t group);
// q * s back into float32, [rows, cols].
Tensor dequantize_q8_0(const Q8View& weight);

// y[rows] = W x for x quantized already (qx[cols], sx[cols / group]): the formula above.
void q8_matvec_reference(const Q8View& weight, const int8_t* qx, const float* sx, float* y);
void q8_matvec(const Q8View& weight, const int8_t* qx, const float* sx, float* y);
// True when q8_matvec runs the AVX2 kernel (for tests and `tinyformer version`).
bool q8_uses_avx2();

// How far the rounding may move one output of a Q8_0 product from the same
// product in float32: y = w . x + b with w, x of K numbers, w quantized in
// groups of G (scales sw_g) and x at run time (scales sx_g), by the rule
// above. With w_i = qw_i sw + e_i and x_i = qx_i sx + d_i (|e_i| <= sw h,
// |d_i| <= sx h):
//   w_i x_i - (qw_i sw)(qx_i sx) = w_i d_i + e_i x_i - e_i d_i
//   |y_q8 - y_f32| <= sum_i [ sw h |x_i| + sx h |w_i| + sw sx h^2 ]
//                     + (K + K/G + 4) 2^-24 (sum_i (|w_i| + sw h)(|x_i| + sx h) + |b|)
// h = 1/2 + 2^-16: s/2, and x / s is computed in float32 (relative error
// 2^-24 of at most 127). The last term is float32's own rounding on both
// sides, to first order: the float32 sum of K products, and the int8
// product's K/G scaled group sums, each with its bias. The scales are
// computed here from w and x (max|.| / 127 per group).
double q8_error_bound(const float* w, const float* x, int64_t K, int64_t group, float bias = 0.0f);

// y = x W^T + b with a Q8_0 W: x [..., cols] -> y [..., rows]; each row of x
// quantized by quantize_q8_0_row, then q8_matvec; `bias` rows floats or nullptr.
Tensor linear_q8(const Tensor& x, const Q8View& weight, const float* bias);

// The AVX2 kernel (engine/quant/q8_0_avx2.cpp); call only when q8_uses_avx2().
void q8_matvec_avx2(const Q8View& weight, const int8_t* qx, const float* sx, float* y);

}  // namespace tinyformer
