// Rotary position embedding (RoPE, Su et al.) — issue #23: the config's
// "pos_encoding": "rotary", "rope_theta" and "rope_pairs" (docs/FORMAT.md).
// Which two dimensions of a head turn together:
//   adjacent (llama2.c, Meta's llama):         (2i, 2i+1)
//   half ("rotate half": HF Llama, GPT-NeoX):  (i, i + Dh/2)
// with angle = pos * theta^(-2i/Dh), i = 0..Dh/2-1, in both.
#pragma once

namespace tinyformer {

enum class RopePairs { Adjacent, Half };

inline const char* rope_pairs_name(RopePairs pairs) { return pairs == RopePairs::Adjacent ? "adjacent" : "half"; }

}  // namespace tinyformer
