#include "tools/cli/terminal_text.h"

#include "engine/io/utf8.h"

namespace tinyformer::cli {

std::string terminal_text(std::string_view text) { return shown_text(text); }

std::string token_for_table(std::string_view token) {
    const Utf8Character first = token.empty() ? Utf8Character{} : utf8_character(token, 0);
    const bool one_character = !token.empty() && (first.length == token.size() || (first.length == 0 && token.size() == 1));
    // appended: g++ 12 -O3 warns (-Wrestrict, wrongly) on "literal" + std::string
    return one_character ? std::string("'").append(shown_text(token)).append("'") : shown_text(token);
}

size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes) {
    return show_text(text, max_bytes, [&](const char* piece, size_t length) { std::fwrite(piece, 1, length, out); });
}

}  // namespace tinyformer::cli
