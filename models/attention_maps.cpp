#include "models/attention_maps.h"

namespace tinyformer {

namespace {

std::vector<std::string> labels(const std::vector<int64_t>& ids, const ModelText& text, bool input_side) {
    std::vector<std::string> tokens;
    for (int64_t id : ids) tokens.push_back(input_side ? text.input_label(id) : text.output_label(id));
    return tokens;
}

// The continuation: the target as given, or the greedy output when the model can generate.
std::vector<int64_t> continuation_of(const Model& model, const std::vector<int64_t>& input,
                                     const std::optional<std::vector<int64_t>>& target) {
    if (target) return *target;
    const ModelConfig& config = model.config;
    if (model.encoder_decoder) {
        if (config.bos_id < 0 || config.eos_id < 0)
            fail("attention: the model's config has no ", config.bos_id < 0 ? "bos_id" : "eos_id",
                 ", so it cannot generate a target; give the decoder's tokens with --target or --target-ids");
        return greedy_decode(model, {input}).tokens[0];
    }
    if (config.arch == Architecture::EncoderOnly || config.eos_id < 0) return {};  // the given tokens only
    return greedy_decode(model, {input}).tokens[0];
}

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

// "attention.decoder.1.cross" -> stack "decoder", layer 1, kind "cross".
AttentionMap describe(const std::string& name, Tensor weights) {
    const AttentionName parts = parse_attention_name(name);
    AttentionMap map;
    map.stack = parts.stack;
    map.layer = parts.layer;
    map.kind = parts.kind;
    map.weights = std::move(weights);
    return map;
}

}  // namespace

AttentionRun attention_maps(const Model& model, const std::vector<int64_t>& tokens,
                            const std::optional<std::vector<int64_t>>& target) {
    if (target && model.config.arch == Architecture::EncoderOnly)
        fail("attention: an encoder_only model has no target; it reads the input tokens only");
    const ModelText text(model);
    const std::vector<int64_t> input = model_input(model, tokens);
    const std::vector<int64_t> continuation = continuation_of(model, input, target);
    check_output_ids(model, continuation);
    AttentionRun run;
    run.output = text.decode_output(continuation);
    AttentionRecord record;
    if (model.encoder_decoder) {
        const std::vector<int64_t> decoder_tokens = decoder_input(model, continuation);
        const Tensor memory = model.encoder_decoder->encode(one_row(input), Padding(), &record);
        model.encoder_decoder->decode(one_row(decoder_tokens), memory, Padding(), Padding(), &record);
        run.source_tokens = labels(input, text, true);
        run.target_tokens = labels(decoder_tokens, text, false);
    } else {
        std::vector<int64_t> sequence = input;
        sequence.insert(sequence.end(), continuation.begin(), continuation.end());
        if (model.config.pos_encoding != PositionalEncoding::None &&
            static_cast<int64_t>(sequence.size()) > model.config.max_len)
            fail("attention: the sequence needs ", sequence.size(), " positions but max_len is ", model.config.max_len);
        const bool prefix_lm = model.config.attention == SelfAttentionKind::PrefixLm;
        const std::vector<int64_t> prefix = {static_cast<int64_t>(input.size())};
        model.single_stack->forward(one_row(sequence), Padding(), prefix_lm ? prefix : std::vector<int64_t>{}, &record);
        run.source_tokens = labels(sequence, text, true);
    }
    for (auto& [name, weights] : record) {
        AttentionMap map = describe(name, std::move(weights));
        const int64_t L = map.weights.dim(2);
        if (map.stack == "encoder") {
            map.query_tokens = map.key_tokens = run.source_tokens;
            map.mask_name = "none (bidirectional)";
        } else if (map.stack == "decoder" && map.kind == "self") {
            map.query_tokens = map.key_tokens = run.target_tokens;
            map.mask = Mask::causal(L);
            map.mask_name = "causal";
        } else if (map.stack == "decoder") {
            map.query_tokens = run.target_tokens;
            map.key_tokens = run.source_tokens;
            map.mask_name = "none (every source token)";
        } else {
            map.query_tokens = map.key_tokens = run.source_tokens;
            switch (model.config.attention) {
                case SelfAttentionKind::Causal:
                    map.mask = Mask::causal(L);
                    map.mask_name = "causal";
                    break;
                case SelfAttentionKind::PrefixLm:
                    map.mask = Mask::prefix_lm({static_cast<int64_t>(input.size())}, L);
                    map.mask_name = "prefix-LM (prefix " + std::to_string(input.size()) + ")";
                    break;
                case SelfAttentionKind::Bidirectional: map.mask_name = "none (bidirectional)"; break;
            }
        }
        run.maps.push_back(std::move(map));
    }
    return run;
}

}  // namespace tinyformer
