#include "models/checkpoint.h"

#include "engine/io/foreign_files.h"
#include "engine/io/json.h"

#include <charconv>
#include <cmath>

namespace tinyformer {

namespace {

// A JSON array of strings from metadata `key` (the key must be there).
std::vector<std::string> read_strings(const std::string& path, const std::map<std::string, std::string>& metadata,
                                      const std::string& key) {
    const std::string where = path + ": __metadata__ \"" + key + "\"";
    const nlohmann::json array = parse_json(metadata.at(key), /*max_depth=*/1, where);
    if (!array.is_array()) fail(where, " must be a JSON array of strings");
    std::vector<std::string> strings;
    for (size_t index = 0; index < array.size(); ++index) {
        if (!array[index].is_string()) fail(where, " entry ", index, " is not a string: ", json_excerpt(array[index]));
        strings.push_back(array[index].get<std::string>());
    }
    return strings;
}

// A JSON array of token strings from metadata `key`, as long as `expected`,
// obeying the vocabulary rules for the tokenizer `kind` (check_vocabulary).
std::vector<std::string> read_vocabulary(const std::string& path, const std::map<std::string, std::string>& metadata,
                                         const std::string& key, int64_t expected, const char* size_key,
                                         TokenizerKind kind) {
    std::vector<std::string> tokens;
    auto found = metadata.find(key);
    if (found == metadata.end()) return tokens;
    const std::string where = path + ": __metadata__ \"" + key + "\"";
    const nlohmann::json array = parse_json(found->second, /*max_depth=*/1, where);
    if (!array.is_array()) fail(where, " must be a JSON array of strings");
    for (size_t index = 0; index < array.size(); ++index) {
        if (!array[index].is_string())
            fail(where, " entry ", index, " is not a string: ", json_excerpt(array[index]),
                 " (docs/FORMAT.md, vocabulary rules)");
        tokens.push_back(array[index].get<std::string>());
    }
    if (static_cast<int64_t>(tokens.size()) != expected)
        fail(where, " has ", tokens.size(), " tokens but the config's '", size_key, "' is ", expected,
             " (docs/FORMAT.md)");
    check_vocabulary(tokens, kind, where);
    return tokens;
}

// A JSON array of numbers from metadata `key` (the key must be there), as
// float32 (what tokenizer.bin stores).
std::vector<float> read_floats(const std::string& path, const std::map<std::string, std::string>& metadata,
                               const std::string& key) {
    const std::string where = path + ": __metadata__ \"" + key + "\"";
    const nlohmann::json array = parse_json(metadata.at(key), /*max_depth=*/1, where);
    if (!array.is_array()) fail(where, " must be a JSON array of numbers");
    std::vector<float> numbers;
    numbers.reserve(array.size());
    for (size_t index = 0; index < array.size(); ++index) {
        if (!array[index].is_number()) fail(where, " entry ", index, " is not a number: ", json_excerpt(array[index]));
        numbers.push_back(static_cast<float>(array[index].get<double>()));
    }
    return numbers;
}

TextMetadata read_text_metadata(const std::string& path, const std::map<std::string, std::string>& metadata,
                                const ModelConfig& config) {
    const bool encoder_decoder = config.arch == Architecture::EncoderDecoder;
    TextMetadata text;
    auto has = [&](const char* key) { return metadata.count(key) != 0; };
    // The tokenizer first: the vocabulary rules depend on it.
    if (has("tokenizer")) {
        try {
            text.tokenizer = tokenizer_kind(metadata.at("tokenizer"));
        } catch (const Error& error) {
            fail(path, ": __metadata__ \"tokenizer\": ", error.message());
        }
    }
    text.vocab = read_vocabulary(path, metadata, "vocab", encoder_decoder ? config.tgt_vocab_size : config.vocab_size,
                                 encoder_decoder ? "tgt_vocab_size" : "vocab_size", text.tokenizer);
    if (has("src_vocab") && !encoder_decoder)
        fail(path, ": __metadata__ \"src_vocab\" is for encoder_decoder models; this one is ", architecture_name(config.arch));
    text.src_vocab =
        read_vocabulary(path, metadata, "src_vocab", config.src_vocab_size, "src_vocab_size", text.tokenizer);
    if (has("merges") && text.tokenizer != TokenizerKind::Gpt2Bpe)
        fail(path, ": __metadata__ \"merges\" is for the \"gpt2_bpe\" tokenizer; this one is \"",
             tokenizer_kind_name(text.tokenizer), "\" (docs/FORMAT.md)");
    if (text.tokenizer == TokenizerKind::Gpt2Bpe && !text.src_vocab.empty())
        fail(path, ": __metadata__ \"src_vocab\": a \"gpt2_bpe\" model has one vocabulary (\"vocab\", with its \"merges\") "
                   "for both sides (docs/FORMAT.md)");
    if (text.tokenizer == TokenizerKind::Gpt2Bpe && !text.vocab.empty()) {
        if (!has("merges"))
            fail(path, ": __metadata__ has a \"gpt2_bpe\" \"vocab\" but no \"merges\"; give them as a JSON array of "
                       "\"left right\" strings in rank order (\"[]\" for none; docs/FORMAT.md)");
        text.merges = read_strings(path, metadata, "merges");
        check_merges(text.merges, text.vocab, path + ": __metadata__ \"merges\"");
    } else if (has("merges")) {
        fail(path, ": __metadata__ \"merges\" needs a \"vocab\" to merge tokens of (docs/FORMAT.md)");
    }
    const bool sentencepiece = text.tokenizer == TokenizerKind::SentencePieceBpe;
    if (has("scores") && !sentencepiece)
        fail(path, ": __metadata__ \"scores\" is for the \"sentencepiece_bpe\" tokenizer; this one is \"",
             tokenizer_kind_name(text.tokenizer), "\" (docs/FORMAT.md)");
    if (sentencepiece && !text.src_vocab.empty())
        fail(path, ": __metadata__ \"src_vocab\": a \"sentencepiece_bpe\" model has one vocabulary (\"vocab\", with its "
                   "\"scores\") for both sides (docs/FORMAT.md)");
    if (sentencepiece && !text.vocab.empty()) {
        if (!has("scores"))
            fail(path, ": __metadata__ has a \"sentencepiece_bpe\" \"vocab\" but no \"scores\"; give them as a JSON array "
                       "of numbers, one per piece in id order (docs/FORMAT.md)");
        text.scores = read_floats(path, metadata, "scores");
        check_scores(text.scores, text.vocab.size(), path + ": __metadata__ \"scores\"");
    } else if (has("scores")) {
        fail(path, ": __metadata__ \"scores\" needs a \"vocab\" to score the pieces of (docs/FORMAT.md)");
    }
    if (encoder_decoder && !text.vocab.empty() && text.src_vocab.empty() && config.src_vocab_size != config.tgt_vocab_size)
        fail(path, ": __metadata__ has a \"vocab\" of ", text.vocab.size(), " tokens for both sides, but 'src_vocab_size' is ",
             config.src_vocab_size, "; give the source vocabulary as \"src_vocab\" (docs/FORMAT.md)");
    if (has("prompt_suffix")) {
        if (config.arch != Architecture::DecoderOnly)
            fail(path, ": __metadata__ \"prompt_suffix\" is for decoder_only models; this one is ",
                 architecture_name(config.arch));
        text.prompt_suffix = metadata.at("prompt_suffix");
        if (text.vocab.empty()) fail(path, ": __metadata__ \"prompt_suffix\" needs a \"vocab\" to be read with");
        try {
            // Read as a user's text is, but never as <unk>: a suffix must be typeable.
            if (Tokenizer(text.vocab, text.tokenizer, text.merges, text.scores).encode_exactly(text.prompt_suffix).empty()) fail("it holds no token");
        } catch (const Error& error) {
            fail(path, ": __metadata__ \"prompt_suffix\" \"", text.prompt_suffix, "\": ", error.message());
        }
    }
    if (has("train_max_len")) {
        const std::string& value = metadata.at("train_max_len");
        int64_t length = 0;
        auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
        if (error != std::errc() || end != value.data() + value.size() || length < 1 || length > (int64_t{1} << 24))
            fail(path, ": __metadata__ \"train_max_len\" must be a whole number in 1..16777216 (as a string), got \"",
                 value, "\"");
        text.train_max_len = length;
    }
    return text;
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path, FileReading reading) {
    Checkpoint checkpoint;
    refuse_other_model_files(path);  // a llama2.c .bin, a torch file, a model folder, ...: named, with its converter
    checkpoint.file_ = SafetensorsFile::read(path, reading);
    const auto& metadata = checkpoint.file_.metadata();
    auto config = metadata.find("config");
    if (config == metadata.end()) refuse_safetensors_without_config(path, checkpoint.file_);
    try {
        checkpoint.config_ = parse_config(config->second);
    } catch (const Error& error) {
        fail(path, ": ", error.message());
    }
    checkpoint.text_ = read_text_metadata(path, metadata, checkpoint.config_);
    return checkpoint;
}

Tensor Checkpoint::take(const std::string& name, const Shape& expected) {
    if (!file_.contains(name))
        fail(file_.path(), ": missing tensor '", name, "' (expected F32 ", shape_string(expected), ")");
    const StoredTensor& stored = file_.info(name);
    if (stored.shape != expected)
        fail(file_.path(), ": tensor '", name, "' has shape ", shape_string(stored.shape), "; expected ",
             shape_string(expected));
    const Tensor tensor = file_.read_float(name);  // const: a tensor read in place is checked where it lies
    for (int64_t i = 0; i < tensor.numel(); ++i)
        if (!std::isfinite(tensor.data()[i]))
            fail(file_.path(), ": tensor '", name, "' holds a non-finite value (",
                 std::isnan(tensor.data()[i]) ? "NaN" : tensor.data()[i] > 0 ? "inf" : "-inf", ") at flat index ", i);
    taken_.insert(name);
    counts_.float32 += tensor.numel();
    return tensor;
}

void Checkpoint::quantize_weights(int64_t group) {
    if (group < 1) fail("Checkpoint::quantize_weights: the group size must be >= 1, got ", group);
    quantize_group_ = group;
}

Tensor Checkpoint::take_weight(const std::string& name, const Shape& expected, Q8Matrix& q8) {
    const std::string scale_name = name + ".scale", path = file_.path();
    const bool int8 = file_.contains(name) && file_.info(name).dtype == "I8";
    if (!int8 && file_.contains(scale_name))
        fail(path, ": tensor '", scale_name, "' scales a Q8_0 weight, but '", name, "' is ",
             file_.contains(name) ? file_.info(name).dtype : "missing", ", not I8 (docs/FORMAT.md)");
    if (!int8) {
        const Tensor weight = take(name, expected);
        if (quantize_group_ == 0) return weight;
        if (expected[1] % quantize_group_ != 0)
            fail(path, ": tensor '", name, "' ", shape_string(expected), " cannot be quantized in groups of ",
                 quantize_group_, ": the group size must divide its input axis (", expected[1], ")");
        q8 = quantize_q8_0(weight.matrix(), quantize_group_);
        counts_.float32 -= weight.numel();
        counts_.int8 += weight.numel();
        counts_.scales += weight.numel() / quantize_group_;
        return dequantize_q8_0(q8.view());
    }
    const StoredTensor& stored = file_.info(name);
    const int64_t out = expected[0], in = expected[1];
    if (stored.shape != expected)
        fail(path, ": tensor '", name, "' has shape ", shape_string(stored.shape), "; expected ", shape_string(expected));
    if (!file_.contains(scale_name))
        fail(path, ": tensor '", name, "' is I8 (Q8_0) but its scales '", scale_name, "' (F32 [", out, ", ", in,
             " / group size]) are missing (docs/FORMAT.md)");
    const StoredTensor& scale = file_.info(scale_name);
    if (scale.shape.size() != 2 || scale.shape[0] != out || scale.shape[1] < 1 || in % scale.shape[1] != 0)
        fail(path, ": tensor '", scale_name, "' has shape ", shape_string(scale.shape), "; expected [", out,
             ", groups] with groups dividing ", in, " (the group size G = ", in, " / groups; docs/FORMAT.md)");
    if (scale.dtype != "F32") fail(path, ": tensor '", scale_name, "' has dtype ", scale.dtype, "; expected F32");
    const Tensor scales = file_.read_float(scale_name);
    q8 = Q8Matrix::in_place(path + ": tensor '" + name + "'", out, in, in / scale.shape[1], file_.read_i8(name),
                            file_.storage(), scales.values());
    taken_.insert(name);
    taken_.insert(scale_name);
    counts_.int8 += out * in;
    counts_.scales += scales.numel();
    return dequantize_q8_0(q8.view());
}

namespace {

// Why the config leaves out a tensor of this name, when one of the optional
// layer-form keys does (docs/FORMAT.md section 1), or "".
std::string left_out_by(const std::string& name, const ModelConfig& config) {
    const bool head = name == "lm_head.weight" || name == "generator.weight";
    const bool head_bias = name == "lm_head.bias" || name == "generator.bias";
    const bool norm_bias = name.ends_with(".bias") && name.find(".norm") != std::string::npos;
    const bool fused = name.ends_with(".in_proj_weight") || name.ends_with(".in_proj_bias");
    const bool separate = name.find("_proj.") != std::string::npos && name.find(".out_proj.") == std::string::npos;
    const bool linear3 = name.find(".linear3.") != std::string::npos;
    const bool stack_bias = !head_bias && !norm_bias && (name.ends_with(".bias") || name.ends_with(".in_proj_bias"));
    if (head && config.tie_embeddings) return "; the config's 'tie_embeddings' is true: the head is the token embedding";
    if (head_bias && !config.head_bias) return "; the config's 'head_bias' is false";
    if (norm_bias && !config.norm_bias) return "; the config's 'norm_bias' is false";
    if (fused && config.qkv == QkvLayout::Separate) return "; the config's 'qkv' is \"separate\" (q_proj, k_proj, v_proj)";
    if (separate && config.qkv == QkvLayout::Fused) return "; the config's 'qkv' is \"fused\" (in_proj_weight)";
    if (linear3 && config.activation != Activation::SwiGlu)
        return std::string("; the config's 'activation' is \"") + activation_name(config.activation) +
               "\", not \"swiglu\": no linear3";
    if (stack_bias && !config.bias) return "; the config's 'bias' is false";
    return "";
}

}  // namespace

void Checkpoint::refuse_unknown() const {
    for (const auto& [name, stored] : file_.tensors())
        if (!taken_.count(name))
            fail(file_.path(), ": unknown tensor '", name, "' ", shape_string(stored.shape), " (not used by the ",
                 architecture_name(config_.arch), " model that this config describes", left_out_by(name, config_),
                 ")");
}

}  // namespace tinyformer
