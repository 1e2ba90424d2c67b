// `tinyformer trace`: every named activation of one forward pass, written
// as safetensors (docs/FORMAT.md section 3; models/study/trace.h records it).

#include "engine/io/output_file.h"
#include "models/study/forward.h"
#include "models/study/teacher_forcing.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace tinyformer::cli {

namespace {

const char* kTraceHelp =
    "usage: tinyformer trace MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                        --output TRACE.safetensors [--unk] [interventions]\n"
    "       tinyformer trace MODEL.safetensors --inputs IN.safetensors --output TRACE.safetensors\n"
    "\n"
    "Runs the model once and writes every intermediate of that pass, by name\n"
    "(docs/FORMAT.md section 3), as F32 tensors (masks as U8, 1 = may attend):\n"
    "  src_embed.output, tgt_embed.output / embed.output   [B,T,D]  embedding x scale + positions\n"
    "  STACK.i.input, STACK.i.output                        [B,T,D]  a block's input and output\n"
    "  STACK.i.ATTN.q .k .v                                 [B,L,D] [B,S,D] [B,S,D]  after the projections\n"
    "  STACK.i.ATTN.scores                                  [B,H,L,S] Q K^T / sqrt(Dk), before the mask\n"
    "  STACK.i.ATTN.mask                                    [B,L,S]  U8, 1 = may attend\n"
    "  STACK.i.ATTN.weights                                 [B,H,L,S] after softmax\n"
    "  STACK.i.ATTN.z / .output                             [B,L,D]  Concat(heads) before / after W_O\n"
    "  STACK.i.ffn.hidden                                   [B,L,F]  after the activation\n"
    "  encoder.norm.output, decoder.norm.output, layers.norm.output, logits\n"
    "STACK is encoder, decoder or layers; ATTN is self_attn or cross_attn. The metadata\n"
    "\"names\" lists the names in the order the pass computed them.\n"
    "With TEXT or --ids: the teacher-forced pass that `attention` and `probe` read, on the\n"
    "model's greedy output or --target (B = 1). With --inputs: the pass `forward` runs on a\n"
    "batch of its inputs file, padding included (padded positions follow docs/FORMAT.md).\n"
    "Compare two traces with tools/python/compare_trace.py A B: it names the first activation\n"
    "where they part. --unk reads a character of TEXT outside the vocabulary as <unk>, with\n"
    "a warning (as `run`). With interventions, the pass (and the greedy output it reads) is the\n"
    "intervened model's; the recorded mask is the mask used.\n";

std::vector<TensorToWrite> trace_tensors(const Trace& trace) {
    std::vector<TensorToWrite> tensors;
    for (const std::string& name : trace.names()) {
        auto mask = trace.masks().find(name);
        if (mask != trace.masks().end())
            tensors.push_back({name, "U8", mask->second.shape, mask->second.values});
        else
            tensors.push_back(f32_tensor(name, trace.tensor(name)));
    }
    return tensors;
}

}  // namespace

int trace_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--output", "--inputs", "--ids", "--target", "--target-ids"};
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags, {"--unk"}, "trace");
    if (parsed.help()) {
        std::printf("%s%s", kTraceHelp, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("trace: expected MODEL and TEXT, MODEL and --ids, or MODEL and --inputs (see 'tinyformer trace --help')");
    const std::string& output = parsed.value("--output");
    std::vector<std::string> inputs = {parsed.positional()[0]};
    if (parsed.has("--inputs")) inputs.push_back(parsed.value("--inputs"));
    check_outputs("trace", inputs, {output});
    const Interventions interventions = intervention_flags(parsed, "trace");
    Model model = Model::load(parsed.positional()[0]);
    const AppliedInterventions applied(model, interventions);
    Trace trace(Trace::Detail::Everything);
    std::map<std::string, std::string> metadata;
    if (parsed.has("--inputs")) {
        if (parsed.positional().size() > 1 || parsed.has("--ids") || parsed.has("--target") || parsed.has("--target-ids"))
            throw UsageError("trace: --inputs takes the whole batch; give no TEXT, --ids or target with it");
        forward_pass(model, SafetensorsFile::read(parsed.value("--inputs")), &trace);
        // Metadata is JSON, so UTF-8: the path as terminal text (a name that is not valid UTF-8, escaped).
        metadata["inputs"] = terminal_text(parsed.value("--inputs"));
    } else {
        const std::vector<int64_t> input = model_input(model, input_tokens(parsed, 1, model, "trace"));
        const std::vector<int64_t> target = target_or_greedy(model, input, target_tokens(parsed, model, "trace"));
        const TeacherForced pass = teacher_forced_pass(model, input, target, &trace);
        metadata["input_ids"] = nlohmann::json(pass.input).dump();
        metadata["decoder_ids"] = nlohmann::json(pass.decoder).dump();
    }
    metadata["names"] = nlohmann::json(trace.names()).dump();
    const std::vector<TensorToWrite> tensors = trace_tensors(trace);
    write_safetensors(output, tensors, metadata);
    std::fprintf(stderr, "tinyformer trace: wrote %zu activations to %s\n", tensors.size(), terminal_text(output).c_str());
    return 0;
}

}  // namespace tinyformer::cli
