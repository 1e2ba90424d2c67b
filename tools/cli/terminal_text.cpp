#include "tools/cli/terminal_text.h"

#include "engine/io/utf8.h"

#include <algorithm>

namespace tinyformer::cli {

std::string terminal_text(std::string_view text, NewlinesAndTabs newlines_and_tabs) {
    return shown_text(text, newlines_and_tabs);
}

std::string token_for_table(std::string_view token) {
    const Utf8Character first = token.empty() ? Utf8Character{} : utf8_character(token, 0);
    const bool one_character = !token.empty() && (first.length == token.size() || (first.length == 0 && token.size() == 1));
    // appended: g++ 12 -O3 warns (-Wrestrict, wrongly) on "literal" + std::string
    return one_character ? std::string("'").append(shown_text(token)).append("'") : shown_text(token);
}

std::string markdown_text(std::string_view text) {
    const std::string shown = shown_text(text, NewlinesAndTabs::Pictured);
    static constexpr std::string_view kMarkup = "\\`*_[]<>&|~";
    static constexpr std::string_view kPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    size_t digits = 0;
    while (digits < shown.size() && shown[digits] >= '0' && shown[digits] <= '9') ++digits;
    std::string escaped;
    for (size_t i = 0; i < shown.size(); ++i) {
        const char c = shown[i];
        const bool first_punctuation = i == 0 && kPunctuation.find(c) != std::string_view::npos;
        const bool list_number = digits > 0 && i == digits && (c == '.' || c == ')');
        if (kMarkup.find(c) != std::string_view::npos || first_punctuation || list_number) escaped.push_back('\\');
        escaped.push_back(c);
    }
    return escaped;
}

std::string markdown_code(std::string_view text) {
    const std::string shown = shown_text(text, NewlinesAndTabs::Pictured);
    size_t longest = 0, run = 0;
    for (char c : shown) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    const std::string fence(longest + 1, '`');
    const bool pad = !shown.empty() && (shown.front() == '`' || shown.back() == '`');
    return fence + (pad ? " " : "") + shown + (pad ? " " : "") + fence;
}

size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes) {
    return show_text(text, max_bytes, [&](const char* piece, size_t length) { std::fwrite(piece, 1, length, out); });
}

void TerminalStream::show(size_t bytes) {
    show_text(std::string_view(held_).substr(0, bytes), bytes,
              [&](const char* piece, size_t length) { std::fwrite(piece, 1, length, out_); }, newlines_and_tabs_);
    held_.erase(0, bytes);
    std::fflush(out_);
}

void TerminalStream::write(std::string_view piece) {
    held_.append(piece);
    show(utf8_unfinished_tail(held_));
}

void TerminalStream::finish() { show(held_.size()); }

}  // namespace tinyformer::cli
