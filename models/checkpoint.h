// Checkpoint — a model's .safetensors file (docs/FORMAT.md section 1).
//   metadata "config": the ModelConfig as a JSON string (required)
//   metadata "vocab":  a JSON array of token strings, index = id (optional)
//   metadata "src_vocab", "tokenizer", "merges", "scores", "prompt_suffix", "train_max_len":
//                      how text becomes tokens (optional; TextMetadata)
//   tensors: PyTorch state_dict names, F32 (F16 / BF16 widened on load)
// Loading takes every expected tensor by name and refuses, naming the file
// and the tensor: a missing tensor, a wrong shape or dtype, a non-finite
// value, and (refuse_unknown) any tensor that the model does not use.
#pragma once

#include "engine/io/safetensors.h"
#include "engine/quant/q8_0.h"
#include "models/config.h"
#include "models/tokenizers/tokenizer.h"

#include <set>
#include <string>
#include <vector>

namespace tinyformer {

// The metadata that says how text becomes the model's tokens. Checked on
// load: vocabularies as long as the config's vocabulary sizes and obeying
// docs/FORMAT.md's vocabulary rules (check_vocabulary), src_vocab only for
// encoder_decoder, prompt_suffix only for decoder_only and made of ordinary
// tokens (Tokenizer::encode_exactly: never <unk>), merges only for (and
// required by) a gpt2_bpe vocabulary and obeying check_merges (gpt2_bpe has
// one vocabulary: no src_vocab), scores only for (and required by) a
// sentencepiece_bpe vocabulary and obeying check_scores (one vocabulary
// too), train_max_len a positive
// integer. `info` loads a model this way, so it refuses what `run` refuses.
struct TextMetadata {
    std::vector<std::string> vocab;      // the target (encoder_decoder) or only vocabulary; may be empty
    std::vector<std::string> src_vocab;  // encoder_decoder: the source vocabulary when it differs; else empty
    TokenizerKind tokenizer = TokenizerKind::Char;
    std::vector<std::string> merges;     // gpt2_bpe: "left right" in rank order; else empty
    std::vector<float> scores;           // sentencepiece_bpe: one per vocab entry, in id order; else empty
    std::string prompt_suffix;           // decoder_only: appended to a prompt that does not end with it
    int64_t train_max_len = 0;           // the longest input seen in training, in tokens; 0 = not declared

    // The vocabulary of the model's input (the source, or the prompt) and of its output.
    const std::vector<std::string>& input_vocab() const { return src_vocab.empty() ? vocab : src_vocab; }
    const std::vector<std::string>& output_vocab() const { return vocab; }
};

// The numbers a model's tensors hold once loaded, by kind: float32 (every
// tensor read by take, and the float32 weights), int8 (Q8_0 weights) and
// their float32 scales — what the file stores and the products read (a Q8_0
// weight's dequantized float32 copy, take_weight's Tensor, is not counted).
struct WeightCounts {
    int64_t float32 = 0, int8 = 0, scales = 0;
    int64_t bytes() const { return 4 * float32 + int8 + 4 * scales; }
};

class Checkpoint {
public:
    static Checkpoint open(const std::string& path, FileReading reading = default_file_reading());

    const ModelConfig& config() const { return config_; }
    const TextMetadata& text() const { return text_; }
    const std::vector<std::string>& vocab() const { return text_.vocab; }
    const SafetensorsFile& file() const { return file_; }

    // The tensor `name`, checked against `expected` and for finiteness.
    Tensor take(const std::string& name, const Shape& expected);
    // A linear layer's weight `name` [out, in]: as take(), or Q8_0 when the
    // file stores it as I8 [out, in] with `name`.scale F32 [out, in / G]
    // (docs/FORMAT.md; G = in / the scale's columns). Then `q8` holds it and
    // the Tensor returned its numbers q * s in float32 (views, the reference).
    Tensor take_weight(const std::string& name, const Shape& expected, Q8Matrix& q8);
    // From now on take_weight quantizes a float32 weight to Q8_0 in groups of
    // `group` (quantize_q8_0) as it reads it, as if the file had stored it
    // so; a weight stored as Q8_0 already is read as stored. Error naming the
    // weight when `group` does not divide its input axis (in).
    void quantize_weights(int64_t group);
    const WeightCounts& counts() const { return counts_; }  // of the tensors taken so far
    // Every tensor not taken is an unknown extra tensor: Error naming it.
    void refuse_unknown() const;

private:
    SafetensorsFile file_;
    ModelConfig config_;
    TextMetadata text_;
    std::set<std::string> taken_;
    int64_t quantize_group_ = 0;  // 0: take_weight reads weights as stored
    WeightCounts counts_;
};

}  // namespace tinyformer
