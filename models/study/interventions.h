// Interventions — changing a loaded model for one experiment, then putting it
// back: mask overrides (set chosen cells of one attention call's mask before
// softmax) and head ablation (zero one head's output before W_O). Both belong
// to the attention modules (layers/multi_head_attention.h: set_mask_overrides,
// set_zeroed_heads), so every pass of the model honours them while they are
// applied: a whole (teacher-forced) pass, a trace, and the decoding searches
// over the KV cache (models/decoding.h), where a cell applies only at the step
// whose query it names and only when its key exists already.
//
// Calls are named as the trace names them (models/study/trace.h): "encoder.0.self_attn",
// "decoder.1.cross_attn", "layers.2.self_attn". The JSON (docs/FORMAT.md section 4b):
//
//   {"mask_overrides": {"decoder.0.self_attn": [[2, 4, 1], [3, 0, 0]]},
//    "ablate": [["decoder.1.cross_attn", 2], ["decoder.1.cross_attn", 0]]}
//
// [query, key, allowed]: allowed 1 (or true) lets the query attend the key, 0
// (or false) blocks it; a later cell of a call wins. Query and key are >= 0.
//
//   Interventions interventions = parse_interventions_file(json, "--overrides f.json");
//   {
//       AppliedInterventions applied(model, interventions);   // Error for an unknown call or head
//       ... passes of the intervened model ...
//   }   // every module as it was before
#pragma once

#include "engine/mask.h"
#include "models/transformer.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer {

// MaskCell (engine/mask.h): row `query`, column `key` of one call's [L, S]
// matrix (in a whole pass: query position, key position; in a KV-cache step:
// the query's slot and the key's slot, the same numbers for an unpadded row).

struct Interventions {
    // trace call name -> cells, in order (a later cell wins)
    std::map<std::string, std::vector<MaskCell>> mask_overrides;
    // (trace call name, head)
    std::vector<std::pair<std::string, int64_t>> ablate;
    bool empty() const { return mask_overrides.empty() && ablate.empty(); }
};

// The keys "mask_overrides" and "ablate" of a JSON object (both optional;
// other keys are left alone: in a request they are the request's own).
// Error, starting with `what` ("--overrides FILE", "request"), for a value of
// the wrong type, a negative query, key or head, or allowed other than 0/1.
Interventions parse_interventions(const nlohmann::json& value, const std::string& what);
// The same for an overrides file, whose only keys are those two: Error naming any other.
Interventions parse_interventions_file(const nlohmann::json& value, const std::string& what);
// The JSON parse_interventions reads: {"mask_overrides": {...}, "ablate": [...]}
// (what a page's data carries when `explore` ran with interventions).
nlohmann::json interventions_json(const Interventions& interventions);

// The model's attention calls under their trace names, in the order they run
// ("encoder.0.self_attn", ..., "decoder.0.self_attn", "decoder.0.cross_attn", ...).
std::vector<std::string> attention_call_names(const Model& model);

// Applies `interventions` to the model's modules for as long as it lives:
// checks every call name (Error listing this model's call names) and head
// (0..H-1) before changing anything, then sets every module's overrides and
// zeroed heads to those given (none for a module not named: they replace any
// earlier interventions). The destructor restores every module as it was,
// also when an Error unwinds the scope.
class AppliedInterventions {
public:
    AppliedInterventions(Model& model, const Interventions& interventions);
    ~AppliedInterventions();
    AppliedInterventions(const AppliedInterventions&) = delete;
    AppliedInterventions& operator=(const AppliedInterventions&) = delete;

private:
    struct Saved {
        MultiHeadAttention* module;
        std::vector<MaskCell> overrides;
        std::vector<int64_t> zeroed_heads;
    };
    void restore() noexcept;
    std::vector<Saved> saved_;
};

}  // namespace tinyformer
