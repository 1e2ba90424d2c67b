#include "models/text.h"

#include <charconv>

namespace tinyformer {

namespace {

// Built with append: g++ 12 -O3 warns (-Wrestrict, wrongly) on "literal" + std::string.
std::string id_label(int64_t id) { return std::string("#").append(std::to_string(id)); }

void check_ids(const std::vector<int64_t>& ids, int64_t vocabulary, const char* what) {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocabulary)
            fail(what, " token id ", ids[i], " at position ", i, " is outside the vocabulary 0..", vocabulary - 1);
}

int64_t input_vocabulary_size(const ModelConfig& config) {
    return config.arch == Architecture::EncoderDecoder ? config.src_vocab_size : config.vocab_size;
}

int64_t output_vocabulary_size(const ModelConfig& config) {
    return config.arch == Architecture::EncoderDecoder ? config.tgt_vocab_size : config.vocab_size;
}

}  // namespace

ModelText::ModelText(const Model& model) {
    const TextMetadata& text = model.text;
    const int64_t bos_id = model.config.bos_id;  // sentencepiece_bpe's decode: BOS is no text
    if (!text.input_vocab().empty()) input_.emplace(text.input_vocab(), text.tokenizer, text.merges, text.scores, bos_id);
    if (text.src_vocab.empty()) {
        output_ = input_;  // one vocabulary for both sides: built (and checked) once
    } else if (!text.output_vocab().empty()) {
        output_.emplace(text.output_vocab(), text.tokenizer, text.merges, text.scores, bos_id);
    }
}

std::vector<int64_t> ModelText::encode_input(const std::string& text, bool map_unknown, int64_t* unknown_count) const {
    if (!input_) fail("the checkpoint has no vocabulary (__metadata__ \"vocab\"), so it cannot read text; give token ids (--ids)");
    return input_->encode(text, map_unknown, unknown_count);
}

std::vector<int64_t> ModelText::encode_output(const std::string& text) const {
    if (!output_)
        fail("the checkpoint has no vocabulary (__metadata__ \"vocab\"), so it cannot read a target text; give token ids (--target-ids)");
    return output_->encode(text);
}

namespace {

void decode_piece_with(const std::optional<Tokenizer>& tokenizer, const std::vector<int64_t>& ids, size_t i,
                       std::string& out) {
    if (tokenizer) return tokenizer->decode_piece(ids, i, out);
    out.append(i ? "," : "").append(std::to_string(ids.at(i)));  // no vocabulary: the ids, "5,17,3"
}

std::string decode_with(const std::optional<Tokenizer>& tokenizer, const std::vector<int64_t>& ids) {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) decode_piece_with(tokenizer, ids, i, text);
    return text;
}

}  // namespace

std::string ModelText::decode_input(const std::vector<int64_t>& ids) const { return decode_with(input_, ids); }

std::string ModelText::decode_output(const std::vector<int64_t>& ids) const { return decode_with(output_, ids); }

void ModelText::decode_output_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const {
    decode_piece_with(output_, ids, i, out);
}

std::string ModelText::input_label(int64_t id) const { return input_ ? input_->label(id) : id_label(id); }

std::string ModelText::output_label(int64_t id) const { return output_ ? output_->label(id) : id_label(id); }

std::vector<int64_t> framed_input(const Model& model, std::vector<int64_t> tokens) {
    const ModelConfig& config = model.config;
    check_ids(tokens, input_vocabulary_size(config), "input");
    if (config.arch == Architecture::DecoderOnly) {
        if (!model.text.prompt_suffix.empty()) {
            const std::vector<int64_t> suffix =
                Tokenizer(model.text.vocab, model.text.tokenizer, model.text.merges, model.text.scores).encode_exactly(model.text.prompt_suffix);
            if (tokens.size() < suffix.size() || !std::equal(suffix.rbegin(), suffix.rend(), tokens.rbegin()))
                tokens.insert(tokens.end(), suffix.begin(), suffix.end());
        }
        if (config.bos_id >= 0) tokens.insert(tokens.begin(), config.bos_id);
    }
    if (tokens.empty())
        fail("the input is empty; ", config.arch == Architecture::DecoderOnly ? "a decoder_only model without bos_id" : "the encoder",
             " needs at least one token");
    return tokens;
}

std::vector<int64_t> model_input(const Model& model, std::vector<int64_t> tokens) {
    const ModelConfig& config = model.config;
    tokens = framed_input(model, std::move(tokens));
    const auto length = static_cast<int64_t>(tokens.size());
    // With no positional encoding max_len bounds nothing (docs/FORMAT.md);
    // the forward pass's memory check still applies.
    if (config.pos_encoding != PositionalEncoding::None && length > config.max_len)
        fail("an input of ", length, " tokens", config.arch == Architecture::DecoderOnly ? " (with <bos> and the prompt suffix)" : "",
             " is longer than the model's max_len of ", config.max_len);
    return tokens;
}

std::vector<int64_t> decoder_input(const Model& model, const std::vector<int64_t>& target) {
    const ModelConfig& config = model.config;
    check_ids(target, output_vocabulary_size(config), "target");
    std::vector<int64_t> tokens;
    if (config.bos_id >= 0) tokens.push_back(config.bos_id);
    tokens.insert(tokens.end(), target.begin(), target.end());
    if (tokens.empty())
        fail("the target is empty and the model's config has no bos_id to start the decoder with; give a target");
    if (config.pos_encoding != PositionalEncoding::None && static_cast<int64_t>(tokens.size()) > config.max_len)
        fail("the decoder reads ", tokens.size(), " tokens", config.bos_id >= 0 ? " (<bos> + target)" : "",
             " but the model's max_len is ", config.max_len);
    return tokens;
}

void check_output_ids(const Model& model, const std::vector<int64_t>& target) {
    check_ids(target, output_vocabulary_size(model.config), "target");
}

std::string length_warning(const Model& model, int64_t tokens) {
    const int64_t trained = model.text.train_max_len;
    if (trained == 0 || tokens <= trained) return "";
    return "the input is " + std::to_string(tokens) + " tokens, longer than the " + std::to_string(trained) +
           " the model was trained on (train_max_len); its output may be wrong";
}

std::vector<int64_t> parse_ids(const std::string& list, const std::string& what) {
    std::vector<int64_t> ids;
    if (list.empty()) fail(what, ": expected token ids separated by commas, e.g. 5,17,3; got nothing");
    size_t start = 0;
    while (true) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        int64_t id = 0;
        auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), id);
        if (item.empty() || error != std::errc() || end != item.data() + item.size())
            fail(what, ": '", item, "' (item ", ids.size(), " of \"", list,
                 "\") is not a token id; expected whole numbers separated by commas, e.g. 5,17,3");
        ids.push_back(id);
        if (comma == list.size()) break;
        start = comma + 1;
    }
    return ids;
}

}  // namespace tinyformer
