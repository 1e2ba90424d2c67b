#include "tools/explore/study_json.h"

#include "models/text.h"

namespace tinyformer {

namespace {

using json = nlohmann::json;

json side_json(const ModelText& text, const std::vector<int64_t>& input, const PatchSide& side) {
    json out = {{"input", text.decode_input(input)},
                {"input_ids", input},
                {"answer", text.output_label(side.answer)},
                {"answer_id", side.answer},
                {"logit_diff", side.logit_diff}};
    if (!side.greedy.empty()) out["greedy"] = text.decode_output(side.greedy);
    return out;
}

json top_json(const std::vector<LensToken>& tokens) {
    json top = json::array();
    for (const LensToken& token : tokens) top.push_back({{"id", token.id}, {"token", token.label}, {"p", token.probability}});
    return top;
}

// One run's answer row: its LD, its top tokens, and the two answers' probabilities.
json answer_row_json(const ModelText& text, const PatchReport& report, const Tensor& logits, int64_t top) {
    const int64_t V = logits.dim(2);
    const float* row = logits.data() + report.answer_row * V;
    const LensCell clean = lens_cell(row, V, report.clean.answer, top, text);
    const LensCell corrupted = lens_cell(row, V, report.corrupted.answer, 1, text);
    return {{"logit_diff", answer_logit_diff(report, logits)},
            {"top", top_json(clean.top)},
            {"p_clean_answer", clean.answer_probability},
            {"p_corrupted_answer", corrupted.answer_probability}};
}

}  // namespace

json patch_report_json(const Model& model, const std::string& model_name, const PatchReport& report) {
    const ModelText text(model);
    json layers = json::array(), sources = json::array();
    for (const PatchRow& row : report.rows) {
        layers.push_back(row.name);
        sources.push_back(row.source);
    }
    json out = {{"model", model_name},
                {"metric", "normalised_logit_diff"},
                {"clean", side_json(text, report.clean.input, report.clean)},
                {"corrupted", side_json(text, report.corrupted.input, report.corrupted)},
                {"target", text.decode_output(report.target)},
                {"answer_row", report.answer_row},
                {"what", patch_what_name(report.what)},
                {"layers", layers},
                {"positions", report.positions},
                {"effect", report.effect}};
    if (model.encoder_decoder) {
        out["source_positions"] = report.source_positions;
        out["layer_source"] = sources;
    }
    return out;
}

json lens_report_json(const std::string& model_name, const LensReport& report) {
    json layers = json::array();
    for (size_t l = 0; l < report.layers.size(); ++l) {
        json positions = json::array();
        for (const LensCell& cell : report.cells[l])
            positions.push_back({{"top", top_json(cell.top)}, {"answer_rank", cell.answer_rank}, {"answer_p", cell.answer_probability}});
        layers.push_back({{"layer", report.layers[l]}, {"positions", positions}, {"norms", report.norms[l]}});
    }
    json result = {{"model", model_name}, {"text", report.text}, {"target", report.target},
                   {"stack", report.stack}, {"tokens", report.tokens}, {"positions", report.positions},
                   {"answers", report.answers}, {"answer_tokens", report.answer_labels},
                   {"answer_position", report.answer_position}, {"layers", layers}};
    if (report.attribution) {
        const Attribution& a = *report.attribution;
        json parts = json::array();
        for (const AttributionPart& part : a.parts) parts.push_back({{"part", part.name}, {"logit", part.logit}});
        result["attribution"] = {{"token", a.label}, {"id", a.token}, {"position", a.position}, {"logit", a.logit},
                                 {"sum", a.sum}, {"norm", a.norm}, {"scale", a.scale}, {"parts", parts}};
    }
    return result;
}

json patch_cell_json(const Model& model, const PatchExperiment& experiment, const PatchRow& row, int64_t position,
                     const Tensor& patched_logits, int64_t top) {
    const ModelText text(model);
    const PatchReport& report = experiment.report;
    const std::vector<std::string>& labels = row.source ? report.source_positions : report.positions;
    json patched = answer_row_json(text, report, patched_logits, top);
    const double effect = patch_effect(report, patched["logit_diff"].get<double>());
    return {{"what", patch_what_name(report.what)},
            {"row", row.name},
            {"position", position},
            {"position_token", labels.at(static_cast<size_t>(position))},
            {"answer_row", report.answer_row},
            {"clean_answer", text.output_label(report.clean.answer)},
            {"corrupted_answer", text.output_label(report.corrupted.answer)},
            {"logit_diff", patched["logit_diff"]},
            {"effect", effect},
            {"clean", answer_row_json(text, report, experiment.clean_logits, top)},
            {"corrupted", answer_row_json(text, report, experiment.corrupted_logits, top)},
            {"patched", patched}};
}

}  // namespace tinyformer
