#include "tools/measure/measure.h"

#include "engine/memory/float_buffer.h"
#include "engine/random.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>

namespace tinyformer::measure {

namespace {

// A number of kB from /proc/self/status ("VmHWM:   1344 kB"), or -1.
int64_t status_kib(const char* key) {
    std::ifstream status("/proc/self/status");
    const size_t key_length = std::strlen(key);
    for (std::string line; std::getline(status, line);)
        if (line.compare(0, key_length, key) == 0 && line.size() > key_length && line[key_length] == ':')
            return std::stoll(line.substr(key_length + 1));
    return -1;
}

// Sets VmHWM back to the current resident set (Linux >= 4.0).
bool reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    clear_refs << "5";
    clear_refs.flush();
    return static_cast<bool>(clear_refs);
}

// What runs in the child: the call once to warm up, then freed pages back to
// the system, VmHWM reset, the call again.
PeakMemory measure_in_this_process(int64_t batch, int64_t queries, int64_t keys, int64_t d_model, int64_t heads,
                                   const AttentionOptions& options) {
    PeakMemory memory;
    Random random(7);
    const Tensor query = random.normal_tensor({batch, queries, d_model});
    const Tensor key = random.normal_tensor({batch, keys, d_model});
    const Tensor value = random.normal_tensor({batch, keys, d_model});
    (void)multi_head_scaled_dot_product_attention(query, key, value, heads, Mask(), options);
    clear_float_buffer_pool();  // the warm-up's buffers back to the heap, not kept for the measured call
    malloc_trim(0);
    if (!reset_peak_rss()) {
        std::snprintf(memory.note, sizeof memory.note, "cannot reset VmHWM (/proc/self/clear_refs)");
        return memory;
    }
    const int64_t before = status_kib("VmHWM");
    const AttentionResult result =  // kept alive while VmHWM is read: its output counts
        multi_head_scaled_dot_product_attention(query, key, value, heads, Mask(), options);
    const int64_t after = status_kib("VmHWM");
    if (before < 0 || after < 0) {
        std::snprintf(memory.note, sizeof memory.note, "no VmHWM in /proc/self/status");
        return memory;
    }
    memory.rss_growth_bytes = (after - before) * 1024;
    memory.measured = true;
    return memory;
}

}  // namespace

PeakMemory attention_peak_memory(int64_t batch, int64_t queries, int64_t keys, int64_t d_model, int64_t heads,
                                 const AttentionOptions& options) {
    PeakMemory memory;
    int channel[2];
    if (pipe(channel) != 0) {
        std::snprintf(memory.note, sizeof memory.note, "pipe failed: %s", std::strerror(errno));
        return memory;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    if (child < 0) {
        std::snprintf(memory.note, sizeof memory.note, "fork failed: %s", std::strerror(errno));
        close(channel[0]);
        close(channel[1]);
        return memory;
    }
    if (child == 0) {  // the child: measure, send the result, leave without running any exit handlers
        close(channel[0]);
        PeakMemory result;
        try {
            result = measure_in_this_process(batch, queries, keys, d_model, heads, options);
        } catch (const std::exception& error) {
            std::snprintf(result.note, sizeof result.note, "%s", error.what());
        }
        const ssize_t written = write(channel[1], &result, sizeof result);
        _exit(written == static_cast<ssize_t>(sizeof result) ? 0 : 1);
    }
    close(channel[1]);
    const ssize_t received = read(channel[0], &memory, sizeof memory);
    close(channel[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (received != static_cast<ssize_t>(sizeof memory)) {
        memory = PeakMemory();
        std::snprintf(memory.note, sizeof memory.note, "the child process ended without a result (status %d)", status);
    }
    return memory;
}

double median(std::vector<double> samples) {
    std::sort(samples.begin(), samples.end());
    const size_t middle = samples.size() / 2;
    return samples.size() % 2 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2.0;
}

std::string format_load(double fraction) {
    if (fraction < 0.0) return "?";
    char text[32];
    std::snprintf(text, sizeof text, "%.0f%%%s", 100.0 * fraction, fraction > kBusyWarning ? " !" : "");
    return text;
}

std::string bytes_text(double n) {
    char text[32];
    if (n < 1024) {
        std::snprintf(text, sizeof text, "%.0f B", n);
        return text;
    }
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int unit = -1;
    while (n >= 1024 && unit < 5) {
        n /= 1024;
        ++unit;
    }
    std::snprintf(text, sizeof text, "%.1f %s", n, units[unit]);
    return text;
}

}  // namespace tinyformer::measure
