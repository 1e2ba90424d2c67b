// FloatBuffer — the numbers of a Tensor, in memory that is recycled.
//
// Decoding makes the same tensors at every step: a few dozen per token
// (projections, sums, norms, the logits), each freed a moment later. Instead
// of asking the heap for each one, a freed buffer goes back to a small pool
// of this thread, filed by size class — class c holds buffers with room for
// at least 2^c floats — and the next buffer of up to 2^c floats takes it (or
// of fewer than 2^(c+1), when the one kept is large enough). A new buffer of
// up to kRoundUpBelow floats is given its whole class; a larger one only
// what it asks for.
// After the first decoding step every buffer a step needs comes from the
// pool: the decode benchmark counts no heap allocation per step (ONNX
// Runtime's CPU arena and PyTorch's caching allocator do the same, larger).
//
//   FloatBuffer(n)     n zeros (exactly what std::vector<float>(n) gives)
//   copy               a new buffer with the same numbers; move takes them over
//   destruction        the memory goes back to the pool, or to the heap when
//                      it is larger than kLargestPooled floats or the pool is
//                      full (kPerClass buffers per class; over kPoolBytes in
//                      all, larger kept buffers are freed to make room)
//
// A view (FloatBuffer::view) holds no memory of its own: it reads `count`
// floats of read-only memory that its owner keeps alive — a checkpoint's
// mapped file, or its data read into memory once (WebAssembly; engine/io/
// safetensors.h), whose float32 weights are read in place. A copy of a view is
// the same view (both only read); the first non-const access (data(), begin(),
// end()) copies the numbers into a buffer of its own first, so nothing is ever
// written through a view: mapped memory is PROT_READ, and a write there would
// end the process.
//
// A buffer taken from the pool is zeroed: no number of an earlier tensor is
// ever seen. Sanitizer builds (ASan) keep no pool, so that a use after free
// is still caught at the first use; nor does a process started with
// TINYFORMER_POOL=off (an A/B switch: every buffer then comes from the heap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tinyformer {

class FloatBuffer {
public:
    static constexpr size_t kLargestPooled = size_t{1} << 20;  // floats (4 MiB); larger ones go to the heap
    static constexpr size_t kPerClass = 16;                     // buffers kept per size class
    static constexpr size_t kPoolBytes = size_t{64} << 20;      // bytes kept in all, per thread
    static constexpr size_t kRoundUpBelow = size_t{1} << 16;    // floats: up to this, a new buffer gets its whole class

    FloatBuffer() = default;
    explicit FloatBuffer(size_t count);  // count zeros
    explicit FloatBuffer(std::vector<float> values) : values_(std::move(values)) {}
    FloatBuffer(const FloatBuffer& other);
    FloatBuffer(FloatBuffer&& other) noexcept;
    FloatBuffer& operator=(const FloatBuffer& other);
    FloatBuffer& operator=(FloatBuffer&& other) noexcept;
    ~FloatBuffer();

    // `count` floats at `data`, read in place; `owner` keeps them alive (and
    // unchanged) for as long as any view of them lives. count 0 is an empty buffer.
    static FloatBuffer view(const float* data, size_t count, std::shared_ptr<const void> owner);
    bool is_view() const { return view_ != nullptr; }

    size_t size() const { return view_ ? view_size_ : values_.size(); }
    float* data() { return own(); }  // a view is copied first: the caller may write
    const float* data() const { return view_ ? view_ : values_.data(); }
    float* begin() { return own(); }
    float* end() {
        float* first = own();  // first: own() turns a view into values_ (the sum's operands are unordered)
        return first + values_.size();
    }
    const float* begin() const { return data(); }
    const float* end() const { return data() + size(); }
    // The numbers of a buffer of its own (Error for a view): for tests of the pool.
    const std::vector<float>& vector() const;

private:
    float* own();  // copies a view's numbers into a buffer of its own; returns them

    std::vector<float> values_;
    const float* view_ = nullptr;  // a view's numbers (values_ is then empty)
    size_t view_size_ = 0;
    std::shared_ptr<const void> owner_;  // keeps a view's memory alive
};

// How many views this process has copied into buffers of their own (a
// non-const access to a view). Loading a model and running it copies none:
// tests/test_safetensors.cpp checks it.
uint64_t float_buffer_views_copied();

// False in sanitizer builds, which keep no pool, and when TINYFORMER_POOL=off
// (any case; another value keeps the pool) at the first buffer. Fixed for the process.
bool float_buffer_pool_enabled();
// "on (...)", "off (TINYFORMER_POOL=off: ...)" or "off (sanitizer build: ...)",
// for `tinyformer version` and the benchmarks.
std::string float_buffer_pool_state();

// What this thread's pool did so far, for tests and the benchmarks.
struct FloatBufferPoolStats {
    uint64_t reused = 0;     // buffers taken from the pool
    uint64_t allocated = 0;  // buffers taken from the heap: the pool had none, or larger than kLargestPooled
    uint64_t kept = 0;       // buffers held now
    uint64_t bytes = 0;      // their capacity in bytes
};
FloatBufferPoolStats float_buffer_pool_stats();
// Hands every kept buffer back to the heap (tests start from an empty pool).
void clear_float_buffer_pool();

}  // namespace tinyformer
