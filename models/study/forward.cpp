#include "models/study/forward.h"

#include <set>

namespace tinyformer {

namespace {

// Token ids [B,T], checked against the model here so that the message can
// name the file and the input: ids in 0..vocabulary-1, and T <= max_len
// when there is a positional table to index.
TokenIds read_ids(const SafetensorsFile& inputs, const std::string& name, int64_t vocabulary,
                  const ModelConfig& config) {
    if (!inputs.contains(name)) fail(inputs.path(), ": missing input '", name, "' (I64 [B,T])");
    const Shape& shape = inputs.info(name).shape;  // checked before the values are read (and widened)
    if (shape.size() != 2) fail(inputs.path(), ": input '", name, "' must be [B,T], got ", shape_string(shape));
    if (shape[0] < 1 || shape[1] < 1)
        fail(inputs.path(), ": input '", name, "' is empty ", shape_string(shape), "; need B >= 1 and T >= 1");
    if (config.pos_encoding != PositionalEncoding::None && shape[1] > config.max_len)
        fail(inputs.path(), ": input '", name, "' ", shape_string(shape), " has length ", shape[1],
             " but the model's max_len is ", config.max_len);
    IntTensor ids = inputs.read_int(name);
    const TokenIds result{shape[0], shape[1], std::move(ids.values)};
    for (int64_t b = 0; b < result.batch; ++b)
        for (int64_t t = 0; t < result.length; ++t)
            if (result.at(b, t) < 0 || result.at(b, t) >= vocabulary)
                fail(inputs.path(), ": input '", name, "' holds token id ", result.at(b, t), " at [", b, ",", t,
                     "], outside the vocabulary 0..", vocabulary - 1);
    return result;
}

Padding read_padding(const SafetensorsFile& inputs, const std::string& name, const TokenIds& ids) {
    if (!inputs.contains(name)) return Padding();
    const BoolTensor flags = inputs.read_bool(name);
    if (flags.shape != Shape{ids.batch, ids.length})
        fail(inputs.path(), ": input '", name, "' is ", shape_string(flags.shape), " but its ids are [", ids.batch,
             ",", ids.length, "]");
    return Padding::from_flags(flags);
}

// A batch row whose source is all padding leaves its target queries no key
// in cross-attention (softmax has no distribution). Refused here, by name,
// unless every target query of that row is padding too (then its output is 0),
// or the model has a mask_value (then those queries weigh every padded key alike).
void refuse_queries_without_memory(const std::string& path, const Padding& source, const Padding& target,
                                   const TokenIds& target_ids) {
    if (source.empty()) return;
    for (int64_t b = 0; b < source.batch(); ++b) {
        bool all_padding = true;
        for (int64_t s = 0; s < source.length() && all_padding; ++s) all_padding = source.is_padding(b, s);
        if (!all_padding) continue;
        for (int64_t t = 0; t < target_ids.length; ++t)
            if (target.empty() || !target.is_padding(b, t))
                fail(path, ": input 'src_key_padding_mask' marks every source position of batch ", b,
                     " as padding, so cross-attention query ", t, " of batch ", b,
                     " may attend no key; keep at least one source position or mark that target row as padding "
                     "in 'tgt_key_padding_mask'");
    }
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

Tensor forward_pass(const Model& model, const SafetensorsFile& inputs, Observer* observer) {
    if (model.encoder_decoder) {
        refuse_unknown_inputs(inputs, {"src_ids", "tgt_ids", "src_key_padding_mask", "tgt_key_padding_mask"});
        const TokenIds source = read_ids(inputs, "src_ids", model.config.src_vocab_size, model.config);
        const TokenIds target = read_ids(inputs, "tgt_ids", model.config.tgt_vocab_size, model.config);
        if (source.batch != target.batch)
            fail(inputs.path(), ": src_ids has B=", source.batch, " but tgt_ids has B=", target.batch);
        const Padding source_padding = read_padding(inputs, "src_key_padding_mask", source);
        const Padding target_padding = read_padding(inputs, "tgt_key_padding_mask", target);
        // With a mask_value, such a query has uniform weights over the padded memory instead (engine/attention.h).
        if (!model.config.mask_value) refuse_queries_without_memory(inputs.path(), source_padding, target_padding, target);
        const Tensor memory = model.encoder_decoder->encode(source, source_padding, observer);
        return model.encoder_decoder->decode(target, memory, target_padding, source_padding, observer);
    }
    {
        const bool prefix_lm = model.config.attention == SelfAttentionKind::PrefixLm;
        if (prefix_lm)
            refuse_unknown_inputs(inputs, {"ids", "key_padding_mask", "prefix_len"});
        else
            refuse_unknown_inputs(inputs, {"ids", "key_padding_mask"});
        const TokenIds ids = read_ids(inputs, "ids", model.config.vocab_size, model.config);
        const Padding padding = read_padding(inputs, "key_padding_mask", ids);
        std::vector<int64_t> prefix_lengths;
        if (prefix_lm) {
            if (!inputs.contains("prefix_len"))
                fail(inputs.path(), ": missing input 'prefix_len' (I64 [B]) for a prefix_lm model");
            const IntTensor prefix = inputs.read_int("prefix_len");
            if (prefix.shape != Shape{ids.batch})
                fail(inputs.path(), ": input 'prefix_len' must be [", ids.batch, "], got ", shape_string(prefix.shape));
            for (size_t b = 0; b < prefix.values.size(); ++b)
                if (prefix.values[b] < 0 || prefix.values[b] > ids.length)
                    fail(inputs.path(), ": input 'prefix_len' holds ", prefix.values[b], " at [", b,
                         "], outside 0..T = 0..", ids.length);
            prefix_lengths = prefix.values;
        }
        return model.single_stack->forward(ids, padding, prefix_lengths, observer);
    }
}

std::map<std::string, Tensor> run_forward(const Model& model, const SafetensorsFile& inputs, bool attention) {
    Trace trace(Trace::Detail::Weights);
    std::map<std::string, Tensor> outputs;
    outputs["logits"] = forward_pass(model, inputs, attention ? &trace : nullptr);
    if (attention)  // each call's weights under their name in the trace (docs/FORMAT.md section 2)
        for (const std::string& call : model.attention_names()) outputs[call + ".weights"] = trace.tensor(call + ".weights");
    return outputs;
}

}  // namespace tinyformer
