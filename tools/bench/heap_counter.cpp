// The global operator new / delete of tinyformer-bench, replaced to count heap
// bytes (see bench.h). Every form is replaced — plain, array, nothrow,
// aligned, sized — so no allocation of C++ code escapes the count. The
// throwing forms follow the standard: on failure call the new_handler, or
// throw std::bad_alloc when there is none.
#include "tools/bench/bench.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> current_bytes{0};
std::atomic<size_t> peak_bytes{0};
std::atomic<size_t> allocations{0};

void count_allocation(void* block) {
    if (!block) return;
    allocations.fetch_add(1, std::memory_order_relaxed);
    const size_t size = malloc_usable_size(block);
    const size_t now = current_bytes.fetch_add(size, std::memory_order_relaxed) + size;
    size_t peak = peak_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

void release(void* block) noexcept {
    if (!block) return;
    current_bytes.fetch_sub(malloc_usable_size(block), std::memory_order_relaxed);
    std::free(block);
}

// One attempt: nullptr on failure. Alignment 0 means the default (malloc's).
void* try_allocate(size_t size, size_t alignment) noexcept {
    if (size == 0) size = 1;  // new must return a unique pointer even for 0 bytes
    void* block = nullptr;
    if (alignment == 0)
        block = std::malloc(size);
    else if (posix_memalign(&block, alignment, size) != 0)
        block = nullptr;
    count_allocation(block);
    return block;
}

void* allocate_or_throw(size_t size, size_t alignment) {
    for (;;) {
        if (void* block = try_allocate(size, alignment)) return block;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

void* allocate_or_null(size_t size, size_t alignment) noexcept {
    try {
        return allocate_or_throw(size, alignment);
    } catch (...) {
        return nullptr;
    }
}

size_t alignment_of(std::align_val_t alignment) { return static_cast<size_t>(alignment); }

}  // namespace

namespace tinyformer::bench {

size_t heap_current_bytes() { return current_bytes.load(std::memory_order_relaxed); }
size_t heap_peak_bytes() { return peak_bytes.load(std::memory_order_relaxed); }
size_t heap_allocation_count() { return allocations.load(std::memory_order_relaxed); }
void heap_reset_peak() { peak_bytes.store(current_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace tinyformer::bench

void* operator new(size_t size) { return allocate_or_throw(size, 0); }
void* operator new[](size_t size) { return allocate_or_throw(size, 0); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return allocate_or_null(size, 0); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return allocate_or_null(size, 0); }
void* operator new(size_t size, std::align_val_t alignment) { return allocate_or_throw(size, alignment_of(alignment)); }
void* operator new[](size_t size, std::align_val_t alignment) { return allocate_or_throw(size, alignment_of(alignment)); }
void* operator new(size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept { return allocate_or_null(size, alignment_of(alignment)); }
void* operator new[](size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept { return allocate_or_null(size, alignment_of(alignment)); }

void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, size_t) noexcept { release(block); }
void operator delete[](void* block, size_t) noexcept { release(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete(void* block, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, size_t, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, size_t, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
