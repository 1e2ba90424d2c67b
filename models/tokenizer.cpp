#include "models/tokenizer.h"

#include "engine/error.h"

#include <cstdio>

namespace tinyformer {

namespace {

// The character at text[at] for messages: printable ASCII as itself, anything
// else as its bytes in hex (a UTF-8 character is several bytes).
std::string describe_character(const std::string& text, size_t at, size_t length) {
    const std::string character = text.substr(at, length);
    std::string described = "'";
    described.append(character).append("'");
    if (length == 1 && character[0] >= 0x20 && character[0] < 0x7F) return described;
    described.append(" (bytes");
    for (unsigned char byte : character) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, " %02X", byte);
        described.append(buffer);
    }
    return described.append(")");
}

// Bytes in the UTF-8 character starting with `lead` (1 for anything invalid).
size_t utf8_length(unsigned char lead) {
    if (lead >= 0xF0 && lead < 0xF8) return 4;
    if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
    if (lead >= 0xC0) return 2;
    return 1;
}

}  // namespace

Tokenizer::Tokenizer(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {
    if (vocab_.empty()) fail("tokenizer: the checkpoint has no vocabulary (__metadata__ \"vocab\")");
    for (size_t id = 0; id < vocab_.size(); ++id) {
        if (vocab_[id].empty()) fail("tokenizer: vocabulary entry ", id, " is an empty string");
        if (!ids_.emplace(vocab_[id], static_cast<int64_t>(id)).second)
            fail("tokenizer: vocabulary entry ", id, " '", vocab_[id], "' appears twice");
    }
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool map_unknown, int64_t* unknown_count) const {
    std::vector<int64_t> ids;
    for (size_t at = 0; at < text.size();) {
        const size_t length = std::min(utf8_length(static_cast<unsigned char>(text[at])), text.size() - at);
        auto found = ids_.find(text.substr(at, length));
        if (found != ids_.end() && !(found->first.size() > 1 && found->first.front() == '<')) {
            ids.push_back(found->second);
        } else if (map_unknown && contains("<unk>")) {
            ids.push_back(id_of("<unk>"));
            if (unknown_count) ++*unknown_count;
        } else {
            fail("tokenizer: character ", describe_character(text, at, length), " at position ", at, " of \"", text,
                 "\" is not in the model's vocabulary");
        }
        at += length;
    }
    return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
    std::string text;
    for (int64_t id : ids) text += token(id);
    return text;
}

const std::string& Tokenizer::token(int64_t id) const {
    if (id < 0 || id >= size()) fail("tokenizer: token id ", id, " is outside the vocabulary 0..", size() - 1);
    return vocab_[static_cast<size_t>(id)];
}

int64_t Tokenizer::id_of(const std::string& token) const {
    auto found = ids_.find(token);
    if (found == ids_.end()) fail("tokenizer: the vocabulary has no token '", token, "'");
    return found->second;
}

}  // namespace tinyformer
