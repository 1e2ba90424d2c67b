// Interventions — changing a loaded model for one experiment, then putting it
// back: mask overrides (set chosen cells of one attention call's mask before
// softmax) and head ablation (zero one head's output before W_O). Both are
// hooks (layers/hooks.h: attention_mask, attention_heads) that the model hands
// to every attention module, so every pass of the model honours them while
// they are applied: a whole (teacher-forced) pass, a trace, and the decoding
// searches over the KV cache (models/decoding.h), where a cell applies only
// at the step whose query it names and only when its key exists already.
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
#include <optional>
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

// The hooks that carry interventions out, by call name (AttentionCallInfo::name):
//   attention_mask   the call's cells set in its mask (Mask::with_cells): in a
//                    whole pass every cell must lie in [L, S] (else an Error
//                    naming the cell and [L, S]; the module puts its name in
//                    front); in a KV-cache step a cell [q, k] applies as row
//                    q - first when that row is in this call and key k exists
//   attention_heads  the heads' Dh columns of z set to 0, at every query
// `below`: hooks that run first, whose mask and z these change further
// (nullptr: none). The cells and heads are taken as they are: AppliedInterventions checks them.
class InterventionHooks final : public Hooks {
public:
    InterventionHooks(std::map<std::string, std::vector<MaskCell>> cells,
                      std::map<std::string, std::vector<int64_t>> zeroed_heads, const Hooks* below = nullptr);
    std::optional<Mask> attention_mask(const AttentionCallInfo& call, const Mask& mask) const override;
    void attention_heads(const AttentionCallInfo& call, Tensor& z) const override;
    void residual(const ResidualPoint& point, Tensor& x) const override;  // the hooks below only

private:
    std::map<std::string, std::vector<MaskCell>> cells_;  // only calls with cells
    std::map<std::string, std::vector<int64_t>> zeroed_heads_;
    const Hooks* below_;
};

// Applies `interventions` to the model for as long as it lives: checks every
// call name (Error listing this model's call names), cell (query, key >= 0)
// and head (0..H-1) before changing anything, then sets the model's hooks to
// an InterventionHooks of them (replacing any hooks set before: earlier
// interventions do not add up). The destructor sets the earlier hooks back,
// also when an Error unwinds the scope.
class AppliedInterventions {
public:
    AppliedInterventions(Model& model, const Interventions& interventions);
    AppliedInterventions(const AppliedInterventions&) = delete;
    AppliedInterventions& operator=(const AppliedInterventions&) = delete;

private:
    InterventionHooks hooks_;
    HookScope scope_;  // after hooks_: the earlier hooks are back before hooks_ goes
};

}  // namespace tinyformer
