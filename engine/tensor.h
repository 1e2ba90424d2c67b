// Tensor — contiguous, row-major float32 with a shape of rank 1..4, last axis
// contiguous, axes in NumPy/PyTorch order. Value semantics: copying a Tensor
// copies its numbers. The numbers live in a FloatBuffer (engine/memory/float_buffer.h),
// whose memory is recycled from tensor to tensor, or views a checkpoint's bytes (in_place).
//
// The dimension vocabulary used everywhere (code, comments, tests, messages):
//   B  batch                     H   attention heads
//   L  query length              Dh  head dimension (D / H); Dk, Dv in attention
//   S  key / source length       F   feed-forward dimension
//   T  target (decoder) length   V   vocabulary size
//   D  model dimension (d_model)
//
// MatrixView / ConstMatrixView are strided 2-D windows into a tensor: `rows`
// rows of `cols` floats, row r starting at data + r * stride. A head's slice of
// a [L, H*Dh] projection is the view with cols = Dh, stride = H*Dh — no copy.
#pragma once

#include "engine/error.h"
#include "engine/memory/float_buffer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace tinyformer {

// Shape — the size of each axis, held inline like a small std::vector: making
// a tensor allocates its numbers and nothing else (decoding makes thousands of
// tensors a second). Up to 8 axes: tensors have rank 1..4, and a file's
// larger rank can still be held long enough to be named in a message; a 9th
// axis is an Error.
class Shape {
public:
    static constexpr size_t kMaxAxes = 8;
    using value_type = int64_t;
    using size_type = size_t;
    using iterator = int64_t*;
    using const_iterator = const int64_t*;

    Shape() = default;
    Shape(std::initializer_list<int64_t> sizes) : Shape(sizes.begin(), sizes.end()) {}
    Shape(const std::vector<int64_t>& sizes) : Shape(sizes.begin(), sizes.end()) {}  // NOLINT: implicit, as a vector
    template <typename Iterator>
    Shape(Iterator first, Iterator last) {
        for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
    }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    int64_t& operator[](size_t axis) { return sizes_[axis]; }
    int64_t operator[](size_t axis) const { return sizes_[axis]; }
    int64_t& back() { return sizes_[size_ - 1]; }
    int64_t back() const { return sizes_[size_ - 1]; }
    int64_t* begin() { return sizes_.data(); }
    int64_t* end() { return sizes_.data() + size_; }
    const int64_t* begin() const { return sizes_.data(); }
    const int64_t* end() const { return sizes_.data() + size_; }
    void push_back(int64_t size) {
        if (size_ == kMaxAxes) fail("Shape: more than ", kMaxAxes, " axes");
        sizes_[size_++] = size;
    }
    operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT: implicit, for messages

    friend bool operator==(const Shape& a, const Shape& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

private:
    std::array<int64_t, kMaxAxes> sizes_{};
    size_t size_ = 0;
};

struct ConstMatrixView {
    const float* data = nullptr;
    int64_t rows = 0, cols = 0, stride = 0;

    float operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
    const float* row(int64_t r) const { return data + r * stride; }
    // Columns [first, first+count) of every row — e.g. one head of a projection.
    ConstMatrixView columns(int64_t first, int64_t count) const;
    ConstMatrixView rows_range(int64_t first, int64_t count) const;
};

struct MatrixView {
    float* data = nullptr;
    int64_t rows = 0, cols = 0, stride = 0;

    float& operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
    float* row(int64_t r) const { return data + r * stride; }
    MatrixView columns(int64_t first, int64_t count) const;
    MatrixView rows_range(int64_t first, int64_t count) const;
    operator ConstMatrixView() const { return {data, rows, cols, stride}; }
};

// B matrices of the same shape, matrix b starting at data + b * batch_stride:
// a [B, S, D] tensor, or the first S rows of a larger [B, capacity, D] buffer
// (a KV cache, layers/kv_cache.h) — no copy.
struct ConstBatchView {
    const float* data = nullptr;
    int64_t batch = 0, rows = 0, cols = 0, batch_stride = 0, row_stride = 0;

    ConstMatrixView matrix(int64_t b) const { return {data + b * batch_stride, rows, cols, row_stride}; }
    Shape shape() const { return {batch, rows, cols}; }
    bool all_finite() const;
};

class Tensor {
public:
    // An empty tensor (rank 0, no numbers): used for "absent", e.g. no weights.
    Tensor() = default;
    // A tensor of the given shape filled with zeros.
    explicit Tensor(Shape shape);
    // A tensor of the given shape with every element `value`.
    static Tensor filled(Shape shape, float value);
    // A tensor of the given shape holding `values` (row-major; sizes must agree).
    Tensor(Shape shape, std::vector<float> values);
    // Reads `data` (read-only: a checkpoint's bytes, mapped or read) where it lies, `owner` keeping it alive;
    // copies share it, and the first non-const access (data(), at(), matrix()) copies it.
    static Tensor in_place(Shape shape, const float* data, std::shared_ptr<const void> owner);
    bool is_in_place() const { return values_.is_view(); }

    const Shape& shape() const { return shape_; }
    int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
    bool empty() const { return shape_.empty(); }
    // Size of one axis; negative axes count from the end (dim(-1) = last).
    int64_t dim(int64_t axis) const;
    int64_t numel() const { return static_cast<int64_t>(values_.size()); }

    float* data() { return values_.data(); }  // a tensor read in place is copied first
    const float* data() const { return values_.data(); }
    std::vector<float> values() const { return {values_.begin(), values_.end()}; }

    // Checked element access: t.at({b, l, s}). Throws Error naming the index.
    float& at(std::initializer_list<int64_t> index);
    float at(std::initializer_list<int64_t> index) const;

    // The same numbers under a new shape with the same element count.
    Tensor reshaped(Shape shape) const;

    // The last two axes as a matrix, at flat index `leading` over the other
    // axes: for [B, L, D], matrix(b) is [L, D]; for [L, D], matrix(0) is itself.
    MatrixView matrix(int64_t leading = 0);
    ConstMatrixView matrix(int64_t leading = 0) const;
    // Number of such matrices (product of all axes but the last two).
    int64_t matrix_count() const;

    bool all_finite() const;

    // A rank-3 tensor [B, S, D] as a batch view (Error for any other rank).
    ConstBatchView batch_view() const;

private:
    int64_t offset(std::initializer_list<int64_t> index) const;

    Shape shape_;
    FloatBuffer values_;
};

// Throws unless every axis is >= 0 and rank is 1..4; returns the element count.
int64_t checked_numel(const Shape& shape, const char* what);

}  // namespace tinyformer
