#include "models/study/patching.h"

#include "models/decoding.h"
#include "models/study/teacher_forcing.h"
#include "models/text.h"

#include "engine/attention.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tinyformer {

PatchWhat parse_patch_what(const std::string& name) {
    if (name == "resid") return PatchWhat::Resid;
    if (name == "attn_out") return PatchWhat::AttnOut;
    if (name == "mlp_out") return PatchWhat::MlpOut;
    if (name == "head") return PatchWhat::Head;
    fail("patch: --what must be resid, attn_out, mlp_out or head, got '", name, "'");
}

const char* patch_what_name(PatchWhat what) {
    switch (what) {
        case PatchWhat::Resid: return "resid";
        case PatchWhat::AttnOut: return "attn_out";
        case PatchWhat::MlpOut: return "mlp_out";
        case PatchWhat::Head: return "head";
    }
    return "";
}

std::vector<PatchRow> patch_rows(const Model& model, PatchWhat what) {
    std::vector<PatchRow> rows;
    const ModelConfig& c = model.config;
    const auto add_point = [&](const std::string& point, bool source) { rows.push_back({point, point, -1, source}); };
    const auto add_stack = [&](const std::string& stack, int64_t layers, bool source) {
        for (int64_t i = 0; i < layers; ++i) {
            const std::string layer = stack + "." + std::to_string(i);
            switch (what) {
                case PatchWhat::Resid: add_point(layer + ".output", source); break;
                case PatchWhat::AttnOut:
                    add_point(layer + ".self_attn.output", source);
                    if (stack == "decoder") add_point(layer + ".cross_attn.output", source);
                    break;
                case PatchWhat::MlpOut: add_point(layer + ".ffn.output", source); break;
                case PatchWhat::Head: break;
            }
        }
    };
    if (what == PatchWhat::Head) {  // every call in the order it runs, its heads in order
        for (const NamedAttentionCall& call : model.attention_calls())
            for (int64_t h = 0; h < c.nhead; ++h)
                rows.push_back({call.name + ".h" + std::to_string(h), call.name, h, call.stack == "encoder"});
        return rows;
    }
    if (model.encoder_decoder) {
        if (what == PatchWhat::Resid) add_point("src_embed.output", true);
        add_stack("encoder", c.num_encoder_layers, true);
        if (what == PatchWhat::Resid) add_point("tgt_embed.output", false);
        add_stack("decoder", c.num_decoder_layers, false);
    } else {
        if (what == PatchWhat::Resid) add_point("embed.output", false);
        add_stack("layers", c.num_layers, false);
    }
    return rows;
}

namespace {

// Records every activation of a pass, and replaces one site's rows by a
// recorded run's. Whole passes only: a patched run is one teacher-forced pass.
class PatchHooks final : public Hooks {
public:
    PatchHooks(const Activations* source, const PatchSite* site, Activations* record)
        : source_(source), site_(site), record_(record) {}

    void residual(const ResidualPoint& point, Tensor& x) const override {
        if (site_ && site_->head < 0 && point.name == site_->point) {
            const auto found = source_->residual.find(point.name);
            if (found == source_->residual.end()) fail("patch: the clean run has no activation at ", point.name);
            copy_rows(found->second, x, point.name, 0, x.dim(2));
        }
        if (record_) record_->residual[point.name] = x;  // after the patch: what flows on
    }

    void attention_heads(const AttentionCallInfo& call, Tensor& z) const override {
        if (site_ && site_->head >= 0 && call.name == site_->point) {
            const auto found = source_->heads.find(call.name);
            if (found == source_->heads.end()) fail("patch: the clean run has no z at ", call.name);
            if (site_->head >= call.heads) fail("patch: ", call.name, " has heads 0..", call.heads - 1, ", not ", site_->head);
            const int64_t Dh = z.dim(2) / call.heads;  // head h's columns of Concat(heads) (merge_heads)
            copy_rows(found->second, z, call.name, site_->head * Dh, Dh);
        }
        if (record_) record_->heads[call.name] = z;
    }

private:
    // Columns [column, column + width) of each patched row of batch row 0.
    void copy_rows(const Tensor& from, Tensor& to, const std::string& name, int64_t column, int64_t width) const {
        if (from.shape() != to.shape())
            fail("patch: at ", name, " the clean activation is ", shape_string(from.shape()), " but this run's is ",
                 shape_string(to.shape()));
        const int64_t L = to.dim(1), D = to.dim(2);
        for (int64_t position : site_->positions) {
            if (position < 0 || position >= L)
                fail("patch: position ", position, " is outside ", name, "'s ", L, " positions");
            const float* row = from.data() + position * D + column;
            std::copy(row, row + width, to.data() + position * D + column);
        }
    }

    const Activations* source_;
    const PatchSite* site_;
    Activations* record_;
};

int64_t argmax_row(const Tensor& logits, int64_t row) {
    const int64_t V = logits.dim(2);
    const float* values = logits.data() + row * V;
    return std::max_element(values, values + V) - values;
}

}  // namespace

Tensor patched_pass(Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target,
                    const Activations* source, const PatchSite* site, Activations* record) {
    if (site && !source) fail("patched_pass: a site to patch needs the activations to patch it from");
    const PatchHooks hooks(source, site, record);
    const HookScope scope(model, &hooks);
    return teacher_forced_pass(model, input, target).logits;
}

double answer_logit_diff(const PatchReport& report, const Tensor& logits) {
    const int64_t V = logits.dim(2);
    const float* row = logits.data() + report.answer_row * V;
    return static_cast<double>(row[report.clean.answer]) - static_cast<double>(row[report.corrupted.answer]);
}

double patch_effect(const PatchReport& report, double patched_logit_diff) {
    return (patched_logit_diff - report.corrupted.logit_diff) / (report.clean.logit_diff - report.corrupted.logit_diff);
}

PatchExperiment prepare_patching(Model& model, const std::vector<int64_t>& clean_tokens,
                                 const std::vector<int64_t>& corrupted_tokens,
                                 const std::optional<std::vector<int64_t>>& target, PatchWhat what) {
    if (model.config.arch == Architecture::EncoderOnly)
        fail("patch: an encoder_only model predicts no next token to patch an answer into");
    if (clean_tokens.size() != corrupted_tokens.size())
        fail("patch: CLEAN has ", clean_tokens.size(), " tokens and CORRUPTED has ", corrupted_tokens.size(),
             "; patching replaces one position by the same position, so both need the same length");
    PatchExperiment experiment;
    PatchReport& report = experiment.report;
    report.what = what;
    report.clean.input = model_input(model, clean_tokens);
    report.corrupted.input = model_input(model, corrupted_tokens);
    // The framing adds the prompt suffix only where it is missing, so "abc=" and "abcd"
    // differ once framed: every row and patch below needs the framed lengths equal.
    if (report.clean.input.size() != report.corrupted.input.size())
        fail("patch: as the model reads them (<bos> and the prompt suffix added where missing), CLEAN has ",
             report.clean.input.size(), " tokens and CORRUPTED has ", report.corrupted.input.size(),
             "; give both with the prompt suffix or both without");
    if (target) {
        report.target = *target;
        refuse_teacher_forced_beyond_memory(model, report.clean.input, static_cast<int64_t>(target->size()));
    } else if (model.encoder_decoder) {
        report.target = target_or_greedy(model, report.clean.input, std::nullopt);
    } else {  // decoder-only: the answer is the next token after the input
        refuse_teacher_forced_beyond_memory(model, report.clean.input, 0);
    }
    if (model.encoder_decoder && model.config.bos_id >= 0 && model.config.eos_id >= 0) {  // shown beside the answer: what each input makes the model say
        report.clean.greedy = target ? target_or_greedy(model, report.clean.input, std::nullopt) : report.target;
        report.corrupted.greedy = target_or_greedy(model, report.corrupted.input, std::nullopt);
    }

    experiment.clean_logits = patched_pass(model, report.clean.input, report.target, nullptr, nullptr, &experiment.clean);
    experiment.corrupted_logits = patched_pass(model, report.corrupted.input, report.target, nullptr, nullptr, nullptr);
    const Tensor& clean_logits = experiment.clean_logits;
    const Tensor& corrupted_logits = experiment.corrupted_logits;
    const int64_t first = model.encoder_decoder ? 0 : static_cast<int64_t>(report.clean.input.size()) - 1;
    int64_t row = first;
    while (row < clean_logits.dim(1) && argmax_row(clean_logits, row) == argmax_row(corrupted_logits, row)) ++row;
    if (row == clean_logits.dim(1))
        fail("patch: the clean and the corrupted input give the same answer at every predicted position, so "
             "LD_clean == LD_corrupted and there is nothing to restore; choose a corruption that changes the output");
    report.answer_row = row;
    report.clean.answer = argmax_row(clean_logits, row);
    report.corrupted.answer = argmax_row(corrupted_logits, row);
    report.clean.logit_diff = answer_logit_diff(report, clean_logits);
    report.corrupted.logit_diff = answer_logit_diff(report, corrupted_logits);
    // The two answers differ and each is its run's FIRST largest logit, so with finite logits
    // LD_clean > LD_corrupted always: if the clean answer a comes before the corrupted answer b
    // in the vocabulary, b beats a strictly in the corrupted run (LD_corrupted < 0 <= LD_clean);
    // if after, a beats b strictly in the clean run (LD_clean > 0 >= LD_corrupted). This guard
    // stands between a NaN logit (which the engine never gives) and a division by 0.
    if (!(report.clean.logit_diff > report.corrupted.logit_diff))
        fail("patch: LD_clean == LD_corrupted (", report.clean.logit_diff, ") at the answer row, so the effect "
             "(LD_patched - LD_corrupted) / (LD_clean - LD_corrupted) is undefined; choose another corruption");

    const ModelText text(model);
    if (model.encoder_decoder) {
        for (int64_t id : report.clean.input) report.source_positions.push_back(text.input_label(id));
        for (int64_t id : decoder_input(model, report.target)) report.positions.push_back(text.output_label(id));
    } else {
        for (int64_t id : report.clean.input) report.positions.push_back(text.input_label(id));
        for (int64_t id : report.target) report.positions.push_back(text.output_label(id));
    }
    report.rows = patch_rows(model, what);
    return experiment;
}

Tensor patch_cell(Model& model, const PatchExperiment& experiment, const PatchRow& row, int64_t position) {
    const PatchReport& report = experiment.report;
    const auto positions = static_cast<int64_t>((row.source ? report.source_positions : report.positions).size());
    if (position < 0 || position >= positions)
        fail("patch: position ", position, " is outside ", row.name, "'s positions 0..", positions - 1);
    const PatchSite site{row.point, row.head, {position}};
    return patched_pass(model, report.corrupted.input, report.target, &experiment.clean, &site, nullptr);
}

PatchReport activation_patching(Model& model, const std::vector<int64_t>& clean_tokens,
                                 const std::vector<int64_t>& corrupted_tokens,
                                 const std::optional<std::vector<int64_t>>& target, PatchWhat what,
                                 const BeforePatching& before_patching) {
    PatchExperiment experiment = prepare_patching(model, clean_tokens, corrupted_tokens, target, what);
    PatchReport& report = experiment.report;
    for (const PatchRow& patch_row : report.rows)
        report.effect.emplace_back((patch_row.source ? report.source_positions : report.positions).size(), 0.0);
    if (before_patching) before_patching(report);
    for (size_t r = 0; r < report.rows.size(); ++r)
        for (size_t p = 0; p < report.effect[r].size(); ++p) {
            const Tensor logits = patch_cell(model, experiment, report.rows[r], static_cast<int64_t>(p));
            report.effect[r][p] = patch_effect(report, answer_logit_diff(report, logits));
        }
    return std::move(report);
}

}  // namespace tinyformer
