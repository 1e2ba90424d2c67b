#include "models/masks.h"

#include "engine/error.h"

namespace tinyformer {

namespace {

Mask key_padding_or_all(const Padding& padding) { return padding.empty() ? Mask() : Mask::key_padding(padding); }

// `padding`, or B rows of `length` real positions when it is empty.
Padding or_none_padded(const Padding& padding, int64_t batch, int64_t length) {
    return padding.empty() ? Padding::from_lengths(std::vector<int64_t>(static_cast<size_t>(batch), length), length)
                           : padding;
}

}  // namespace

Mask encoder_self_mask(const Padding& source) { return key_padding_or_all(source); }

Seq2SeqMasks decoder_masks(int64_t batch, int64_t length, int64_t source_length, const Padding& target,
                           const Padding& source) {
    return seq2seq_masks(or_none_padded(target, batch, length), or_none_padded(source, batch, source_length));
}

Seq2SeqMasks decoder_step_masks(int64_t first, int64_t new_positions, const Padding& source) {
    if (first < 0 || new_positions < 1)
        fail("decoder_step_masks: first must be >= 0 and new_positions >= 1, got ", first, " and ", new_positions);
    Mask self = new_positions == 1 ? Mask() : Mask::causal(new_positions, first + new_positions);
    return {std::move(self), key_padding_or_all(source)};
}

Mask stack_mask(SelfAttentionKind kind, int64_t length, const std::vector<int64_t>& prefix_lengths,
                const Padding& padding) {
    if (kind != SelfAttentionKind::PrefixLm && !prefix_lengths.empty())
        fail("forward: prefix_len is given but the model's attention is ", attention_kind_name(kind));
    Mask mask;  // bidirectional: nothing but the padding
    switch (kind) {
        case SelfAttentionKind::Causal: mask = Mask::causal(length); break;
        case SelfAttentionKind::PrefixLm: mask = Mask::prefix_lm(prefix_lengths, length); break;
        case SelfAttentionKind::Bidirectional: break;
    }
    return mask & key_padding_or_all(padding);
}

Mask stack_step_mask(const Padding& cache_padding) { return key_padding_or_all(cache_padding); }

}  // namespace tinyformer
