// `tinyformer tokenize`: text -> token ids (and ids -> text) with a model's
// own tokenizer, printed readably or for a program.

#include "engine/io/json.h"
#include "engine/io/utf8.h"
#include "models/checkpoint.h"
#include "models/text.h"
#include "tools/cli/arguments.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"

#include <cstdio>
#include <optional>

namespace tinyformer::cli {

namespace {

const char* kTokenizeHelp =
    "usage: tinyformer tokenize MODEL.safetensors [--format table|ids|json] [--unk] [TEXT... | --ids 5,17,3]\n"
    "\n"
    "Reads each TEXT with the model's tokenizer (its metadata \"tokenizer\": char, whitespace,\n"
    "gpt2_bpe or sentencepiece_bpe; the input side's vocabulary) and prints its token ids and\n"
    "tokens; with --ids, the tokens of those ids and the text they decode to. Nothing is run\n"
    "through the model, and the prompt framing of `run` (<bos>, the prompt suffix) is not added:\n"
    "these are the tokens of TEXT.\n"
    "Put -- before a TEXT that starts with \"--\".\n"
    "  --format table  (the default) per input: a line  text: \"...\" (N tokens), a line\n"
    "                  ids: 464 3797, then one line per token: its id, right-aligned in 6\n"
    "                  columns, two spaces, the token in double quotes as views label it\n"
    "                  (gpt2_bpe: a space as \xE2\x90\xA3, a newline as \xE2\x86\xB5, a tab as \xE2\x87\xA5, a byte of a cut\n"
    "                  UTF-8 character as <0xE2>; sentencepiece_bpe: the same, and a byte\n"
    "                  piece as it is, <0xE2>); a blank line between inputs\n"
    "  --format ids    one line per input: its ids separated by single spaces (empty for \"\")\n"
    "  --format json   one line per input: {\"ids\": [...], \"tokens\": [labels], \"text\": \"...\"},\n"
    "                  ASCII only (\\uXXXX escapes); \"text\" is the decoded text, or, when the\n"
    "                  ids decode to bytes that are not UTF-8, \"text_bytes\": their hex instead\n"
    "  --ids 5,17,3    decode these ids instead of reading TEXT (any model, even one without\n"
    "                  a vocabulary: its tokens are then #5 #17 #3)\n"
    "  --unk           char / whitespace: read a character (word) outside the vocabulary as <unk>,\n"
    "                  with one warning line, as run does (gpt2_bpe reads every text: no <unk>);\n"
    "                  sentencepiece_bpe: a character with neither a piece nor byte pieces\n"
    "                  as <unk>\n"
    "Everything printed follows the terminal text rule: a control character in a text or token\n"
    "is shown as \\xNN, never sent to the terminal.\n";

std::string hex_bytes(const std::string& bytes) {
    static const char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char byte : bytes) hex.append({kHex[byte >> 4], kHex[byte & 0xF]});
    return hex;
}

void print_one(const ModelText& text, const std::vector<int64_t>& ids, const std::string& format) {
    const std::string decoded = text.decode_input(ids);
    if (format == "ids") {
        std::string line;
        for (int64_t id : ids) line.append(line.empty() ? "" : " ").append(std::to_string(id));
        std::printf("%s\n", line.c_str());
        return;
    }
    if (format == "json") {
        nlohmann::json record = {{"ids", ids}, {"tokens", nlohmann::json::array()}};
        for (int64_t id : ids) record["tokens"].push_back(text.input_label(id));
        if (first_invalid_utf8(decoded) == std::string_view::npos)
            record["text"] = decoded;
        else
            record["text_bytes"] = hex_bytes(decoded);
        std::printf("%s\n", record.dump(-1, ' ', /*ensure_ascii=*/true).c_str());
        return;
    }
    std::printf("text: \"%s\" (%zu token%s)\n", terminal_text(decoded).c_str(), ids.size(), ids.size() == 1 ? "" : "s");
    std::string line = "ids:";
    for (int64_t id : ids) line.append(" ").append(std::to_string(id));
    std::printf("%s\n", line.c_str());
    for (int64_t id : ids)
        std::printf("%6lld  \"%s\"\n", static_cast<long long>(id), terminal_text(text.input_label(id)).c_str());
}

}  // namespace

int tokenize_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--format", "--ids"}, {"--unk"}, "tokenize");
    if (parsed.help()) {
        std::printf("%s", kTokenizeHelp);
        return 0;
    }
    if (parsed.positional().empty())
        throw UsageError("tokenize: expected MODEL and a TEXT (or --ids) (see 'tinyformer tokenize --help')");
    const std::string format = parsed.value_or("--format", "table");
    if (format != "table" && format != "ids" && format != "json")
        throw UsageError("tokenize: --format must be table, ids or json, got '" + format + "'");
    const bool has_text = parsed.positional().size() > 1;
    if (has_text == parsed.has("--ids"))
        throw UsageError(std::string("tokenize: give the input as TEXT or as --ids, ") +
                         (has_text ? "not both" : "one of them") + " (see 'tinyformer tokenize --help')");
    const Model model = Model::load(parsed.positional()[0]);
    const ModelText text(model);
    // Every input is read before anything is printed: a refusal prints only its error line.
    std::vector<std::vector<int64_t>> inputs;
    if (has_text) {
        std::vector<std::string> warnings;
        for (size_t i = 1; i < parsed.positional().size(); ++i)
            inputs.push_back(text_tokens(text, parsed.positional()[i], parsed.has("--unk"), "tokenize", warnings));
        defer_warnings(warnings);  // printed after the output, only when every TEXT was read
    } else {
        inputs.push_back(ids_flag(parsed, "--ids", "tokenize"));
        const int64_t vocabulary =
            model.config.arch == Architecture::EncoderDecoder ? model.config.src_vocab_size : model.config.vocab_size;
        for (size_t i = 0; i < inputs[0].size(); ++i)
            if (inputs[0][i] < 0 || inputs[0][i] >= vocabulary)
                fail("tokenize: token id ", inputs[0][i], " at position ", i, " is outside the vocabulary 0..", vocabulary - 1);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (i > 0 && format == "table") std::printf("\n");
        print_one(text, inputs[i], format);
    }
    return 0;
}

}  // namespace tinyformer::cli
