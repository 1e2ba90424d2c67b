// libFuzzer harness: text in and out of a model — the tokenizer
// (models/tokenizers/tokenizer.cpp) built from fuzzed vocabulary strings, encoding a
// fuzzed input, decoding it back, the tokens' labels — and the CLI's
// terminal text rule (tools/cli/terminal_text.h) on every one of those
// strings and on the error messages. The input is
//   [flags: bit 0 whitespace tokenizer, bit 1 map unknown to <unk>, bit 2 gpt2_bpe]
//   [vocabulary entries separated by '\n'] 0x00 [the text to encode, any bytes]
// With bit 2 (gpt2_bpe, models/tokenizers/gpt2_bpe.h) the vocabulary is the 256 one-byte
// tokens and each entry is a merge "left right" of two tokens' strings (an
// entry that is not one is skipped; the merged token is added when new); a
// valid UTF-8 input must decode back to the same bytes, and every label must
// be valid UTF-8 without a C0 or DEL byte.
// Findings (each aborts): another exception type than tinyformer::Error; an
// id outside the vocabulary; an input encoded without <unk> that does not
// decode back to itself (char: the same bytes; whitespace: its words joined
// by single spaces); an error message that does not hold the whole input;
// terminal text that is not valid UTF-8, holds a C0/DEL byte, a C1 or bidi
// control code point, differs from its streaming twin, or changes a string
// that needed no escape. Seeds in tests/fuzz/corpus/text/: "valid-*" encode,
// "bad-*" are refused, "any-*" may be either (they hold a control character
// in a token, which the vocabulary rules of docs/FORMAT.md may refuse).
#include "models/tokenizers/gpt2_bpe.h"
#include "models/tokenizers/tokenizer.h"

#include "engine/error.h"
#include "tests/fuzz/harnesses.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

FuzzCounts fuzz_text_counts;

namespace {

using tinyformer::cli::terminal_text;

// Written here, not taken from the code under test: the next UTF-8
// character's code point and length, or length 0 for an invalid byte.
size_t next_code_point(std::string_view s, size_t at, uint32_t* code_point) {
    const auto b0 = static_cast<unsigned char>(s[at]);
    size_t length = b0 < 0x80 ? 1 : b0 >= 0xC2 && b0 < 0xE0 ? 2 : b0 >= 0xE0 && b0 < 0xF0 ? 3 : b0 >= 0xF0 && b0 < 0xF5 ? 4 : 0;
    if (length == 0 || at + length > s.size()) return 0;
    uint32_t value = length == 1 ? b0 : b0 & (0x7F >> length);
    for (size_t i = 1; i < length; ++i) {
        const auto b = static_cast<unsigned char>(s[at + i]);
        if ((b & 0xC0) != 0x80) return 0;
        value = (value << 6) | (b & 0x3F);
    }
    static const uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < kSmallest[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
    *code_point = value;
    return length;
}

bool is_escaped_code_point(uint32_t c) {
    return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
           (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// Valid UTF-8 holding nothing the rule escapes.
bool is_clean(std::string_view s) {
    for (size_t at = 0; at < s.size();) {
        uint32_t c = 0;
        const size_t length = next_code_point(s, at, &c);
        if (length == 0 || is_escaped_code_point(c)) return false;
        at += length;
    }
    return true;
}

void check_terminal_text(const std::string& text) {
    const std::string shown = terminal_text(text);
    if (!is_clean(shown)) std::abort();                    // a control or invalid byte reached the terminal
    if (is_clean(text) && shown != text) std::abort();     // valid, harmless text must stay as it is
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* stream = open_memstream(&buffer, &size);
    if (!stream) return;
    const size_t consumed = tinyformer::cli::write_terminal_text(stream, text);
    std::fclose(stream);
    const bool same = consumed == text.size() && std::string(buffer, size) == shown;
    std::free(buffer);
    if (!same) std::abort();  // the streaming twin prints something else
}

// Valid UTF-8 (next_code_point's rules).
bool is_valid_utf8(std::string_view s) {
    uint32_t c = 0;
    for (size_t at = 0; at < s.size();) {
        const size_t length = next_code_point(s, at, &c);
        if (length == 0) return false;
        at += length;
    }
    return true;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string words_joined(const std::string& text) {
    std::string joined;
    for (size_t at = 0; at < text.size();) {
        if (is_space(text[at])) {
            ++at;
            continue;
        }
        size_t end = at;
        while (end < text.size() && !is_space(text[end])) ++end;
        joined.append(joined.empty() ? "" : " ").append(text, at, end - at);
        at = end;
    }
    return joined;
}

// gpt2_bpe: the one-byte tokens, the entries as merges (see the header).
int fuzz_gpt2_bpe(const std::vector<std::string>& entries, const std::string& input) {
    using namespace tinyformer;
    std::vector<std::string> vocab;
    for (int byte = 0; byte < 256; ++byte) vocab.push_back(bytes_as_token(std::string(1, static_cast<char>(byte))));
    std::vector<std::string> merges;
    for (const std::string& entry : entries) {
        const size_t space = entry.find(' ');
        if (space == std::string::npos || entry.find(' ', space + 1) != std::string::npos) continue;
        const std::string left = entry.substr(0, space), right = entry.substr(space + 1), merged = left + right;
        auto known = [&](const std::string& token) { return std::find(vocab.begin(), vocab.end(), token) != vocab.end(); };
        if (left.empty() || right.empty() || !known(left) || !known(right)) continue;
        if (std::find(merges.begin(), merges.end(), entry) != merges.end()) continue;
        if (!known(merged)) vocab.push_back(merged);
        merges.push_back(entry);
    }
    try {
        const Tokenizer tokenizer(vocab, TokenizerKind::Gpt2Bpe, merges);
        std::vector<int64_t> ids;
        try {
            ids = tokenizer.encode(input);
        } catch (const Error& error) {
            check_terminal_text(error.message());
            if (is_valid_utf8(input)) std::abort();  // every byte has its token: valid text always encodes
            throw;
        }
        for (int64_t id : ids) {
            if (id < 0 || id >= tokenizer.size()) std::abort();
            const std::string label = tokenizer.label(id);
            for (size_t at = 0; at < label.size();) {
                uint32_t c = 0;
                const size_t length = next_code_point(label, at, &c);
                if (length == 0 || c < 0x20 || c == 0x7F) std::abort();  // a label is printable text
                at += length;
            }
            check_terminal_text(label);
        }
        if (tokenizer.decode(ids) != input) std::abort();  // no round trip
        ++fuzz_text_counts.accepted;
    } catch (const Error& error) {
        check_terminal_text(error.message());
        ++fuzz_text_counts.refused;
    }
    return 0;
}

}  // namespace

int fuzz_text_one_input(const uint8_t* data, size_t size) {
    using namespace tinyformer;
    if (size == 0) {
        ++fuzz_text_counts.refused;
        return 0;
    }
    const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    const bool words = data[0] & 1, map_unknown = data[0] & 2;
    const size_t split = std::min(bytes.find('\0'), bytes.size());
    const std::string input = split < bytes.size() ? bytes.substr(split + 1) : "";
    std::vector<std::string> vocab;
    for (size_t at = 0; at <= split;) {
        const size_t end = std::min(bytes.find('\n', at), split);
        vocab.push_back(bytes.substr(at, end - at));
        at = end + 1;
    }
    check_terminal_text(input);
    for (const std::string& token : vocab) check_terminal_text(token);
    if (data[0] & 4) return fuzz_gpt2_bpe(vocab, input);
    try {
        const Tokenizer tokenizer(vocab, words ? TokenizerKind::Whitespace : TokenizerKind::Char);
        int64_t unknown = 0;
        std::vector<int64_t> ids;
        try {
            ids = tokenizer.encode(input, map_unknown, &unknown);
        } catch (const Error& error) {
            check_terminal_text(error.message());
            if (error.message().find(input) == std::string::npos) std::abort();  // the message must name the whole input
            throw;
        }
        for (int64_t id : ids) {
            if (id < 0 || id >= tokenizer.size()) std::abort();
            check_terminal_text(tokenizer.token(id));  // a label
        }
        const std::string decoded = tokenizer.decode(ids);
        check_terminal_text(decoded);
        if (unknown == 0 && decoded != (words ? words_joined(input) : input)) std::abort();  // no round trip
        ++fuzz_text_counts.accepted;
    } catch (const Error& error) {
        check_terminal_text(error.message());
        ++fuzz_text_counts.refused;
    }
    return 0;
}

#ifndef TINYFORMER_CORPUS_TEST
// Printed at exit: how many inputs were encoded and how many refused.
void print_counts() {
    std::fprintf(stderr, "fuzz_text: accepted %lld, refused %lld\n", fuzz_text_counts.accepted, fuzz_text_counts.refused);
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::atexit(print_counts);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz_text_one_input(data, size); }
#endif
