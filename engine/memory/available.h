// available_memory_bytes — what the system can give now without swapping.
// require_available — the one guard asked before tinyformer allocates
// anything whose size the user decides (a checkpoint's tensors, its parsed
// header, a sinusoidal table, a model's pass, cost --measure): an Error
// unless `bytes` fit.
#pragma once

#include <cstdint>
#include <string>

namespace tinyformer {

// MemAvailable of /proc/meminfo (or free pages, from sysconf, where that is
// missing), and less when the process's cgroup (v2 or v1) has less left, or
// when the environment variable TINYFORMER_MEMORY_LIMIT (bytes, a whole
// number) is less: a user's cap, and the tests' way to see a refusal that
// does not depend on the machine. Error for a value that is not a number.
uint64_t available_memory_bytes();

// Error "<need> but <available> bytes of memory are available; refused before
// allocating" when bytes > available_memory_bytes(). `need` says what needs
// how much, e.g. "model.safetensors: reading it needs 123 bytes of memory".
// bytes is a double so that an estimate cannot overflow on the way here.
void require_available(double bytes, const std::string& need);

}  // namespace tinyformer
