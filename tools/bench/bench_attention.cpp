// Suite "attention": scaled dot-product attention, materialized vs streaming.
//
//   Q [1, L, 64], K [1, S, 64], V [1, S, 64], L = S in {128, 512, 2048, 8192},
//   one head, no mask, want_weights = false, random N(0, 1) inputs.
//
// Per size and path: wall time (median of a few calls after one warm-up call;
// the two paths' calls alternate) and the peak EXTRA heap of a call — the most
// the heap grew during the call beyond what the returned result (the output
// [1, L, 64]) keeps. The inputs exist before the call and are not counted
// either. The materialized path should show L*S floats of scores; the
// streaming path one tile of them.
#include "engine/attention.h"
#include "engine/memory/float_buffer.h"
#include "engine/matmul.h"
#include "engine/random.h"
#include "tools/bench/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

namespace tinyformer::bench {

namespace {

constexpr int64_t kHeadDim = 64;  // Dk = Dv

struct Size {
    int64_t length;  // L = S
    int repetitions;  // timed calls; fewer where one call takes long
};
constexpr Size kSizes[] = {{128, 15}, {512, 9}, {2048, 5}, {8192, 3}};

constexpr AttentionPath kPaths[] = {AttentionPath::Materialized, AttentionPath::Streaming};

// The targets from the issue, printed as met / not met.
constexpr int64_t kMemoryTargetLength = 8192;
constexpr size_t kMemoryTargetBytes = size_t{32} << 20;  // streaming extra heap < 32 MiB
constexpr int64_t kTimeTargetLength = 2048;
constexpr double kTimeTargetRatio = 1.5;  // streaming time <= 1.5 x materialized

struct Call {
    AttentionResult result;
    double seconds;
    size_t extra_heap_bytes;
};

Call timed_call(const Tensor& query, const Tensor& key, const Tensor& value, const Mask& mask,
                const AttentionOptions& options) {
    // The tensor pool (engine/memory/float_buffer.h) emptied before and after: the
    // call takes its scratch from the heap, and the scratch it gives back to
    // the pool is handed to the heap before the count, so it is not taken
    // for memory the call still holds.
    clear_float_buffer_pool();
    heap_reset_peak();
    const auto start = Clock::now();
    AttentionResult result = scaled_dot_product_attention(query, key, value, mask, options);
    const auto stop = Clock::now();
    clear_float_buffer_pool();
    // The result is still alive here, so current bytes include the output.
    const size_t extra = heap_peak_bytes() - heap_current_bytes();
    return {std::move(result), std::chrono::duration<double>(stop - start).count(), extra};
}

struct Measurement {
    int64_t length;
    AttentionPath asked, reported;
    double median_seconds, min_seconds;
    size_t extra_heap_bytes;  // the largest over every call
    Tensor output;
};

// Both paths at one size. The calls alternate (materialized, streaming,
// materialized, ...) so that a busy machine slows both alike and their ratio
// stays meaningful.
std::vector<Measurement> measure_size(const Size& size, const Tensor& query, const Tensor& key, const Tensor& value,
                                      const Mask& mask, const AttentionOptions& streaming_options) {
    std::vector<Measurement> measurements;
    std::vector<AttentionOptions> options;
    std::vector<std::vector<double>> seconds(std::size(kPaths));
    for (AttentionPath path : kPaths) {
        AttentionOptions path_options = streaming_options;
        path_options.path = path;
        path_options.want_weights = false;
        options.push_back(path_options);
        measurements.push_back({size.length, path, path, 0.0, 0.0, 0, Tensor()});
    }
    for (int repetition = -1; repetition < size.repetitions; ++repetition)  // -1: the warm-up call
        for (size_t p = 0; p < options.size(); ++p) {
            Call call = timed_call(query, key, value, mask, options[p]);
            Measurement& measurement = measurements[p];
            measurement.reported = call.result.path;
            measurement.extra_heap_bytes = std::max(measurement.extra_heap_bytes, call.extra_heap_bytes);
            if (repetition >= 0) seconds[p].push_back(call.seconds);
            if (repetition + 1 == size.repetitions) measurement.output = std::move(call.result.output);
        }
    for (size_t p = 0; p < options.size(); ++p) {
        measurements[p].median_seconds = median(seconds[p]);
        measurements[p].min_seconds = *std::min_element(seconds[p].begin(), seconds[p].end());
    }
    return measurements;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
    double largest = 0.0;
    for (int64_t i = 0; i < a.numel(); ++i)
        largest = std::max(largest, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
    return largest;
}

std::string format(const char* pattern, double number) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, number);
    return text;
}

const Measurement* find(const std::vector<Measurement>& measurements, int64_t length, AttentionPath path) {
    for (const Measurement& measurement : measurements)
        if (measurement.length == length && measurement.asked == path) return &measurement;
    return nullptr;
}

void print_targets(const std::vector<Measurement>& measurements) {
    std::printf("\ntargets (information only, never a failing exit):\n");
    if (const Measurement* streaming = find(measurements, kMemoryTargetLength, AttentionPath::Streaming))
        std::printf("  streaming extra heap at L=S=%lld < %s: %s -> %s\n", static_cast<long long>(kMemoryTargetLength),
                    bytes_text(static_cast<double>(kMemoryTargetBytes)).c_str(), bytes_text(static_cast<double>(streaming->extra_heap_bytes)).c_str(),
                    streaming->extra_heap_bytes < kMemoryTargetBytes ? "met" : "NOT met");
    const Measurement* materialized = find(measurements, kTimeTargetLength, AttentionPath::Materialized);
    const Measurement* streaming = find(measurements, kTimeTargetLength, AttentionPath::Streaming);
    if (materialized && streaming) {
        const double ratio = streaming->median_seconds / materialized->median_seconds;
        std::printf("  streaming time at L=S=%lld within %.1fx of materialized: %.2fx -> %s\n",
                    static_cast<long long>(kTimeTargetLength), kTimeTargetRatio, ratio,
                    ratio <= kTimeTargetRatio ? "met" : "NOT met");
    }
    std::printf("\nfor reference: PyTorch 1.13 explicit softmax(q @ k.T / 8) @ v at T=8192 peaks ~517 MiB above "
                "baseline on this kind of machine (figure from the issue, not measured here)\n");
}

// Streaming with the masks that block most of the keys, against no mask, at
// L=S=8192 on one BLAS thread: the tiles the mask blocks are not computed.
void run_masked_part(const AttentionOptions& streaming_options) {
    constexpr int64_t kLength = 8192, kRadius = 256;
    constexpr int kRepetitions = 3;
    constexpr double kCausalTarget = 1.7, kWindowTarget = 8.0;
    const int threads_before = blas_threads();
    set_blas_threads(1);
    std::printf("\nmasked streaming attention, L=S=%lld, Dk=Dv=%lld, 1 BLAS thread; the three calls alternate\n",
                static_cast<long long>(kLength), static_cast<long long>(kHeadDim));
    std::printf("%s\n", blas_line().c_str());
    const Tensor query = Random(1).normal_tensor({1, kLength, kHeadDim});
    const Tensor key = Random(2).normal_tensor({1, kLength, kHeadDim});
    const Tensor value = Random(3).normal_tensor({1, kLength, kHeadDim});
    struct Variant {
        std::string name;
        Mask mask;
        std::vector<double> seconds;
        int64_t tiles = 0;
    };
    std::vector<Variant> variants;
    variants.push_back({"no mask", Mask(), {}, 0});
    variants.push_back({"causal", Mask::causal(kLength), {}, 0});
    variants.push_back({"local window, radius " + std::to_string(kRadius), Mask::local_window(kLength, kRadius), {}, 0});
    AttentionOptions options = streaming_options;
    options.path = AttentionPath::Streaming;
    for (int repetition = -1; repetition < kRepetitions; ++repetition)
        for (Variant& variant : variants) {
            const auto start = Clock::now();
            const AttentionResult result = scaled_dot_product_attention(query, key, value, variant.mask, options);
            const double seconds = seconds_since(start);
            if (repetition >= 0) variant.seconds.push_back(seconds);
            variant.tiles = result.key_tiles_computed;
        }
    const Table table({{"mask", 26, Table::Align::Left},
                       {"median ms", 10, Table::Align::Right},
                       {"key tiles", 9, Table::Align::Right},
                       {"vs no mask", 10, Table::Align::Right}});
    table.print_header();
    const double unmasked = median(variants[0].seconds);
    std::vector<double> speedups;
    for (const Variant& variant : variants) {
        const double ms = median(variant.seconds);
        speedups.push_back(unmasked / ms);
        table.print_row({variant.name, format("%.1f", ms * 1e3), std::to_string(variant.tiles),
                         format("%.2fx", unmasked / ms)});
    }
    std::printf("targets (same run): causal >= %.1fx faster than no mask: %.2fx -> %s; local window (radius %lld) "
                ">= %.0fx: %.2fx -> %s\n",
                kCausalTarget, speedups[1], speedups[1] >= kCausalTarget ? "met" : "NOT met",
                static_cast<long long>(kRadius), kWindowTarget, speedups[2],
                speedups[2] >= kWindowTarget ? "met" : "NOT met");
    set_blas_threads(threads_before);
}

}  // namespace

void run_attention_suite(const Settings& settings) {
    AttentionOptions streaming_options;  // the engine's defaults unless the command line says otherwise
    const bool tiles_from_command_line = settings.query_block > 0 || settings.key_tile > 0;
    if (settings.query_block > 0) streaming_options.query_block = settings.query_block;
    if (settings.key_tile > 0) streaming_options.key_tile = settings.key_tile;

    std::printf("scaled dot-product attention: B=1, one head, Dk=Dv=%lld, L=S, no mask, want_weights=false\n",
                static_cast<long long>(kHeadDim));
    std::printf("%s\n", blas_line().c_str());
    std::printf("inputs: N(0,1) from tinyformer::Random (SplitMix64 + Box-Muller), seeds 1 (Q), 2 (K), 3 (V)\n");
    std::printf("streaming tiles: query_block=%lld, key_tile=%lld (%s)\n",
                static_cast<long long>(streaming_options.query_block),
                static_cast<long long>(streaming_options.key_tile),
                tiles_from_command_line ? "from the command line" : "engine defaults");
    std::printf("time: median (and min) wall time of `reps` calls after one warm-up call; the paths' calls alternate\n");
    std::printf("extra heap: peak operator-new bytes during a call beyond the inputs and the returned output\n"
                "            (OpenBLAS's own work buffers are allocated outside operator new and not counted)\n\n");

    const Table table({{"L=S", 5, Table::Align::Right},
                       {"path", 12, Table::Align::Left},
                       {"reps", 4, Table::Align::Right},
                       {"median ms", 10, Table::Align::Right},
                       {"min ms", 10, Table::Align::Right},
                       {"extra heap", 10, Table::Align::Right}});
    table.print_header();

    const Mask allow_everything;  // built here, so its few bytes are not part of any call
    std::vector<Measurement> measurements;
    for (const Size& size : kSizes) {
        const Tensor query = Random(1).normal_tensor({1, size.length, kHeadDim});
        const Tensor key = Random(2).normal_tensor({1, size.length, kHeadDim});
        const Tensor value = Random(3).normal_tensor({1, size.length, kHeadDim});
        for (Measurement& measurement : measure_size(size, query, key, value, allow_everything, streaming_options)) {
            std::string path_text = path_name(measurement.reported);  // the path the engine says it ran
            if (measurement.reported != measurement.asked)
                path_text += std::string(" (asked ") + path_name(measurement.asked) + ")";
            table.print_row({std::to_string(size.length), path_text, std::to_string(size.repetitions),
                             format("%.3f", measurement.median_seconds * 1e3),
                             format("%.3f", measurement.min_seconds * 1e3),
                             bytes_text(static_cast<double>(measurement.extra_heap_bytes))});
            measurements.push_back(std::move(measurement));
        }
        const Measurement& materialized = *find(measurements, size.length, AttentionPath::Materialized);
        const Measurement& streaming = *find(measurements, size.length, AttentionPath::Streaming);
        std::printf("       check: max |materialized - streaming| = %.2e, streaming / materialized time = %.2fx\n",
                    max_abs_difference(materialized.output, streaming.output),
                    streaming.median_seconds / materialized.median_seconds);
        std::fflush(stdout);
    }
    print_targets(measurements);
    run_masked_part(streaming_options);
}

}  // namespace tinyformer::bench
