#include "models/forward.h"

#include <set>

namespace tinyformer {

namespace {

TokenIds read_ids(const SafetensorsFile& inputs, const std::string& name) {
    if (!inputs.contains(name)) fail(inputs.path(), ": missing input '", name, "' (I64 [B,T])");
    const IntTensor ids = inputs.read_int(name);
    if (ids.shape.size() != 2)
        fail(inputs.path(), ": input '", name, "' must be [B,T], got ", shape_string(ids.shape));
    if (ids.shape[0] < 1 || ids.shape[1] < 1)
        fail(inputs.path(), ": input '", name, "' is empty ", shape_string(ids.shape), "; need B >= 1 and T >= 1");
    return {ids.shape[0], ids.shape[1], ids.values};
}

Padding read_padding(const SafetensorsFile& inputs, const std::string& name, const TokenIds& ids) {
    if (!inputs.contains(name)) return Padding();
    const BoolTensor flags = inputs.read_bool(name);
    if (flags.shape != Shape{ids.batch, ids.length})
        fail(inputs.path(), ": input '", name, "' is ", shape_string(flags.shape), " but its ids are [", ids.batch,
             ",", ids.length, "]");
    return Padding::from_flags(flags);
}

void refuse_unknown_inputs(const SafetensorsFile& inputs, const std::set<std::string>& known) {
    for (const auto& [name, stored] : inputs.tensors())
        if (!known.count(name)) {
            std::string list;
            for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
            fail(inputs.path(), ": unknown input '", name, "'; this model takes ", list);
        }
}

}  // namespace

std::map<std::string, Tensor> run_forward(const Model& model, const SafetensorsFile& inputs, bool attention) {
    AttentionRecord record;
    AttentionRecord* wanted = attention ? &record : nullptr;
    std::map<std::string, Tensor> outputs;
    if (model.encoder_decoder) {
        refuse_unknown_inputs(inputs, {"src_ids", "tgt_ids", "src_key_padding_mask", "tgt_key_padding_mask"});
        const TokenIds source = read_ids(inputs, "src_ids");
        const TokenIds target = read_ids(inputs, "tgt_ids");
        if (source.batch != target.batch)
            fail(inputs.path(), ": src_ids has B=", source.batch, " but tgt_ids has B=", target.batch);
        const Padding source_padding = read_padding(inputs, "src_key_padding_mask", source);
        const Padding target_padding = read_padding(inputs, "tgt_key_padding_mask", target);
        const Tensor memory = model.encoder_decoder->encode(source, source_padding, wanted);
        outputs["logits"] = model.encoder_decoder->decode(target, memory, target_padding, source_padding, wanted);
    } else {
        const bool prefix_lm = model.config.attention == SelfAttentionKind::PrefixLm;
        if (prefix_lm)
            refuse_unknown_inputs(inputs, {"ids", "key_padding_mask", "prefix_len"});
        else
            refuse_unknown_inputs(inputs, {"ids", "key_padding_mask"});
        const TokenIds ids = read_ids(inputs, "ids");
        const Padding padding = read_padding(inputs, "key_padding_mask", ids);
        std::vector<int64_t> prefix_lengths;
        if (prefix_lm) {
            if (!inputs.contains("prefix_len"))
                fail(inputs.path(), ": missing input 'prefix_len' (I64 [B]) for a prefix_lm model");
            const IntTensor prefix = inputs.read_int("prefix_len");
            if (prefix.shape != Shape{ids.batch})
                fail(inputs.path(), ": input 'prefix_len' must be [", ids.batch, "], got ", shape_string(prefix.shape));
            prefix_lengths = prefix.values;
        }
        outputs["logits"] = model.single_stack->forward(ids, padding, prefix_lengths, wanted);
    }
    for (auto& [name, weights] : record) outputs[name] = std::move(weights);
    return outputs;
}

}  // namespace tinyformer
