#include "layers/encoder_layer.h"

#include "engine/ops.h"

namespace tinyformer {

AttentionOptions attention_options(const Padding& query_padding) {
    AttentionOptions options;
    options.query_padding = query_padding;
    return options;
}

void EncoderLayer::set_hooks(const Hooks* layer_hooks) {
    hooks = layer_hooks;
    self_attn.set_hooks(layer_hooks);
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
    const int64_t first = options.first_query.value_or(0);
    auto hook = [&](const char* point, Tensor& stream) { residual_hook(hooks, name, point, first, !cache, stream); };
    auto self_attention = [&](const Tensor& input) {
        return self_attn.forward_appending(input, keys_values, mask, options,
                                           attention_observer ? &*attention_observer : nullptr, first_positions)
            .output;
    };
    auto ffn = [&](const Tensor& input) {
        Tensor added = feed_forward.forward(input, ffn_observer ? &*ffn_observer : nullptr);
        hook(".ffn.output", added);
        return added;
    };
    Tensor output;
    if (norm_first) {
        Tensor h = add(self_attention(norm1.forward(x)), x);
        hook(".after_self_attn", h);
        output = add(ffn(norm2.forward(h)), h);
    } else {
        Tensor h = norm1.forward(add(self_attention(x), x));
        hook(".after_self_attn", h);
        output = norm2.forward(add(ffn(h), h));
    }
    hook(".output", output);
    if (observer && observer->wants_everything()) observer->record("output", output);
    return output;
}

}  // namespace tinyformer
