#include "models/study/probe.h"

#include "models/study/interventions.h"
#include "models/study/trace.h"

#include <algorithm>
#include <map>

namespace tinyformer {

namespace {

// Error for a model the probe cannot score.
void check_probe_model(const Model& model) {
    if (model.config.arch == Architecture::EncoderOnly)
        fail("probe: an encoder_only model produces no output sequence to score");
    if (model.config.bos_id < 0 || model.config.eos_id < 0) fail("probe: the model's config needs bos_id and eos_id");
}

int64_t prompt_length(const Model& model, const ProbeExample& example) {
    return model.encoder_decoder ? 0 : static_cast<int64_t>(example.input.size());
}

// log p of target + <eos> (see probe.h) from the one teacher-forced pass
// (models/study/teacher_forcing.h), which hands its intermediates to `observer`.
double scored_pass(const Model& model, const ProbeExample& example, Observer* observer) {
    std::vector<int64_t> labels = example.target;  // what the scored positions predict
    labels.push_back(model.config.eos_id);
    const TeacherForced pass = teacher_forced_pass(model, example.input, example.target, observer);
    const int64_t V = pass.logits.dim(2);
    double log_prob = 0.0;
    for (size_t t = 0; t < labels.size(); ++t)
        log_prob += log_softmax(pass.logits.data() + (pass.first_prediction + static_cast<int64_t>(t)) * V,
                                V)[static_cast<size_t>(labels[t])];
    return log_prob;
}

// Zeroed heads for as long as it lives, on top of the model's hooks (any
// heads those zero stay zeroed); the model's hooks come back after.
class ZeroedHeads {
public:
    ZeroedHeads(Model& model, const std::vector<HeadRef>& heads)
        : hooks_({}, checked_heads(model, heads), model.hooks()), scope_(model, &hooks_) {}

private:
    // The heads by call name (the hooks' names), each name and head checked.
    static std::map<std::string, std::vector<int64_t>> checked_heads(Model& model, const std::vector<HeadRef>& heads) {
        std::map<std::string, std::vector<int64_t>> by_call;
        for (const HeadRef& ref : heads) by_call[ref.attention].push_back(ref.head);
        for (const auto& [call, indices] : by_call) {
            const MultiHeadAttention& module = model.attention_module(call);  // Error listing the names if unknown
            for (int64_t head : indices)
                if (head < 0 || head >= module.heads())
                    fail("probe: ", call, " has heads 0..", module.heads() - 1, "; cannot zero head ", head);
        }
        return by_call;
    }

    InterventionHooks hooks_;
    HookScope scope_;
};

std::vector<int64_t> greedy_output(const Model& model, const std::vector<int64_t>& input) {
    return greedy_decode(model, {input}).tokens[0];
}

// The first query whose row enters the statistics of probe.h.
int64_t first_query(const HeadProbe& probe, const Model& model, const ProbeExample& example) {
    return probe.stack == "layers" ? prompt_length(model, example) - 1 : 0;
}

// Mean max weight and top key of head h of weights [1, H, L, S], over queries first..L-1.
void head_statistics(HeadProbe& probe, const Tensor& weights, int64_t first, const std::vector<std::string>& keys) {
    const ConstMatrixView matrix = weights.matrix(probe.head);  // [L, S]
    std::vector<double> column_sums(static_cast<size_t>(matrix.cols), 0.0);
    double max_sum = 0.0;
    for (int64_t q = first; q < matrix.rows; ++q) {
        double row_max = 0.0;
        for (int64_t s = 0; s < matrix.cols; ++s) {
            row_max = std::max(row_max, static_cast<double>(matrix(q, s)));
            column_sums[static_cast<size_t>(s)] += matrix(q, s);
        }
        max_sum += row_max;
    }
    const auto queries = static_cast<double>(matrix.rows - first);
    probe.mean_max_weight = max_sum / queries;
    int64_t top = 0;
    for (int64_t s = 1; s < matrix.cols; ++s)
        if (column_sums[static_cast<size_t>(s)] > column_sums[static_cast<size_t>(top)]) top = s;
    probe.top_key_position = top;
    probe.top_key = keys[static_cast<size_t>(top)];
    probe.top_key_share = column_sums[static_cast<size_t>(top)] / queries;
}

}  // namespace

ProbeExample probe_example(const Model& model, const std::vector<int64_t>& tokens,
                           const std::optional<std::vector<int64_t>>& target) {
    check_probe_model(model);
    ProbeExample example;
    example.input = model_input(model, tokens);
    if (!target) refuse_inputs_without_room(model, {example.input});  // before any pass
    refuse_teacher_forced_beyond_memory(model, example.input, target ? static_cast<int64_t>(target->size()) : 0);
    example.target = target ? *target : greedy_output(model, example.input);
    check_output_ids(model, example.target);
    const auto input = static_cast<int64_t>(example.input.size()), output = static_cast<int64_t>(example.target.size());
    const int64_t max_len = model.config.max_len;
    if (model.encoder_decoder && (input > max_len || output + 1 > max_len))
        fail("probe: the source has ", input, " tokens and the decoder reads ", output + 1,
             " (<bos> + target), but max_len is ", max_len);
    if (!model.encoder_decoder && input + output > max_len)
        fail("probe: the sequence needs ", input + output, " positions (<bos> + prompt + target) but max_len is ",
             max_len);
    return example;
}

double target_log_prob(const Model& model, const ProbeExample& example) { return scored_pass(model, example, nullptr); }

AblationResult ablate_heads(Model& model, const ProbeExample& example, const std::vector<HeadRef>& heads) {
    const double base = target_log_prob(model, example);
    const ZeroedHeads zeroed(model, heads);
    AblationResult result;
    result.log_prob = target_log_prob(model, example);
    result.delta_log_prob = result.log_prob - base;
    result.greedy = greedy_output(model, example.input);
    return result;
}

ProbeReport probe(Model& model, const std::vector<int64_t>& tokens, const ProbeOptions& options) {
    check_probe_model(model);
    const ModelText text(model);
    int64_t replacement = 0;
    if (options.replacement_id) {
        replacement = *options.replacement_id;
        model_input(model, {replacement});  // Error when outside the input vocabulary
    } else {
        const std::vector<std::string>& vocab = model.text.input_vocab();
        auto found = std::find(vocab.begin(), vocab.end(), options.replacement);
        if (found == vocab.end())
            fail("probe: the replacement token '", options.replacement, "' is not in the model's vocabulary",
                 vocab.empty() ? " (it has none: give the replacement as an id)" : "");
        replacement = found - vocab.begin();
    }
    const ProbeExample example = probe_example(model, tokens, options.target);
    const std::vector<int64_t> greedy = options.target ? greedy_output(model, example.input) : example.target;
    const int64_t first_position = model.encoder_decoder ? 0 : 1;  // decoder-only: <bos> stays

    ProbeReport report;
    std::vector<std::string> source, decoder, sequence;  // labels of the keys: the source, <bos> + target, or both
    for (int64_t id : example.input) source.push_back(text.input_label(id));
    report.text = text.decode_input({example.input.begin() + first_position, example.input.end()});
    report.target = text.decode_output(example.target);
    report.greedy_output = text.decode_output(greedy);
    report.target_given = options.target.has_value();
    report.replacement = text.input_label(replacement);
    report.scored_tokens = static_cast<int64_t>(example.target.size()) + 1;
    // Recording takes the materialized attention path; the scores compared
    // below all take the same (streaming) path, so that no-op deltas are 0.
    report.log_prob = target_log_prob(model, example);
    Trace trace(Trace::Detail::Weights);
    scored_pass(model, example, &trace);

    decoder.push_back(text.output_label(model.config.bos_id));
    for (int64_t id : example.target) decoder.push_back(text.output_label(id));
    sequence = source;
    sequence.insert(sequence.end(), decoder.begin() + 1, decoder.end());

    for (const NamedAttentionCall& call : model.attention_calls()) {
        const std::string& name = call.name;
        const Tensor& weights = trace.tensor(name + ".weights");  // [1, H, L, S]
        for (int64_t h = 0; h < weights.dim(1); ++h) {
            HeadProbe head;
            head.attention = name;
            head.stack = call.stack;
            head.layer = call.layer;
            head.kind = call.kind;
            head.head = h;
            const std::vector<std::string>& keys =
                head.stack == "layers" ? sequence : (head.stack == "encoder" || head.kind == "cross") ? source : decoder;
            head_statistics(head, weights, first_query(head, model, example), keys);
            const AblationResult ablation = ablate_heads(model, example, {{name, h}});
            head.delta_log_prob = ablation.delta_log_prob;
            head.greedy_output = text.decode_output(ablation.greedy);
            head.output_changed = ablation.greedy != greedy;
            report.heads.push_back(std::move(head));
        }
    }

    // Each input token's share of the weight (see probe.h), then its perturbation.
    report.share_source = model.encoder_decoder ? "cross-attention" : "self-attention";
    const int64_t first = model.encoder_decoder ? 0 : prompt_length(model, example) - 1;
    std::vector<double> shares(example.input.size(), 0.0);
    int64_t rows = 0;  // layers x heads x scored queries
    for (const auto& [name, weights] : trace.tensors()) {  // every call's "<call>.weights", in name order
        if (!name.ends_with(model.encoder_decoder ? ".cross_attn.weights" : ".weights")) continue;
        const int64_t H = weights.dim(1), L = weights.dim(2);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t q = first; q < L; ++q) {
                for (size_t s = 0; s < shares.size(); ++s) shares[s] += weights.matrix(h)(q, static_cast<int64_t>(s));
                ++rows;
            }
    }
    const double base = report.log_prob;
    for (int64_t position = first_position; position < static_cast<int64_t>(example.input.size()); ++position) {
        TokenProbe token;
        token.position = position;
        token.token = source[static_cast<size_t>(position)];
        token.attention_share = shares[static_cast<size_t>(position)] / static_cast<double>(rows);
        ProbeExample perturbed = example;
        perturbed.input[static_cast<size_t>(position)] = replacement;
        token.delta_log_prob = target_log_prob(model, perturbed) - base;
        const std::vector<int64_t> output = greedy_output(model, perturbed.input);
        token.greedy_output = text.decode_output(output);
        token.output_changed = output != greedy;
        report.tokens.push_back(std::move(token));
    }
    return report;
}

}  // namespace tinyformer
