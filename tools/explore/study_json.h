// The JSON of the study commands' reports, in one place for both readers:
// `tinyformer patch --output FILE.json` and `tinyformer lens --output
// FILE.json` (tools/cli/patch.cpp, lens.cpp) and the live engine's "patch",
// "patch_cell" and "lens" results (tools/explore/live.h), so the page and the
// CLI cannot drift apart. docs/FORMAT.md sections 4c (patch), 4d (lens) and 4
// (patch_cell).
#pragma once

#include "models/study/lens.h"
#include "models/study/patching.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tinyformer {

// {"model", "metric", "clean", "corrupted", "target", "answer_row", "what",
//  "layers", "positions", "effect"} (+ "source_positions", "layer_source" for an encoder-decoder).
nlohmann::json patch_report_json(const Model& model, const std::string& model_name, const PatchReport& report);

// {"model", "text", "target", "stack", "tokens", "positions", "answers", "answer_tokens",
//  "answer_position", "layers": [{"layer", "positions": [{"top", "answer_rank", "answer_p"}], "norms"}]}
// (+ "attribution" when asked for).
nlohmann::json lens_report_json(const std::string& model_name, const LensReport& report);

// One patched run (patch_cell of models/study/patching.h) at the answer row:
// {"what", "row", "position", "position_token", "answer_row", "clean_answer",
//  "corrupted_answer", "logit_diff", "effect", "clean", "corrupted", "patched"}, the last three each {"logit_diff", "top": [{"id",
//  "token", "p"}] (the `top` most probable), "p_clean_answer", "p_corrupted_answer"}.
nlohmann::json patch_cell_json(const Model& model, const PatchExperiment& experiment, const PatchRow& row,
                               int64_t position, const Tensor& patched_logits, int64_t top);

}  // namespace tinyformer
