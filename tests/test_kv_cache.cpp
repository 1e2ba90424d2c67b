// Tests for layers/kv_cache.*: append, views, reorder, growth, and attention
// over the cache equal to attention over the recomputed keys and values.
#include "layers/kv_cache.h"
#include "layers/multi_head_attention.h"
#include "engine/random.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <limits>

using namespace tinyformer;

namespace {

// [B, n, D] whose element (b, t, c) is 1000 b + 10 t + c / 100 + offset:
// every cached number says where it came from.
Tensor labelled(int64_t batch, int64_t first, int64_t n, int64_t width, float offset) {
    Tensor t({batch, n, width});
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t c = 0; c < width; ++c)
                t.at({b, i, c}) = 1000.0f * b + 10.0f * (first + i) + c / 100.0f + offset;
    return t;
}

float at(ConstBatchView view, int64_t b, int64_t t, int64_t c) { return view.matrix(b)(t, c); }

}  // namespace

TEST_CASE("KVCache: appended rows are read back in place, growth keeps them, capacity doubles") {
    KVCache cache;
    CHECK(cache.empty());
    cache.append(labelled(2, 0, 3, 4, 0.0f), labelled(2, 0, 3, 4, 0.5f));  // taken over: capacity 3
    CHECK(cache.length() == 3);
    CHECK(cache.capacity() == 3);
    cache.append(labelled(2, 3, 1, 4, 0.0f), labelled(2, 3, 1, 4, 0.5f));  // grows to 6
    CHECK(cache.length() == 4);
    CHECK(cache.capacity() == 6);
    const float* buffer_before = cache.keys().data;
    cache.append(labelled(2, 4, 2, 4, 0.0f), labelled(2, 4, 2, 4, 0.5f));  // fits: no reallocation
    CHECK(cache.capacity() == 6);
    CHECK(cache.keys().data == buffer_before);
    cache.append(labelled(2, 6, 1, 4, 0.0f), labelled(2, 6, 1, 4, 0.5f));  // grows to 12
    CHECK(cache.capacity() == 12);
    const ConstBatchView keys = cache.keys(), values = cache.values();
    CHECK(keys.rows == 7);
    CHECK(keys.batch_stride == 12 * 4);
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t t = 0; t < 7; ++t)
            for (int64_t c = 0; c < 4; ++c) {
                CHECK(at(keys, b, t, c) == doctest::Approx(1000.0f * b + 10.0f * t + c / 100.0f));
                CHECK(at(values, b, t, c) == doctest::Approx(1000.0f * b + 10.0f * t + c / 100.0f + 0.5f));
            }
    // Exactly: the cache copies the floats it is given, no arithmetic.
    CHECK(test_helpers::max_abs_difference(cache.key_tensor(), labelled(2, 0, 7, 4, 0.0f)) == 0.0);
}

TEST_CASE("KVCache: reserve first, then every append writes in place") {
    KVCache cache;
    cache.reserve(1, 16, 3);
    const float* buffer = cache.keys().data;
    for (int64_t t = 0; t < 16; ++t) cache.append(labelled(1, t, 1, 3, 0.0f), labelled(1, t, 1, 3, 1.0f));
    CHECK(cache.capacity() == 16);
    CHECK(cache.keys().data == buffer);
    CHECK(test_helpers::max_abs_difference(cache.value_tensor(), labelled(1, 0, 16, 3, 1.0f)) == 0.0);
    CHECK(test_helpers::error_message([&] { cache.append(labelled(2, 0, 1, 3, 0), labelled(2, 0, 1, 3, 0)); })
              .find("B=1") != std::string::npos);
}

TEST_CASE("KVCache::keep_rows reorders, drops and duplicates batch rows (beam search)") {
    KVCache cache;
    cache.reserve(3, 8, 2);
    cache.append(labelled(3, 0, 2, 2, 0.0f), labelled(3, 0, 2, 2, 0.5f));
    cache.keep_rows({2, 0, 2, 1});
    CHECK(cache.batch() == 4);
    CHECK(cache.length() == 2);
    const int64_t from[] = {2, 0, 2, 1};
    for (int64_t b = 0; b < 4; ++b)
        for (int64_t t = 0; t < 2; ++t) CHECK(at(cache.keys(), b, t, 1) == doctest::Approx(1000.0f * from[b] + 10.0f * t + 0.01f));
    cache.append(labelled(4, 2, 1, 2, 0.0f), labelled(4, 2, 1, 2, 0.5f));  // appending continues after a reorder
    CHECK(at(cache.values(), 3, 2, 0) == doctest::Approx(3000.0f + 20.0f + 0.5f));
    CHECK(test_helpers::error_message([&] { cache.keep_rows({4}); }).find("outside") != std::string::npos);
}

TEST_CASE("Attention over the cache, a token at a time, equals attention over the whole sequence") {
    const int64_t D = 16, H = 4, T = 9, B = 2;
    Random random(7);
    const MultiHeadAttentionWeights weights{random.normal_tensor({3 * D, D}, 0.3f), random.normal_tensor({3 * D}, 0.1f),
                                            random.normal_tensor({D, D}, 0.3f), random.normal_tensor({D}, 0.1f)};
    const MultiHeadAttention attention(weights, H);
    const Tensor x = random.normal_tensor({B, T, D}, 1.0f);
    const Tensor whole = attention.forward(x, x, Mask::causal(T)).output;  // [B, T, D]
    KVCache cache;
    for (int64_t t = 0; t < T; ++t) {
        Tensor step({B, 1, D});
        for (int64_t b = 0; b < B; ++b)
            for (int64_t c = 0; c < D; ++c) step.at({b, 0, c}) = x.at({b, t, c});
        const Tensor out = attention.forward_appending(step, cache, Mask(), {}).output;
        CHECK(cache.length() == t + 1);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t c = 0; c < D; ++c) CHECK(out.at({b, 0, c}) == doctest::Approx(whole.at({b, t, c})).epsilon(1e-5));
    }
}

TEST_CASE("A decoding step checks only its new positions' values; a step that fails takes its rows back out") {
    const int64_t D = 8, H = 2, B = 1;
    Random random(8);
    const MultiHeadAttentionWeights weights{random.normal_tensor({3 * D, D}, 0.3f), random.normal_tensor({3 * D}, 0.1f),
                                            random.normal_tensor({D, D}, 0.3f), random.normal_tensor({D}, 0.1f)};
    const MultiHeadAttention attention(weights, H);
    KVCache cache;
    attention.forward_appending(random.normal_tensor({B, 3, D}, 1.0f), cache, Mask::causal(3), {});  // a prompt
    Tensor bad = random.normal_tensor({B, 1, D}, 1.0f);
    bad.at({0, 0, 2}) = std::numeric_limits<float>::infinity();  // its value row is not finite
    CHECK_ERROR_CONTAINS(attention.forward_appending(bad, cache, Mask(), {}), "value holds a non-finite number");
    CHECK(cache.length() == 3);  // the failed step's row is not kept: every cached row was found finite
    attention.forward_appending(random.normal_tensor({B, 1, D}, 1.0f), cache, Mask(), {});  // a step
    CHECK(cache.length() == 4);
    // A row put in by hand is taken as one an earlier call checked (forward_appending's
    // contract), so the next step does not read it again: it checks only its own row.
    cache.append(Tensor({B, 1, D}), Tensor::filled({B, 1, D}, std::numeric_limits<float>::infinity()));
    CHECK_NOTHROW(attention.forward_appending(random.normal_tensor({B, 1, D}, 1.0f), cache, Mask(), {}));
    CHECK(cache.length() == 6);

    // Cross-attention: the memory's values are checked at the first call, and
    // kept only when they pass; a later call reads them unchecked.
    KVCache memory_cache;
    const Tensor x_q = random.normal_tensor({B, 1, D}, 1.0f);
    Tensor memory = random.normal_tensor({B, 4, D}, 1.0f);
    memory.at({0, 3, 1}) = std::numeric_limits<float>::infinity();
    CHECK_ERROR_CONTAINS(attention.forward_fixed(x_q, memory, memory_cache, Mask(), {}), "value holds a non-finite number");
    CHECK(memory_cache.empty());
    memory.at({0, 3, 1}) = 0.5f;
    const Tensor first = attention.forward_fixed(x_q, memory, memory_cache, Mask(), {}).output;
    CHECK(memory_cache.length() == 4);
    CHECK(attention.forward_fixed(x_q, memory, memory_cache, Mask(), {}).output.values() == first.values());  // exact: the same calls on the same numbers

    // The engine's side: rows 0..n-1 are skipped by the check, the rest still read.
    Tensor query = random.normal_tensor({B, 1, D}, 1.0f), key = random.normal_tensor({B, 3, D}, 1.0f),
           value = random.normal_tensor({B, 3, D}, 1.0f);
    value.at({0, 2, 5}) = std::numeric_limits<float>::infinity();  // in the last row
    AttentionOptions options;
    options.value_rows_known_finite = 2;
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(query, key, value, H, Mask(), options),
                         "value holds a non-finite number");
    options.value_rows_known_finite = 0;  // the reference: every row checked
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(query, key, value, H, Mask(), options),
                         "value holds a non-finite number");
    options.value_rows_known_finite = -1;
    CHECK_ERROR_CONTAINS(multi_head_scaled_dot_product_attention(query, key, value, H, Mask(), options),
                         "value_rows_known_finite must be >= 0");
}
