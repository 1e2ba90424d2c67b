#include "layers/embedding.h"

#include "engine/memory/available.h"

#include <algorithm>
#include <cmath>

namespace tinyformer {

const char* pos_encoding_name(PositionalEncoding encoding) {
    switch (encoding) {
        case PositionalEncoding::Sinusoidal: return "sinusoidal";
        case PositionalEncoding::Learned: return "learned";
        case PositionalEncoding::None: return "none";
        case PositionalEncoding::Rotary: return "rotary";
        case PositionalEncoding::Alibi: return "alibi";
        case PositionalEncoding::RelativeBias: return "relative_bias";
    }
    return "unknown";
}

SinusoidalPositions::SinusoidalPositions(int64_t max_len, int64_t d_model) : max_len_(max_len), d_model_(d_model) {
    if (max_len < 1 || d_model < 1)
        fail("sinusoidal positions: max_len and d_model must be >= 1, got ", max_len, " and ", d_model);
    for (int64_t i = 0; 2 * i < d_model; ++i)
        divisors_.push_back(std::pow(10000.0, static_cast<double>(2 * i) / d_model));
}

void SinusoidalPositions::add_to(int64_t pos, float* row) const {
    for (size_t i = 0; i < divisors_.size(); ++i) {
        // pos / 10000^(2i/D), in double so that far positions stay exact to float
        const double angle = static_cast<double>(pos) / divisors_[i];
        row[2 * i] += static_cast<float>(std::sin(angle));
        if (static_cast<int64_t>(2 * i + 1) < d_model_) row[2 * i + 1] += static_cast<float>(std::cos(angle));
    }
}

Tensor sinusoidal_table(int64_t max_len, int64_t d_model) {
    if (max_len < 1 || d_model < 1)
        fail("sinusoidal_table: max_len and d_model must be >= 1, got ", max_len, " and ", d_model);
    require_available(static_cast<double>(max_len) * static_cast<double>(d_model) * sizeof(float),
                      text_of("sinusoidal_table: a [", max_len, ",", d_model, "] float table needs ", max_len, " x ",
                             d_model, " x 4 bytes"));
    const SinusoidalPositions positions(max_len, d_model);
    Tensor table({max_len, d_model});  // zeros
    for (int64_t pos = 0; pos < max_len; ++pos) positions.add_to(pos, table.data() + pos * d_model);
    return table;
}

namespace {

// Row b of ids starts at position first_of(b).
template <typename FirstOf>
Tensor embed(const Embedding& embedding, const TokenIds& ids, FirstOf first_of) {
    const Tensor& token_weight = embedding.token_weight;
    const Tensor& position_table = embedding.position_table;
    const int64_t vocab = token_weight.dim(0), D = token_weight.dim(1);
    if (ids.batch < 0 || ids.length < 0 || static_cast<int64_t>(ids.values.size()) != ids.batch * ids.length)
        fail("embedding: ids must be [B,T]; got [", ids.batch, ",", ids.length, "] with ", ids.values.size(),
             " values");
    // Positions 0..max_len-1 exist (learned or sinusoidal); with none, any position.
    const int64_t max_len = !position_table.empty() ? position_table.dim(0) : embedding.sinusoidal.max_len();
    for (int64_t b = 0; b < ids.batch; ++b) {
        const int64_t first_position = first_of(b);
        if (first_position < 0 || (max_len > 0 && first_position + ids.length > max_len))
            fail("embedding: positions ", first_position, "..", first_position + ids.length - 1,
                 " exceed max_len = ", max_len, " (ids [", ids.batch, ",", ids.length, "])");
    }
    const float factor = embedding.scale ? std::sqrt(static_cast<float>(D)) : 1.0f;
    Tensor x({ids.batch, ids.length, D});
    for (int64_t b = 0; b < ids.batch; ++b)
        for (int64_t t = 0; t < ids.length; ++t) {
            const int64_t id = ids.at(b, t);
            if (id < 0 || id >= vocab)
                fail("embedding: token id ", id, " at [", b, ",", t, "] is outside the vocabulary 0..", vocab - 1);
            const float* token = token_weight.data() + id * D;
            const int64_t pos = first_of(b) + t;
            const float* position = position_table.empty() ? nullptr : position_table.data() + pos * D;
            float* out = x.data() + (b * ids.length + t) * D;
            for (int64_t d = 0; d < D; ++d) out[d] = token[d] * factor + (position ? position[d] : 0.0f);
            if (embedding.sinusoidal.max_len() > 0) embedding.sinusoidal.add_to(pos, out);
        }
    return x;
}

}  // namespace

Tensor Embedding::forward(const TokenIds& ids, int64_t first_position) const {
    return embed(*this, ids, [first_position](int64_t) { return first_position; });
}

Tensor Embedding::forward(const TokenIds& ids, const std::vector<int64_t>& first_positions) const {
    if (static_cast<int64_t>(first_positions.size()) != ids.batch)
        fail("embedding: ", first_positions.size(), " first positions for ", ids.batch, " rows");
    return embed(*this, ids, [&first_positions](int64_t b) { return first_positions[static_cast<size_t>(b)]; });
}

}  // namespace tinyformer
