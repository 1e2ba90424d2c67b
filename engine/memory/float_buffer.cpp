#include "engine/memory/float_buffer.h"

#include "engine/error.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <string>

namespace tinyformer {

namespace {

// ASan must see every free to catch a use after it. g++ says so with
// __SANITIZE_ADDRESS__, clang with __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define TINYFORMER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TINYFORMER_ASAN 1
#endif
#endif
#if defined(TINYFORMER_ASAN)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif

// TINYFORMER_POOL=off (any case) at start: every buffer from the heap, an A/B
// switch for measuring what the pool is worth. Any other value keeps the pool,
// as TINYFORMER_BLAS does for values other than keep.
bool pool_off_by_user() {
    const char* value = std::getenv("TINYFORMER_POOL");
    if (!value) return false;
    std::string text = value;
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text == "off";
}

// Read once, on first use: the pool is on or off for the whole process.
bool pool_enabled() {
    static const bool enabled = !kSanitizerBuild && !pool_off_by_user();
    return enabled;
}

constexpr size_t kClasses = std::bit_width(FloatBuffer::kLargestPooled);  // classes 0..20: 2^0 .. 2^20 floats

// The class a request for `count` floats takes from: the smallest c with 2^c >= count.
size_t class_for_request(size_t count) { return count <= 1 ? 0 : std::bit_width(count - 1); }
// The class a buffer of `capacity` floats is filed under: the largest c with 2^c <= capacity.
size_t class_for_capacity(size_t capacity) { return std::bit_width(capacity) - 1; }

thread_local bool pool_gone = false;  // trivially destructible: still readable after the pool is destroyed

struct Pool {
    std::array<std::array<std::vector<float>, FloatBuffer::kPerClass>, kClasses> kept;
    std::array<size_t, kClasses> count{};
    size_t bytes = 0;
    uint64_t reused = 0, allocated = 0;

    ~Pool() { pool_gone = true; }  // tensors destroyed later on this thread go straight to the heap
};

Pool& pool() {
    thread_local Pool instance;
    return instance;
}

// `count` zeros in a buffer of the pool, or of the heap when it has none.
std::vector<float> take(size_t count) {
    if (count == 0 || pool_gone || !pool_enabled()) return std::vector<float>(count);
    Pool& p = pool();
    if (count > FloatBuffer::kLargestPooled) {  // never pooled: from the heap each time, and counted
        ++p.allocated;
        return std::vector<float>(count);
    }
    const size_t c = class_for_request(count);
    size_t found = FloatBuffer::kPerClass;  // none
    size_t from = c;
    if (p.count[c] > 0) {
        found = p.count[c] - 1;  // any buffer of class c has room for 2^c >= count floats
    } else if (c > 0) {  // a buffer of the class below may still be large enough (an exact-size one)
        from = c - 1;
        for (size_t i = 0; i < p.count[from] && found == FloatBuffer::kPerClass; ++i)
            if (p.kept[from][i].capacity() >= count) found = i;
    }
    if (found == FloatBuffer::kPerClass) {
        ++p.allocated;
        std::vector<float> fresh;
        // Small buffers get their whole class, so that a size that grows a
        // little from call to call (the attention's scratch while decoding)
        // still finds its buffer; large ones only what they need.
        fresh.reserve(count <= FloatBuffer::kRoundUpBelow ? size_t{1} << c : count);
        fresh.resize(count);
        return fresh;
    }
    ++p.reused;
    std::vector<float> values = std::move(p.kept[from][found]);
    const size_t last = --p.count[from];
    if (found != last) p.kept[from][found] = std::move(p.kept[from][last]);  // the last one fills the gap
    p.bytes -= values.capacity() * sizeof(float);
    values.resize(count);  // was cleared when kept: every number is a new 0
    return values;
}

// Keeps `values`' memory for a later take, or frees it.
void give_back(std::vector<float>& values) {
    const size_t capacity = values.capacity();
    if (capacity == 0 || capacity > FloatBuffer::kLargestPooled || pool_gone || !pool_enabled()) return;
    Pool& p = pool();
    const size_t c = class_for_capacity(capacity);
    if (p.count[c] == FloatBuffer::kPerClass) return;
    // Over kPoolBytes: larger buffers make room for this one (a long prompt's
    // large tensors must not keep a step's small ones out); if there are none,
    // this one goes.
    for (size_t larger = kClasses; p.bytes + capacity * sizeof(float) > FloatBuffer::kPoolBytes;) {
        while (larger > c + 1 && p.count[larger - 1] == 0) --larger;
        if (larger <= c + 1) return;
        std::vector<float>& evicted = p.kept[larger - 1][--p.count[larger - 1]];
        p.bytes -= evicted.capacity() * sizeof(float);
        evicted = std::vector<float>();
    }
    values.clear();
    p.bytes += capacity * sizeof(float);
    p.kept[c][p.count[c]++] = std::move(values);
}

std::atomic<uint64_t> views_copied{0};

}  // namespace

FloatBuffer::FloatBuffer(size_t count) : values_(take(count)) {}

FloatBuffer::FloatBuffer(const FloatBuffer& other)
    : view_(other.view_), view_size_(other.view_size_), owner_(other.owner_) {  // a view: the same view
    if (view_) return;
    values_ = take(other.size());
    std::copy(other.begin(), other.end(), values_.begin());
}

FloatBuffer::FloatBuffer(FloatBuffer&& other) noexcept
    : values_(std::move(other.values_)), view_(other.view_), view_size_(other.view_size_),
      owner_(std::move(other.owner_)) {
    other.values_ = std::vector<float>();  // moved from: empty, as a moved-from std::vector
    other.view_ = nullptr;
    other.view_size_ = 0;
}

FloatBuffer& FloatBuffer::operator=(const FloatBuffer& other) {
    if (this == &other) return *this;
    if (other.view_) {  // the same view; this buffer's own memory goes back
        give_back(values_);
        values_ = std::vector<float>();
        view_ = other.view_;
        view_size_ = other.view_size_;
        owner_ = other.owner_;
        return *this;
    }
    if (view_ || values_.size() != other.size()) {
        give_back(values_);
        values_ = take(other.size());
        view_ = nullptr;
        view_size_ = 0;
        owner_.reset();
    }
    std::copy(other.begin(), other.end(), values_.begin());
    return *this;
}

FloatBuffer& FloatBuffer::operator=(FloatBuffer&& other) noexcept {
    if (this == &other) return *this;
    give_back(values_);
    values_ = std::move(other.values_);
    view_ = other.view_;
    view_size_ = other.view_size_;
    owner_ = std::move(other.owner_);
    other.values_ = std::vector<float>();  // moved from: empty, as a moved-from std::vector
    other.view_ = nullptr;
    other.view_size_ = 0;
    return *this;
}

FloatBuffer FloatBuffer::view(const float* data, size_t count, std::shared_ptr<const void> owner) {
    FloatBuffer buffer;
    if (count == 0) return buffer;
    if (!data || !owner) fail("FloatBuffer::view: a view needs its numbers and their owner");
    buffer.view_ = data;
    buffer.view_size_ = count;
    buffer.owner_ = std::move(owner);
    return buffer;
}

float* FloatBuffer::own() {
    if (view_) {
        std::vector<float> copy = take(view_size_);
        std::copy(view_, view_ + view_size_, copy.begin());
        values_ = std::move(copy);
        view_ = nullptr;
        view_size_ = 0;
        owner_.reset();
        ++views_copied;
    }
    return values_.data();
}

const std::vector<float>& FloatBuffer::vector() const {
    if (view_) fail("FloatBuffer::vector: a view has no vector of its own");
    return values_;
}

uint64_t float_buffer_views_copied() { return views_copied.load(); }

FloatBuffer::~FloatBuffer() { give_back(values_); }

bool float_buffer_pool_enabled() { return pool_enabled(); }

std::string float_buffer_pool_state() {
    if (kSanitizerBuild) return "off (sanitizer build: a use after free must be caught at the first use)";
    if (pool_off_by_user()) return "off (TINYFORMER_POOL=off: every tensor's memory from the heap)";
    return "on (engine/memory/float_buffer.h; TINYFORMER_POOL=off turns it off)";
}

FloatBufferPoolStats float_buffer_pool_stats() {
    if (pool_gone) return {};
    const Pool& p = pool();
    uint64_t kept = 0;
    for (size_t c = 0; c < kClasses; ++c) kept += p.count[c];
    return {p.reused, p.allocated, kept, p.bytes};
}

void clear_float_buffer_pool() {
    if (pool_gone) return;
    Pool& p = pool();
    for (size_t c = 0; c < kClasses; ++c)
        while (p.count[c] > 0) p.kept[c][--p.count[c]] = std::vector<float>();
    p.bytes = 0;
}

}  // namespace tinyformer
