#include "tools/cli/terminal_text.h"

#include "engine/utf8.h"

namespace tinyformer::cli {

std::string terminal_text(std::string_view text) { return shown_text(text); }

size_t write_terminal_text(std::FILE* out, std::string_view text, size_t max_bytes) {
    return show_text(text, max_bytes, [&](const char* piece, size_t length) { std::fwrite(piece, 1, length, out); });
}

}  // namespace tinyformer::cli
