// The engine's one-row product (engine/cpu/gemv.h, engine/cpu/kernels.inc)
// against its plain reference, its split between threads
// (engine/cpu/row_threads.h), and how gemm() chooses it (decide_gemv).
#include "engine/cpu/gemv.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/row_threads.h"
#include "engine/error.h"
#include "engine/matmul.h"
#include "engine/random.h"
#include "tests/kernel_variants.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <cmath>
#include <limits>
#include <vector>

using namespace tinyformer;
using kernels::Variant;
using test_helpers::fast_variants;
using test_helpers::UseVariant;

namespace {

std::vector<float> random_values(int64_t n, uint64_t seed, float scale) {
    Random random(seed);
    const Tensor t = random.normal_tensor({n}, scale);
    return std::vector<float>(t.data(), t.data() + n);
}

// Sets the engine's (and OpenBLAS's) thread count for one scope.
class UseThreads {
public:
    explicit UseThreads(int threads) : before_(blas_threads()) { set_blas_threads(threads); }
    ~UseThreads() { set_blas_threads(before_); }
    UseThreads(const UseThreads&) = delete;
    UseThreads& operator=(const UseThreads&) = delete;

private:
    int before_;
};

}  // namespace

TEST_CASE("gemv: each fast variant against the reference, within the float summation bound") {
    // The fast kernels sum each row in sixteen float lanes (ceil(k/16) additions
    // each) and add the lanes pairwise (4 more levels); a product rounds once
    // more (or not at all, fused). The standard bound for a float sum of n
    // terms evaluated in a tree of depth d is gamma_d * sum |w_j x_j| with
    // gamma_d = d u / (1 - d u), u = 2^-24; here d = ceil(k/16) + 4 + 1 (+ 1 for
    // the reference's own rounding of its double sum to float). A lost tail
    // column, a lane added twice or a row's block misplaced is off by about
    // |w x| of one term, far more than this.
    const kernels::Table& reference = kernels::kReferenceTable;
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        for (int64_t k : {1, 15, 16, 17, 31, 288, 300, 768}) {
            for (int64_t rows : {1, 2, 3, 7, 8, 9, 17, 67}) {
                CAPTURE(k);
                CAPTURE(rows);
                const int64_t stride = k + 5;  // rows that are not contiguous, at odd alignments
                const std::vector<float> w = random_values(rows * stride, 100 + k, 1.0f);
                const std::vector<float> x = random_values(k, 200 + k, 2.0f);
                std::vector<float> y(static_cast<size_t>(rows), std::nanf("")), expected(static_cast<size_t>(rows));
                kernels::table().gemv(w.data(), stride, x.data(), y.data(), rows, k);
                reference.gemv(w.data(), stride, x.data(), expected.data(), rows, k);
                const double u = std::ldexp(1.0, -24), depth = static_cast<double>((k + 15) / 16 + 6);
                for (int64_t r = 0; r < rows; ++r) {
                    double magnitude = 0;
                    for (int64_t j = 0; j < k; ++j)
                        magnitude += std::fabs(static_cast<double>(w[static_cast<size_t>(r * stride + j)]) *
                                               x[static_cast<size_t>(j)]);
                    const double bound = depth * u / (1 - depth * u) * magnitude;
                    const double difference =
                        std::fabs(static_cast<double>(y[static_cast<size_t>(r)]) - expected[static_cast<size_t>(r)]);
                    CHECK(difference <= bound);  // NaN (a row not written) fails too
                }
            }
        }
    }
}

TEST_CASE("gemv: a row's bits do not depend on the rows summed with it, in every variant") {
    // Rows go through the kernel in blocks (8 at a time in AVX-512, whose block
    // adds its lanes in registers, eight rows at once) and the rows left over one
    // at a time: every row's lane sums and pairwise additions are in one fixed
    // order, so a row alone gives the bits it gives inside a block. k = 288
    // and 768 take the register path (no column left over), 300 the other.
    for (Variant variant : fast_variants()) {
        CAPTURE(kernels::variant_name(variant));
        const UseVariant use(variant);
        for (int64_t k : {288, 300, 768}) {
            CAPTURE(k);
            const int64_t rows = 19;
            const std::vector<float> w = random_values(rows * k, 300 + k, 1.0f), x = random_values(k, 400 + k, 1.0f);
            std::vector<float> together(static_cast<size_t>(rows)), alone(static_cast<size_t>(rows));
            kernels::table().gemv(w.data(), k, x.data(), together.data(), rows, k);
            for (int64_t r = 0; r < rows; ++r)
                kernels::table().gemv(w.data() + r * k, k, x.data(), alone.data() + r, 1, k);
            CHECK(together == alone);
        }
    }
}

TEST_CASE("row_chunks: whole multiples of kRowAlign, every row in exactly one chunk") {
    CHECK(row_chunks(0, 2).count == 0);
    CHECK(row_chunks(1000, 1).count == 1);
    CHECK(row_chunks(1000, 0).count == 1);
    for (int threads : {2, 3, 4, 7}) {
        for (int64_t rows : {1, 15, 16, 17, 288, 864, 32000}) {
            CAPTURE(threads);
            CAPTURE(rows);
            const RowChunks chunks = row_chunks(rows, threads);
            CHECK(chunks.chunk_rows % kRowAlign == 0);
            CHECK(chunks.count * chunks.chunk_rows >= rows);
            CHECK((chunks.count - 1) * chunks.chunk_rows < rows);  // no empty chunk
            CHECK(chunks.count <= 4 * threads);
        }
    }
    // for_row_chunks calls work once per chunk: each row counted once, on any thread.
    for (int threads : {1, 2, 3}) {
        for (int64_t rows : {1, 17, 1000}) {
            CAPTURE(threads);
            CAPTURE(rows);
            std::vector<std::atomic<int>> seen(static_cast<size_t>(rows));
            for_row_chunks(rows, threads, [](void* context, int64_t first, int64_t last) {
                auto& counts = *static_cast<std::vector<std::atomic<int>>*>(context);
                for (int64_t r = first; r < last; ++r) counts[static_cast<size_t>(r)].fetch_add(1);
            }, &seen);
            int wrong = 0;
            for (const auto& count : seen) wrong += count.load() != 1;
            CHECK(wrong == 0);
        }
    }
}

TEST_CASE("for_row_chunks runs on at most `threads` threads, also after a call with more") {
    // The pool keeps the workers a larger call started; a later call with
    // fewer threads must not use them all. An upper bound on the threads seen:
    // fewer taking part (a worker that starts late) is allowed.
    struct Seen {
        std::mutex mutex;
        std::set<std::thread::id> ids;
    };
    const auto record = [](void* context, int64_t, int64_t) {
        auto& seen = *static_cast<Seen*>(context);
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // long enough for every worker to join in
        const std::lock_guard<std::mutex> lock(seen.mutex);
        seen.ids.insert(std::this_thread::get_id());
    };
    for (int threads : {3, 2, 1, 3, 2}) {
        CAPTURE(threads);
        Seen seen;
        for_row_chunks(1600, threads, record, &seen);
        CHECK(static_cast<int>(seen.ids.size()) <= threads);
        CHECK(seen.ids.count(std::this_thread::get_id()) == 1);  // the caller always takes part
    }
}

TEST_CASE("gemv gives the same bits on 1, 2 and 3 threads, and gemv_pair the same as two gemv's") {
    // Exact, by construction: a row's sum is the kernel's whatever thread
    // computes it, and chunks start at multiples of kRowAlign, so every row goes
    // through the same block of the same kernel (engine/cpu/row_threads.h).
    // k = 77 leaves columns over; k = 288 takes AVX-512's eight-rows-in-registers sums.
    for (const int64_t k : {77, 288}) {
        CAPTURE(k);
        const int64_t rows = 1000, rows3 = 37;  // rows * k above the threshold for threads
        const std::vector<float> w = random_values(rows * k, 7, 1.0f), w3 = random_values(rows3 * k, 8, 1.0f);
        const std::vector<float> x = random_values(k, 9, 1.0f);
        const ConstMatrixView view{w.data(), rows, k, k}, view3{w3.data(), rows3, k, k};
        std::vector<std::vector<float>> results;
        for (int threads : {1, 2, 3}) {
            const UseThreads use(threads);
            std::vector<float> y(static_cast<size_t>(rows), std::nanf(""));
            gemv(view, x.data(), y.data(), threads);
            results.push_back(y);
            // The pair: W3's rows follow W1's in one split (W3 here 37 rows, W1 1000).
            std::vector<float> y1(static_cast<size_t>(rows), std::nanf("")), y3(static_cast<size_t>(rows3), std::nanf(""));
            std::vector<float> alone3(static_cast<size_t>(rows3));
            gemv_pair(view, y1.data(), view3, y3.data(), x.data(), threads);
            gemv(view3, x.data(), alone3.data(), threads);
            CHECK(y1 == y);
            CHECK(y3 == alone3);
        }
        CHECK(row_pool_workers() >= 1);  // 2 and 3 threads did start workers
        CHECK(results[1] == results[0]);
        CHECK(results[2] == results[0]);
        if (k == 77)
            CHECK_THROWS_WITH_AS(gemv_pair(view, nullptr, ConstMatrixView{w3.data(), 1, 5, 5}, nullptr, x.data(), 1),
                                 doctest::Contains("gemv_pair: W1 has 77 columns and W3 5"), Error);
    }
}

TEST_CASE("linear and linear_pair on one row (the engine's gemv) against gemm_naive, with and without biases") {
    const int64_t in = 300, out = 70;
    Random random(31);
    const Tensor x = random.normal_tensor({1, 1, in}), w1 = random.normal_tensor({out, in}),
                 w3 = random.normal_tensor({out + 3, in}), b1 = random.normal_tensor({out});
    Tensor expected({1, out});
    gemm_naive(ConstMatrixView{x.data(), 1, in, in}, Transpose::No, w1.matrix(), Transpose::Yes, expected.matrix());
    const Tensor plain = linear(x, w1, Tensor());
    const Tensor biased = linear(x, w1, b1);
    CHECK(plain.shape() == Shape{1, 1, out});
    for (int64_t j = 0; j < out; ++j) {
        CHECK(plain.data()[j] == doctest::Approx(expected.data()[j]).epsilon(1e-4));
        CHECK(biased.data()[j] == doctest::Approx(expected.data()[j] + b1.data()[j]).epsilon(1e-4));
    }
    // linear_pair: each of its two the same bits as linear alone (the same kernel per row).
    const auto [gate, up] = linear_pair(x, w1, b1, w3, Tensor());
    CHECK(gate.shape() == Shape{1, 1, out});
    CHECK(up.shape() == Shape{1, 1, out + 3});
    const Tensor up_alone = linear(x, w3, Tensor());
    CHECK(std::vector<float>(gate.data(), gate.data() + out) == std::vector<float>(biased.data(), biased.data() + out));
    CHECK(std::vector<float>(up.data(), up.data() + out + 3) ==
          std::vector<float>(up_alone.data(), up_alone.data() + out + 3));
    // A wrong bias is refused, as linear refuses it.
    CHECK_THROWS_WITH_AS(linear_pair(x, w1, random.normal_tensor({3}), w3, Tensor()),
                         doctest::Contains("linear: bias must be [70]"), Error);
}

TEST_CASE("decide_gemv: TINYFORMER_GEMV and the self-check choose the engine's gemv or OpenBLAS's sgemv") {
    struct Row {
        const char* setting;
        bool self_check_passed;
        GemvPath expected;
    };
    for (const Row& row : {Row{"", true, GemvPath::Engine}, Row{"auto", true, GemvPath::Engine},
                           Row{"", false, GemvPath::Blas}, Row{"auto", false, GemvPath::Blas},
                           Row{"blas", true, GemvPath::Blas}, Row{"engine", false, GemvPath::Engine}}) {
        CAPTURE(row.setting);
        CAPTURE(row.self_check_passed);
        CHECK(decide_gemv(GemvInputs{row.setting, row.self_check_passed}, 288, 288) == row.expected);
    }
    CHECK_THROWS_WITH_AS(decide_gemv(GemvInputs{"fast", true}, 1, 1),
                         doctest::Contains("TINYFORMER_GEMV=fast: expected auto, engine or blas"), Error);
    double worst = 1;
    CHECK(gemv_self_check(&worst));
    CHECK(worst < 1e-5);
}
