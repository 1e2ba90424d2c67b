// Embedding — token embedding plus positions, as FORMAT.md defines it:
//   x[b, t] = E[ids[b, t]] * (sqrt(D) if scale) + P[first_position + t]
//   ids [B, T] -> x [B, T, D];  E [V, D];  P [max_len, D] (none: no P)
// Sinusoidal table (Vaswani et al.):
//   P[pos, 2i]   = sin(pos / 10000^(2i / D))
//   P[pos, 2i+1] = cos(pos / 10000^(2i / D))
// Learned positions are a trained [max_len, D] table used the same way.
// Sinusoidal positions are never held as a [max_len, D] table in a model: a
// config may declare max_len 2^24 while a pass reads a few dozen positions,
// so each row is computed when a pass reads it (SinusoidalPositions), with
// the same numbers as sinusoidal_table.
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <vector>

namespace tinyformer {

// Rotary, Alibi and RelativeBias add nothing here (no table): rotary turns q
// and k inside the attention (layers/rotary.h), ALiBi and T5's relative bias
// are biases of the mask (models/mask_policy.h).
enum class PositionalEncoding { Sinusoidal, Learned, None, Rotary, Alibi, RelativeBias };

// "sinusoidal", "learned", "none", "rotary", "alibi", "relative_bias"
const char* pos_encoding_name(PositionalEncoding encoding);

// Token ids of a batch, row-major [B, T].
struct TokenIds {
    int64_t batch = 0, length = 0;
    std::vector<int64_t> values;
    int64_t at(int64_t b, int64_t t) const { return values[static_cast<size_t>(b * length + t)]; }
};

// The rows P[pos] of the sinusoidal table for pos in 0..max_len-1, each
// computed when asked for: memory O(D), whatever max_len.
class SinusoidalPositions {
public:
    SinusoidalPositions() = default;  // max_len 0: no positions
    SinusoidalPositions(int64_t max_len, int64_t d_model);

    int64_t max_len() const { return max_len_; }
    // row[d] += P[pos, d] for d in 0..D-1.
    void add_to(int64_t pos, float* row) const;

private:
    int64_t max_len_ = 0, d_model_ = 0;
    std::vector<double> divisors_;  // 10000^(2i / D), one per sin/cos column pair
};

// The whole [max_len, D] table (lessons, tests): the rows of SinusoidalPositions.
Tensor sinusoidal_table(int64_t max_len, int64_t d_model);

struct Embedding {
    Tensor token_weight;    // [V, D]
    Tensor position_table;  // learned: [max_len, D]; else empty
    bool scale = false;     // multiply token embeddings by sqrt(D)
    SinusoidalPositions sinusoidal{};  // sinusoidal: max_len > 0 (position_table then empty)

    // first_position > 0 continues a sequence (one token at a time decoding).
    Tensor forward(const TokenIds& ids, int64_t first_position = 0) const;
    // Row b starts at position first_positions[b] (batched decoding of
    // sequences of different lengths).
    Tensor forward(const TokenIds& ids, const std::vector<int64_t>& first_positions) const;
};

}  // namespace tinyformer
