#include "layers/decoder_layer.h"

#include "engine/ops.h"
#include "layers/encoder_layer.h"

namespace tinyformer {

void DecoderLayer::set_hooks(const Hooks* layer_hooks) {
    hooks = layer_hooks;
    self_attn.set_hooks(layer_hooks);
    multihead_attn.set_hooks(layer_hooks);
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Mask& self_mask, const Mask& cross_mask,
                             const Padding& target_padding, Observer* observer, DecoderLayerCache* cache) const {
    if (observer && observer->wants_everything()) observer->record("input", x);
    auto self_observer = observe_part(observer, "self_attn.");
    auto cross_observer = observe_part(observer, "cross_attn.");
    auto ffn_observer = observe_part(observer, "ffn.");
    DecoderLayerCache whole_sequence;  // no cache: keys and values of x and memory alone
    DecoderLayerCache& keys_values = cache ? *cache : whole_sequence;
    // A KV-cache step: the new queries' first slot (the self cache's length
    // before they are appended), for both calls' hooks.
    AttentionOptions options = attention_options(target_padding);
    if (cache) options.first_query = cache->self.length();
    const int64_t first = options.first_query.value_or(0);
    auto hook = [&](const char* point, Tensor& stream) { residual_hook(hooks, name, point, first, !cache, stream); };
    auto self_attention = [&](const Tensor& input) {
        return self_attn.forward_appending(input, keys_values.self, self_mask, options,
                                           self_observer ? &*self_observer : nullptr).output;
    };
    auto cross_attention = [&](const Tensor& input) {
        return multihead_attn.forward_fixed(input, memory, keys_values.cross, cross_mask, options,
                                            cross_observer ? &*cross_observer : nullptr).output;
    };
    auto ffn = [&](const Tensor& input) {
        Tensor added = feed_forward.forward(input, ffn_observer ? &*ffn_observer : nullptr);
        hook(".ffn.output", added);
        return added;
    };
    Tensor output;
    if (norm_first) {
        Tensor h1 = add(self_attention(norm1.forward(x)), x);
        hook(".after_self_attn", h1);
        Tensor h2 = add(cross_attention(norm2.forward(h1)), h1);
        hook(".after_cross_attn", h2);
        output = add(ffn(norm3.forward(h2)), h2);
    } else {
        Tensor h1 = norm1.forward(add(self_attention(x), x));
        hook(".after_self_attn", h1);
        Tensor h2 = norm2.forward(add(cross_attention(h1), h1));
        hook(".after_cross_attn", h2);
        output = norm3.forward(add(ffn(h2), h2));
    }
    hook(".output", output);
    if (observer && observer->wants_everything()) observer->record("output", output);
    return output;
}

}  // namespace tinyformer
