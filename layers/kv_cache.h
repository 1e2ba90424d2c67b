// KVCache — the keys and values of the positions decoded so far, kept per
// attention layer between decoding steps, without copying them every step.
// It holds rows and nothing else: what a row means (which values were found
// finite, which slot is padding, which position a slot's token has) is kept
// by whoever appends them (layers/multi_head_attention.h, models/stepper.h).
// In particular MultiHeadAttention::forward_appending takes every row already
// in a cache as checked finite (its own calls checked them when they appended
// them); rows a caller appends by hand are that caller's to check.
//
//   storage:  key and value buffers [B, capacity, D]; rows 0..length-1 of
//             each batch row are valid. D is the width of K and V: d_model,
//             or Hkv*Dh with grouped-query attention (layers/multi_head_attention.h)
//             — the cache shrinks by H/Hkv. With rotary positions the keys are
//             held already rotated (layers/rotary.h).
//   append:   the new positions' keys/values [B, n, D] are written at rows
//             length..length+n-1. When they do not fit, the buffers grow to
//             max(2 * capacity, length + n) (one copy; amortised O(1) per
//             row) — or call reserve() with the decode length first.
//   keys(), values():  views [B, length, D] of the valid rows (batch stride
//             capacity * D), which attention reads in place.
//   keep_rows: beam search keeps, drops and duplicates hypotheses: batch row
//             i becomes old row rows[i] (repeats allowed).
//   truncate: keeps rows 0..n-1 of every batch row (a step that failed takes
//             its rows back out); the buffers stay, with the B and D they
//             were made for, also at n = 0.
//   drop_front: drops rows 0..n-1 of every batch row, moving the rest to the
//             front (a sliding window evicts its oldest positions; the room
//             stays, so a window of W keeps the cache at W rows).
//
// append(Tensor, Tensor) into a cache with nothing reserved (capacity 0) and
// assign() take the tensors over (no copy); append of views — the model's
// path, the K and V columns of its fused Q|K|V product — copies them in once,
// and so does append(Tensor, Tensor) into reserved room.
#pragma once

#include "engine/tensor.h"

#include <vector>

namespace tinyformer {

class KVCache {
public:
    bool empty() const { return length_ == 0; }
    int64_t length() const { return length_; }
    int64_t capacity() const { return capacity_; }
    int64_t batch() const { return batch_; }
    int64_t width() const { return width_; }

    // Room for `capacity` positions of B rows of width D, keeping what is
    // cached. Error if B or D differ from what is cached.
    void reserve(int64_t batch, int64_t capacity, int64_t width);
    // Appends key and value [B, n, D] (same shapes) at rows length..length+n-1.
    void append(Tensor key, Tensor value);
    // The same from strided views (e.g. the K and V columns of a fused
    // projection [B, n, 3D]), copied in; an empty cache is made [B, n, D].
    void append(ConstBatchView key, ConstBatchView value);
    // Replaces everything with key and value [B, S, D] (taken over, no copy).
    void assign(Tensor key, Tensor value);

    ConstBatchView keys() const { return view(key_); }
    ConstBatchView values() const { return view(value_); }
    // Batch row i := old row rows[i]; rows may repeat and may be fewer.
    void keep_rows(const std::vector<int64_t>& rows);
    // Keeps positions 0..n-1 of every batch row (0 <= n <= length), and the room.
    void truncate(int64_t n);
    // Drops positions 0..n-1 of every batch row (0 <= n <= length); the rest move to the front.
    void drop_front(int64_t n);
    // The valid rows copied out as tensors [B, length, D] (for observers and tests).
    Tensor key_tensor() const;
    Tensor value_tensor() const;

private:
    ConstBatchView view(const Tensor& buffer) const {
        return {buffer.data(), batch_, length_, width_, capacity_ * width_, width_};
    }
    void grow(int64_t capacity);

    Tensor key_, value_;  // [B, capacity, D], or empty
    int64_t batch_ = 0, length_ = 0, capacity_ = 0, width_ = 0;
};

}  // namespace tinyformer
