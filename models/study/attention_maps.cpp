#include "models/study/attention_maps.h"

#include "models/mask_policy.h"

#include <algorithm>
#include <numeric>

namespace tinyformer {

namespace {

std::vector<std::string> labels(const std::vector<int64_t>& ids, const ModelText& text, bool input_side) {
    std::vector<std::string> tokens;
    for (int64_t id : ids) tokens.push_back(input_side ? text.input_label(id) : text.output_label(id));
    return tokens;
}

// The map of one call, from its name and place (models/transformer.h).
AttentionMap describe(const NamedAttentionCall& call, Tensor weights) {
    AttentionMap map;
    map.stack = call.stack;
    map.layer = call.layer;
    map.kind = call.kind;
    map.name = call.name;
    map.weights = std::move(weights);
    return map;
}

}  // namespace

AttentionRun attention_maps(const Model& model, const std::vector<int64_t>& tokens,
                            const std::optional<std::vector<int64_t>>& target, Trace::Detail detail) {
    if (target && model.config.arch == Architecture::EncoderOnly)
        fail("attention: an encoder_only model has no target; it reads the input tokens only");
    const ModelText text(model);
    const std::vector<int64_t> input = model_input(model, tokens);
    const std::vector<int64_t> continuation = target_or_greedy(model, input, target);
    AttentionRun run;
    run.target = continuation;
    run.output = text.decode_output(continuation);
    run.trace = Trace(detail);
    run.pass = teacher_forced_pass(model, input, continuation, &run.trace);
    if (model.encoder_decoder) {
        run.source_tokens = labels(run.pass.input, text, true);
        run.target_tokens = labels(run.pass.decoder, text, false);
    } else {
        run.source_tokens = labels(run.pass.decoder, text, true);
    }
    for (const NamedAttentionCall& call : model.attention_calls()) {  // in the order they run
        AttentionMap map = describe(call, run.trace.tensor(call.name + ".weights"));
        const int64_t L = map.weights.dim(2);
        // Each map's mask is the one the pass used (models/mask_policy.h): one row, no padding.
        MaskInputs inputs;
        inputs.length = L;
        inputs.source_length = map.weights.dim(3);
        if (model.single_stack) inputs.relative_bias = model.single_stack->relative_bias_table();
        if (model.config.attention == SelfAttentionKind::PrefixLm && !model.encoder_decoder)
            inputs.prefix_lengths = {static_cast<int64_t>(input.size())};
        if (map.stack == "encoder") {
            map.query_tokens = map.key_tokens = run.source_tokens;
            map.mask = attention_mask(model.config, AttentionCall::EncoderSelf, inputs);
            map.mask_name = "none (bidirectional)";
        } else if (map.stack == "decoder" && map.kind == "self") {
            map.query_tokens = map.key_tokens = run.target_tokens;
            map.mask = attention_mask(model.config, AttentionCall::DecoderSelf, inputs);
            map.mask_name = "causal";
        } else if (map.stack == "decoder") {
            map.query_tokens = run.target_tokens;
            map.key_tokens = run.source_tokens;
            map.mask = attention_mask(model.config, AttentionCall::Cross, inputs);
            map.mask_name = "none (every source token)";
        } else {
            map.query_tokens = map.key_tokens = run.source_tokens;
            map.mask = attention_mask(model.config, AttentionCall::Self, inputs);
            switch (model.config.attention) {
                case SelfAttentionKind::Causal:
                    map.mask_name = model.config.sliding_window > 0
                                        ? "causal, sliding window " + std::to_string(model.config.sliding_window)
                                        : "causal";
                    break;
                case SelfAttentionKind::PrefixLm:
                    map.mask_name = "prefix-LM (prefix " + std::to_string(input.size()) + ")";
                    map.prefix = static_cast<int64_t>(input.size());
                    break;
                case SelfAttentionKind::Bidirectional: map.mask_name = "none (bidirectional)"; break;
            }
        }
        run.maps.push_back(std::move(map));
    }
    return run;
}

CrossAlignment cross_alignment(const AttentionRun& run, int64_t layer) {
    const AttentionMap* cross = nullptr;
    int64_t layers = 0;
    for (const AttentionMap& map : run.maps)
        if (map.stack == "decoder" && map.kind == "cross") {
            ++layers;
            if (map.layer == layer) cross = &map;
        }
    if (layers == 0) fail("cross_alignment: the model has no cross-attention (it is not encoder-decoder)");
    if (!cross) fail("cross_alignment: decoder layer ", layer, " does not exist (the decoder has layers 0..", layers - 1, ")");
    const int64_t H = cross->weights.dim(1), L = cross->weights.dim(2), S = cross->weights.dim(3);
    CrossAlignment alignment;
    alignment.layer = layer;
    alignment.source_tokens = cross->key_tokens;
    for (int64_t l = 0; l < L; ++l) {
        OutputAlignment row;
        row.query_token = cross->query_tokens[static_cast<size_t>(l)];
        // Row l predicts the token the decoder reads at row l + 1, and the last row <eos>.
        row.output_token = l + 1 < L ? cross->query_tokens[static_cast<size_t>(l + 1)] : "<eos>";
        row.weights.assign(static_cast<size_t>(S), 0.0f);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t s = 0; s < S; ++s)
                row.weights[static_cast<size_t>(s)] += cross->weights.at({0, h, l, s}) / static_cast<float>(H);
        row.by_weight.resize(static_cast<size_t>(S));
        std::iota(row.by_weight.begin(), row.by_weight.end(), 0);
        std::stable_sort(row.by_weight.begin(), row.by_weight.end(), [&](int64_t a, int64_t b) {
            return row.weights[static_cast<size_t>(a)] > row.weights[static_cast<size_t>(b)];
        });
        alignment.rows.push_back(std::move(row));
    }
    return alignment;
}

}  // namespace tinyformer
