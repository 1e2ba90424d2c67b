// Language-model loss per position: how well a decoder-only model predicts
// the next token of held-out text, position by position (docs/EXTRAPOLATION.md,
// `tinyformer eval --task lm`).
//
//   sequences  N token sequences of one length T (ids [N, T]):
//              the model reads tokens 0..T-2 at positions 0..T-2
//   nll[p]     -log softmax(logits[p])[token p+1], in nats: the logits at
//              position p (which saw tokens 0..p) scored on the token after p;
//              log-softmax in double from the float32 logits (max subtracted)
//   a range    A-B (positions A..B, both included): the mean of nll[p] over
//              p in A..B and every sequence
//
// So position p predicts token p + 1, and the last position, T - 2, predicts
// the last token. Only decoder_only causal models (a model that can see the
// token it predicts would score nothing); positions past max_len - 1 are
// refused, naming both numbers.
#pragma once

#include "models/transformer.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace tinyformer {

struct PositionRange {
    int64_t first = 0, last = 0;  // both included
};
// "A-B,C-D,..." (or "A" for one position) -> the ranges, in order. Error
// naming the part unless each is one or two whole numbers (digits only, at
// most 9 each) joined by '-' with A <= B.
std::vector<PositionRange> parse_position_ranges(const std::string& text);
std::string position_range_text(const PositionRange& range);  // "A-B", or "A"

// Text, one sequence a line ('#' lines and empty lines skipped; a trailing CR
// dropped), each character a token of the model's character vocabulary ->
// ids [N][T], reading no further than the first `limit` sequences. Error
// naming the line for an unknown character, a length other than the first
// line's or a line of more than max_len + 1 tokens (refused as it is read,
// so a huge line is never held whole), when there is no sequence, or for a
// model that is not decoder_only causal.
std::vector<std::vector<int64_t>> read_lm_sequences(const Model& model, std::istream& in, int64_t limit);
std::vector<std::vector<int64_t>> read_lm_sequences(const Model& model, const std::string& text);  // every sequence

// The mean nll[p] over all sequences, p = 0..T-2 (see above); the plain
// definition, computed a batch of `batch` sequences at a time. Error for a
// model that is not decoder_only causal, sequences of different lengths or
// fewer than 2 tokens, or T - 1 > max_len.
std::vector<double> mean_nll_per_position(const Model& model, const std::vector<std::vector<int64_t>>& sequences,
                                          int64_t batch = 25);

// The mean of per_position[A..B] for each range (every sequence has every
// position, so this equals the mean over the cells). Error naming the range
// when it is past the last scored position (per_position.size() - 1).
std::vector<double> mean_nll_per_range(const std::vector<double>& per_position,
                                       const std::vector<PositionRange>& ranges);

}  // namespace tinyformer
