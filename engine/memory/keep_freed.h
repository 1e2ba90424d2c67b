// keep_freed_memory — make freed tensor memory stay in the process for reuse.
//
// glibc serves large blocks (above 128 KiB-32 MiB) with mmap and returns them
// to the system on free, so the next tensor of the same size starts on fresh
// pages and page-faults on every 4 KiB of them. On virtual machines a page
// fault is expensive: a large linear() can run at half of sgemm's speed
// because of it (measured: docs/PERFORMANCE.md). With this setting freed
// blocks stay in the heap and are reused.
// Called once at the start of the `tinyformer` and benchmark programs; the
// library itself never changes process-wide settings.
#pragma once

namespace tinyformer {

void keep_freed_memory();

}  // namespace tinyformer
