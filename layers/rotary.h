// Rotary position embedding (RoPE, Su et al. 2021) — the config's
// "pos_encoding": "rotary", "rope_theta" and "rope_pairs" (docs/FORMAT.md).
//
// No position table: a head's query and key vectors are turned, pair of
// dimensions by pair, by angles proportional to their token's position. For a
// head of Dh (even) dimensions at position p, pair i = 0..Dh/2-1 turns by
//
//   freq_i  = 1 / theta^(2i/Dh)          theta = rope_theta (10000)
//   angle   = p * freq_i
//   (x0, x1) -> (x0 cos(angle) - x1 sin(angle),  x0 sin(angle) + x1 cos(angle))
//
// where (x0, x1) are the pair's two dimensions, by the convention:
//   adjacent (llama2.c, Meta's llama):          x0 = x[2i],  x1 = x[2i + 1]
//   half ("rotate half": HF Llama, GPT-NeoX):   x0 = x[i],   x1 = x[i + Dh/2]
// The two conventions are the same rotation of differently paired
// dimensions: a checkpoint trained with one gives other numbers with the
// other (their q and k columns are permuted relative to each other).
//
// Why it encodes relative position: a rotation by angle a then b is one by
// a + b, and rotations keep dot products, so for a query at m and a key at n
//   rot(q, m) . rot(k, n) = q . rot(k, n - m)
// — the score depends on m - n only (`tinyformer lesson rotary`).
//
// Float32, step by step as llama2.c's run.c and torch's
// 1 / theta ** (arange(0, Dh, 2).float() / Dh) compute it: the exponent
// float(2i) / float(Dh), freq_i = 1.0f / powf(theta, exponent), the angle
// float(p) * freq_i (exact positions up to 2^24, the largest max_len), then
// cosf and sinf of that float angle.
//
// Where it applies (layers/multi_head_attention.h): to Q (all H heads) and K
// (all Hkv heads) of a self-attention, after the projection, with each
// token's own position; never to V, never to cross-attention. With a KV
// cache the keys are turned once, before they are written: the cache holds
// turned keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tinyformer {

enum class RopePairs { Adjacent, Half };

inline const char* rope_pairs_name(RopePairs pairs) { return pairs == RopePairs::Adjacent ? "adjacent" : "half"; }

// The plain reference: one row of `heads` heads of Dh, x[h*Dh + d], turned in
// place for position `position`, every element's angle computed by itself
// from the formula above (no table, nothing shared).
void rotary_reference(float* row, int64_t heads, int64_t head_dim, int64_t position, float theta, RopePairs pairs);

class RotaryEmbedding {
public:
    // Error unless head_dim is even and >= 2 and theta is finite and > 0.
    RotaryEmbedding(int64_t head_dim, float theta, RopePairs pairs);

    int64_t head_dim() const { return head_dim_; }
    float theta() const { return theta_; }
    RopePairs pairs() const { return pairs_; }
    // freq_i = 1 / theta^(2i/Dh), i = 0..Dh/2-1 (computed once, Dh/2 floats).
    float frequency(int64_t i) const { return frequencies_[static_cast<size_t>(i)]; }

    // The fast path: the query row (q_heads heads) and the key row (k_heads
    // heads) of ONE token at `position`, turned in place; one cos and one sin
    // per pair, shared by every head of both. k may be nullptr (k_heads 0).
    // The same numbers as rotary_reference, bit for bit.
    void rotate(float* q, int64_t q_heads, float* k, int64_t k_heads, int64_t position) const;

private:
    int64_t head_dim_;
    float theta_;
    RopePairs pairs_;
    std::vector<float> frequencies_;  // [Dh/2]
};

}  // namespace tinyformer
