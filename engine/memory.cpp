#include "engine/memory.h"

#include <fstream>
#include <limits>
#include <malloc.h>
#include <string>
#include <unistd.h>

namespace tinyformer {

void keep_freed_memory() {
    mallopt(M_MMAP_MAX, 0);               // serve every block from the heap, never from mmap
    mallopt(M_TRIM_THRESHOLD, 1 << 30);   // and do not hand freed heap memory back below 1 GiB
}

uint64_t available_memory_bytes() {
    std::ifstream meminfo("/proc/meminfo");  // lines like "MemAvailable:   24052324 kB"
    std::string key, rest;
    uint64_t kib = 0;
    while (meminfo >> key >> kib && std::getline(meminfo, rest))
        if (key == "MemAvailable:") return kib * 1024;
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return std::numeric_limits<uint64_t>::max();  // unknown: no limit
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace tinyformer
