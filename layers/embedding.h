// Embedding — token embedding plus positions, as FORMAT.md defines it:
//   x[b, t] = E[ids[b, t]] * (sqrt(D) if scale) + P[first_position + t]
//   ids [B, T] -> x [B, T, D];  E [V, D];  P [max_len, D] (none: no P)
// Sinusoidal table (Vaswani et al.):
//   P[pos, 2i]   = sin(pos / 10000^(2i / D))
//   P[pos, 2i+1] = cos(pos / 10000^(2i / D))
// Learned positions are a trained [max_len, D] table used the same way.
#pragma once

#include "engine/tensor.h"

#include <cstdint>
#include <vector>

namespace tinyformer {

enum class PositionalEncoding { Sinusoidal, Learned, None };

// Token ids of a batch, row-major [B, T].
struct TokenIds {
    int64_t batch = 0, length = 0;
    std::vector<int64_t> values;
    int64_t at(int64_t b, int64_t t) const { return values[static_cast<size_t>(b * length + t)]; }
};

Tensor sinusoidal_table(int64_t max_len, int64_t d_model);

struct Embedding {
    Tensor token_weight;    // [V, D]
    Tensor position_table;  // [max_len, D]; empty for PositionalEncoding::None
    bool scale = false;     // multiply token embeddings by sqrt(D)

    // first_position > 0 continues a sequence (one token at a time decoding).
    Tensor forward(const TokenIds& ids, int64_t first_position = 0) const;
    // Row b starts at position first_positions[b] (batched decoding of
    // sequences of different lengths).
    Tensor forward(const TokenIds& ids, const std::vector<int64_t>& first_positions) const;
};

}  // namespace tinyformer
