// tools/measure — measuring what the engine does — for `tinyformer cost --measure`,
// `tinyformer lesson paths` / `lesson local` and the benchmarks (tools/bench/):
// a clock, the median of samples, other processes' CPU use, peak memory.
// The layer `cost --measure` times, as the model runs it: layer_timing.h.
//
// Peak memory of one attention call: the call runs in a forked child process
// (so nothing the parent holds counts and nothing leaks back), once to warm
// up OpenBLAS's buffers and threads, then with the tensor pool emptied
// (engine/memory/float_buffer.h) and freed pages returned to the system
// (malloc_trim) and the peak resident set VmHWM reset
// (/proc/self/clear_refs, Linux >= 4.0) around the second call. The growth
// of VmHWM is the measured peak: whole 4 KiB pages, everything the call
// touched, whatever allocated it. Inputs are random [B, L, D] / [B, S, D].
#pragma once

#include "engine/attention.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tinyformer::measure {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median of a non-empty set of samples (mean of the middle two when even).
double median(std::vector<double> samples);

// How much CPU OTHER processes take: /proc/stat's busy time (steal included)
// minus this process's own (every thread, and the children it has waited for:
// the PyTorch runs). On 2 cores a concurrent job skews every number here,
// PyTorch's too, so each measurement says how busy the machine was.
class OtherLoad {
public:
    OtherLoad() : start_(sample()) {}
    // Share of all CPUs' time since construction used by other processes, or -1 when unknown.
    double fraction() const {
        const Sample now = sample();
        if (!start_.ok || !now.ok || now.total <= start_.total) return -1.0;
        const double others = (now.busy - start_.busy) - (now.own - start_.own);
        return std::clamp(others / (now.total - start_.total), 0.0, 1.0);
    }

private:
    struct Sample {
        double busy = 0, total = 0, own = 0;  // in /proc/stat's clock ticks
        bool ok = false;
    };
    static Sample sample() {
        Sample result;
        std::FILE* file = std::fopen("/proc/stat", "r");
        if (!file) return result;
        unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal
        const int n = std::fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                                  &v[4], &v[5], &v[6], &v[7]);
        std::fclose(file);
        if (n < 5) return result;
        for (unsigned long long x : v) result.total += static_cast<double>(x);
        result.busy = result.total - static_cast<double>(v[3] + v[4]);  // all but idle and iowait
        double seconds = 0.0;
        for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
            rusage usage{};
            getrusage(who, &usage);
            seconds += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
        }
        result.own = seconds * static_cast<double>(sysconf(_SC_CLK_TCK));
        result.ok = true;
        return result;
    }
    Sample start_;
};

constexpr double kBusyWarning = 0.10;  // other processes' share above which a number is marked
// "12%", with " !" above kBusyWarning; "?" when unknown.
std::string format_load(double fraction);


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
