#include "engine/cpu/gemv.h"

#include "engine/cpu/kernels.h"
#include "engine/cpu/row_threads.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace tinyformer {

namespace {

// A job for the row threads: y = W x over some of W's rows, for one or two
// matrices (gemv_pair); the rows of the two are numbered one after the other.
struct GemvJob {
    decltype(kernels::Table::gemv) kernel;
    ConstMatrixView w[2];
    float* y[2];
    const float* x;
    int count;    // matrices: 1 or 2
    int threads;  // at most this many threads
};

void gemv_rows(void* context, int64_t first, int64_t last) {
    const GemvJob& job = *static_cast<const GemvJob*>(context);
    for (int m = 0; m < job.count && first < last; ++m) {
        const ConstMatrixView& w = job.w[m];
        const int64_t end = std::min(last, w.rows);
        if (first < end) job.kernel(w.data + first * w.stride, w.stride, job.x, job.y[m] + first, end - first, w.cols);
        first = std::max<int64_t>(first, w.rows) - w.rows;  // continue in the next matrix's numbering
        last -= w.rows;
    }
}

// The rows of a pair are split as one matrix; when W1 has a row count that is
// not a multiple of kRowAlign, a chunk may start inside W3 off a multiple of the
// kernel's block: a row's result does not depend on its block (kernels.inc).
constexpr int64_t kThreadedGemv = 32768;
void run_gemv(GemvJob& job) {
    int64_t rows = 0;
    for (int m = 0; m < job.count; ++m) rows += job.w[m].rows;
    // Small products on one thread: below kThreadedGemv weights, waking
    // the workers costs more than they save (toy models' steps).
    const int64_t k = job.w[0].cols;
    for_row_chunks(rows, rows * k >= kThreadedGemv ? job.threads : 1, gemv_rows, &job);
}

}  // namespace

void gemv(ConstMatrixView w, const float* x, float* y, int threads) {
    GemvJob job{kernels::table().gemv, {w, w}, {y, y}, x, 1, threads};
    run_gemv(job);
}

void gemv_pair(ConstMatrixView w1, float* y1, ConstMatrixView w3, float* y3, const float* x, int threads) {
    if (w1.cols != w3.cols) fail("gemv_pair: W1 has ", w1.cols, " columns and W3 ", w3.cols, "; x is one vector for both");
    GemvJob job{kernels::table().gemv, {w1, w3}, {y1, y3}, x, 2, threads};
    run_gemv(job);
}

GemvPath decide_gemv(const GemvInputs& inputs, int64_t, int64_t) {
    if (inputs.setting == "blas") return GemvPath::Blas;
    if (inputs.setting == "engine") return GemvPath::Engine;
    if (inputs.setting.empty() || inputs.setting == "auto")
        return inputs.self_check_passed ? GemvPath::Engine : GemvPath::Blas;
    fail("TINYFORMER_GEMV=", inputs.setting, ": expected auto, engine or blas");
}

bool gemv_self_check(double* worst) {
    double largest = 0;
    bool passed = true;
    const int64_t shapes[][2] = {{67, 45}, {33, 300}, {1, 17}};
    for (const auto& shape : shapes) {
        const int64_t n = shape[0], k = shape[1];
        std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
        std::vector<float> expected(static_cast<size_t>(n));
        // Values from a fixed formula (no random state): mixed signs and magnitudes.
        for (int64_t i = 0; i < n * k; ++i) w[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
        for (int64_t j = 0; j < k; ++j) x[static_cast<size_t>(j)] = std::cos(1.3f * static_cast<float>(j)) - 0.25f;
        gemv(ConstMatrixView{w.data(), n, k, k}, x.data(), y.data(), 1);
        kernels::kReferenceTable.gemv(w.data(), k, x.data(), expected.data(), n, k);  // the sums in double
        for (int64_t r = 0; r < n; ++r) {
            double magnitude = 0;
            for (int64_t j = 0; j < k; ++j)
                magnitude += std::fabs(static_cast<double>(w[static_cast<size_t>(r * k + j)]) * x[static_cast<size_t>(j)]);
            const double difference = std::fabs(static_cast<double>(y[static_cast<size_t>(r)]) - expected[static_cast<size_t>(r)]);
            const double relative = difference / std::max(magnitude, 1e-30);
            if (!(relative <= 1e-5)) passed = false;  // NaN fails too
            largest = std::max(largest, std::isnan(relative) ? INFINITY : relative);
        }
    }
    if (worst) *worst = largest;
    return passed;
}

namespace {

std::string gemv_setting() {
    const char* value = std::getenv("TINYFORMER_GEMV");
    std::string text = value ? value : "";
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// This process's inputs, read when a product first asks.
const GemvInputs& process_gemv_inputs() {
    static const GemvInputs inputs = [] {
        GemvInputs read;
        read.setting = gemv_setting();
        read.self_check_passed = gemv_self_check();
        decide_gemv(read, 1, 1);  // an unknown setting is an Error here, at the first product
        return read;
    }();
    return inputs;
}

}  // namespace

GemvPath gemv_path(int64_t n, int64_t k) { return decide_gemv(process_gemv_inputs(), n, k); }

std::string gemv_description() {
    const GemvInputs& inputs = process_gemv_inputs();
    double worst = 0;
    const bool passed = gemv_self_check(&worst);
    char check[96];
    std::snprintf(check, sizeof check, "self-check %s (worst %.1e)", passed ? "passed" : "FAILED", worst);
    const char* kernel = kernels::variant_name(kernels::active_variant());
    std::string why = inputs.setting.empty() || inputs.setting == "auto"
                          ? "auto (TINYFORMER_GEMV=engine|blas chooses)"
                          : "chosen by TINYFORMER_GEMV=" + inputs.setting;
    return std::string(gemv_path(1, 1) == GemvPath::Engine ? "engine gemv (" + std::string(kernel) + ")"
                                                            : std::string("OpenBLAS sgemv")) +
           ", " + why + ", " + check;
}

}  // namespace tinyformer
