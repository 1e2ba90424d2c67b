#include "layers/encoder_layer.h"

#include "engine/ops.h"

namespace tinyformer {

AttentionOptions attention_options(const Padding& query_padding, bool want_weights) {
    AttentionOptions options;
    options.query_padding = query_padding;
    options.want_weights = want_weights;
    return options;
}

Tensor EncoderLayer::forward(const Tensor& x, const Mask& mask, const Padding& padding, Tensor* weights,
                             KVCache* cache) const {
    const AttentionOptions options = attention_options(padding, weights != nullptr);
    KVCache whole_sequence;  // no cache: keys and values of x alone
    KVCache& keys_values = cache ? *cache : whole_sequence;
    auto self_attention = [&](const Tensor& input) {
        AttentionResult result = self_attn.forward_appending(input, keys_values, mask, options);
        if (weights) *weights = std::move(result.weights);
        return std::move(result.output);
    };
    if (norm_first) {
        const Tensor h = add(self_attention(norm1.forward(x)), x);
        return add(feed_forward.forward(norm2.forward(h)), h);
    }
    const Tensor h = norm1.forward(add(self_attention(x), x));
    return norm2.forward(add(feed_forward.forward(h), h));
}

}  // namespace tinyformer
