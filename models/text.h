// Text and token ids in and out of a model (docs/FORMAT.md, the metadata
// "vocab", "src_vocab", "tokenizer", "prompt_suffix", "train_max_len").
//
// A user's input is text, read with the model's tokenizer, or token ids
// given as they are (the CLI's --ids). Either way the user's tokens become
// the model's input the same way (model_input):
//   encoder_decoder: the source tokens
//   decoder_only:    <bos> (when the config has bos_id) + the prompt tokens
//                    + the prompt suffix (when declared and the prompt does
//                    not already end with it: the toy models' "=")
//   encoder_only:    the tokens
// A target (the CLI's --target / --target-ids) follows in the decoder:
//   encoder_decoder: the decoder reads <bos> (when the config has bos_id)
//                    + the target, so decoder query t predicts target token t
//   decoder_only:    the target follows the prompt
// Token labels (pictures, tables, the explorer) are Tokenizer::label: the
// vocabulary's strings (gpt2_bpe: its bytes with "␣" for a space, "<0xE2>" for
// a byte of a cut character), or "#17" for a model that has no vocabulary.
#pragma once

#include "models/transformer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tinyformer {

class ModelText {
public:
    explicit ModelText(const Model& model);

    bool reads_text() const { return input_.has_value(); }
    // Text -> the user's tokens: the input side (source or prompt) or the
    // output side (target, continuation). Error when the model has no
    // vocabulary for that side, or a character / word is not in it.
    std::vector<int64_t> encode_input(const std::string& text, bool map_unknown = false,
                                      int64_t* unknown_count = nullptr) const;
    std::vector<int64_t> encode_output(const std::string& text) const;
    // Tokens as text; as ids "5,17,3" for a model without a vocabulary.
    std::string decode_input(const std::vector<int64_t>& ids) const;
    std::string decode_output(const std::vector<int64_t>& ids) const;
    // Appends the text output token ids[i] adds to decode_output(ids[0..i])
    // (Tokenizer::decode_piece; ",17" after the first id without a vocabulary):
    // an output shown a token at a time, as it is generated.
    void decode_output_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const;
    std::string input_label(int64_t id) const;
    std::string output_label(int64_t id) const;
    const Tokenizer* output_tokenizer() const { return output_ ? &*output_ : nullptr; }

private:
    std::optional<Tokenizer> input_, output_;
};

// The model's input for the user's tokens (the framing above). Error for a
// token id outside the input vocabulary, an empty input where the model
// needs one, or more positions than the model's max_len.
std::vector<int64_t> model_input(const Model& model, std::vector<int64_t> tokens);
// model_input without its max_len check: the framed input of any length
// (`run` cuts a decoder-only prompt longer than max_len from the left).
std::vector<int64_t> framed_input(const Model& model, std::vector<int64_t> tokens);

// The decoder's tokens for a target: <bos> + target when the config has a
// bos_id, else the target as it is. Error for ids outside the output
// vocabulary, an empty result, or more positions than max_len.
std::vector<int64_t> decoder_input(const Model& model, const std::vector<int64_t>& target);

// Error for a target token id outside the output vocabulary.
void check_output_ids(const Model& model, const std::vector<int64_t>& target);

// A warning when `tokens` (the user's tokens, without <bos> and suffix) are
// more than the longest input the model was trained on (train_max_len);
// empty when there is nothing to say.
std::string length_warning(const Model& model, int64_t tokens);

// "5,17,3" -> {5, 17, 3}. Error naming `what` (e.g. "--ids") for an empty
// list, an empty item, or an item that is not a whole number; negative
// numbers are kept for model_input to refuse with the vocabulary's range.
std::vector<int64_t> parse_ids(const std::string& list, const std::string& what);

}  // namespace tinyformer
