#include "models/tokenizers/tokenizer.h"

#include "engine/error.h"
#include "engine/io/utf8.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

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

// For the unknown character / word error: what the vocabulary can read. A
// char vocabulary of up to 100 ordinary tokens is shown whole, in its order;
// any other, by the (up to) 8 ordinary tokens nearest to `unknown` in sorted
// (code point) order, e.g. "cat" "cats" "cow" for "catt".
std::string vocabulary_hint(const std::vector<std::string>& vocab, const std::map<std::string, int64_t>& ids,
                            const std::string& unknown, bool chars) {
    std::vector<std::string> ordinary;
    for (const std::string& token : vocab)
        if (!is_special_token(token)) ordinary.push_back(token);
    if (chars && ordinary.size() <= 100) {
        std::string all;
        for (const std::string& token : ordinary) all += token;
        return text_of("; it reads the ", ordinary.size(), " characters \"", all, "\"");
    }
    std::vector<std::string> below, above;
    for (auto it = ids.lower_bound(unknown); it != ids.end() && above.size() < 4; ++it)
        if (!is_special_token(it->first)) above.push_back(it->first);
    for (auto it = ids.lower_bound(unknown); it != ids.begin() && below.size() < 8 - above.size();)
        if (!is_special_token((--it)->first)) below.insert(below.begin(), it->first);
    std::string nearest;
    for (const auto* side : {&below, &above})
        for (const std::string& token : *side) nearest.append(nearest.empty() ? "'" : " '").append(token).append("'");
    return text_of("; the nearest of its ", ordinary.size(), " ordinary tokens in sorted order: ", nearest);
}

// The character index of byte `at` of UTF-8 text (continuation bytes do not count).
size_t character_index(const std::string& text, size_t at) {
    size_t index = 0;
    for (size_t i = 0; i < at; ++i) index += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    return index;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool is_control(char32_t code_point) { return code_point < 0x20 || (code_point >= 0x7F && code_point <= 0x9F); }

// A token for a message: in double quotes, cut after 60 bytes (at a character boundary).
std::string quoted(const std::string& token) {
    constexpr size_t kShown = 60;
    // Built with append: g++ 12 -O3 warns (-Wrestrict, wrongly) on "literal" + std::string.
    std::string text("\"");
    if (token.size() <= kShown) return text.append(token).append("\"");
    size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80) --cut;
    return text.append(token, 0, cut).append("\"... (").append(std::to_string(token.size())).append(" bytes)");
}

// The rule `token` breaks as the entry of a `kind` vocabulary, or "" when it
// breaks none (duplicates are the caller's: they need the other entries).
// The message shows the token only when it is text that prints as it is (no
// control character, valid UTF-8); else the rule names the byte.
std::string broken_rule(const std::string& token, TokenizerKind kind) {
    if (token.empty()) return "\"\" is an empty string; every token needs at least one character";
    size_t characters = 0, first_space = std::string::npos;
    for (size_t at = 0; at < token.size(); ++characters) {
        const Utf8Character character = utf8_character(token, at);
        if (character.length == 0)
            return text_of("is not valid UTF-8 (byte ", at, " of ", token.size(),
                           " starts no character; a lone surrogate is invalid too); tokens are UTF-8 text");
        // A char vocabulary's "\n" and "\t" are a text's newline and tab, tokens of their own
        // (nanoGPT's shakespeare_char has "\n"); every other control is refused.
        const bool newline_or_tab_token = kind == TokenizerKind::Char && (token == "\n" || token == "\t");
        if (is_control(character.code_point) && kind != TokenizerKind::SentencePieceBpe && !newline_or_tab_token) {
            char code[16];
            std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(character.code_point));
            return text_of("holds the control character ", code, " at byte ", at, " of ", token.size(),
                           "; no token may hold a control character (C0, DEL or C1; a \"char\" vocabulary's "
                           "\"\\n\" and \"\\t\" excepted)");
        }
        if (is_space(token[at]) && first_space == std::string::npos) first_space = at;
        at += character.length;
    }
    if (kind == TokenizerKind::Whitespace && first_space != std::string::npos)
        return text_of(quoted(token), " holds whitespace at byte ", first_space,
                       "; the \"whitespace\" tokenizer splits text there, so no text could ever be read as it");
    std::string bytes;
    if (kind == TokenizerKind::Gpt2Bpe && !token_as_bytes(token, bytes))
        return text_of(quoted(token), " holds a character that stands for no byte; a \"gpt2_bpe\" token is written "
                       "one character per byte (printable Latin-1 as itself, the other bytes as U+0100..U+0143: "
                       "models/tokenizers/gpt2_bpe.h)");
    if (kind == TokenizerKind::Char && characters != 1 && !is_special_token(token))
        return text_of(quoted(token), " is ", characters, " characters; a \"char\" vocabulary's tokens are one character each, "
                       "special tokens (\"<\" + [a-z0-9_]+ + \">\") excepted; use tokenizer \"whitespace\" for words");
    return "";
}

}  // namespace

TokenizerKind tokenizer_kind(const std::string& name) {
    if (name == "char") return TokenizerKind::Char;
    if (name == "whitespace") return TokenizerKind::Whitespace;
    if (name == "gpt2_bpe") return TokenizerKind::Gpt2Bpe;
    if (name == "sentencepiece_bpe") return TokenizerKind::SentencePieceBpe;
    fail("tokenizer: \"", name, "\" is not a tokenizer; expected one of \"char\", \"whitespace\", \"gpt2_bpe\", "
         "\"sentencepiece_bpe\" (docs/FORMAT.md)");
}

const char* tokenizer_kind_name(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::Char: return "char";
        case TokenizerKind::Whitespace: return "whitespace";
        case TokenizerKind::Gpt2Bpe: return "gpt2_bpe";
        case TokenizerKind::SentencePieceBpe: return "sentencepiece_bpe";
    }
    return "?";
}

bool is_special_token(const std::string& token) {
    if (token.size() < 3 || token.front() != '<' || token.back() != '>') return false;
    return std::all_of(token.begin() + 1, token.end() - 1,
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

void check_vocabulary(const std::vector<std::string>& vocab, TokenizerKind kind, const std::string& where) {
    if (vocab.empty()) fail(where, " has no entries; a vocabulary holds at least one token");
    std::map<std::string_view, size_t> seen;
    for (size_t index = 0; index < vocab.size(); ++index) {
        const std::string& token = vocab[index];
        const std::string rule = broken_rule(token, kind);
        if (!rule.empty()) fail(where, " entry ", index, " ", rule, " (docs/FORMAT.md, vocabulary rules)");
        auto [earlier, first_time] = seen.emplace(token, index);
        if (!first_time)
            fail(where, " entry ", index, " ", quoted(token), " is the same token as entry ", earlier->second,
                 "; no two entries may be equal (docs/FORMAT.md, vocabulary rules)");
    }
}

Tokenizer::Tokenizer(std::vector<std::string> vocab, TokenizerKind kind, const std::vector<std::string>& merges,
                     const std::vector<float>& scores, int64_t bos_id)
    : vocab_(std::move(vocab)), kind_(kind) {
    check_vocabulary(vocab_, kind_, "tokenizer: the vocabulary");
    if (kind_ != TokenizerKind::Gpt2Bpe && !merges.empty())
        fail("tokenizer: merges are for the \"gpt2_bpe\" tokenizer; this one is \"", tokenizer_kind_name(kind_), "\"");
    if (kind_ != TokenizerKind::SentencePieceBpe && !scores.empty())
        fail("tokenizer: scores are for the \"sentencepiece_bpe\" tokenizer; this one is \"", tokenizer_kind_name(kind_), "\"");
    if (kind_ == TokenizerKind::Gpt2Bpe) bpe_ = std::make_shared<const BytePairEncoder>(vocab_, merges, "tokenizer: merges");
    if (kind_ == TokenizerKind::SentencePieceBpe)
        spm_ = std::make_shared<const SentencePieceBpe>(vocab_, scores, bos_id, "tokenizer:");
    for (size_t id = 0; id < vocab_.size(); ++id) ids_.emplace(vocab_[id], static_cast<int64_t>(id));
}

namespace {

// A C0 control character or DEL stands in a vocabulary as its picture from
// Unicode's Control Pictures block (tokens hold no control character): byte
// c < 0x20 -> U+2400 + c ("\n" -> U+240A), DEL -> U+2421, as UTF-8. Any other
// byte: "" (no picture).
std::string control_picture(char byte) {
    const auto code = static_cast<unsigned char>(byte);
    if (code >= 0x20 && code != 0x7F) return "";
    const unsigned picture = code == 0x7F ? 0x2421u : 0x2400u + code;
    return {static_cast<char>(0xE0 | (picture >> 12)), static_cast<char>(0x80 | ((picture >> 6) & 0x3F)),
            static_cast<char>(0x80 | (picture & 0x3F))};
}

}  // namespace

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool map_unknown, int64_t* unknown_count) const {
    if (kind_ == TokenizerKind::Gpt2Bpe) return bpe_->encode(text);  // nothing is unknown
    if (kind_ == TokenizerKind::SentencePieceBpe) {
        const auto unk = ids_.find("<unk>");
        return spm_->encode(text, map_unknown && unk != ids_.end() ? unk->second : -1, unknown_count);
    }
    if (kind_ == TokenizerKind::Whitespace) return encode_words(text, /*exactly=*/false, unknown_count);
    std::vector<int64_t> ids;
    for (size_t at = 0; at < text.size();) {
        // One character (engine/io/utf8.h's decoder); a byte that starts none is one unknown "character" of its own.
        const size_t length = std::max<size_t>(utf8_character(text, at).length, 1);
        auto found = ids_.find(text.substr(at, length));
        if (found == ids_.end() && length == 1) found = ids_.find(control_picture(text[at]));
        if (found != ids_.end() && !is_special_token(found->first)) {
            ids.push_back(found->second);
        } else if (map_unknown && contains("<unk>")) {
            ids.push_back(id_of("<unk>"));
            if (unknown_count) ++*unknown_count;
        } else {
            fail("tokenizer: character ", describe_character(text, at, length), " at position ", ids.size(), " of \"",
                 text, "\" is not in the model's vocabulary",
                 vocabulary_hint(vocab_, ids_, text.substr(at, length), true));
        }
        at += length;
    }
    return ids;
}

std::vector<int64_t> Tokenizer::encode_exactly(const std::string& text) const {
    if (kind_ == TokenizerKind::Gpt2Bpe) return bpe_->encode(text);
    if (kind_ == TokenizerKind::SentencePieceBpe) return spm_->encode(text);
    return kind_ == TokenizerKind::Whitespace ? encode_words(text, /*exactly=*/true, nullptr) : encode(text);
}

std::vector<int64_t> Tokenizer::encode_words(const std::string& text, bool exactly, int64_t* unknown_count) const {
    std::vector<int64_t> ids;
    int64_t word_index = 0;
    for (size_t at = 0; at < text.size();) {
        if (is_space(text[at])) {
            ++at;
            continue;
        }
        size_t end = at;
        while (end < text.size() && !is_space(text[end])) ++end;
        const std::string word = text.substr(at, end - at);
        auto found = ids_.find(word);
        if (found != ids_.end() && !is_special_token(word)) {
            ids.push_back(found->second);
        } else if (exactly) {
            fail("tokenizer: word '", word, "' (word ", word_index, ", at character ", at, " of \"", text, "\") is not ",
                 found != ids_.end() ? "an ordinary token (special tokens are never read from text)"
                                     : "in the model's vocabulary");
        } else if (contains("<unk>")) {
            ids.push_back(id_of("<unk>"));
            if (unknown_count) ++*unknown_count;
        } else {
            fail("tokenizer: word '", word, "' (word ", word_index, ", at character ", character_index(text, at), " of \"",
                 text, "\") is not in the model's vocabulary, which has no <unk>",
                 vocabulary_hint(vocab_, ids_, word, false));
        }
        ++word_index;
        at = end;
    }
    return ids;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) decode_piece(ids, i, text);
    return text;
}

void Tokenizer::decode_piece(const std::vector<int64_t>& ids, size_t i, std::string& out) const {
    const int64_t id = ids.at(i);
    token(id);  // the range check
    switch (kind_) {
    case TokenizerKind::SentencePieceBpe: spm_->decode_piece(ids, i, out); return;
    case TokenizerKind::Gpt2Bpe: out += bpe_->bytes(id); return;
    case TokenizerKind::Whitespace:
        if (i > 0) out += ' ';  // the words joined with single spaces (no token is empty)
        out += token(id);
        return;
    case TokenizerKind::Char: out += token(id); return;
    }
}

std::string Tokenizer::label(int64_t id) const {
    const std::string& shown = token(id);
    if (kind_ == TokenizerKind::SentencePieceBpe) return spm_->label(id);
    if (kind_ == TokenizerKind::Gpt2Bpe) return bytes_label(bpe_->bytes(id));
    // A char vocabulary's newline and tab tokens as every view labels them, ↵ and ⇥ (bytes_label): a label is
    // one line, and the pictures' font (DejaVu Sans) draws these, not the Control Pictures ␊ and ␉.
    return shown == "\n" || shown == "\t" ? bytes_label(shown) : shown;
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
