// Measuring what the engine does, for `tinyformer cost --measure` and
// `tinyformer lesson paths` (the benchmarks' own timers are in tools/bench/).
//
// Peak memory of one attention call: the call runs in a forked child process
// (so nothing the parent holds counts and nothing leaks back), once to warm
// up OpenBLAS's buffers and threads, then with freed pages returned to the
// system (malloc_trim) and the peak resident set VmHWM reset
// (/proc/self/clear_refs, Linux >= 4.0) around the second call. The growth
// of VmHWM is the measured peak: whole 4 KiB pages, everything the call
// touched, whatever allocated it. Inputs are random [B, L, D] / [B, S, D].
#pragma once

#include "engine/attention.h"

#include <cstdint>
#include <string>

namespace tinyformer::measure {

struct PeakMemory {
    bool measured = false;
    int64_t rss_growth_bytes = 0;
    char note[160] = "";  // why it was not measured
};

// One multi-head attention call, queries [batch, queries, d_model] against
// keys and values [batch, keys, d_model], H = heads, measured in a child.
PeakMemory attention_peak_memory(int64_t batch, int64_t queries, int64_t keys, int64_t d_model, int64_t heads,
                                 const AttentionOptions& options);

// 72 B, 512.0 KiB, 128.0 MiB
std::string bytes_text(double bytes);

}  // namespace tinyformer::measure
