#include "layers/decoder_layer.h"

#include "engine/ops.h"
#include "layers/encoder_layer.h"

namespace tinyformer {

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Mask& self_mask, const Mask& cross_mask,
                             const Padding& target_padding, Tensor* self_weights, Tensor* cross_weights,
                             DecoderLayerCache* cache) const {
    DecoderLayerCache whole_sequence;  // no cache: keys and values of x and memory alone
    DecoderLayerCache& keys_values = cache ? *cache : whole_sequence;
    auto self_attention = [&](const Tensor& input) {
        AttentionResult result = self_attn.forward_appending(
            input, keys_values.self, self_mask, attention_options(target_padding, self_weights != nullptr));
        if (self_weights) *self_weights = std::move(result.weights);
        return std::move(result.output);
    };
    auto cross_attention = [&](const Tensor& input) {
        AttentionResult result = multihead_attn.forward_fixed(
            input, memory, keys_values.cross, cross_mask, attention_options(target_padding, cross_weights != nullptr));
        if (cross_weights) *cross_weights = std::move(result.weights);
        return std::move(result.output);
    };
    if (norm_first) {
        const Tensor h1 = add(self_attention(norm1.forward(x)), x);
        const Tensor h2 = add(cross_attention(norm2.forward(h1)), h1);
        return add(feed_forward.forward(norm3.forward(h2)), h2);
    }
    const Tensor h1 = norm1.forward(add(self_attention(x), x));
    const Tensor h2 = norm2.forward(add(cross_attention(h1), h1));
    return norm3.forward(add(feed_forward.forward(h2), h2));
}

}  // namespace tinyformer
