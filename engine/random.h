// Random — a small deterministic generator (SplitMix64 + Box-Muller), the
// same numbers on every machine and compiler, for examples, tests and
// benchmarks. Not for anything that needs real randomness.
#pragma once

#include "engine/tensor.h"

#include <cstdint>

namespace tinyformer {

class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next_u64();
    double uniform();                           // [0, 1)
    int64_t uniform_int(int64_t low, int64_t high);  // [low, high]
    float normal();                              // mean 0, variance 1
    Tensor normal_tensor(Shape shape, float stddev = 1.0f);

private:
    uint64_t state_;
};

}  // namespace tinyformer
