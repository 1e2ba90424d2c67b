#include "layers/rotary.h"

#include "engine/error.h"

#include <cmath>

namespace tinyformer {

namespace {

// freq_i = 1 / theta^(2i/Dh) in float32: the exponent float(2i) / float(Dh), then powf.
float pair_frequency(int64_t i, int64_t head_dim, float theta) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    return 1.0f / std::pow(theta, exponent);
}

// The two dimensions of pair i within a head: (2i, 2i+1) or (i, i + Dh/2).
int64_t first_dim(int64_t i, RopePairs pairs) { return pairs == RopePairs::Adjacent ? 2 * i : i; }
int64_t second_dim(int64_t i, int64_t head_dim, RopePairs pairs) {
    return pairs == RopePairs::Adjacent ? 2 * i + 1 : i + head_dim / 2;
}

// (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos): the one place the turn is written.
void turn(float& x0, float& x1, float cos_angle, float sin_angle) {
    const float a = x0, b = x1;
    x0 = a * cos_angle - b * sin_angle;
    x1 = a * sin_angle + b * cos_angle;
}

void check_settings(int64_t head_dim, float theta) {
    if (head_dim < 2 || head_dim % 2 != 0)
        fail("rotary: the head size Dh must be even and >= 2 (dimensions turn in pairs), got ", head_dim);
    if (!std::isfinite(theta) || !(theta > 0.0f)) fail("rotary: theta must be finite and > 0, got ", theta);
}

void check_position(int64_t position) {
    // float(p) is exact up to 2^24 (max_len's limit): beyond, positions would collide.
    if (position < 0 || position > (int64_t{1} << 24))
        fail("rotary: position ", position, " outside 0..2^24 (float32 holds positions exactly only up to 2^24)");
}

}  // namespace

void rotary_reference(float* row, int64_t heads, int64_t head_dim, int64_t position, float theta, RopePairs pairs) {
    check_settings(head_dim, theta);
    check_position(position);
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < head_dim / 2; ++i) {
            const float angle = static_cast<float>(position) * pair_frequency(i, head_dim, theta);
            float* x = row + h * head_dim;
            turn(x[first_dim(i, pairs)], x[second_dim(i, head_dim, pairs)], std::cos(angle), std::sin(angle));
        }
}

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, float theta, RopePairs pairs)
    : head_dim_(head_dim), theta_(theta), pairs_(pairs) {
    check_settings(head_dim, theta);
    for (int64_t i = 0; i < head_dim / 2; ++i) frequencies_.push_back(pair_frequency(i, head_dim, theta));
}

void RotaryEmbedding::rotate(float* q, int64_t q_heads, float* k, int64_t k_heads, int64_t position) const {
    check_position(position);
    const float p = static_cast<float>(position);
    const int64_t Dh = head_dim_;
    for (int64_t i = 0; i < Dh / 2; ++i) {
        const float angle = p * frequencies_[static_cast<size_t>(i)];
        const float c = std::cos(angle), s = std::sin(angle);  // once per pair, for every head of q and k
        const int64_t d0 = first_dim(i, pairs_), d1 = second_dim(i, Dh, pairs_);
        for (int64_t h = 0; h < q_heads; ++h) turn(q[h * Dh + d0], q[h * Dh + d1], c, s);
        for (int64_t h = 0; h < k_heads; ++h) turn(k[h * Dh + d0], k[h * Dh + d1], c, s);
    }
}

}  // namespace tinyformer
