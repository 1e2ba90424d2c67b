// One teacher-forced pass — the model reads a whole example at once, its
// input and a target — the one pass that `attention`, `probe`, `trace` and
// `explore` read (models/study/trace.h records it), so there is one pass to trust:
//
//   encoder_decoder: the encoder reads `input`; the decoder reads
//                    decoder_input(target) = [<bos>] + target (models/text.h)
//   decoder_only:    the model reads input + target; a prefix_lm model's
//                    prefix is the input
//   encoder_only:    the model reads the input; the target must be empty
//
// `input` is the model's input as model_input frames it (with <bos> and the
// prompt suffix of a decoder-only model). B = 1, no padding.
#pragma once

#include "models/text.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tinyformer {

struct TeacherForced {
    std::vector<int64_t> input;     // what the encoder (or the single stack) reads first
    std::vector<int64_t> decoder;   // encoder_decoder: the decoder's tokens; else input + target
    Tensor logits;                  // [1, n, V]: n = decoder.size()
    int64_t first_prediction = 0;   // the logits row that predicts target token 0 (-1: none does)
};

// Error, before any work, when the recorded teacher-forced pass over
// `input` and a target of at least `target_length` tokens would not fit in
// memory (the pass's own check, refuse_pass_beyond_memory, asked early): an
// input of 60 000 tokens is refused at once, naming its length, instead of
// after decoding a continuation for it.
void refuse_teacher_forced_beyond_memory(const Model& model, const std::vector<int64_t>& input, int64_t target_length);

// The target of an example: the one given, or the model's greedy output
// (after refuse_inputs_without_room and refuse_teacher_forced_beyond_memory
// on the input).
// An encoder_only model, and a model without an eos_id (it generates, but
// only to a length someone chooses: `run` and `explore` decode it up to
// --max-new-tokens themselves), get an empty target here (a decoder-only one
// is read on its input alone), except an encoder_decoder one, whose decoder
// needs tokens: Error asking for a target when it has no bos_id or eos_id.
std::vector<int64_t> target_or_greedy(const Model& model, const std::vector<int64_t>& input,
                                      const std::optional<std::vector<int64_t>>& target);

TeacherForced teacher_forced_pass(const Model& model, const std::vector<int64_t>& input,
                                  const std::vector<int64_t>& target, Observer* observer = nullptr);

}  // namespace tinyformer
