// Tests for engine/memory/float_buffer.*: a FloatBuffer is n zeros, copies and moves
// behave as std::vector<float>'s, and a freed buffer's memory is taken again
// by the next buffer of its size class — zeroed, never showing old numbers —
// within the pool's bounds. Decoding: after the first step a step takes every
// buffer from the pool (tests/test_decoding.cpp's "a decoding step" case).
// The pool's own cases are skipped (doctest counts them so, and tests/main.cpp
// says why) when the pool is off: sanitizer builds, TINYFORMER_POOL=off.
#include "engine/memory/float_buffer.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tinyformer;

namespace {

// For the cases that test the pool itself: without it there is nothing to see.
const auto needs_pool = doctest::skip(!float_buffer_pool_enabled());

bool all_zero(const FloatBuffer& buffer) {
    return std::all_of(buffer.begin(), buffer.end(), [](float v) { return v == 0.0f; });
}

}  // namespace

TEST_CASE("FloatBuffer: n zeros; copies are independent; a move leaves the source empty") {
    clear_float_buffer_pool();
    FloatBuffer empty;
    CHECK(empty.size() == 0);
    FloatBuffer none(0);
    CHECK(none.size() == 0);

    FloatBuffer a(5);
    CHECK(a.size() == 5);
    CHECK(all_zero(a));
    for (size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(i + 1);

    FloatBuffer copy = a;  // copy construction
    CHECK(copy.vector() == std::vector<float>{1, 2, 3, 4, 5});
    CHECK(copy.data() != a.data());
    a.data()[0] = 100.0f;
    CHECK(copy.data()[0] == 1.0f);

    FloatBuffer assigned(2);  // copy assignment to another size
    assigned = a;
    CHECK(assigned.vector() == std::vector<float>{100, 2, 3, 4, 5});

    const float* numbers = a.data();
    FloatBuffer moved = std::move(a);
    CHECK(moved.data() == numbers);  // taken over, not copied
    CHECK(a.size() == 0);            // NOLINT: the moved-from state is part of the contract

    FloatBuffer target(3);
    target = std::move(moved);  // move assignment: target's old memory goes back to the pool
    CHECK(target.data() == numbers);
    CHECK(moved.size() == 0);  // NOLINT

    FloatBuffer from_vector(std::vector<float>{7, 8});
    CHECK(from_vector.vector() == std::vector<float>{7, 8});
}

TEST_CASE("FloatBuffer: a new buffer is all zeros where a freed one held numbers, and has room for what it asks") {
    // Holds with the pool (the buffer is a recycled one, cleared) and without it (a fresh one).
    clear_float_buffer_pool();
    {
        FloatBuffer buffer(100);
        std::fill(buffer.begin(), buffer.end(), 7.0f);
    }
    FloatBuffer again(120);
    CHECK(again.size() == 120);
    CHECK(all_zero(again));  // the 7s of the freed buffer are gone
    {
        FloatBuffer filled(60);
        std::fill(filled.begin(), filled.end(), 3.0f);
    }
    FloatBuffer other_class(129);
    CHECK(other_class.vector().capacity() >= 129);
    CHECK(all_zero(other_class));
    const size_t count = FloatBuffer::kRoundUpBelow * 3;
    {
        FloatBuffer buffer(count);
        std::fill(buffer.begin(), buffer.end(), 5.0f);
        CHECK(buffer.vector().capacity() == count);  // a large buffer is made to its size
    }
    FloatBuffer large_again(count);
    CHECK(all_zero(large_again));
    FloatBuffer larger(count + 1);
    CHECK(larger.vector().capacity() >= count + 1);
    {
        FloatBuffer largest(FloatBuffer::kLargestPooled + 1);
        CHECK(largest.size() == FloatBuffer::kLargestPooled + 1);
    }
    clear_float_buffer_pool();
    CHECK(float_buffer_pool_stats().kept == 0);
}

TEST_CASE("FloatBuffer pool: a freed buffer is taken again by its size class, and always zeroed" * needs_pool) {
    clear_float_buffer_pool();
    const FloatBufferPoolStats before = float_buffer_pool_stats();
    const float* first = nullptr;
    {
        FloatBuffer buffer(100);  // class 7: room for 2^7 = 128 floats
        std::fill(buffer.begin(), buffer.end(), 7.0f);
        first = buffer.data();
    }
    FloatBuffer again(120);  // also class 7 (65..128 floats)
    CHECK(again.size() == 120);
    CHECK(all_zero(again));  // the 7s of the freed buffer are gone
    CHECK(again.data() == first);
    const FloatBufferPoolStats after = float_buffer_pool_stats();
    CHECK(after.reused == before.reused + 1);
    CHECK(after.allocated == before.allocated + 1);
    {
        FloatBuffer filled(60);  // class 6: 33..64 floats
        std::fill(filled.begin(), filled.end(), 3.0f);
    }
    FloatBuffer other_class(129);  // class 8 (129..256 floats): neither the class-6 buffer nor a too small one
    CHECK(other_class.vector().capacity() >= 129);
    CHECK(all_zero(other_class));
}

TEST_CASE("FloatBuffer pool: a large buffer is made to its size and taken again by that size" * needs_pool) {
    clear_float_buffer_pool();
    const size_t count = FloatBuffer::kRoundUpBelow * 3;  // 3 * 2^16 floats: class 17 (2^17 <= 3 * 2^16 < 2^18)
    const float* first = nullptr;
    {
        FloatBuffer buffer(count);
        first = buffer.data();
        CHECK(buffer.vector().capacity() == count);  // not rounded up to 2^18
    }
    FloatBuffer again(count);  // a request of class 18 finds the exact buffer filed under class 17
    CHECK(all_zero(again));
    CHECK(again.data() == first);
    again = FloatBuffer();  // back to the pool
    FloatBuffer larger(count + 1);  // too large for the kept one: a new buffer, made to its size
    CHECK(larger.vector().capacity() >= count + 1);
    CHECK(float_buffer_pool_stats().kept == 1);  // the exact one is still kept
}

TEST_CASE("FloatBuffer pool: bounded per class and in size; large buffers go back to the heap" * needs_pool) {
    clear_float_buffer_pool();
    {
        std::vector<FloatBuffer> many;
        for (size_t i = 0; i < FloatBuffer::kPerClass + 5; ++i) many.emplace_back(10);  // class 4
    }
    CHECK(float_buffer_pool_stats().kept == FloatBuffer::kPerClass);  // the 5 others went back to the heap
    CHECK(float_buffer_pool_stats().bytes == FloatBuffer::kPerClass * 16 * sizeof(float));
    clear_float_buffer_pool();
    CHECK(float_buffer_pool_stats().kept == 0);
    {
        FloatBuffer large(FloatBuffer::kLargestPooled + 1);
        CHECK(large.size() == FloatBuffer::kLargestPooled + 1);
    }
    CHECK(float_buffer_pool_stats().kept == 0);  // larger than kLargestPooled floats: not kept
    // kPerClass buffers of the largest class fill kPoolBytes exactly.
    static_assert(FloatBuffer::kPerClass * FloatBuffer::kLargestPooled * sizeof(float) == FloatBuffer::kPoolBytes);
    {
        std::vector<FloatBuffer> largest;
        for (size_t i = 0; i < FloatBuffer::kPerClass; ++i) largest.emplace_back(FloatBuffer::kLargestPooled);
    }
    CHECK(float_buffer_pool_stats().kept == FloatBuffer::kPerClass);
    CHECK(float_buffer_pool_stats().bytes == FloatBuffer::kPoolBytes);
    { FloatBuffer another(FloatBuffer::kLargestPooled); }  // taken from the pool and given back: still full
    { FloatBuffer small(10); }  // full: a larger kept buffer is freed to make room for it
    CHECK(float_buffer_pool_stats().kept == FloatBuffer::kPerClass);  // 15 largest + the small one
    CHECK(float_buffer_pool_stats().bytes ==
          FloatBuffer::kPoolBytes - FloatBuffer::kLargestPooled * sizeof(float) + 16 * sizeof(float));
    clear_float_buffer_pool();
}

TEST_CASE("TINYFORMER_POOL=off turns the pool off for the process, and tinyformer version says so") {
    const char* before = std::getenv("TINYFORMER_POOL");
    const std::string saved = before ? before : "";
    setenv("TINYFORMER_POOL", "off", 1);
    const test_helpers::CliRun off = test_helpers::run_tinyformer({"version"});
    setenv("TINYFORMER_POOL", "OFF", 1);
    const test_helpers::CliRun upper = test_helpers::run_tinyformer({"version"});
    unsetenv("TINYFORMER_POOL");
    const test_helpers::CliRun unset = test_helpers::run_tinyformer({"version"});
    if (before) setenv("TINYFORMER_POOL", saved.c_str(), 1);
    REQUIRE(off.status == 0);
    REQUIRE(unset.status == 0);
    // The `tinyformer` binary is the one this test program was built with: same build, same pool.
    // A sanitizer build keeps no pool whatever the variable says, and gives that reason.
    const bool sanitizer_build = float_buffer_pool_state().starts_with("off (sanitizer");
    const std::string switched_off = sanitizer_build ? "\n  buffer pool   off (sanitizer" : "\n  buffer pool   off (TINYFORMER_POOL=off";
    CHECK(off.out.find(switched_off) != std::string::npos);
    CHECK(upper.out.find(switched_off) != std::string::npos);
    CHECK(unset.out.find(std::string("\n  buffer pool   ") + (sanitizer_build ? "off (sanitizer" : "on (")) !=
          std::string::npos);
}
