// The explore document (docs/FORMAT.md section 4): the JSON an explorer page
// renders, built from one teacher-forced pass recorded with
// Trace::Detail::Everything (models/study/attention_maps.h). One builder for the
// recorded page `tinyformer explore` writes and for the live engine's
// result (tools/explore/live.h), so the two pages read the same document.
//
//   decode_target   the target when none is given: greedy, beam search or
//                   sampling (models/decoding.h), and the document's
//                   "decoding" record (mode, settings, beam hypotheses)
//   decoding_steps  along the chosen path, each step's top-5 next tokens
//   explore_data    the whole document: model, input, sequences, ids,
//                   padding, attentions (attention_json each), decoding
// Every float is written by exact(): the shortest decimal that reads back
// as the same float32.
#pragma once

#include "models/study/attention_maps.h"
#include "models/decoding.h"
#include "models/text.h"
#include "models/study/trace.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

// The double of the shortest decimal that reads back as `value` (float32):
// nlohmann writes it as those digits.
double exact(float value);

// The big float arrays of a live result, kept out of its JSON text
// (docs/FORMAT.md section 4, "The big arrays"): the JSON holds {"f32":
// offset, "shape": [R, C]} (or [H, L, S]) in each one's place, offset counting
// the floats of the arrays before it. The page copies them into one
// Float32Array: no decimal is written or parsed. Each array is kept in memory
// of its own, of its exact size (one growing buffer would hold up to twice
// them while it grows). A recorded page has none.
struct FloatArrays {
    std::vector<std::vector<float>> arrays;  // in the order added
    int64_t count = 0;                       // the floats of all of them: the next one's offset
    // Keeps a copy of the product(shape) floats at data; returns the reference.
    nlohmann::json add(const float* data, const std::vector<int64_t>& shape);
    // All of them, one after another: the buffer the references point into.
    std::vector<float> joined() const;
};

// A [1, R, C] tensor (or matrix h of a [B, H, R, C] one) as R arrays of C
// numbers, and the H matrices of batch row b of a [B, H, L, S] tensor as
// [H][L][S]. With `arrays`, the numbers go there and the JSON is the reference.
nlohmann::json matrix(const Tensor& t, int64_t h = 0, FloatArrays* arrays = nullptr);
nlohmann::json per_head(const Tensor& t, FloatArrays* arrays = nullptr, int64_t b = 0);

// One attention call of the recorded pass (B = 1): name, stack, layer,
// group, mask, q, k, v, scores, weights, z (and bias, q_unrotated,
// k_unrotated when recorded). heads: the model's H; arrays: as matrix's.
nlohmann::json attention_json(const AttentionMap& map, const Trace& trace, int64_t heads,
                              FloatArrays* arrays = nullptr);

// The search that makes a target: beam > 1 is beam search, else sampling
// when `sampling` is set, else greedy; options.max_new_tokens limits it.
struct DecodeSettings {
    int64_t beam = 1;
    std::optional<Sampling> sampling;
    GenerationOptions options;
};

// The document's "decoding" record (without "steps"). When `target` is
// empty (and the model generates), decodes one, sets `target` to it and
// the record's "stop" to why it ended (stop_name; null when nothing decodes);
// `input` is the model's input (model_input). Error for an encoder-decoder
// model without bos_id (it cannot start a target).
nlohmann::json decode_target(const Model& model, const ModelText& text, const std::vector<int64_t>& input,
                             const DecodeSettings& settings, std::optional<std::vector<int64_t>>& target);

// Why a decoding ended, as the "decoding" record's "stop" names it: "eos",
// "max_new_tokens" or "max_len".
const char* stop_name(StopReason why);

// Each step along the target, then <eos> when the decoding chose it (its
// record's "stop" is "eos", or null: a given target): the top-5 next tokens
// of the pass's logits at the row that predicts it, and the token taken.
// decoding: the record decode_target made.
nlohmann::json decoding_steps(const Model& model, const AttentionRun& run, const ModelText& text,
                              const nlohmann::json& decoding);

// The whole document. model_name: the model's name as the page shows it
// (the file's stem); shown: the input as the user gave it (text, or ids
// "5,17,3"); target_given: the target was given, not decoded; arrays: as
// matrix's (the live engine's result; a recorded page writes every number).
nlohmann::json explore_data(const Model& model, const AttentionRun& run, const nlohmann::json& decoding,
                            const std::string& model_name, const std::string& shown, bool target_given,
                            FloatArrays* arrays = nullptr);

}  // namespace tinyformer
