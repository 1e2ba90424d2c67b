// The live engine: one REQUEST (JSON) -> one RESULT (JSON), what the
// explorer page's controls ask of the engine built into it
// (tools/wasm/page_engine.cpp; docs/FORMAT.md section 4, "The live engine").
// Compiled natively too, so that the doctests hold it to the CLI's paths.
//
// REQUEST (every key optional but one of "text" / "ids"; any other key is an Error):
//   "text": "hello" | "ids": [5, 17, 3]   the user's input, framed as the CLI's
//                                          TEXT / --ids (models/text.h model_input)
//   "target": "olleh" | "target_ids": [..] teacher forcing on this target;
//                                          absent: the target is what "decode" makes
//   "unk": false                           as --unk (outside characters read as <unk>)
//   "second": {"text"|"ids", "target"|"target_ids"}   a second batch row
//   "pad_side": "right" | "left"           how the shorter row is padded (default right)
//   "mask_overrides": {"decoder.0.self_attn": [[2, 4, 1], ...]}, "ablate": [["decoder.1.cross_attn", 2], ...]
//       docs/FORMAT.md section 4b (models/study/interventions.h): for this request only,
//       its decodings and passes; the model is restored after, also on an Error
//   "decode": {"mode": "greedy" | "beam" | "sample", "beam": 3, "temperature": 1,
//              "top_k": 0, "top_p": 1, "seed": 0, "max_new_tokens": N}
//       mode greedy by default; beam width 2..64 (default 3); the sampling
//       settings as `run`'s flags (T > 0, top_k >= 0 with 0 = all, top_p in
//       (0, 1], seed 0..2^53); max_new_tokens 1..2^20 (default: the model's,
//       default_max_new_tokens). Settings of another mode are checked and
//       unused; with a target the decode record is "none".
//   "lens": {"top": 5, "attribute": "c"}   the logit lens (models/study/lens.h) of row 0,
//       its target as `tinyformer lens`: the given one, or none (then the greedy
//       output; a decoder-only model without <eos>: the input alone), whatever
//       "decode" says; top 1..100 (default 5) as --top; attribute one output
//       token, as --attribute, or "attribute_id" its id, as --attribute-id
//   "patch": {"corrupted": {"text"|"ids"}, "what": "resid"}   activation patching
//       (models/study/patching.h): row 0 clean, "corrupted" its corruption (the
//       same length); what "resid" (default) | "attn_out" | "mlp_out" | "head";
//       the target as `tinyformer patch`: the given one, or none (then the
//       clean greedy output; decoder-only: the next token), whatever "decode" says
//   "patch_cell": {"corrupted", "what", "row": "decoder.1.output", "position": 3}
//       one cell of that grid: "row" one of its "layers", "position" one of that
//       row's stack's positions
//   "page": true                           false: no page pass (no decoding, no recorded
//       pass, no "page"): the result holds only the study keys asked for, the same
//       numbers (the Patch and Lens views send it; "second", "pad_side" and
//       "decode" are then checked and unused)
// Each row's target is decoded alone (B = 1), with the CLI's search and RNG
// (models/decoding.h), so a seed gives `tinyformer run --seed`'s tokens. The
// study keys run after the page's pass, on the same intervened model.
//
// RESULT:
//   "src_ids", "tgt_ids" (encoder_decoder) | "ids" and, prefix_lm, "prefix_len"
//   "text" (the target as text), "target_ids" (without <bos> / <eos>)
//   "logits" [T][V], "weights" {"decoder.0.self_attn": [H][L][S], ...} (trace names)
//   "token_log_p": log p of each target token, then <eos> (when the model has
//                  one), teacher-forced, as models/study/probe.h scores them; "log_p": their sum
//   "forward_inputs": docs/FORMAT.md section 2's inputs of the pass (B rows, masks 0/1)
//   "second": the same row fields for row 1 (with "second"; then every row
//             field of both rows is that row of the one padded pass: padded
//             positions' logits and weight rows are 0, "token_log_p" skips them)
//   "page": the explore document (tools/explore/explore_data.h) of row 0's
//           recorded pass (B = 1, unpadded), the "decoding" record included.
//   "lens": `tinyformer lens --output F.json`'s JSON (docs/FORMAT.md 4d), "patch":
//           `tinyformer patch --output F.json`'s (4c), "patch_cell": the one patched
//           run at the answer row (tools/explore/study_json.h: its effect, LD, and
//           the clean, corrupted and patched runs' top 5 tokens), each when asked.
// Every float of the pass goes through exact() (the float32 the engine
// computed); the study results are the CLI's doubles. With `arrays` (the
// page's engine), every [T][V], [L][D] and [H][L][S] array of the pass is
// put there instead and the JSON holds its reference {"f32": offset,
// "shape": [...]} (tools/explore/explore_data.h FloatArrays): the same
// float32 values, none of them written as a decimal.
#pragma once

#include "models/transformer.h"
#include "tools/explore/explore_data.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tinyformer {

// Error (one line naming the field) for a bad request: a wrong type, a
// value out of range, an unknown key, tokens outside the vocabulary or too long.
nlohmann::json live_run(Model& model, const nlohmann::json& request, const std::string& model_name,
                        FloatArrays* arrays = nullptr);

}  // namespace tinyformer
