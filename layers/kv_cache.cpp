#include "layers/kv_cache.h"

#include <algorithm>

namespace tinyformer {

namespace {

// Rows [0, rows) of each batch row of `from` [B, from_capacity, D] into `to` [B', to_capacity, D].
void copy_rows(const Tensor& from, int64_t from_capacity, Tensor& to, int64_t to_capacity, int64_t width,
               int64_t rows, const std::vector<int64_t>& batch_rows) {
    for (size_t i = 0; i < batch_rows.size(); ++i) {
        const float* source = from.data() + batch_rows[i] * from_capacity * width;
        std::copy(source, source + rows * width, to.data() + static_cast<int64_t>(i) * to_capacity * width);
    }
}

std::vector<int64_t> every_row(int64_t batch) {
    std::vector<int64_t> rows(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) rows[static_cast<size_t>(b)] = b;
    return rows;
}

}  // namespace

void KVCache::reserve(int64_t batch, int64_t capacity, int64_t width) {
    if (batch < 1 || width < 1 || capacity < 0)
        fail("KVCache::reserve: need B >= 1, D >= 1 and capacity >= 0, got B=", batch, ", capacity ", capacity,
             ", D=", width);
    if (capacity_ > 0 && (batch != batch_ || width != width_))
        fail("KVCache::reserve: the cache holds B=", batch_, ", D=", width_, "; asked for B=", batch, ", D=", width);
    batch_ = batch;
    width_ = width;
    if (capacity > capacity_) grow(capacity);
}

void KVCache::grow(int64_t capacity) {
    Tensor key({batch_, capacity, width_}), value({batch_, capacity, width_});
    if (length_ > 0) {
        copy_rows(key_, capacity_, key, capacity, width_, length_, every_row(batch_));
        copy_rows(value_, capacity_, value, capacity, width_, length_, every_row(batch_));
    }
    key_ = std::move(key);
    value_ = std::move(value);
    capacity_ = capacity;
}

void KVCache::assign(Tensor key, Tensor value) {
    if (key.rank() != 3 || key.shape() != value.shape())
        fail("KVCache: key and value must be [B,S,D] of one shape, got ", shape_string(key.shape()), " and ",
             shape_string(value.shape()));
    batch_ = key.dim(0);
    length_ = capacity_ = key.dim(1);
    width_ = key.dim(2);
    key_ = std::move(key);
    value_ = std::move(value);
}

void KVCache::append(Tensor key, Tensor value) {
    if (key.rank() != 3 || key.shape() != value.shape())
        fail("KVCache::append: key and value must be [B,n,D] of one shape, got ", shape_string(key.shape()), " and ",
             shape_string(value.shape()));
    if (capacity_ == 0) {  // nothing reserved: take the tensors over
        assign(std::move(key), std::move(value));
        return;
    }
    append(key.batch_view(), value.batch_view());  // copied in, as from any view
}

void KVCache::append(ConstBatchView key, ConstBatchView value) {
    if (key.shape() != value.shape())
        fail("KVCache::append: key and value must be [B,n,D] of one shape, got ", shape_string(key.shape()), " and ",
             shape_string(value.shape()));
    if (capacity_ == 0) {  // nothing reserved: room for exactly these rows
        batch_ = key.batch;
        width_ = key.cols;
        capacity_ = key.rows;
        length_ = 0;
        key_ = Tensor({batch_, capacity_, width_});
        value_ = Tensor({batch_, capacity_, width_});
    }
    const int64_t n = key.rows;
    if (key.batch != batch_ || key.cols != width_)
        fail("KVCache::append: the cache holds B=", batch_, " rows of D=", width_, "; got ", shape_string(key.shape()));
    if (length_ + n > capacity_) grow(std::max(2 * capacity_, length_ + n));
    for (int64_t b = 0; b < batch_; ++b)
        for (int64_t r = 0; r < n; ++r) {
            const int64_t at = (b * capacity_ + length_ + r) * width_;
            const float* k = key.data + b * key.batch_stride + r * key.row_stride;
            const float* v = value.data + b * value.batch_stride + r * value.row_stride;
            std::copy(k, k + width_, key_.data() + at);
            std::copy(v, v + width_, value_.data() + at);
        }
    length_ += n;
}

void KVCache::keep_rows(const std::vector<int64_t>& rows) {
    if (capacity_ == 0) return;  // nothing cached yet
    for (int64_t row : rows)
        if (row < 0 || row >= batch_) fail("KVCache::keep_rows: row ", row, " outside 0..", batch_ - 1);
    const int64_t kept = static_cast<int64_t>(rows.size());
    if (rows == every_row(batch_)) return;
    Tensor key({kept, capacity_, width_}), value({kept, capacity_, width_});
    copy_rows(key_, capacity_, key, capacity_, width_, length_, rows);
    copy_rows(value_, capacity_, value, capacity_, width_, length_, rows);
    key_ = std::move(key);
    value_ = std::move(value);
    batch_ = kept;
}

void KVCache::truncate(int64_t n) {
    if (n < 0 || n > length_) fail("KVCache::truncate: n = ", n, " outside 0..", length_);
    length_ = n;
}

void KVCache::drop_front(int64_t n) {
    if (n < 0 || n > length_) fail("KVCache::drop_front: n = ", n, " outside 0..", length_);
    for (Tensor* buffer : {&key_, &value_})
        for (int64_t b = 0; n > 0 && b < batch_; ++b) {
            float* row = buffer->data() + b * capacity_ * width_;
            std::copy(row + n * width_, row + length_ * width_, row);  // to a lower address: a forward copy is safe
        }
    length_ -= n;
}

Tensor KVCache::key_tensor() const {
    Tensor out({batch_, length_, width_});
    if (length_ > 0) copy_rows(key_, capacity_, out, length_, width_, length_, every_row(batch_));
    return out;
}

Tensor KVCache::value_tensor() const {
    Tensor out({batch_, length_, width_});
    if (length_ > 0) copy_rows(value_, capacity_, out, length_, width_, length_, every_row(batch_));
    return out;
}

}  // namespace tinyformer
