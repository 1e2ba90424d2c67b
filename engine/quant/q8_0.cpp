#include "engine/quant/q8_0.h"

#include "engine/cpu/features.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/row_threads.h"
#include "engine/matmul.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tinyformer {

Q8View Q8View::rows_range(int64_t first, int64_t count) const {
    if (first < 0 || count < 0 || first + count > rows)
        fail("Q8View::rows_range: rows [", first, ", ", first + count, ") of a matrix of ", rows, " rows");
    return {values + first * cols, scales + first * groups_per_row(), count, cols, group};
}

void Q8Matrix::check(const std::string& what, const Q8View& view) {
    if (view.rows <= 0 || view.cols <= 0) fail(what, ": a Q8_0 matrix needs rows and columns, got [", view.rows, ",", view.cols, "]");
    if (view.group <= 0 || view.cols % view.group != 0)
        fail(what, ": the Q8_0 group size ", view.group, " does not divide the ", view.cols,
             " columns (the input axis K; docs/FORMAT.md)");
    // A group's int32 sum holds G products of at most 127 * 127 (values and
    // activations in -127..127): G <= 65536 keeps it below 2^31 with room.
    if (view.group > kQ8MaxGroup)
        fail(what, ": the Q8_0 group size ", view.group, " is above ", kQ8MaxGroup,
             " (a group's int32 sum of products could overflow)");
    const int64_t scales = view.rows * view.groups_per_row();
    for (int64_t i = 0; i < scales; ++i)
        if (!std::isfinite(view.scales[i] * static_cast<float>(kQ8Max)) || view.scales[i] < 0) {
            const float scale = view.scales[i];
            fail(what, ": Q8_0 scale ", i, " (row ", i / view.groups_per_row(), ", group ", i % view.groups_per_row(),
                 ") is ", std::isnan(scale) ? "NaN" : std::isinf(scale) ? (scale > 0 ? "inf" : "-inf") : text_of(scale),
                 "; a scale is a number >= 0 whose 127 times is finite");
        }
    if (view.values)
        for (int64_t i = 0; i < view.rows * view.cols; ++i)
            if (view.values[i] < -kQ8Max)
                fail(what, ": Q8_0 value ", i, " (row ", i / view.cols, ", column ", i % view.cols, ") is ",
                     int{view.values[i]}, "; values are in -127..127");
}

Q8Matrix Q8Matrix::from(const std::string& what, int64_t rows, int64_t cols, int64_t group, std::vector<int8_t> values,
                        std::vector<float> scales) {
    if (rows <= 0 || cols <= 0 || group <= 0 || cols % group != 0) check(what, {nullptr, nullptr, rows, cols, group});
    if (static_cast<int64_t>(values.size()) != rows * cols || static_cast<int64_t>(scales.size()) != rows * (cols / group))
        fail(what, ": a Q8_0 matrix [", rows, ",", cols, "] in groups of ", group, " has ", rows * cols, " values and ",
             rows * (cols / group), " scales; got ", values.size(), " and ", scales.size());
    auto storage = std::make_shared<Storage>(Storage{std::move(values), std::move(scales), nullptr});
    Q8Matrix matrix;
    matrix.view_ = {storage->values.data(), storage->scales.data(), rows, cols, group};
    matrix.storage_ = std::move(storage);
    check(what, matrix.view_);
    return matrix;
}

Q8Matrix Q8Matrix::in_place(const std::string& what, int64_t rows, int64_t cols, int64_t group, const int8_t* values,
                            std::shared_ptr<const void> owner, std::vector<float> scales) {
    if (rows <= 0 || cols <= 0 || group <= 0 || cols % group != 0) check(what, {nullptr, nullptr, rows, cols, group});
    if (static_cast<int64_t>(scales.size()) != rows * (cols / group))
        fail(what, ": a Q8_0 matrix [", rows, ",", cols, "] in groups of ", group, " has ", rows * (cols / group),
             " scales; got ", scales.size());
    auto storage = std::make_shared<Storage>(Storage{{}, std::move(scales), std::move(owner)});
    Q8Matrix matrix;
    matrix.view_ = {values, storage->scales.data(), rows, cols, group};
    matrix.storage_ = std::move(storage);
    check(what, matrix.view_);
    return matrix;
}

void quantize_q8_0_row(const float* x, int64_t n, int64_t group, int8_t* q, float* scales) {
    if (group <= 0 || n % group != 0) fail("quantize_q8_0_row: group size ", group, " does not divide ", n);
    for (int64_t g = 0; g < n / group; ++g) {
        const float* values = x + g * group;
        float largest = 0.0f;
        bool finite = true;
        for (int64_t i = 0; i < group; ++i) {
            largest = std::max(largest, std::fabs(values[i]));
            finite = finite && std::isfinite(values[i]);
        }
        if (!finite) {  // a NaN or an infinity: the scale is NaN, so every product of the group is NaN (never an int8 of NaN)
            scales[g] = std::numeric_limits<float>::quiet_NaN();
            std::fill(q + g * group, q + (g + 1) * group, int8_t{0});
            continue;
        }
        const float scale = largest / kQ8Max;
        scales[g] = scale;
        for (int64_t i = 0; i < group; ++i) {
            // x / s lies in [-127, 127] up to rounding; the clamp only makes that certain.
            const float ratio = scale == 0.0f ? 0.0f : values[i] / scale;
            q[g * group + i] = static_cast<int8_t>(std::clamp(std::round(ratio), -127.0f, 127.0f));
        }
    }
}

Q8Matrix quantize_q8_0(ConstMatrixView weight, int64_t group) {
    if (group <= 0 || weight.cols % group != 0)
        fail("quantize_q8_0: the group size ", group, " does not divide the ", weight.cols, " columns");
    std::vector<int8_t> values(weight.rows * weight.cols);
    std::vector<float> scales(weight.rows * (weight.cols / group));
    for (int64_t r = 0; r < weight.rows; ++r)
        quantize_q8_0_row(weight.row(r), weight.cols, group, values.data() + r * weight.cols,
                          scales.data() + r * (weight.cols / group));
    return Q8Matrix::from("quantize_q8_0", weight.rows, weight.cols, group, std::move(values), std::move(scales));
}

Tensor dequantize_q8_0(const Q8View& weight) {
    Tensor result({weight.rows, weight.cols});
    float* out = result.data();
    for (int64_t r = 0; r < weight.rows; ++r)
        for (int64_t c = 0; c < weight.cols; ++c)
            out[r * weight.cols + c] = weight.values[r * weight.cols + c] * weight.scales[r * weight.groups_per_row() + c / weight.group];
    return result;
}

// Reference: y_r = sum over groups g (in order) of sw_{r,g} * sx_g * (int32 sum of qw * qx over the group).
void q8_matvec_reference(const Q8View& weight, const int8_t* qx, const float* sx, float* y) {
    const int64_t G = weight.group, groups = weight.groups_per_row();
    for (int64_t r = 0; r < weight.rows; ++r) {
        const int8_t* qw = weight.values + r * weight.cols;
        const float* sw = weight.scales + r * groups;
        float sum = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
            int32_t dot = 0;
            for (int64_t i = g * G; i < (g + 1) * G; ++i) dot += int32_t{qw[i]} * int32_t{qx[i]};
            sum += static_cast<float>(dot) * sw[g] * sx[g];
        }
        y[r] = sum;
    }
}

bool q8_uses_avx2() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    static const bool has_avx2 = cpu_features().avx2;
    const kernels::Variant variant = kernels::active_variant();
    return has_avx2 && (variant == kernels::Variant::Avx2 || variant == kernels::Variant::Avx512);
#else
    return false;
#endif
}

void q8_matvec(const Q8View& weight, const int8_t* qx, const float* sx, float* y) {
    if (q8_uses_avx2())
        q8_matvec_avx2(weight, qx, sx, y);
    else
        q8_matvec_reference(weight, qx, sx, y);
}

double q8_error_bound(const float* w, const float* x, int64_t K, int64_t group, float bias) {
    if (group <= 0 || K % group != 0) fail("q8_error_bound: group size ", group, " does not divide ", K);
    const double h = 0.5 + std::ldexp(1.0, -16);
    double rounding = 0, magnitude = std::fabs(static_cast<double>(bias));
    for (int64_t g = 0; g < K / group; ++g) {
        double largest_w = 0, largest_x = 0;
        for (int64_t i = g * group; i < (g + 1) * group; ++i) {
            largest_w = std::max(largest_w, std::fabs(static_cast<double>(w[i])));
            largest_x = std::max(largest_x, std::fabs(static_cast<double>(x[i])));
        }
        const double sw = largest_w / kQ8Max, sx = largest_x / kQ8Max;
        for (int64_t i = g * group; i < (g + 1) * group; ++i) {
            const double wi = std::fabs(static_cast<double>(w[i])), xi = std::fabs(static_cast<double>(x[i]));
            rounding += sw * h * xi + sx * h * wi + sw * sx * h * h;
            magnitude += (wi + sw * h) * (xi + sx * h);
        }
    }
    return rounding + static_cast<double>(K + K / group + 4) * std::ldexp(1.0, -24) * magnitude;
}

namespace {

// A job for the row threads: y = W x for some rows of a Q8_0 W, x quantized.
struct Q8Job {
    const Q8View* weight;
    const int8_t* qx;
    const float* sx;
    float* y;
};

void q8_rows(void* context, int64_t first, int64_t last) {
    const Q8Job& job = *static_cast<const Q8Job*>(context);
    q8_matvec(job.weight->rows_range(first, last - first), job.qx, job.sx, job.y + first);
}

// As engine/cpu/gemv.cpp: below this many weights one thread is faster than waking others.
constexpr int64_t kThreadedQ8 = 32768;

}  // namespace

Tensor linear_q8(const Tensor& x, const Q8View& weight, const float* bias) {
    if (x.rank() < 1 || x.dim(-1) != weight.cols)
        fail("linear_q8: x has last axis ", x.rank() < 1 ? 0 : x.dim(-1), " but the Q8_0 weight is [", weight.rows, ",",
             weight.cols, "] (x ", shape_string(x.shape()), ")");
    Shape shape = x.shape();
    shape.back() = weight.rows;
    Tensor y(shape);
    const int64_t rows = x.numel() / weight.cols;
    // x's quantized row: buffers kept by the thread, so a decoding step allocates nothing once they are grown.
    thread_local std::vector<int8_t> qx;
    thread_local std::vector<float> sx;
    qx.resize(static_cast<size_t>(weight.cols));
    sx.resize(static_cast<size_t>(weight.groups_per_row()));
    const int threads = weight.rows * weight.cols >= kThreadedQ8 ? blas_threads() : 1;
    const float* in = x.data();
    float* out = y.data();
    for (int64_t m = 0; m < rows; ++m) {
        quantize_q8_0_row(in + m * weight.cols, weight.cols, weight.group, qx.data(), sx.data());
        // W's rows split between the engine's threads (engine/cpu/row_threads.h), each row on its own: the same bits.
        Q8Job job{&weight, qx.data(), sx.data(), out + m * weight.rows};
        for_row_chunks(weight.rows, threads, q8_rows, &job);
        if (bias)
            for (int64_t r = 0; r < weight.rows; ++r) out[m * weight.rows + r] += bias[r];
    }
    return y;
}

}  // namespace tinyformer
