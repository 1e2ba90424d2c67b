// tools/bench — the bandwidth roof of a decoding step (decode, decode-llama).
// Header-only: a class both suites construct with their own step shapes.
#pragma once

#include "engine/matmul.h"
#include "engine/random.h"
#include "tools/bench/bench.h"

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace tinyformer::bench {

// The gemv a token's weights allow, two ways, each the fastest of 15 passes
// at the current thread count (a roof is the best the machine showed, not its
// typical moment), over the matrices `shapes` ([out, in] each) given in the
// decoding step's order, the last being the output head:
//   decoder  cblas_sgemv (through tinyformer::gemm, M=1) over distinct
//            matrices of the decoding step's own shapes, in its order — for
//            the base model per layer [3D,D], [D,D], [D,D], [D,D], [F,D],
//            [D,F], then [V,D]: weight_bytes_per_token() in all (biases and
//            LayerNorms aside), nothing else computed. This is the roof.
//   single   the head alone, read again and again. For the base model's
//            generator [V,D] = 65.5 MB: it can stay in a large last-level
//            cache after the first pass and then reads faster than the 154 MB
//            a token really reads (the figures measured are in
//            docs/PERFORMANCE.md). Shown for comparison only (until 1 December
//            2026 the bench took it for the roof), with a plain read of each
//            set beside the gemv.
class GemvRoof {
public:
    explicit GemvRoof(const std::vector<std::pair<int64_t, int64_t>>& shapes) {
        Random random(21);
        int64_t widest_in = 1, widest_out = 1;
        for (const auto& [out, in] : shapes) {
            products_.push_back({random.normal_tensor({out, in}, 0.05f), out, in});
            widest_in = std::max(widest_in, in);
            widest_out = std::max(widest_out, out);
        }
        x_ = random.normal_tensor({1, widest_in});
        y_ = Tensor({1, widest_out});
    }
    // Bytes per second over every matrix of a step, in order: the roof.
    double decoder_bytes_per_second() { return fastest(0, products_.size()); }
    // Bytes per second over the head alone, read again and again.
    double single_bytes_per_second() { return fastest(products_.size() - 1, 1); }
    // The same bytes read with nothing computed (an XOR of every word): the
    // memory's own speed, for both sets.
    double decoder_read_bytes_per_second() { return fastest_read(0, products_.size()); }
    double single_read_bytes_per_second() { return fastest_read(products_.size() - 1, 1); }

private:
    struct Product {
        Tensor weight;
        int64_t out, in;
    };
    // Bytes of products [first, first+count) over the fastest of 15 passes (after one).
    double fastest(size_t first, size_t count) {
        double bytes = 0, best = 0;
        for (size_t p = first; p < first + count; ++p) bytes += 4.0 * static_cast<double>(products_[p].out * products_[p].in);
        for (int rep = 0; rep <= 15; ++rep) {
            const auto start = Clock::now();
            for (size_t p = first; p < first + count; ++p) {
                const Product& product = products_[p];
                gemm(x_.matrix().columns(0, product.in), Transpose::No, product.weight.matrix(), Transpose::Yes,
                     y_.matrix().columns(0, product.out));
            }
            const double seconds = seconds_since(start);
            if (rep > 0 && (best == 0 || seconds < best)) best = seconds;
        }
        return bytes / best;
    }

    double fastest_read(size_t first, size_t count) {
        double bytes = 0, best = 0;
        uint32_t seen = 0;
        for (size_t p = first; p < first + count; ++p) bytes += 4.0 * static_cast<double>(products_[p].out * products_[p].in);
        for (int rep = 0; rep <= 15; ++rep) {
            const auto start = Clock::now();
            for (size_t p = first; p < first + count; ++p) {
                const Tensor& weight = products_[p].weight;
                uint32_t bits = 0;  // integer XOR: the loop vectorises, each load is all it does
                for (int64_t i = 0; i < weight.numel(); ++i) bits ^= std::bit_cast<uint32_t>(weight.data()[i]);
                seen ^= bits;
            }
            const double seconds = seconds_since(start);
            if (rep > 0 && (best == 0 || seconds < best)) best = seconds;
        }
        sink_ = seen;  // a volatile store: the reads cannot be optimised away
        return bytes / best;
    }

    std::vector<Product> products_;
    Tensor x_, y_;
    volatile uint32_t sink_ = 0;
};

}  // namespace tinyformer::bench
