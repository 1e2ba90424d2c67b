// MappedFile — a regular file's bytes, mapped read-only into memory (POSIX
// mmap, PROT_READ, MAP_PRIVATE): nothing is read until a page is touched, and
// the pages are the kernel's page cache, shared with every other process
// reading the file, and given back under memory pressure (they can be read
// again from the file). A checkpoint is read this way (engine/io/safetensors.h)
// so that its float32 weights are used where they lie, without a copy.
//
// The size is taken from the open file (fstat), once: every byte below it may
// be read. A file truncated while mapped is outside the contract (reading past
// its new end raises SIGBUS); a file truncated before it is opened is just a
// shorter file, which the safetensors checks refuse by its size before any
// tensor's bytes are touched.
//
// WebAssembly (emscripten) has no real mmap for the page's in-memory files:
// kMappingAvailable is false there, and files are read into memory instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tinyformer {

#if defined(__EMSCRIPTEN__)
constexpr bool kMappingAvailable = false;
#else
constexpr bool kMappingAvailable = true;
#endif

class MappedFile {
public:
    // Maps `path`. Error naming the path when it cannot be opened, is not a
    // regular file (a FIFO is opened without blocking and refused), or cannot
    // be mapped; Error on a platform without mmap (kMappingAvailable false).
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const uint8_t> bytes() const { return {base_, size_}; }
    // True when [data, data + count) lies inside the mapping.
    bool contains(const void* data, size_t count) const;

private:
    const uint8_t* base_ = nullptr;  // null for an empty file (nothing is mapped)
    size_t size_ = 0;
};

}  // namespace tinyformer
