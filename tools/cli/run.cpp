// `tinyformer run` and `tinyformer eval`: the toy models at work.

#include "models/study/toy_tasks.h"
#include "tools/cli/generation_flags.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

namespace tinyformer::cli {

namespace {

const char* kRunHelp =
    "usage: tinyformer run MODEL.safetensors [--beam K | --temperature T --top-k K --top-p P --seed S]\n"
    "                      [--max-new-tokens N] [--print-ids] [--escape] [--unk] [TEXT... | --ids 5,17,3]\n"
    "                      [--overrides FILE.json] [--block ...] [--allow ...] [--ablate ...]\n"
    "\n"
    "Runs a trained model on each TEXT and prints each output followed by a newline. With no\n"
    "TEXT, reads one input per line from standard input; a blank line there is an error\n"
    "naming its line number, and nothing is printed for the batch. A newline or a tab in\n"
    "TEXT (bash: $'ROMEO:\\n') is read as the vocabulary's newline or tab token.\n"
    "  encoder-decoder models read TEXT as the source: `run data/models/reverse.safetensors hello`\n"
    "  decoder-only models continue the prompt <bos>TEXT; a model that declares a prompt\n"
    "               suffix (the toy reverse models: '=') gets it appended when TEXT does not\n"
    "               end with it, so `run data/models/reverse-causal.safetensors abc` and\n"
    "               `... abc=` are the same prompt, the one `eval` gives\n"
    "  --ids 5,17,3 the input as token ids instead of TEXT (the tokens TEXT would become;\n"
    "               <bos> and the prompt suffix are added the same way): for any model,\n"
    "               also one without a vocabulary, whose outputs are then printed as ids\n"
    "  --print-ids  print each output as token ids (5,17,3: the form --ids takes), not text\n"
    "  --escape     print a newline or a tab in an output as its picture, \u240a or \u2409, so\n"
    "               each output is one line; without it they are printed as themselves and a\n"
    "               generated play comes out in its lines. Either way every other control\n"
    "               character (ESC, CR, C1, bidi controls) is shown escaped: \\x1b, \\u{202e}\n"
    "  --beam K     beam search of width K (default 1: greedy, inputs decoded together in batches)\n"
    "  --unk        map characters outside the vocabulary to <unk> with a warning; without it\n"
    "               such a character is an error naming it, its position and the\n"
    "               vocabulary (a whitespace tokenizer always reads an unknown word as\n"
    "               <unk> when the vocabulary has one)\n"
    "An input longer than the model was trained on (its train_max_len) still runs, with a\n"
    "warning naming both lengths. Special tokens in an output are shown as themselves, e.g. <unk>.\n"
    "Generation stops at the model's <eos>, at its max_len positions, or after N new tokens:\n";

const char* kRunHelpEnd =
    "  --max-len N  the older name of --max-new-tokens\n"
    "The decoding (greedy, beam or sampling, over the KV cache) runs the model with the\n"
    "interventions below (none by default); with mask overrides each input is decoded alone,\n"
    "since a cell names one sequence's query and key positions:\n";

const char* kEvalHelp =
    "usage: tinyformer eval MODEL.safetensors --task reverse|sort|dates [--lengths A-B] [--n 1000] [--seed S]\n"
    "                       [--beam K]\n"
    "\n"
    "Draws N fresh examples of the task from a seeded generator:\n"
    "  reverse  lowercase strings of length 1..16 -> reversed\n"
    "  sort     digit strings of length 1..16 -> digits sorted\n"
    "  dates    a date 1900-01-01..2099-12-31 (uniform) in one of six forms (uniform):\n"
    "           '3 may 1979', 'may 3 1979', 'may 3, 1979', '03/05/1979' (day/month/year),\n"
    "           '1979.05.03', 'thursday 3 may 1979' (its weekday) -> ISO '1979-05-03'\n"
    "--lengths A-B  inputs of A..B characters instead (both included; --lengths 20: only 20):\n"
    "               reverse and sort draw the length uniformly, then each character; dates\n"
    "               keeps the dates whose text has such a length (its forms make 10..27).\n"
    "               Lengths a model was not trained on measure extrapolation\n"
    "               (docs/EXTRAPOLATION.md). Lengths whose prompt and answer do not fit the\n"
    "               model's max_len are refused, naming both numbers.\n"
    "runs the model as `run` does (decoder-only models get the prompt <bos>TEXT and the\n"
    "model's prompt suffix, '=' for the toy models) and prints the exact-match accuracy\n"
    "and a few failures.\n";

Model load_for_run(const std::string& path) {
    Model model = Model::load(path);
    if (model.config.arch == Architecture::EncoderOnly)
        fail(path, ": an encoder_only model generates no text; see its logits with 'tinyformer forward' or its "
                   "attention with 'tinyformer attention'");
    return model;
}

// One input per line of standard input. A blank line is an error naming it:
// it is more likely a mistake than an empty input, and skipping it would
// shift every later output against its input line.
std::vector<std::string> read_stdin_lines() {
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty())
            fail("standard input line ", lines.size() + 1, " is blank; give one input per line, no blank lines");
        lines.push_back(line);
    }
    if (lines.empty()) fail("standard input has no lines; give TEXT, --ids or one input per line on standard input");
    return lines;
}

}  // namespace

int run_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--beam", "--max-len", "--ids"};
    value_flags.insert(generation_flag_names().begin(), generation_flag_names().end());
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags, {"--unk", "--print-ids", "--escape"}, "run");
    if (parsed.help()) {
        std::printf("%s%s%s%s", kRunHelp, kGenerationFlagsHelp, kRunHelpEnd, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().empty()) throw UsageError("run: expected a MODEL file (see 'tinyformer run --help')");
    if (parsed.has("--ids") && parsed.positional().size() > 1)
        throw UsageError("run: give the input as TEXT or as --ids, not both");
    if (parsed.has("--escape") && parsed.has("--print-ids"))
        throw UsageError("run: --escape shows an output's text; --print-ids prints ids, which have nothing to escape");
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const GenerationFlags generation = generation_flags(parsed, beam, "run", /*old_max_len=*/true);
    const Interventions interventions = intervention_flags(parsed, "run");
    Model model = load_for_run(parsed.positional()[0]);
    const AppliedInterventions applied(model, interventions);  // the decoding runs the intervened model
    const ModelText text(model);

    // Every input is read and framed before anything is decoded or printed,
    // warnings included: a refused input prints its error line alone.
    std::vector<std::vector<int64_t>> inputs;
    std::vector<std::string> warnings;
    if (parsed.has("--ids")) {
        const std::vector<int64_t> tokens = ids_flag(parsed, "--ids", "run");
        inputs.push_back(model_input(model, tokens));
        refuse_inputs_without_room(model, {inputs.back()});
        warn_if_long(model, static_cast<int64_t>(tokens.size()), "run", warnings);
    } else {
        const bool from_stdin = parsed.positional().size() == 1;
        const std::vector<std::string> texts =
            from_stdin ? read_stdin_lines()
                       : std::vector<std::string>(parsed.positional().begin() + 1, parsed.positional().end());
        for (size_t i = 0; i < texts.size(); ++i) {
            try {
                const std::vector<int64_t> tokens = text_tokens(text, texts[i], parsed.has("--unk"), "run", warnings);
                inputs.push_back(model_input(model, tokens));
                refuse_inputs_without_room(model, {inputs.back()});  // before anything is decoded
                warn_if_long(model, static_cast<int64_t>(tokens.size()), "run", warnings);
            } catch (const Error& error) {
                if (from_stdin) fail("standard input line ", i + 1, ": ", error.message());
                fail("input \"", texts[i], "\": ", error.message());
            }
        }
    }
    print_warnings(warnings);
    // A mask override's cell is a query and a key of one sequence; in a batch,
    // padding moves other rows' tokens to other slots, so with overrides each
    // input is decoded alone (as one batch of its own, the seed included).
    std::vector<std::vector<int64_t>> outputs;
    if (interventions.mask_overrides.empty()) {
        outputs = generate(model, inputs, beam, generation.options, generation.sampling);
    } else {
        for (const auto& input : inputs)
            outputs.push_back(generate(model, {input}, beam, generation.options, generation.sampling).front());
    }
    // Each output as terminal text, then a newline: the text a model wrote
    // keeps its newlines and tabs (with --escape: their pictures, one line per
    // output); any other control or bidi character is shown escaped.
    const NewlinesAndTabs newlines_and_tabs = parsed.has("--escape") ? NewlinesAndTabs::Pictured : NewlinesAndTabs::Kept;
    for (const auto& output : outputs) {
        if (!parsed.has("--print-ids")) {
            std::printf("%s\n", terminal_text(text.decode_output(output), newlines_and_tabs).c_str());
            continue;
        }
        std::string ids;
        for (size_t i = 0; i < output.size(); ++i) ids.append(i ? "," : "").append(std::to_string(output[i]));
        std::printf("%s\n", ids.c_str());
    }
    return 0;
}

int eval_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--task", "--n", "--seed", "--beam", "--lengths"}, {}, "eval");
    if (parsed.help()) {
        std::printf("%s", kEvalHelp);
        return 0;
    }
    if (parsed.positional().size() != 1) throw UsageError("eval: expected one MODEL file (see 'tinyformer eval --help')");
    const int64_t n = parsed.integer("--n", 1000, 1, 1000000);
    const int64_t seed = parsed.integer("--seed", 1, 0, INT64_MAX);
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const std::string& task_name = parsed.value("--task");
    const std::vector<std::string> tasks = toy_task_names();
    if (std::find(tasks.begin(), tasks.end(), task_name) == tasks.end())
        throw UsageError("eval: --task must be reverse, sort or dates, got '" + task_name + "'");
    const ToyTask& task = toy_task(task_name);
    // --lengths: a malformed or impossible range is a usage error, before the model is read.
    std::optional<LengthRange> lengths;
    if (parsed.has("--lengths")) {
        try {
            lengths = parse_length_range(parsed.value("--lengths"));
            check_lengths(task, *lengths);
        } catch (const Error& error) {
            throw UsageError("eval: --" + error.message());
        }
    }
    const Model model = load_for_run(parsed.positional()[0]);
    const Evaluation evaluation = evaluate(model, task, n, static_cast<uint64_t>(seed), beam, lengths);
    const std::string of_lengths = lengths ? " of length " + length_range_text(*lengths) : "";
    std::printf("%s on %lld fresh %s examples%s (seed %lld, %s): exact match %lld/%lld = %.2f%%\n",
                terminal_text(parsed.positional()[0]).c_str(), static_cast<long long>(n), task.name.c_str(),
                of_lengths.c_str(),
                static_cast<long long>(seed), beam > 1 ? ("beam " + std::to_string(beam)).c_str() : "greedy",
                static_cast<long long>(evaluation.correct), static_cast<long long>(evaluation.total),
                100.0 * evaluation.accuracy());
    const size_t shown = std::min<size_t>(evaluation.failures.size(), 5);
    if (shown) std::printf("first %zu failure(s):\n", shown);
    for (size_t i = 0; i < shown; ++i)
        std::printf("  %-27s expected %-18s got %s\n", terminal_text(evaluation.failures[i].input).c_str(),
                    terminal_text(evaluation.failures[i].expected).c_str(),
                    terminal_text(evaluation.failures[i].output).c_str());
    return 0;
}

}  // namespace tinyformer::cli
