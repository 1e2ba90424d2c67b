// keep_freed_memory — make freed tensor memory stay in the process for reuse.
//
// glibc serves large blocks (above 128 KiB-32 MiB) with mmap and returns them
// to the system on free, so the next tensor of the same size starts on fresh
// pages and page-faults on every 4 KiB of them. On virtual machines a page
// fault is expensive: measured here, linear() on [4096,512] x [512,2048] ran at
// 46 GFLOP/s instead of sgemm's 98 because of it. With this setting freed blocks
// stay in the heap and are reused, and the same call runs at 103 GFLOP/s.
// Called once at the start of the `tinyformer` and benchmark programs; the
// library itself never changes process-wide settings.
//
// available_memory_bytes — what the system can give now without swapping.
// require_available — the one guard asked before tinyformer allocates
// anything whose size the user decides (a checkpoint's tensors, its parsed
// header, a sinusoidal table, a model's pass, cost --measure): an Error
// unless `bytes` fit.
#pragma once

#include <cstdint>
#include <string>

namespace tinyformer {

void keep_freed_memory();

// MemAvailable of /proc/meminfo (or free pages, from sysconf, where that is
// missing), and less when the process's cgroup (v2 or v1) has less left.
uint64_t available_memory_bytes();

// Error "<need> but <available> bytes of memory are available; refused before
// allocating" when bytes > available_memory_bytes(). `need` says what needs
// how much, e.g. "model.safetensors: reading it needs 123 bytes of memory".
// bytes is a double so that an estimate cannot overflow on the way here.
void require_available(double bytes, const std::string& need);

}  // namespace tinyformer
