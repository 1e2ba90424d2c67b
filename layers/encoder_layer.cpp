#include "layers/encoder_layer.h"

#include "engine/ops.h"

namespace tinyformer {

AttentionOptions attention_options(const Padding& query_padding) {
    AttentionOptions options;
    options.query_padding = query_padding;
    return options;
}

Tensor EncoderLayer::forward(const Tensor& x, const Mask& mask, const Padding& padding, Observer* observer,
                             KVCache* cache, const std::vector<int64_t>& first_positions) const {
    if (observer && observer->wants_everything()) observer->record("input", x);
    auto attention_observer = observe_part(observer, "self_attn.");
    auto ffn_observer = observe_part(observer, "ffn.");
    KVCache whole_sequence;  // no cache: keys and values of x alone
    KVCache& keys_values = cache ? *cache : whole_sequence;
    AttentionOptions options = attention_options(padding);
    if (cache) options.first_query = cache->length();  // a KV-cache step: the new queries' first slot
    auto self_attention = [&](const Tensor& input) {
        return self_attn.forward_appending(input, keys_values, mask, options,
                                           attention_observer ? &*attention_observer : nullptr, first_positions)
            .output;
    };
    auto ffn = [&](const Tensor& input) { return feed_forward.forward(input, ffn_observer ? &*ffn_observer : nullptr); };
    Tensor output;
    if (norm_first) {
        const Tensor h = add(self_attention(norm1.forward(x)), x);
        output = add(ffn(norm2.forward(h)), h);
    } else {
        const Tensor h = norm1.forward(add(self_attention(x), x));
        output = norm2.forward(add(ffn(h), h));
    }
    if (observer && observer->wants_everything()) observer->record("output", output);
    return output;
}

}  // namespace tinyformer
