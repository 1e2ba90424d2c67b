// Activation patching — which layer and position carry an answer? Two inputs
// of the same token length, a clean one and a corrupted one, give different
// answers. The corrupted input is run again with ONE activation replaced by
// the clean run's, and the effect says how much of the clean answer comes
// back (lesson 10.3, section 11: a counterfactual, not attention weights).
//
// The answer. Both runs are teacher-forced (models/study/teacher_forcing.h)
// on the same target: the given one, or the clean input's greedy output
// (decoder-only without a given target: none; the model reads the input).
// The answer row is the first logits row, from the one predicting the first
// target token (decoder-only: the last input position), whose argmax differs
// between the clean and the corrupted run. With the clean greedy output as
// the target this is the first output position where the two greedy outputs
// differ (before it both runs read the same tokens and agree). At that row
//   LD       = logit(clean answer) - logit(corrupted answer)
//   effect   = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted)
// 1 = the clean answer fully restored, 0 = no effect. The clean answer is the
// clean run's argmax there, the corrupted answer the corrupted run's.
//
// What is patched, per row of the result (layers/hooks.h names the points):
//   resid     the stream: "{embed}.output" then "{stack}.{i}.output" per layer
//   attn_out  "{stack}.{i}.self_attn.output" (decoder layers also
//             "decoder.{i}.cross_attn.output": its own row)
//   mlp_out   "{stack}.{i}.ffn.output"
//   head      each attention call's head h: its Dh columns of z = Concat(heads)
//             before W_O (the attention_heads hook), rows "decoder.0.cross_attn.h1"
// and per column one position of that row's stack: encoder rows over the
// source positions, decoder rows over the decoder's input (<bos> + target),
// decoder-only rows over input + target. A patch replaces that one row
// (position) of the activation, batch row 0, by the clean run's bits.
//
// Three identities hold exactly (tests/test_patching.cpp):
//   - every position of the last layer's output patched: effect 1. The final
//     norm and the unembedding then read the clean run's bits and compute
//     the clean logits bit for bit, so LD_patched == LD_clean and x / x == 1.
//   - the clean run patched into itself: every value written is the value
//     that was there, so the logits are the clean logits bit for bit.
//   - a position the mask hides from the answer row (a causal stack's
//     position after it) patched: effect 0. Its key gets weight exp(-inf) = 0
//     at the answer row's query, 0 * v adds nothing, and every other step
//     works row by row, so the answer row's logits keep their bits.
#pragma once

#include "models/transformer.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

enum class PatchWhat { Resid, AttnOut, MlpOut, Head };
// "resid" -> Resid ...; Error naming the four for anything else.
PatchWhat parse_patch_what(const std::string& name);
const char* patch_what_name(PatchWhat what);

// One patch: at residual point `point` (head < 0), or at attention call
// `point`'s head `head` (head >= 0), the rows `positions` take the clean bits.
struct PatchSite {
    std::string point;
    int64_t head = -1;
    std::vector<int64_t> positions;
};

// A row of the result: the site's point and head, and which stack's positions it runs over.
struct PatchRow {
    std::string name;   // "decoder.1.output", "layers.0.self_attn.h2"
    std::string point;  // the hook point or attention call
    int64_t head = -1;
    bool source = false;  // encoder-decoder: over the source positions (encoder rows)
};
// The rows of `what` for this model, in the order the data flows.
std::vector<PatchRow> patch_rows(const Model& model, PatchWhat what);

// Every residual activation and every z of one teacher-forced pass, by name
// (whole passes only). A recording, and then a patching hook.
struct Activations {
    std::map<std::string, Tensor> residual;  // point name -> [1, L, D]
    std::map<std::string, Tensor> heads;     // call name -> z [1, L, D]
};

// The teacher-forced logits [1, n, V] of `input` + `target` with the model's
// hooks set to record every activation into `record` (when not null) and
// to replace `site`'s rows by `source`'s (when both are given). The model's
// hooks come back after. Error when the site's point was not recorded in
// `source` or a position lies outside the activation.
Tensor patched_pass(Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target,
                    const Activations* source, const PatchSite* site, Activations* record);

struct PatchSide {
    std::vector<int64_t> input;     // framed by model_input (<bos>, prompt suffix)
    std::vector<int64_t> greedy;    // encoder-decoder: its greedy output (empty otherwise)
    int64_t answer = 0;             // its argmax at the answer row
    double logit_diff = 0.0;        // LD of its teacher-forced run
};

struct PatchReport {
    PatchSide clean, corrupted;
    std::vector<int64_t> target;    // what both runs are teacher-forced on
    int64_t answer_row = 0;         // the logits row of the answer
    PatchWhat what = PatchWhat::Resid;
    std::vector<PatchRow> rows;
    std::vector<std::string> source_positions, positions;  // labels: encoder's (encoder-decoder only), the stream's
    std::vector<std::vector<double>> effect;  // [rows][their stack's positions]
};

// The experiment before its grid: the checks, both runs and the answer. Its
// report has everything but the effects (rows and position labels set,
// effect empty); the clean run's activations and both runs' logits are kept
// for the patched runs. Error for an encoder_only model, inputs of different
// lengths (naming both), a given target outside the vocabulary, or when no
// row's argmax differs (nothing to restore: LD_clean == LD_corrupted).
struct PatchExperiment {
    PatchReport report;
    Activations clean;
    Tensor clean_logits, corrupted_logits;  // [1, n, V], teacher-forced on report.target
};
PatchExperiment prepare_patching(Model& model, const std::vector<int64_t>& clean_tokens,
                                 const std::vector<int64_t>& corrupted_tokens,
                                 const std::optional<std::vector<int64_t>>& target, PatchWhat what);

// One cell of the grid: the corrupted run again with `row`'s activation at
// `position` (of the row's stack) replaced by the clean run's. Its logits
// [1, n, V]; the cell's effect is patch_effect(report, answer_logit_diff(report, logits)).
// Error for a position outside the row's stack.
Tensor patch_cell(Model& model, const PatchExperiment& experiment, const PatchRow& row, int64_t position);

// Called with the report once the answer, the rows and the positions are
// known and every effect is still 0, before the patched runs: the caller's
// chance to refuse early what it cannot use (`patch`: a picture too large to
// write), instead of after rows x positions passes.
using BeforePatching = std::function<void(const PatchReport&)>;

// The whole experiment: prepare_patching, then (after before_patching, when
// given) patch_cell for every row and position of the row's stack (the same
// Errors as prepare_patching).
PatchReport activation_patching(Model& model, const std::vector<int64_t>& clean_tokens,
                                 const std::vector<int64_t>& corrupted_tokens,
                                 const std::optional<std::vector<int64_t>>& target, PatchWhat what,
                                 const BeforePatching& before_patching = {});

// LD at the report's answer row of a teacher-forced logits tensor.
double answer_logit_diff(const PatchReport& report, const Tensor& logits);
// (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted).
double patch_effect(const PatchReport& report, double patched_logit_diff);

}  // namespace tinyformer
