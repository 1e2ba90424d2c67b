#include "engine/random.h"

#include <cmath>
#include <numbers>

namespace tinyformer {

uint64_t Random::next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double Random::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t Random::uniform_int(int64_t low, int64_t high) {
    if (high < low) fail("Random::uniform_int: empty range [", low, ", ", high, "]");
    const uint64_t span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(next_u64() % span);
}

float Random::normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

Tensor Random::normal_tensor(Shape shape, float stddev) {
    Tensor t(std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = stddev * normal();
    return t;
}

}  // namespace tinyformer
