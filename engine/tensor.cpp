#include "engine/tensor.h"

#include "engine/bit_cast.h"

#include <cmath>
#include <limits>

namespace tinyformer {

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ",";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

int64_t checked_numel(const Shape& shape, const char* what) {
    if (shape.empty() || shape.size() > 4)
        fail(what, ": a tensor has rank 1..4, got rank ", shape.size(), " ", shape_string(shape));
    int64_t count = 1;
    for (int64_t size : shape) {
        if (size < 0) fail(what, ": negative axis size in shape ", shape_string(shape));
        if (size != 0 && count > std::numeric_limits<int64_t>::max() / 4 / size)
            fail(what, ": shape ", shape_string(shape), " has too many elements");
        count *= size;
    }
    return count;
}

Tensor::Tensor(Shape shape)
    : shape_(std::move(shape)), values_(static_cast<size_t>(checked_numel(shape_, "Tensor"))) {}

Tensor Tensor::filled(Shape shape, float value) {
    Tensor t(std::move(shape));
    for (float& v : t.values_) v = value;
    return t;
}

Tensor::Tensor(Shape shape, std::vector<float> values) : shape_(std::move(shape)), values_(std::move(values)) {
    int64_t count = checked_numel(shape_, "Tensor");
    if (count != static_cast<int64_t>(values_.size()))
        fail("Tensor: shape ", shape_string(shape_), " needs ", count, " values, got ", values_.size());
}

Tensor Tensor::in_place(Shape shape, const float* data, std::shared_ptr<const void> owner) {
    Tensor t;
    t.values_ = FloatBuffer::view(data, static_cast<size_t>(checked_numel(shape, "Tensor::in_place")), std::move(owner));
    t.shape_ = std::move(shape);
    return t;
}

int64_t Tensor::dim(int64_t axis) const {
    int64_t r = rank();
    if (axis < -r || axis >= r)
        fail("Tensor::dim: axis ", axis, " is out of range for shape ", shape_string(shape_));
    return shape_[static_cast<size_t>(axis < 0 ? axis + r : axis)];
}

int64_t Tensor::offset(std::initializer_list<int64_t> index) const {
    if (static_cast<int64_t>(index.size()) != rank())
        fail("Tensor::at: index has ", index.size(), " coordinates, tensor ", shape_string(shape_), " has rank ", rank());
    int64_t flat = 0, axis = 0;
    for (int64_t i : index) {
        if (i < 0 || i >= shape_[static_cast<size_t>(axis)])
            fail("Tensor::at: index ", i, " on axis ", axis, " is out of range for shape ", shape_string(shape_));
        flat = flat * shape_[static_cast<size_t>(axis)] + i;
        ++axis;
    }
    return flat;
}

float& Tensor::at(std::initializer_list<int64_t> index) { return data()[offset(index)]; }
float Tensor::at(std::initializer_list<int64_t> index) const { return data()[offset(index)]; }

Tensor Tensor::reshaped(Shape shape) const {
    int64_t count = checked_numel(shape, "Tensor::reshaped");
    if (count != numel())
        fail("Tensor::reshaped: cannot view ", shape_string(shape_), " (", numel(), " elements) as ",
             shape_string(shape), " (", count, " elements)");
    Tensor same = *this;  // the numbers copied into a buffer of the pool
    same.shape_ = std::move(shape);
    return same;
}

int64_t Tensor::matrix_count() const {
    int64_t count = 1;
    for (int64_t axis = 0; axis + 2 < rank(); ++axis) count *= shape_[static_cast<size_t>(axis)];
    return count;
}

ConstMatrixView Tensor::matrix(int64_t leading) const {
    if (rank() < 1) fail("Tensor::matrix: the tensor is empty");
    if (leading < 0 || leading >= matrix_count())
        fail("Tensor::matrix: index ", leading, " is out of range for shape ", shape_string(shape_));
    int64_t cols = dim(-1);
    int64_t rows = rank() >= 2 ? dim(-2) : 1;
    return {data() + leading * rows * cols, rows, cols, cols};
}

MatrixView Tensor::matrix(int64_t leading) {
    const ConstMatrixView view = static_cast<const Tensor&>(*this).matrix(leading);  // checks; data() copies in_place
    return {data() + leading * view.rows * view.cols, view.rows, view.cols, view.stride};
}

bool Tensor::all_finite() const {
    uint32_t non_finite = 0;  // as ConstBatchView::all_finite: vectorised, no branch per element
    for (float v : values_) non_finite |= (bit_cast<uint32_t>(v) & 0x7F800000u) == 0x7F800000u;
    return non_finite == 0;
}

ConstBatchView Tensor::batch_view() const {
    if (rank() != 3) fail("Tensor::batch_view: need a [B,S,D] tensor, got ", shape_string(shape_));
    return {data(), shape_[0], shape_[1], shape_[2], shape_[1] * shape_[2], shape_[2]};
}

bool ConstBatchView::all_finite() const {
    // An exponent field of all ones is inf or NaN; OR over each row, no branch
    // per element, so the loop vectorises.
    uint32_t non_finite = 0;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t r = 0; r < rows; ++r) {
            const float* row = data + b * batch_stride + r * row_stride;
            for (int64_t c = 0; c < cols; ++c)
                non_finite |= (bit_cast<uint32_t>(row[c]) & 0x7F800000u) == 0x7F800000u;
        }
    return non_finite == 0;
}

ConstMatrixView ConstMatrixView::columns(int64_t first, int64_t count) const {
    if (first < 0 || count < 0 || first + count > cols)
        fail("MatrixView::columns: columns [", first, ",", first + count, ") outside a view with ", cols, " columns");
    return {data + first, rows, count, stride};
}

ConstMatrixView ConstMatrixView::rows_range(int64_t first, int64_t count) const {
    if (first < 0 || count < 0 || first + count > rows)
        fail("MatrixView::rows_range: rows [", first, ",", first + count, ") outside a view with ", rows, " rows");
    return {data + first * stride, count, cols, stride};
}

MatrixView MatrixView::columns(int64_t first, int64_t count) const {
    ConstMatrixView view = ConstMatrixView(*this).columns(first, count);
    return {data + first, view.rows, view.cols, view.stride};
}

MatrixView MatrixView::rows_range(int64_t first, int64_t count) const {
    ConstMatrixView view = ConstMatrixView(*this).rows_range(first, count);
    return {data + first * stride, view.rows, view.cols, view.stride};
}

}  // namespace tinyformer
