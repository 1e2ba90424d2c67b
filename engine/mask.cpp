#include "engine/mask.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tinyformer {

namespace {

// Checks a BoolTensor's shape against its values and pads the shape with
// leading 1s to rank 4 ([L,S] -> [1,1,L,S], [B,L,S] -> [B,1,L,S]).
Shape to_rank4(const char* op, const Shape& shape, size_t value_count) {
    if (shape.size() < 2 || shape.size() > 4)
        fail(op, ": a mask is [L,S], [B,L,S] or [B,H,L,S]; got ", shape_string(shape));
    if (checked_numel(shape, op) != static_cast<int64_t>(value_count))
        fail(op, ": shape ", shape_string(shape), " needs ", checked_numel(shape, op), " values, got ", value_count);
    if (shape.size() == 3) return {shape[0], 1, shape[1], shape[2]};  // [B,L,S]: one mask for every head
    return shape.size() == 2 ? Shape{1, 1, shape[0], shape[1]} : shape;
}

void check_flags(const char* op, const std::vector<uint8_t>& values) {
    for (uint8_t v : values)
        if (v > 1) fail(op, ": Boolean values must be 0 or 1, got ", static_cast<int>(v));
}

}  // namespace

Padding Padding::from_lengths(const std::vector<int64_t>& lengths, int64_t length) {
    if (length < 0) fail("Padding::from_lengths: length must be >= 0, got ", length);
    Padding padding;
    padding.batch_ = static_cast<int64_t>(lengths.size());
    padding.length_ = length;
    padding.flags_.assign(lengths.size() * static_cast<size_t>(length), 0);
    for (int64_t b = 0; b < padding.batch_; ++b) {
        const int64_t valid = lengths[static_cast<size_t>(b)];
        if (valid < 0 || valid > length)
            fail("Padding::from_lengths: lengths[", b, "] = ", valid, " is outside 0..", length);
        for (int64_t t = valid; t < length; ++t) padding.flags_[static_cast<size_t>(b * length + t)] = 1;
    }
    return padding;
}

Padding Padding::from_flags(const BoolTensor& is_padding) {
    if (is_padding.shape.size() != 2)
        fail("Padding::from_flags: padding flags must be [B,T], got ", shape_string(is_padding.shape));
    if (checked_numel(is_padding.shape, "Padding::from_flags") != static_cast<int64_t>(is_padding.values.size()))
        fail("Padding::from_flags: shape ", shape_string(is_padding.shape), " does not match ",
             is_padding.values.size(), " values");
    check_flags("Padding::from_flags", is_padding.values);
    Padding padding;
    padding.batch_ = is_padding.shape[0];
    padding.length_ = is_padding.shape[1];
    padding.flags_ = is_padding.values;
    return padding;
}

Mask::Mask() : Mask({1, 1, 1, 1}, {1}, {}) {}

Mask::Mask(Shape shape, std::vector<uint8_t> allowed, std::vector<float> bias)
    : shape_(std::move(shape)), allowed_(std::move(allowed)), bias_(std::move(bias)) {
    int64_t stride = 1;
    for (int axis = 3; axis >= 0; --axis) {
        strides_[axis] = shape_[static_cast<size_t>(axis)] == 1 ? 0 : stride;
        stride *= shape_[static_cast<size_t>(axis)];
    }
    // Each row's allowed keys: first, last, and whether they have holes.
    int64_t row_stride = 1;
    for (int axis = 2; axis >= 0; --axis) {
        range_strides_[axis] = shape_[static_cast<size_t>(axis)] == 1 ? 0 : row_stride;
        row_stride *= shape_[static_cast<size_t>(axis)];
    }
    const int64_t keys = shape_[3];
    ranges_.resize(static_cast<size_t>(row_stride));
    for (int64_t row = 0; row < row_stride; ++row) {
        const uint8_t* allowed = allowed_.data() + row * keys;
        int64_t first = 0, last = -1, count = 0;
        for (int64_t s = 0; s < keys; ++s)
            if (allowed[s]) {
                if (count++ == 0) first = s;
                last = s;
            }
        const bool contiguous = count == 0 || count == last - first + 1;
        if (keys == 1 && count == 1) last = kAllKeys;  // broadcast over keys: every key
        ranges_[static_cast<size_t>(row)] = {first, last, contiguous};
    }
}

Mask Mask::causal(int64_t length) {
    if (length < 1) fail("Mask::causal: length must be >= 1, got ", length);
    return causal(length, length);
}

Mask Mask::causal(int64_t queries, int64_t keys) {
    if (queries < 1 || keys < queries)
        fail("Mask::causal: need 1 <= queries <= keys, got queries ", queries, ", keys ", keys);
    std::vector<uint8_t> allowed(static_cast<size_t>(queries * keys));
    for (int64_t l = 0; l < queries; ++l)
        for (int64_t s = 0; s < keys; ++s) allowed[static_cast<size_t>(l * keys + s)] = s <= keys - queries + l;
    return Mask({1, 1, queries, keys}, std::move(allowed), {});
}

Mask Mask::prefix_lm(const std::vector<int64_t>& prefix_lengths, int64_t length) {
    if (length < 1) fail("Mask::prefix_lm: length must be >= 1, got ", length);
    if (prefix_lengths.empty()) fail("Mask::prefix_lm: prefix_lengths is empty; need one per batch row");
    const int64_t batch = static_cast<int64_t>(prefix_lengths.size());
    std::vector<uint8_t> allowed(static_cast<size_t>(batch * length * length));
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t prefix = prefix_lengths[static_cast<size_t>(b)];
        if (prefix < 0 || prefix > length)
            fail("Mask::prefix_lm: prefix_lengths[", b, "] = ", prefix, " is outside 0..", length);
        for (int64_t l = 0; l < length; ++l)
            for (int64_t s = 0; s < length; ++s)
                allowed[static_cast<size_t>((b * length + l) * length + s)] = s < prefix || s <= l;
    }
    return Mask({batch, 1, length, length}, std::move(allowed), {});
}

Mask Mask::key_padding(const Padding& padding) {
    if (padding.empty() || padding.batch() < 1 || padding.length() < 1)
        fail("Mask::key_padding: padding must be [B,S] with B, S >= 1, got [", padding.batch(), ",",
             padding.length(), "]");
    std::vector<uint8_t> allowed(static_cast<size_t>(padding.batch() * padding.length()));
    for (int64_t b = 0; b < padding.batch(); ++b)
        for (int64_t s = 0; s < padding.length(); ++s)
            allowed[static_cast<size_t>(b * padding.length() + s)] = !padding.is_padding(b, s);
    return Mask({padding.batch(), 1, 1, padding.length()}, std::move(allowed), {});
}

Mask Mask::local_window(int64_t length, int64_t radius) {
    if (length < 1) fail("Mask::local_window: length must be >= 1, got ", length);
    if (radius < 0) fail("Mask::local_window: radius must be >= 0, got ", radius);
    std::vector<uint8_t> allowed(static_cast<size_t>(length * length));
    for (int64_t l = 0; l < length; ++l)
        for (int64_t s = 0; s < length; ++s)
            allowed[static_cast<size_t>(l * length + s)] = std::abs(l - s) <= radius;
    return Mask({1, 1, length, length}, std::move(allowed), {});
}

Mask Mask::from_allowed(const BoolTensor& allowed) {
    Shape shape = to_rank4("Mask::from_allowed", allowed.shape, allowed.values.size());
    check_flags("Mask::from_allowed", allowed.values);
    return Mask(std::move(shape), allowed.values, {});
}

Mask Mask::from_torch_sdpa_mask(const BoolTensor& allowed) {
    // SDPA: True = take part. That is already the engine's meaning.
    Shape shape = to_rank4("Mask::from_torch_sdpa_mask", allowed.shape, allowed.values.size());
    check_flags("Mask::from_torch_sdpa_mask", allowed.values);
    return Mask(std::move(shape), allowed.values, {});
}

Mask Mask::from_torch_mha_attn_mask(const BoolTensor& blocked) {
    // nn.MultiheadAttention: True = NOT allowed. Flip every value.
    Shape shape = to_rank4("Mask::from_torch_mha_attn_mask", blocked.shape, blocked.values.size());
    check_flags("Mask::from_torch_mha_attn_mask", blocked.values);
    std::vector<uint8_t> allowed(blocked.values.size());
    for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = !blocked.values[i];
    return Mask(std::move(shape), std::move(allowed), {});
}

Mask Mask::from_torch_key_padding_mask(const BoolTensor& is_padding) {
    // key_padding_mask [B,S], True = ignore: exactly Padding's meaning.
    return key_padding(Padding::from_flags(is_padding));
}

Mask Mask::from_additive(const Tensor& additive) {
    Shape shape = to_rank4("Mask::from_additive", additive.shape(), static_cast<size_t>(additive.numel()));
    std::vector<uint8_t> allowed(static_cast<size_t>(additive.numel()));
    std::vector<float> bias(static_cast<size_t>(additive.numel()));
    bool any_bias = false;
    for (size_t i = 0; i < allowed.size(); ++i) {
        const float v = additive.data()[i];
        if (std::isnan(v) || v == std::numeric_limits<float>::infinity())
            fail("Mask::from_additive: value ", v, " at flat index ", i, " of ", shape_string(additive.shape()),
                 "; an additive mask holds 0, -inf or a finite bias");
        allowed[i] = v != -std::numeric_limits<float>::infinity();
        bias[i] = allowed[i] ? v : 0.0f;
        any_bias = any_bias || bias[i] != 0.0f;
    }
    if (!any_bias) bias.clear();  // a pure 0 / -inf mask is exactly a Boolean mask
    return Mask(std::move(shape), std::move(allowed), std::move(bias));
}

std::vector<float> alibi_slopes(int64_t heads) {
    if (heads < 1) fail("alibi_slopes: heads must be >= 1, got ", heads);
    // The slopes of a power of two n: 2^(-8 (h+1) / n), h = 0..n-1 (in double, then rounded once).
    const auto power_of_two_slopes = [](int64_t n) {
        std::vector<float> slopes;
        for (int64_t h = 0; h < n; ++h)
            slopes.push_back(static_cast<float>(std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n))));
        return slopes;
    };
    int64_t n = 1;
    while (n * 2 <= heads) n *= 2;  // n = 2^floor(log2 heads)
    std::vector<float> slopes = power_of_two_slopes(n);
    const std::vector<float> finer = power_of_two_slopes(2 * n);
    for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < heads; i += 2) slopes.push_back(finer[static_cast<size_t>(i)]);
    return slopes;
}

namespace {

// The [B][L] query and [B][S] key positions of a position-dependent mask,
// checked: the same B >= 1 rows, every row L >= 1 and S >= 1 long, positions >= 0.
struct PositionShape {
    int64_t batch, queries, keys;
};
PositionShape check_positions(const char* op, const std::vector<std::vector<int64_t>>& query_positions,
                              const std::vector<std::vector<int64_t>>& key_positions) {
    const int64_t B = static_cast<int64_t>(query_positions.size());
    if (B < 1 || key_positions.size() != query_positions.size())
        fail(op, ": need query_positions and key_positions for the same B >= 1 rows, got ", B, " and ",
             key_positions.size());
    const int64_t L = static_cast<int64_t>(query_positions[0].size()), S = static_cast<int64_t>(key_positions[0].size());
    if (L < 1 || S < 1) fail(op, ": need L >= 1 queries and S >= 1 keys, got ", L, " and ", S);
    for (int64_t b = 0; b < B; ++b) {
        const auto& queries = query_positions[static_cast<size_t>(b)];
        const auto& keys = key_positions[static_cast<size_t>(b)];
        if (static_cast<int64_t>(queries.size()) != L || static_cast<int64_t>(keys.size()) != S)
            fail(op, ": row ", b, " has ", queries.size(), " query and ", keys.size(), " key positions; row 0 has ", L,
                 " and ", S);
        for (const auto* positions : {&queries, &keys})
            for (int64_t p : *positions)
                if (p < 0) fail(op, ": row ", b, " has position ", p, "; positions are >= 0");
    }
    return {B, L, S};
}

}  // namespace

Mask Mask::alibi(int64_t heads, const std::vector<std::vector<int64_t>>& query_positions,
                 const std::vector<std::vector<int64_t>>& key_positions) {
    const std::vector<float> slopes = alibi_slopes(heads);
    const auto [B, L, S] = check_positions("Mask::alibi", query_positions, key_positions);
    std::vector<uint8_t> allowed(static_cast<size_t>(checked_numel({B, heads, L, S}, "Mask::alibi")), 1);
    std::vector<float> bias(allowed.size());
    size_t i = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t l = 0; l < L; ++l)
                for (int64_t s = 0; s < S; ++s, ++i) {
                    const int64_t distance = std::abs(query_positions[static_cast<size_t>(b)][static_cast<size_t>(l)] -
                                                      key_positions[static_cast<size_t>(b)][static_cast<size_t>(s)]);
                    bias[i] = -slopes[static_cast<size_t>(h)] * static_cast<float>(distance);
                }
    return Mask({B, heads, L, S}, std::move(allowed), std::move(bias));
}

int64_t relative_position_bucket(int64_t relative_position, const RelativeBuckets& buckets) {
    const int64_t n = buckets.bidirectional ? buckets.buckets / 2 : buckets.buckets;
    const int64_t exact = n / 2;
    if (exact < 1 || buckets.max_distance <= exact)
        fail("relative_position_bucket: need buckets >= ", buckets.bidirectional ? 4 : 2,
             " and max_distance > the exact buckets (", exact, "), got buckets ", buckets.buckets, ", max_distance ",
             buckets.max_distance);
    const int64_t later = buckets.bidirectional && relative_position > 0 ? n : 0;  // bidirectional: r > 0 has its own half
    const int64_t distance =
        buckets.bidirectional ? std::abs(relative_position) : std::max<int64_t>(-relative_position, 0);
    if (distance < exact) return later + distance;
    // In float32, step by step as T5's PyTorch code takes it (the ratio, its log, over the
    // log of max_distance / exact taken in double, times n - exact, truncated): where the
    // exact value is a whole number (9 buckets, max_distance 128, d = 8: exactly 1), float32
    // and double round to either side of it, and a checkpoint's buckets are PyTorch's.
    const float ratio = static_cast<float>(distance) / static_cast<float>(exact);
    const float range = static_cast<float>(std::log(static_cast<double>(buckets.max_distance) / static_cast<double>(exact)));
    const float scaled = std::log(ratio) / range * static_cast<float>(n - exact);
    return later + std::min(exact + static_cast<int64_t>(scaled), n - 1);
}

Mask Mask::relative_bias(const Tensor& table, const RelativeBuckets& buckets,
                         const std::vector<std::vector<int64_t>>& query_positions,
                         const std::vector<std::vector<int64_t>>& key_positions) {
    if (table.rank() != 2 || table.dim(0) != buckets.buckets || table.dim(1) < 1)
        fail("Mask::relative_bias: the table must be [buckets, H] = [", buckets.buckets, ", H], got ",
             shape_string(table.shape()));
    const int64_t heads = table.dim(1);
    const auto [B, L, S] = check_positions("Mask::relative_bias", query_positions, key_positions);
    std::vector<uint8_t> allowed(static_cast<size_t>(checked_numel({B, heads, L, S}, "Mask::relative_bias")), 1);
    std::vector<float> bias(allowed.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t s = 0; s < S; ++s) {
                const int64_t bucket = relative_position_bucket(
                    key_positions[static_cast<size_t>(b)][static_cast<size_t>(s)] -
                        query_positions[static_cast<size_t>(b)][static_cast<size_t>(l)],
                    buckets);
                for (int64_t h = 0; h < heads; ++h)
                    bias[static_cast<size_t>(((b * heads + h) * L + l) * S + s)] = table.data()[bucket * heads + h];
            }
    return Mask({B, heads, L, S}, std::move(allowed), std::move(bias));
}

Mask Mask::sliding_window(int64_t window, const std::vector<std::vector<int64_t>>& query_positions,
                          const std::vector<std::vector<int64_t>>& key_positions) {
    if (window < 1) fail("Mask::sliding_window: window must be >= 1, got ", window);
    const auto [B, L, S] = check_positions("Mask::sliding_window", query_positions, key_positions);
    std::vector<uint8_t> allowed(static_cast<size_t>(checked_numel({B, 1, L, S}, "Mask::sliding_window")));
    size_t i = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t s = 0; s < S; ++s, ++i) {
                const int64_t query = query_positions[static_cast<size_t>(b)][static_cast<size_t>(l)];
                const int64_t key = key_positions[static_cast<size_t>(b)][static_cast<size_t>(s)];
                allowed[i] = query - window < key && key <= query;
            }
    return Mask({B, 1, L, S}, std::move(allowed), {});
}

Mask Mask::alibi(int64_t heads, int64_t length) {
    if (length < 1) fail("Mask::alibi: length must be >= 1, got ", length);
    std::vector<int64_t> positions(static_cast<size_t>(length));
    for (int64_t t = 0; t < length; ++t) positions[static_cast<size_t>(t)] = t;
    return alibi(heads, {positions}, {positions});
}

Mask Mask::operator&(const Mask& other) const {
    Shape shape{0, 0, 0, 0};
    for (size_t axis = 0; axis < 4; ++axis) {
        const int64_t a = shape_[axis], b = other.shape_[axis];
        if (a != b && a != 1 && b != 1)
            fail("Mask::operator&: masks ", shape_string(shape_), " and ", shape_string(other.shape_),
                 " do not broadcast (axis ", axis, ": ", a, " vs ", b, ")");
        shape[axis] = std::max(a, b);
    }
    const bool with_bias = has_bias() || other.has_bias();
    std::vector<uint8_t> allowed(static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
    std::vector<float> bias(with_bias ? allowed.size() : 0);
    size_t i = 0;
    for (int64_t b = 0; b < shape[0]; ++b)
        for (int64_t h = 0; h < shape[1]; ++h)
            for (int64_t l = 0; l < shape[2]; ++l)
                for (int64_t s = 0; s < shape[3]; ++s, ++i) {
                    allowed[i] = allows(b, h, l, s) && other.allows(b, h, l, s);
                    // A blocked cell keeps no bias (as from_additive): its -inf is the whole story.
                    if (with_bias) bias[i] = allowed[i] ? this->bias(b, h, l, s) + other.bias(b, h, l, s) : 0.0f;
                }
    return Mask(std::move(shape), std::move(allowed), std::move(bias));
}

Tensor Mask::bias_tensor(const Shape& target) const {
    check_broadcasts_to(target, "Mask::bias_tensor");
    Tensor out(target);
    float* value = out.data();
    for (int64_t b = 0; b < target[0]; ++b)
        for (int64_t h = 0; h < target[1]; ++h)
            for (int64_t l = 0; l < target[2]; ++l)
                for (int64_t s = 0; s < target[3]; ++s) *value++ = bias(b, h, l, s);
    return out;
}

Mask::Row Mask::row(int64_t b, int64_t h, int64_t l) const {
    const int64_t start = index(b, h, l, 0);
    return {allowed_.data() + start, has_bias() ? bias_.data() + start : nullptr, strides_[3]};
}

bool Mask::allows_everything() const {
    return !has_bias() && std::all_of(allowed_.begin(), allowed_.end(), [](uint8_t v) { return v != 0; });
}

Mask Mask::with_cells(int64_t batch, int64_t queries, int64_t keys, const std::vector<MaskCell>& cells) const {
    if (batch < 1 || queries < 1 || keys < 1)
        fail("Mask::with_cells: need batch, queries, keys >= 1, got ", batch, ", ", queries, ", ", keys);
    const int64_t heads = shape_[1];
    check_broadcasts_to({batch, heads, queries, keys}, "Mask::with_cells");
    for (const MaskCell& cell : cells)
        if (cell.query < 0 || cell.query >= queries || cell.key < 0 || cell.key >= keys)
            fail("Mask::with_cells: cell [", cell.query, ", ", cell.key, "] is outside [L,S] = [", queries, ",", keys,
                 "]");
    const Shape shape{batch, heads, queries, keys};
    const auto count = static_cast<size_t>(checked_numel(shape, "Mask::with_cells"));
    std::vector<uint8_t> allowed(count);
    std::vector<float> bias(has_bias() ? count : 0);
    size_t i = 0;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t l = 0; l < queries; ++l)
                for (int64_t s = 0; s < keys; ++s, ++i) {
                    allowed[i] = allowed_[static_cast<size_t>(index(b, h, l, s))];
                    if (has_bias()) bias[i] = bias_[static_cast<size_t>(index(b, h, l, s))];
                }
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (const MaskCell& cell : cells) {
                const auto at = static_cast<size_t>(((b * heads + h) * queries + cell.query) * keys + cell.key);
                allowed[at] = cell.allowed;
                if (!cell.allowed && has_bias()) bias[at] = 0.0f;  // a blocked cell keeps no bias
            }
    return Mask(shape, std::move(allowed), std::move(bias));
}

void Mask::check_broadcasts_to(const Shape& target, const char* op) const {
    if (target.size() != 4)
        fail(op, ": a mask broadcasts to a rank-4 [B,H,L,S] target; got ", shape_string(target), " for mask ",
             shape_string(shape_));
    for (size_t axis = 0; axis < 4; ++axis)
        if (shape_[axis] != 1 && shape_[axis] != target[axis])
            fail(op, ": mask ", shape_string(shape_), " does not broadcast to [B,H,L,S] = ", shape_string(target));
}

std::string Mask::to_ascii(int64_t queries, int64_t keys, int64_t batch, int64_t head) const {
    if (batch < 0 || head < 0 || (shape_[0] != 1 && batch >= shape_[0]) || (shape_[1] != 1 && head >= shape_[1]))
        fail("Mask::to_ascii: batch ", batch, ", head ", head, " outside mask ", shape_string(shape_));
    check_broadcasts_to({shape_[0], shape_[1], queries, keys}, "Mask::to_ascii");
    std::string text;
    for (int64_t l = 0; l < queries; ++l) {
        text.append("q").append(std::to_string(l)).append(":");
        bool any = false;
        for (int64_t s = 0; s < keys; ++s)
            if (allows(batch, head, l, s)) {
                text.append(" k").append(std::to_string(s));
                any = true;
            }
        text.append(any ? "\n" : " (none)\n");
    }
    return text;
}

Seq2SeqMasks seq2seq_masks(const Padding& target, const Padding& source) {
    if (target.empty() || source.empty())
        fail("seq2seq_masks: give both paddings, target [B,T] and source [B,S] (Padding::from_lengths with full ",
             "lengths means no padding)");
    return seq2seq_masks(target.length(), target, source);
}

Seq2SeqMasks seq2seq_masks(int64_t target_length, const Padding& target, const Padding& source) {
    if (target_length < 1) fail("seq2seq_masks: the target length must be >= 1, got ", target_length);
    if (!target.empty() && target.length() != target_length)
        fail("seq2seq_masks: target padding is [", target.batch(), ",", target.length(), "] but T=", target_length);
    if (!target.empty() && !source.empty() && target.batch() != source.batch())
        fail("seq2seq_masks: target padding has B=", target.batch(), " but source padding has B=", source.batch());
    const auto key_padding_or_all = [](const Padding& padding) {
        return padding.empty() ? Mask() : Mask::key_padding(padding);
    };
    return {Mask::causal(target_length) & key_padding_or_all(target), key_padding_or_all(source)};
}

}  // namespace tinyformer
