#include "engine/memory/available.h"

#include "engine/error.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <unistd.h>

namespace tinyformer {

namespace {

// The first number in a file, or nullopt ("max", missing, unreadable).
std::optional<uint64_t> number_in(const char* path) {
    std::ifstream in(path);
    uint64_t value = 0;
    if (in >> value) return value;
    return std::nullopt;
}

}  // namespace

uint64_t available_memory_bytes() {
    uint64_t available = std::numeric_limits<uint64_t>::max();  // unknown: no limit
    std::ifstream meminfo("/proc/meminfo");  // lines like "MemAvailable:   24052324 kB"
    std::string key, rest;
    uint64_t kib = 0;
    bool found = false;
    while (!found && meminfo >> key >> kib && std::getline(meminfo, rest))
        if (key == "MemAvailable:") available = kib * 1024, found = true;
    if (!found) {
        const long pages = ::sysconf(_SC_AVPHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
        if (pages > 0 && page_size > 0) available = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
    }
    // In a container, the cgroup's limit counts, not the machine's memory
    // (cgroup v2: memory.max, "max" when there is none; v1: limit_in_bytes).
    const auto limit = number_in("/sys/fs/cgroup/memory.max");
    const auto used = number_in("/sys/fs/cgroup/memory.current");
    if (limit && used) available = std::min(available, *limit > *used ? *limit - *used : 0);
    const auto v1_limit = number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    const auto v1_used = number_in("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (v1_limit && v1_used) available = std::min(available, *v1_limit > *v1_used ? *v1_limit - *v1_used : 0);
    // A limit of the user's own (and the tests' way to ask for a refusal
    // without depending on this machine's memory).
    if (const char* limit_text = std::getenv("TINYFORMER_MEMORY_LIMIT"); limit_text && *limit_text) {
        const std::string text = limit_text;
        if (text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
            fail("TINYFORMER_MEMORY_LIMIT must be a whole number of bytes (at most 19 digits), got '", text, "'");
        available = std::min<uint64_t>(available, std::stoull(text));
    }
    return available;
}

void require_available(double bytes, const std::string& need) {
    const uint64_t available = available_memory_bytes();
    if (bytes > static_cast<double>(available))
        fail(need, " but ", available, " bytes of memory are available; refused before allocating");
}

}  // namespace tinyformer
