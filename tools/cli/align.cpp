// `tinyformer align`: which source tokens an encoder-decoder model's
// cross-attention looks at while it writes each output token, averaged over
// the heads of one decoder layer (models/study/attention_maps.h, cross_alignment).

#include "models/study/attention_maps.h"
#include "tools/cli/inputs.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstdio>

namespace tinyformer::cli {

namespace {

const char* kAlignHelp =
    "usage: tinyformer align MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                        [--layer L] [--top K] [--unk]\n"
    "\n"
    "Prints, for each output token of an encoder-decoder model (its greedy output, or\n"
    "--target, then <eos>), the source tokens its cross-attention gives the most weight,\n"
    "averaged over the heads of decoder layer L (default: the last layer):\n"
    "  out    reads  top source tokens (position:token weight)\n"
    "  '1'    <bos>   6:'1' 0.41  9:'9' 0.34  7:'9' 0.23\n"
    "'out' is the output token, 'reads' the decoder's input at that row: the row that reads\n"
    "<bos> writes the first output token. --top K shows K source tokens (1..16, default 3).\n"
    "--unk reads a character outside the vocabulary as <unk>, with a warning (as `run`).\n"
    "These are weights, not causes: see 'tinyformer probe' and lesson 10.3, section 11.\n";


}  // namespace

int align_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--target", "--target-ids", "--ids", "--layer", "--top"}, {"--unk"}, "align");
    if (parsed.help()) {
        std::printf("%s", kAlignHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("align: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer align --help')");
    const int64_t top = parsed.integer("--top", 3, 1, 16);
    const Model model = Model::load(parsed.positional()[0]);
    if (model.config.arch != Architecture::EncoderDecoder)
        fail("align: ", parsed.positional()[0], " is not an encoder-decoder model; it has no cross-attention");
    const int64_t layer = parsed.integer("--layer", model.config.num_decoder_layers - 1, 0, 1 << 20);
    if (layer >= model.config.num_decoder_layers)
        throw UsageError("align: --layer " + std::to_string(layer) + " but the decoder has " +
                         std::to_string(model.config.num_decoder_layers) + " layers (0.." +
                         std::to_string(model.config.num_decoder_layers - 1) + ")");
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "align");
    const AttentionRun run = attention_maps(model, tokens, target_tokens(parsed, model, "align"));
    const CrossAlignment alignment = cross_alignment(run, layer);
    std::printf("cross-attention of decoder layer %lld, mean over %lld heads; output \"%s\"\n",
                static_cast<long long>(layer), static_cast<long long>(model.config.nhead), terminal_text(run.output).c_str());
    std::printf("%-6s %-6s top source tokens (position:token weight)\n", "out", "reads");
    for (const OutputAlignment& row : alignment.rows) {
        std::printf("%-6s %-6s", token_for_table(row.output_token).c_str(), token_for_table(row.query_token).c_str());
        const auto shown = std::min<size_t>(static_cast<size_t>(top), row.by_weight.size());
        for (size_t i = 0; i < shown; ++i) {
            const int64_t s = row.by_weight[i];
            std::printf("  %lld:%s %.2f", static_cast<long long>(s),
                        token_for_table(alignment.source_tokens[static_cast<size_t>(s)]).c_str(),
                        static_cast<double>(row.weights[static_cast<size_t>(s)]));
        }
        std::printf("\n");
    }
    return 0;
}

}  // namespace tinyformer::cli
