#include "models/attention_maps.h"

namespace tinyformer {

namespace {

std::vector<std::string> token_strings(const Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
    std::vector<std::string> tokens;
    for (int64_t id : ids) tokens.push_back(tokenizer.token(id));
    return tokens;
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

AttentionRun attention_maps(const Model& model, const std::string& text, const std::string& target, bool has_target) {
    const Tokenizer tokenizer(model.vocab);
    const std::vector<int64_t> input = model_input(model, tokenizer, text);
    std::vector<int64_t> continuation =
        has_target ? tokenizer.encode(target) : greedy_decode(model, {input}).tokens[0];
    AttentionRun run;
    run.output = tokenizer.decode(continuation);
    AttentionRecord record;
    std::vector<std::string> all_tokens;
    if (model.encoder_decoder) {
        std::vector<int64_t> decoder_input = {model.config.bos_id};
        decoder_input.insert(decoder_input.end(), continuation.begin(), continuation.end());
        if (static_cast<int64_t>(decoder_input.size()) > model.config.max_len)
            fail("attention: the target needs ", decoder_input.size(), " positions but max_len is ", model.config.max_len);
        const Tensor memory = model.encoder_decoder->encode(one_row(input), Padding(), &record);
        model.encoder_decoder->decode(one_row(decoder_input), memory, Padding(), Padding(), &record);
        run.source_tokens = token_strings(tokenizer, input);
        run.target_tokens = token_strings(tokenizer, decoder_input);
    } else {
        std::vector<int64_t> sequence = input;
        sequence.insert(sequence.end(), continuation.begin(), continuation.end());
        if (static_cast<int64_t>(sequence.size()) > model.config.max_len)
            fail("attention: the sequence needs ", sequence.size(), " positions but max_len is ", model.config.max_len);
        const bool prefix_lm = model.config.attention == SelfAttentionKind::PrefixLm;
        const std::vector<int64_t> prefix = {static_cast<int64_t>(input.size())};
        model.single_stack->forward(one_row(sequence), Padding(), prefix_lm ? prefix : std::vector<int64_t>{}, &record);
        run.source_tokens = token_strings(tokenizer, sequence);
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
