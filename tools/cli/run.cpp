// `tinyformer run` and `tinyformer eval`: the toy models at work.

#include "models/study/toy_tasks.h"
#include "tools/cli/eval_lm.h"
#include "tools/cli/generation_flags.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <unistd.h>

namespace tinyformer::cli {

namespace {

const char* kRunHelp =
    "usage: tinyformer run MODEL.safetensors [--beam K | --temperature T --top-k K --top-p P --seed S]\n"
    "                      [--max-new-tokens N] [--print-ids] [--escape] [--unk] [--no-truncate]\n"
    "                      [TEXT... | --ids 5,17,3 | --interactive]\n"
    "                      [--overrides FILE.json] [--block ...] [--allow ...] [--ablate ...]\n"
    "\n"
    "Runs a trained model on each TEXT and prints each output followed by a newline, each\n"
    "token as soon as it is chosen (greedy and sampling; beam search prints its output when it\n"
    "is done): several inputs are decoded together and printed in order, each on its own line.\n"
    "With no TEXT, reads one input per line from standard input; a blank line there is an error\n"
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
    "  --interactive, -i  read a prompt from each line of standard input and answer it before\n"
    "               reading the next, the model loaded once (a fresh KV cache for each line;\n"
    "               \"> \" on stderr when standard input is a terminal); a line that fails (a\n"
    "               blank line, a character outside the vocabulary) prints its error line\n"
    "               and the next line is read; end of input (Ctrl-D) ends it, with exit\n"
    "               status 1 when a line failed. With sampling, line n draws from seed S + n - 1\n"
    "               as input n of standard input does without -i\n"
    "  --print-ids  print each output as token ids (5,17,3: the form --ids takes), not text\n"
    "  --escape     print a newline or a tab in an output as its picture, \u240a or \u2409, so\n"
    "               each output is one line; without it they are printed as themselves and a\n"
    "               generated play comes out in its lines. Either way every other control\n"
    "               character (ESC, CR, C1, bidi controls) is shown escaped: \\x1b, \\u{202e};\n"
    "               the bytes of a character split between two tokens wait for the second\n"
    "  --beam K     beam search of width K (default 1: greedy, inputs decoded together in batches)\n"
    "  --unk        map characters outside the vocabulary to <unk> with a warning; without it\n"
    "               such a character is an error naming it, its position and the\n"
    "               vocabulary (a whitespace tokenizer always reads an unknown word as\n"
    "               <unk> when the vocabulary has one)\n"
    "  --no-truncate  refuse a decoder-only prompt longer than fits (below) instead of cutting it\n"
    "An input longer than the model was trained on (its train_max_len) still runs, with a\n"
    "warning naming both lengths. Special tokens in an output are shown as themselves, e.g. <unk>.\n"
    "A decoder-only prompt (with <bos> and the suffix) longer than max_len - 1 tokens (max_len\n"
    "when a window slides, below) is cut from the left to its last tokens, with a note on\n"
    "stderr saying how many were kept and how the kept part starts; an encoder-decoder's\n"
    "source longer than max_len is refused.\n"
    "Generation stops at the model's <eos>, after N new tokens, or at its max_len positions;\n"
    "with --max-new-tokens N past max_len, a model whose positions allow it (decoder_only,\n"
    "causal, rotary / alibi / none) goes on in a sliding window: each token is chosen from a\n"
    "fresh pass on the last max_len tokens at positions 0..max_len-1, as nanoGPT's generate\n"
    "crops (models/decoding.h); other models stop there with one line on stderr, e.g.\n"
    "`tinyformer run: stopped after 42 of 60 new tokens: the model's max_len is 64 and its\n"
    "learned positions have no row past it`. Without --max-new-tokens (its default is a\n"
    "ceiling) generation stops at max_len silently:\n";

const char* kRunHelpEnd =
    "  --max-len N  the older name of --max-new-tokens\n"
    "The decoding (greedy, beam or sampling, over the KV cache) runs the model with the\n"
    "interventions below (none by default); with mask overrides each input is decoded alone,\n"
    "since a cell names one sequence's query and key positions:\n";

const char* kEvalHelp =
    "usage: tinyformer eval MODEL.safetensors --task reverse|sort|dates [--lengths A-B] [--n 1000] [--seed S]\n"
    "                       [--beam K] [--per-token]\n"
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
    "and a few failures.\n"
    "--per-token  also the per-token accuracy: character i of each output against character i\n"
    "             of its answer, over all answers and per output character (1 = the first),\n"
    "             and the exact matches per input length\n";

Model load_for_run(const std::string& path) {
    Model model = Model::load(path);
    if (model.config.arch == Architecture::EncoderOnly)
        fail(path, ": an encoder_only model generates no text; see its logits with 'tinyformer forward' or its "
                   "attention with 'tinyformer attention'");
    return model;
}

// One line of standard input into `line` (a trailing CR dropped, for files
// written on Windows); false at the end. The batch read and --interactive
// both read their lines here.
bool read_input_line(std::string& line) {
    if (!std::getline(std::cin, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
}

// A blank line is an error naming it: it is more likely a mistake than an
// empty input, and skipping it would shift every later output against its
// input line.
std::string blank_line_error(size_t number) {
    return text_of("standard input line ", number, " is blank; give one input per line, no blank lines");
}

// One input per line of standard input, all read before any is decoded.
std::vector<std::string> read_stdin_lines() {
    std::vector<std::string> lines;
    for (std::string line; read_input_line(line);) {
        if (line.empty()) fail(blank_line_error(lines.size() + 1));
        lines.push_back(line);
    }
    if (lines.empty()) fail("standard input has no lines; give TEXT, --ids or one input per line on standard input");
    return lines;
}

// What run was asked to do, read once from the flags.
struct RunChoices {
    int64_t beam = 1;
    GenerationFlags generation;
    bool limit_given = false;  // --max-new-tokens (or --max-len) was given: N tokens asked for
    bool unk = false, print_ids = false, no_truncate = false, alone = false;  // alone: mask overrides
    NewlinesAndTabs newlines_and_tabs = NewlinesAndTabs::Kept;
};

// The positions a decoder-only prompt may hold: all max_len when a window
// slides past it, else max_len - 1, leaving one to generate into.
int64_t prompt_room(const Model& model, const RunChoices& choices) {
    return model.config.max_len - (choices.generation.options.slide_window ? 0 : 1);
}

// One input's model tokens: framed (model_input: <bos>, the prompt suffix);
// a decoder-only prompt longer than prompt_room cut from the left, keeping
// its last tokens, with a note in `warnings` (--no-truncate: refused as
// model_input and refuse_inputs_without_room refuse it).
std::vector<int64_t> prepared_input(const Model& model, const ModelText& text, const std::vector<int64_t>& tokens,
                                    const RunChoices& choices, std::vector<std::string>& warnings) {
    const int64_t room = prompt_room(model, choices);
    if (model.encoder_decoder || choices.no_truncate) {
        std::vector<int64_t> input = model_input(model, tokens);
        refuse_inputs_without_room(model, {input}, choices.generation.options.slide_window);
        // A window also slides over a prompt, and a model without positions has no max_len rule of
        // its own: --no-truncate refuses here what would otherwise be cut.
        if (!model.encoder_decoder && static_cast<int64_t>(input.size()) > room)
            fail("run: the input (", input.size(), " tokens) is longer than the model's max_len of ", room,
                 " positions, and --no-truncate keeps it whole: refused");
        warn_if_long(model, static_cast<int64_t>(tokens.size()), "run", warnings);
        return input;
    }
    std::vector<int64_t> input = framed_input(model, tokens);
    const auto length = static_cast<int64_t>(input.size());
    if (length <= room) {
        warn_if_long(model, static_cast<int64_t>(tokens.size()), "run", warnings);
        return input;
    }
    input.erase(input.begin(), input.end() - room);
    // What was kept: its first characters (a dozen are enough to find the place).
    constexpr size_t kShownTokens = 12;
    const std::vector<int64_t> start(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(kShownTokens, input.size())));
    const bool bos = model.config.bos_id >= 0, suffix = !model.text.prompt_suffix.empty();
    const char* framing = bos && suffix ? " (with <bos> and the prompt suffix)" : bos ? " (with <bos>)" : suffix ? " (with the prompt suffix)" : "";
    const std::string fits = choices.generation.options.slide_window
                                 ? text_of("the model's max_len of ", room)
                                 : text_of("the ", room, " its max_len of ", model.config.max_len, " leaves before a new token");
    warnings.push_back(text_of("tinyformer run: note: the input is ", length, " tokens", framing, ", more than ", fits,
                               "; kept its last ", room, " tokens, from \"", text.decode_input(start),
                               input.size() > kShownTokens ? "...\"" : "\"", " (--no-truncate refuses it instead)"));
    warn_if_long(model, room, "run", warnings);
    return input;
}

// The outputs of inputs 0..n-1 in order, each on its own line, each token
// printed as soon as it is chosen: the first unfinished input's output
// streams; a later one's (decoded in the same batch) waits until those
// before it have ended, then its text so far is printed and it streams on.
class OutputLines {
public:
    OutputLines(const Model& model, const ModelText& text, const RunChoices& choices, size_t inputs,
                bool numbered, size_t first_number = 1)
        : model_(model), text_(text), choices_(choices), stream_(stdout, choices.newlines_and_tabs),
          rows_(inputs), numbered_(numbered), first_number_(first_number) {}

    void token(size_t row, int64_t token) {
        Row& r = rows_.at(row);
        r.tokens.push_back(token);
        piece_.clear();
        if (choices_.print_ids) piece_.append(r.tokens.size() > 1 ? "," : "").append(std::to_string(token));
        else text_.decode_output_piece(r.tokens, r.tokens.size() - 1, piece_);
        if (row == current_) {
            stream_.write(piece_);
            mid_line_ = true;
        } else {
            r.waiting.append(piece_);
        }
    }

    void end(size_t row, StopReason why) {
        rows_.at(row).ended = true;
        rows_.at(row).stop = why;
        while (current_ < rows_.size() && rows_[current_].ended) {
            end_line(current_);
            if (++current_ < rows_.size() && !rows_[current_].waiting.empty()) {
                stream_.write(rows_[current_].waiting);
                mid_line_ = true;
            }
        }
    }

    // A whole output at once (beam search: its best hypothesis is known only at the end).
    void whole(size_t row, const std::vector<int64_t>& tokens, StopReason why) {
        for (int64_t each : tokens) token(row, each);
        end(row, why);
    }

    // After an error mid-output: the line so far ends, so the error line starts on its own.
    void break_line() {
        if (!mid_line_) return;
        stream_.finish();
        std::fputc('\n', stdout);
        std::fflush(stdout);
        mid_line_ = false;
    }

private:
    struct Row {
        std::vector<int64_t> tokens;
        std::string waiting;  // the text made while an earlier input's output was printing
        bool ended = false;
        StopReason stop = StopReason::Eos;
    };

    // The line's end; when N tokens were asked for and max_len stopped the
    // output short of them, one line on stderr saying so.
    void end_line(size_t row) {
        stream_.finish();
        std::fputc('\n', stdout);
        std::fflush(stdout);
        mid_line_ = false;
        const Row& r = rows_[row];
        if (!choices_.limit_given || r.stop != StopReason::MaxLen) return;
        const std::string which = numbered_ ? text_of("input ", first_number_ + row, " ") : "";
        std::fprintf(stderr, "%s\n",
                     terminal_text(text_of("tinyformer run: ", which, "stopped after ", r.tokens.size(), " of ",
                                           choices_.generation.options.max_new_tokens, " new tokens: the model's max_len is ",
                                           model_.config.max_len, " and ", window_refusal(model_)))
                         .c_str());
    }

    const Model& model_;
    const ModelText& text_;
    const RunChoices& choices_;
    TerminalStream stream_;
    std::vector<Row> rows_;
    bool numbered_;
    size_t first_number_;
    size_t current_ = 0;  // the input whose output is on the line now
    bool mid_line_ = false;
    std::string piece_;
};

// Decodes inputs[0..n-1] (input i of the run is first + i, and draws from
// seed + first + i) and prints each output as it comes. Greedy and sampling
// decode 64 inputs a batch (models/study/toy_tasks.h's generate, the same
// batches), or each input alone with mask overrides (a cell names one
// sequence's positions; the seed then as given, as before); beam search
// decodes each input alone and prints it when done.
void decode_and_print(const Model& model, const std::vector<std::vector<int64_t>>& inputs, const RunChoices& choices,
                      OutputLines& lines, size_t first = 0) {
    GenerationOptions options = choices.generation.options;
    const std::optional<Sampling>& sampling = choices.generation.sampling;
    if (choices.beam > 1) {
        for (size_t i = 0; i < inputs.size(); ++i) {
            const Generation result = beam_search(model, inputs[i], choices.beam, 1.0, options);
            lines.whole(i, result.tokens[0], result.stops[0]);
        }
        return;
    }
    constexpr size_t kBatch = 64;
    const size_t batch = choices.alone ? 1 : kBatch;
    for (size_t start = 0; start < inputs.size(); start += batch) {
        const std::vector<std::vector<int64_t>> rows(inputs.begin() + static_cast<std::ptrdiff_t>(start),
                                                     inputs.begin() + static_cast<std::ptrdiff_t>(std::min(start + batch, inputs.size())));
        options.on_token = [&](size_t row, int64_t token) { lines.token(start + row, token); };
        options.on_row_end = [&](size_t row, StopReason why) { lines.end(start + row, why); };
        if (!sampling) {
            greedy_decode(model, rows, options);
            continue;
        }
        Sampling batch_sampling = *sampling;  // the batch's row 0 is input first + start: Random(seed + first + start)
        if (!choices.alone) batch_sampling.seed += static_cast<uint64_t>(first + start);
        sample_decode(model, rows, batch_sampling, options);
    }
}

// --interactive: a prompt per line of standard input, each decoded and
// printed as it comes with the model loaded once (a fresh KV cache per
// line); a failed line prints its error and the next line is read.
int run_interactive(const Model& model, const ModelText& text, const RunChoices& choices) {
    const bool terminal = isatty(STDIN_FILENO) != 0;
    bool failed = false;
    std::string line;
    for (size_t number = 1;; ++number) {
        if (terminal) std::fputs("> ", stderr);
        if (!read_input_line(line)) break;
        if (line.empty()) {
            print_error(blank_line_error(number));
            failed = true;
            continue;
        }
        OutputLines lines(model, text, choices, 1, false);
        try {
            std::vector<std::string> warnings;
            const std::vector<int64_t> tokens = text_tokens(text, line, choices.unk, "run", warnings);
            const std::vector<int64_t> input = prepared_input(model, text, tokens, choices, warnings);
            print_warnings(warnings);
            // Line n draws from seed + n - 1, as input n of a batch read from standard input does.
            decode_and_print(model, {input}, choices, lines, choices.alone ? 0 : number - 1);
        } catch (const Error& error) {
            lines.break_line();
            print_error(text_of("standard input line ", number, ": ", error.message()));
            failed = true;
        }
    }
    if (terminal) std::fputc('\n', stderr);  // the EOF (Ctrl-D) left the cursor after "> "
    return failed ? 1 : 0;
}

}  // namespace

int run_command(const Arguments& given) {
    Arguments args = given;  // -i: --interactive's short name (llama2.c, llama.cpp)
    for (std::string& arg : args) {
        if (arg == "--") break;
        if (arg == "-i") arg = "--interactive";
    }
    std::set<std::string> value_flags = {"--beam", "--max-len", "--ids"};
    value_flags.insert(generation_flag_names().begin(), generation_flag_names().end());
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags,
                                 {"--unk", "--print-ids", "--escape", "--interactive", "--no-truncate"}, "run");
    if (parsed.help()) {
        std::printf("%s%s%s%s", kRunHelp, kGenerationFlagsHelp, kRunHelpEnd, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().empty()) throw UsageError("run: expected a MODEL file (see 'tinyformer run --help')");
    if (parsed.has("--ids") && parsed.positional().size() > 1)
        throw UsageError("run: give the input as TEXT or as --ids, not both");
    if (parsed.has("--escape") && parsed.has("--print-ids"))
        throw UsageError("run: --escape shows an output's text; --print-ids prints ids, which have nothing to escape");
    const bool interactive = parsed.has("--interactive");
    if (interactive && (parsed.has("--ids") || parsed.positional().size() > 1))
        throw UsageError("run: --interactive reads its prompts from standard input, a line each; give no TEXT or --ids");
    RunChoices choices;
    choices.beam = parsed.integer("--beam", 1, 1, 64);
    choices.generation = generation_flags(parsed, choices.beam, "run", /*old_max_len=*/true);
    choices.limit_given = parsed.has("--max-new-tokens") || parsed.has("--max-len");
    choices.unk = parsed.has("--unk");
    choices.print_ids = parsed.has("--print-ids");
    choices.no_truncate = parsed.has("--no-truncate");
    choices.newlines_and_tabs = parsed.has("--escape") ? NewlinesAndTabs::Pictured : NewlinesAndTabs::Kept;
    const Interventions interventions = intervention_flags(parsed, "run");
    choices.alone = !interventions.mask_overrides.empty();
    Model model = load_for_run(parsed.positional()[0]);
    const AppliedInterventions applied(model, interventions);  // the decoding runs the intervened model
    const ModelText text(model);
    // N tokens asked for past max_len: a sliding window where the model's positions allow one.
    choices.generation.options.slide_window = choices.limit_given && window_refusal(model).empty();
    if (interactive) return run_interactive(model, text, choices);

    // Every input is read and framed before anything is decoded or printed,
    // warnings included: a refused input prints its error line alone.
    std::vector<std::vector<int64_t>> inputs;
    std::vector<std::string> warnings;
    if (parsed.has("--ids")) {
        const std::vector<int64_t> tokens = ids_flag(parsed, "--ids", "run");
        inputs.push_back(prepared_input(model, text, tokens, choices, warnings));
    } else {
        const bool from_stdin = parsed.positional().size() == 1;
        const std::vector<std::string> texts =
            from_stdin ? read_stdin_lines()
                       : std::vector<std::string>(parsed.positional().begin() + 1, parsed.positional().end());
        for (size_t i = 0; i < texts.size(); ++i) {
            try {
                const std::vector<int64_t> tokens = text_tokens(text, texts[i], choices.unk, "run", warnings);
                inputs.push_back(prepared_input(model, text, tokens, choices, warnings));  // before anything is decoded
            } catch (const Error& error) {
                if (from_stdin) fail("standard input line ", i + 1, ": ", error.message());
                fail("input \"", texts[i], "\": ", error.message());
            }
        }
    }
    print_warnings(warnings);
    // Each output as terminal text, then a newline, a token at a time: the
    // text a model wrote keeps its newlines and tabs (with --escape: their
    // pictures, one line per output); any other control or bidi character is
    // shown escaped.
    OutputLines lines(model, text, choices, inputs.size(), inputs.size() > 1);
    try {
        decode_and_print(model, inputs, choices, lines);
    } catch (...) {
        lines.break_line();
        throw;
    }
    return 0;
}

namespace {

// --per-token: character i of each output against character i of its answer
// (a missing character is wrong, an extra one is not counted), over all
// examples and per output position. The inputs are drawn again from the same
// seed; a failure is the next failure of evaluate's list (it keeps their order).
void print_per_token(const ToyTask& task, const Evaluation& evaluation, int64_t n, uint64_t seed,
                     const std::optional<LengthRange>& lengths) {
    const std::vector<std::string> texts = draw_inputs(task, n, seed, lengths);
    std::vector<int64_t> right, total;
    std::map<size_t, std::pair<int64_t, int64_t>> by_length;  // input length -> (exact matches, inputs)
    size_t next_failure = 0;
    for (const std::string& text : texts) {
        const std::string expected = task.answer(text);
        std::string output = expected;
        if (next_failure < evaluation.failures.size() && evaluation.failures[next_failure].input == text)
            output = evaluation.failures[next_failure++].output;
        by_length[text.size()].first += output == expected;
        ++by_length[text.size()].second;
        if (right.size() < expected.size()) right.resize(expected.size()), total.resize(expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            ++total[i];
            if (i < output.size() && output[i] == expected[i]) ++right[i];
        }
    }
    int64_t all_right = 0, all = 0;
    for (size_t i = 0; i < right.size(); ++i) all_right += right[i], all += total[i];
    std::printf("per-token accuracy: %lld/%lld = %.2f%% of the answers' characters (output character i == answer "
                "character i)\nby output character:",
                static_cast<long long>(all_right), static_cast<long long>(all),
                100.0 * static_cast<double>(all_right) / static_cast<double>(all));
    for (size_t i = 0; i < right.size(); ++i)
        std::printf(" %zu:%.1f%%", i + 1, 100.0 * static_cast<double>(right[i]) / static_cast<double>(total[i]));
    std::printf("\nexact match by input length:");
    for (const auto& [length, counts] : by_length)
        std::printf(" %zu:%lld/%lld", length, static_cast<long long>(counts.first), static_cast<long long>(counts.second));
    std::printf("\n");
}

}  // namespace

int eval_command(const Arguments& args) {
    const ParsedArguments parsed(args, {"--task", "--n", "--seed", "--beam", "--lengths", "--data", "--positions", "--plot"},
                                 {"--per-token"}, "eval");
    if (parsed.help()) {
        std::printf("%s%s", kEvalHelp, kEvalLmHelp);
        return 0;
    }
    if (parsed.value_or("--task", "") == "lm") return eval_lm(parsed);
    for (const char* flag : {"--data", "--positions", "--plot"})
        if (parsed.has(flag)) throw UsageError(std::string("eval: ") + flag + " is for --task lm");
    if (parsed.positional().size() != 1) throw UsageError("eval: expected one MODEL file (see 'tinyformer eval --help')");
    const int64_t n = parsed.integer("--n", 1000, 1, 1000000);
    const int64_t seed = parsed.integer("--seed", 1, 0, INT64_MAX);
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const std::string& task_name = parsed.value("--task");
    const std::vector<std::string> tasks = toy_task_names();
    if (std::find(tasks.begin(), tasks.end(), task_name) == tasks.end())
        throw UsageError("eval: --task must be reverse, sort, dates or lm, got '" + task_name + "'");
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
    if (parsed.has("--per-token")) print_per_token(task, evaluation, n, static_cast<uint64_t>(seed), lengths);
    return 0;
}

}  // namespace tinyformer::cli
