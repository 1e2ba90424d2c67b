// Tests for the output of `tinyformer run` as it is generated (#35 part 3):
// the terminal text of pieces (engine/io/utf8.h utf8_unfinished_tail,
// tools/cli/terminal_text.h TerminalStream), the per-token callbacks of the
// decoding loop and its stop reasons (models/decoding.h), the sliding window
// past max_len (models/stepper.h), and the command itself: an answer read
// while the process still waits for input, the stop line, a long prompt cut
// with a note or refused (--no-truncate), --interactive going on after a
// failed line, and several inputs each on its own line.

#include "engine/io/utf8.h"
#include "models/decoding.h"
#include "tests/decoding_cases.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tools/cli/terminal_text.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace tinyformer;
using namespace test_helpers;

namespace {

// Everything written to a temporary FILE*.
std::string contents(std::FILE* file) {
    std::fflush(file);
    std::rewind(file);
    std::string text;
    for (int c; (c = std::fgetc(file)) != EOF;) text.push_back(static_cast<char>(c));
    std::fseek(file, 0, SEEK_END);
    return text;
}

// Texts whose characters are 1-4 bytes long, with the controls, bidi and C1
// characters and invalid bytes the terminal text rule escapes.
const std::vector<std::string> kTexts = {
    "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z",  // a é € 😀 z
    "ROMEO:\nAy\tme\x1b[2J",                   // newline, tab, ESC
    "\xE2\x80\xAE" "abc\xC2\x85",              // U+202E (bidi), U+0085 (C1)
    "x\xFF\xC3(\xE2\x82",                      // invalid: FF, C3 before '(', a cut € at the end
    "\xED\xA0\x80\xE0\x80\xAF\xF4\x90\x80\x80",  // a surrogate, an overlong form, above U+10FFFF
};

}  // namespace

TEST_CASE("utf8_unfinished_tail holds exactly the bytes of a character still to be completed") {
    CHECK(utf8_unfinished_tail("") == 0);
    CHECK(utf8_unfinished_tail("abc") == 3);
    CHECK(utf8_unfinished_tail("a\xC3") == 1);              // é's lead byte alone
    CHECK(utf8_unfinished_tail("a\xC3\xA9") == 3);          // é whole
    CHECK(utf8_unfinished_tail("a\xE2\x82") == 1);          // € cut after 2 of 3 bytes
    CHECK(utf8_unfinished_tail("a\xF0\x9F\x98") == 1);      // 😀 cut after 3 of 4
    CHECK(utf8_unfinished_tail("a\xF0\x9F\x98\x80") == 5);  // 😀 whole
    CHECK(utf8_unfinished_tail("a\x82") == 2);              // a stray continuation byte completes nothing
    CHECK(utf8_unfinished_tail("a\xFF") == 2);              // never a lead byte
    CHECK(utf8_unfinished_tail("a\xC0") == 2);              // C0 only ever starts an overlong form
    CHECK(utf8_unfinished_tail("\xE2\x82\xAC\x82\x82") == 5);  // continuation bytes past a whole €
}

TEST_CASE("TerminalStream prints text cut anywhere into pieces as terminal_text prints it whole") {
    for (const NewlinesAndTabs mode : {NewlinesAndTabs::Escaped, NewlinesAndTabs::Kept, NewlinesAndTabs::Pictured}) {
        for (const std::string& text : kTexts) {
            const std::string whole = cli::terminal_text(text, mode);
            // Every way of cutting the text into three pieces (empty pieces included).
            for (size_t i = 0; i <= text.size(); ++i) {
                for (size_t j = i; j <= text.size(); ++j) {
                    CAPTURE(text);
                    CAPTURE(i);
                    CAPTURE(j);
                    std::FILE* file = std::tmpfile();
                    REQUIRE(file);
                    cli::TerminalStream stream(file, mode);
                    stream.write(std::string_view(text).substr(0, i));
                    // Printed so far: the whole characters of the first piece, nothing of a cut one.
                    const size_t shown = utf8_unfinished_tail(text.substr(0, i));
                    CHECK(contents(file) == cli::terminal_text(text.substr(0, shown), mode));
                    stream.write(std::string_view(text).substr(i, j - i));
                    stream.write(std::string_view(text).substr(j));
                    stream.finish();
                    CHECK(contents(file) == whole);
                    std::fclose(file);
                }
            }
        }
    }
}

TEST_CASE("TerminalStream hands each whole character to the pipe at once, not when a buffer fills or the file closes") {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::FILE* out = fdopen(fds[1], "w");
    REQUIRE(out);
    REQUIRE(std::setvbuf(out, nullptr, _IOFBF, 1 << 16) == 0);  // fully buffered, as stdout into a pipe is
    // What the pipe holds now, without waiting.
    auto ready = [&] {
        std::string got;
        char buffer[64];
        pollfd poll_fd{fds[0], POLLIN, 0};
        while (poll(&poll_fd, 1, 0) > 0 && (poll_fd.revents & POLLIN)) {
            const ssize_t n = read(fds[0], buffer, sizeof buffer);
            if (n <= 0) break;
            got.append(buffer, static_cast<size_t>(n));
        }
        return got;
    };
    cli::TerminalStream stream(out, NewlinesAndTabs::Escaped);
    stream.write("ab");
    CHECK(ready() == "ab");
    stream.write("\xc3");  // the first byte of é: held until the character is whole
    CHECK(ready() == "");
    stream.write("\xa9" "c");
    CHECK(ready() == "\xc3\xa9" "c");
    std::fclose(out);
    close(fds[0]);
}

TEST_CASE("The decoding calls on_token with each token as it is chosen, before the next step") {
    const Model model = decoding_cases::load_case("do_pre_gelu_learned_pad");
    const auto inputs = decoding_cases::inputs_for(model);
    for (const bool sampling : {false, true}) {
        CAPTURE(sampling);
        // The events in order: a step (after_step), a token (row, token), a row's end (row, why).
        struct Event {
            char kind;
            size_t row;
            int64_t token;
            StopReason why;
        };
        std::vector<Event> events;
        GenerationOptions options;
        options.max_new_tokens = 6;
        options.after_step = [&] { events.push_back({'s', 0, 0, StopReason::Eos}); };
        options.on_token = [&](size_t row, int64_t token) { events.push_back({'t', row, token, StopReason::Eos}); };
        options.on_row_end = [&](size_t row, StopReason why) { events.push_back({'e', row, 0, why}); };
        Sampling settings;
        settings.temperature = 1.5;
        settings.seed = 7;
        const Generation result = sampling ? sample_decode(model, inputs, settings, options) : greedy_decode(model, inputs, options);
        REQUIRE(result.stops.size() == inputs.size());
        for (size_t row = 0; row < inputs.size(); ++row) {
            CAPTURE(row);
            std::vector<int64_t> tokens;
            size_t steps = 0, ends = 0;
            for (const Event& event : events) {
                if (event.kind == 's') ++steps;
                if (event.row != row || event.kind == 's') continue;
                if (event.kind == 't') {
                    CHECK(ends == 0);               // no token after the row's end
                    CHECK(steps == tokens.size());  // token k (from 0) is chosen after k steps: before step k + 1
                    tokens.push_back(event.token);
                } else {
                    ++ends;
                    CHECK(event.why == result.stops[row]);
                }
            }
            CHECK(ends == 1);
            CHECK(tokens == result.tokens[row]);
            // Why it ended, from the row itself: 6 tokens, else <eos> (max_len 16 leaves room for 6 after these prompts).
            CHECK(result.stops[row] == (tokens.size() == 6 ? StopReason::MaxNewTokens : StopReason::Eos));
        }
    }
}

TEST_CASE("Generation says why it stopped: <eos>, the tokens asked for, or max_len") {
    const Model model = decoding_cases::load_case("do_pre_gelu_learned_pad");  // learned positions, max_len 16
    const std::vector<int64_t> prompt = {model.config.bos_id, 3, 4, 5};
    GenerationOptions options;
    options.max_new_tokens = 100;
    const Generation long_one = greedy_decode(model, {prompt}, options);
    // This prompt's greedy continuation never chooses <eos> before max_len (its 12 tokens fill 16 positions).
    REQUIRE(long_one.tokens[0].size() == 12);
    CHECK(long_one.stops[0] == StopReason::MaxLen);
    options.max_new_tokens = 12;  // exactly what fits: the tokens asked for were made
    CHECK(greedy_decode(model, {prompt}, options).stops[0] == StopReason::MaxNewTokens);
    CHECK(beam_search(model, prompt, 2, 1.0, options).stops[0] == StopReason::MaxNewTokens);
    options.max_new_tokens = 100;
    // A learned table has no row past max_len: no window.
    options.slide_window = true;
    CHECK(window_refusal(model) == "its learned positions have no row past it");
    CHECK_THROWS_WITH(greedy_decode(model, {prompt}, options),
                      doctest::Contains("cannot slide a window past its max_len of 16: its learned positions"));
}

namespace {

// The logits of a fresh pass on `tokens` (one sequence, no padding) at its last position.
std::vector<float> fresh_last_logits(const Model& model, const std::vector<int64_t>& tokens) {
    const TokenIds ids{1, static_cast<int64_t>(tokens.size()), tokens};
    const Tensor logits = model.single_stack->forward(ids, Padding(), {});
    const int64_t V = logits.dim(2);
    const float* last = logits.data() + (logits.dim(1) - 1) * V;
    return std::vector<float>(last, last + V);
}

}  // namespace

TEST_CASE("A sliding window needs a token limit: 0 (up to max_len) would end a row only at <eos>") {
    const Model model = decoding_cases::load_case("do_pre_relu_none_leftpad");
    GenerationOptions options;
    options.slide_window = true;
    options.max_new_tokens = 0;
    CHECK_THROWS_WITH(greedy_decode(model, decoding_cases::inputs_for(model), options),
                      doctest::Contains("a sliding window needs max_new_tokens >= 1"));
}

TEST_CASE("Past max_len a sliding window's logits are a fresh pass on the row's last max_len tokens") {
    // Rotary (grouped-query attention), ALiBi, no positions: random weights that
    // rarely choose <eos>, so the rows run far past max_len.
    for (const std::string name : {"do_rotary_gqa_pre_gelu_pad", "do_alibi_pre_gelu_h6_pad", "do_pre_relu_none_leftpad"}) {
        CAPTURE(name);
        const Model model = decoding_cases::load_case(name);
        REQUIRE(window_refusal(model).empty());
        const auto max_len = static_cast<size_t>(model.config.max_len);
        const auto inputs = decoding_cases::inputs_for(model);
        for (const StepMode mode : {StepMode::Recompute, StepMode::KvCache}) {
            for (const bool batched : {false, true}) {
                CAPTURE(mode == StepMode::KvCache);
                CAPTURE(batched);
                GenerationOptions options;
                options.mode = mode;
                options.slide_window = true;
                options.record_logits = true;
                options.max_new_tokens = static_cast<int64_t>(3 * max_len);
                // Exact: recompute, one row alone, is the same pass on the same window as the
                // fresh one. Otherwise within the KV cache's bound against recompute (1e-5,
                // tests/test_stepper.cpp): a cached step's products are another summation order,
                // a batch pads rows together.
                const bool exact = mode == StepMode::Recompute && !batched;
                const double bound = exact ? 0.0 : 1e-5;
                std::vector<std::vector<std::vector<int64_t>>> groups;
                if (batched) groups.push_back(inputs);
                else
                    for (const auto& input : inputs) groups.push_back({input});
                size_t past = 0;  // steps whose sequence was longer than max_len
                double worst = 0;
                for (const auto& group : groups) {
                    const Generation result = greedy_decode(model, group, options);
                    for (size_t row = 0; row < group.size(); ++row) {
                        // The row's steps: one per token, and the step that chose <eos> when it ended so.
                        const std::vector<int64_t>& tokens = result.tokens[row];
                        const size_t steps = tokens.size() + (result.stops[row] == StopReason::Eos ? 1 : 0);
                        REQUIRE(steps <= result.step_logits.size());
                        std::vector<int64_t> sequence = group[row];
                        for (size_t step = 0; step < steps; ++step) {
                            const size_t keep = std::min(sequence.size(), max_len);
                            const std::vector<int64_t> window(sequence.end() - static_cast<std::ptrdiff_t>(keep), sequence.end());
                            past += sequence.size() > max_len;
                            const std::vector<float> fresh = fresh_last_logits(model, window);
                            const Tensor& logits = result.step_logits[step];
                            const int64_t V = logits.dim(1);
                            const float* cached = logits.data() + static_cast<int64_t>(row) * V;
                            for (int64_t v = 0; v < V; ++v)
                                worst = std::max(worst, std::fabs(static_cast<double>(cached[v]) - fresh[static_cast<size_t>(v)]));
                            if (step < tokens.size()) sequence.push_back(tokens[step]);
                        }
                    }
                }
                MESSAGE(name, std::string(exact ? " exact" : " bounded"), ": largest difference ", worst, " over ", past, " steps past max_len");
                CHECK(past > max_len);  // the window slid, many times
                CHECK(worst <= bound);
            }
        }
    }
}

namespace {

// `tinyformer args...` with pipes to its standard input and output.
struct Child {
    pid_t pid = -1;
    int in = -1, out = -1;
};

Child spawn(const std::vector<std::string>& args) {
    int to_child[2], from_child[2];
    REQUIRE(pipe(to_child) == 0);
    REQUIRE(pipe(from_child) == 0);
    Child child;
    child.pid = fork();
    REQUIRE(child.pid >= 0);
    if (child.pid == 0) {
        dup2(to_child[0], STDIN_FILENO);
        dup2(from_child[1], STDOUT_FILENO);
        for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
        std::vector<char*> argv;
        const std::string binary = tinyformer_binary();
        argv.push_back(const_cast<char*>(binary.c_str()));
        for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv(binary.c_str(), argv.data());
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    child.in = to_child[1];
    child.out = from_child[0];
    return child;
}

// Reads up to and including the next newline; a hang guard of `seconds` (no
// speed is asserted: a test that waits this long has failed by hanging).
std::string read_line(int fd, int seconds = 300) {
    std::string line;
    while (line.empty() || line.back() != '\n') {
        pollfd ready{fd, POLLIN, 0};
        if (poll(&ready, 1, seconds * 1000) <= 0) break;
        char c;
        if (read(fd, &c, 1) != 1) break;
        line.push_back(c);
    }
    return line;
}

}  // namespace

// Reads exactly `count` bytes (fewer when the stream ends or nothing comes for `seconds`).
static std::string read_bytes(int fd, size_t count, int seconds = 300) {
    std::string out;
    while (out.size() < count) {
        pollfd ready{fd, POLLIN, 0};
        if (poll(&ready, 1, seconds * 1000) <= 0) break;
        char buffer[256];
        const ssize_t got = read(fd, buffer, std::min(sizeof buffer, count - out.size()));
        if (got <= 0) break;
        out.append(buffer, static_cast<size_t>(got));
    }
    return out;
}

TEST_CASE("run writes its first tokens while a generation of 2^20 tokens has just begun") {
    const std::string model = "data/families/llama2c-tiny/llama2c-tiny.safetensors";  // rotary: the window slides on
    // The first 8 tokens alone, as a run of 8 prints them (greedy: the long run starts with the same 8).
    std::string first = run_tinyformer_ok({"run", model, "--max-new-tokens", "8", "--escape", "one hundred and six,"}).out;
    REQUIRE(first.size() > 1);
    REQUIRE(first.back() == '\n');
    first.pop_back();
    std::signal(SIGPIPE, SIG_IGN);
    const Child child = spawn({"run", model, "--max-new-tokens", std::to_string(1 << 20), "--escape", "one hundred and six,"});
    close(child.in);
    // Those bytes arrive while the process is far from done: 2^20 tokens take minutes, not the microseconds
    // between this read and the check below.
    CHECK(read_bytes(child.out, first.size(), 60) == first);
    int status = 0;
    CHECK(waitpid(child.pid, &status, WNOHANG) == 0);  // still generating
    kill(child.pid, SIGKILL);
    REQUIRE(waitpid(child.pid, &status, 0) == child.pid);
    close(child.out);
}

TEST_CASE("run --interactive prints an answer while the process still waits for the next line") {
    const std::string model = "data/families/llama2c-tiny/llama2c-tiny.safetensors";  // rotary: the window slides
    const std::vector<std::string> args = {"run", model, "--max-new-tokens", "150", "--escape"};
    const std::string expected = run_tinyformer_ok({args[0], args[1], args[2], args[3], args[4], "one hundred and six,"}).out;
    REQUIRE(!expected.empty());
    std::vector<std::string> interactive = args;
    interactive.push_back("--interactive");
    std::signal(SIGPIPE, SIG_IGN);
    const Child child = spawn(interactive);
    const std::string line = "one hundred and six,\n";
    REQUIRE(write(child.in, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
    // Standard input stays open: the answer must come before the process can end.
    const std::string answer = read_line(child.out);
    CHECK(answer == expected);
    int status = 0;
    CHECK(waitpid(child.pid, &status, WNOHANG) == 0);  // still running, reading its next line
    close(child.in);                                   // EOF ends it
    CHECK(read_line(child.out).empty());
    REQUIRE(waitpid(child.pid, &status, 0) == child.pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    close(child.out);
}

TEST_CASE("run --interactive prints a failed line's error and goes on with the next; exit 1 at the end") {
    TempDirectory dir;
    const std::string lines = dir.file("lines.txt");
    std::FILE* file = std::fopen(lines.c_str(), "w");
    REQUIRE(file);
    std::fputs("hello\nab3\n\nworld\n", file);
    std::fclose(file);
    const std::string model = "data/models/reverse-causal.safetensors";
    for (const char* flag : {"--interactive", "-i"}) {
        const CliRun run = run_tinyformer({"run", model, flag}, 1, 300, lines);
        CHECK(run.status == 1);
        CHECK(run.out == run_tinyformer_ok({"run", model, "hello"}).out + run_tinyformer_ok({"run", model, "world"}).out);
        // One line per failed line, naming it; no "> " prompt (standard input is not a terminal).
        CHECK(run.err.starts_with("tinyformer: error: standard input line 2: tokenizer: character '3' at position 2"));
        CHECK(run.err.find("\ntinyformer: error: standard input line 3 is blank") != std::string::npos);
        CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 2);
    }
    // Every line right: exit 0.
    std::FILE* good = std::fopen(lines.c_str(), "w");
    std::fputs("hello\nworld\n", good);
    std::fclose(good);
    const CliRun ok = run_tinyformer({"run", model, "-i"}, 1, 300, lines);
    CHECK(ok.status == 0);
    CHECK(ok.err.empty());
    // TEXT or --ids with --interactive: a usage error.
    CHECK(run_tinyformer({"run", model, "-i", "hello"}).status == 2);
}

TEST_CASE("run says in one line why it made fewer tokens than --max-new-tokens asked for") {
    const std::string model = "data/families/nanogpt-char.safetensors";  // learned positions, max_len 64, no eos
    const CliRun run = run_tinyformer_ok({"run", model, "forty one, forty two, ", "--max-new-tokens", "60", "--print-ids"});
    CHECK(run.err ==
          "tinyformer run: stopped after 42 of 60 new tokens: the model's max_len is 64 and its learned positions have no row past it\n");
    CHECK(std::count(run.out.begin(), run.out.end(), ',') == 41);  // 42 ids
    // Several inputs: the line names the input, after that input's output.
    const CliRun two = run_tinyformer_ok({"run", model, "forty", "forty one, forty two, ", "--max-new-tokens", "60"});
    CHECK(two.err.starts_with("tinyformer run: input 1 stopped after 59 of 60 new tokens"));
    CHECK(two.err.find("\ntinyformer run: input 2 stopped after 42 of 60 new tokens") != std::string::npos);
    CHECK(std::count(two.err.begin(), two.err.end(), '\n') == 2);
    // What fits, or no --max-new-tokens (the default, a ceiling): nothing to say.
    CHECK(run_tinyformer_ok({"run", model, "forty one, forty two, ", "--max-new-tokens", "42"}).err.empty());
    CHECK(run_tinyformer_ok({"run", model, "forty one, forty two, "}).err.empty());
}

TEST_CASE("run --max-new-tokens past max_len slides a window on a rotary model") {
    const std::string model = "data/reference/do_rotary_gqa_pre_gelu_pad.model.safetensors";  // max_len 16
    const CliRun run = run_tinyformer_ok({"run", model, "--ids", "3,4,5", "--max-new-tokens", "100", "--print-ids"});
    CHECK(std::count(run.out.begin(), run.out.end(), ',') == 99);  // 100 ids, 96 past max_len
    CHECK(run.err.empty());
}

TEST_CASE("run cuts a prompt longer than max_len from the left with a note; --no-truncate refuses it") {
    const std::string model = "data/models/reverse-causal.safetensors";  // learned positions, max_len 40
    const std::string text = std::string(30, 'a') + std::string(30, 'b');
    const CliRun cut = run_tinyformer_ok({"run", model, text});
    CHECK(cut.err.starts_with("tinyformer run: note: the input is 62 tokens (with <bos> and the prompt suffix), more "
                              "than the 39 its max_len of 40 leaves before a new token; kept its last 39 tokens, from "
                              "\"aaaaaaaabbbb...\""));
    CHECK(std::count(cut.out.begin(), cut.out.end(), '\n') == 1);
    const CliRun refused = run_tinyformer({"run", model, text, "--no-truncate"});
    CHECK(refused.status == 1);
    CHECK(refused.out.empty());
    CHECK(refused.err.find("is longer than the model's max_len of 40") != std::string::npos);
    CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
    // A model whose window slides keeps max_len tokens.
    const CliRun rotary = run_tinyformer_ok({"run", "data/models/reverse-rotary.safetensors", text + text, "--max-new-tokens", "5"});
    CHECK(rotary.err.starts_with("tinyformer run: note: the input is 122 tokens (with <bos> and the prompt suffix), more "
                                 "than the model's max_len of 72; kept its last 72 tokens"));
}

TEST_CASE("run prints several inputs' outputs each on its own line, in order, as one run of each would") {
    const std::string model = "data/models/reverse-causal.safetensors";
    // Outputs of different lengths, decoded in one batch: a later input's tokens are held until the earlier ones end.
    const std::vector<std::string> texts = {"abcdefghijkl", "ab", "abcdef", "a"};
    std::string each;
    for (const std::string& text : texts) each += run_tinyformer_ok({"run", model, text}).out;
    std::vector<std::string> args = {"run", model};
    args.insert(args.end(), texts.begin(), texts.end());
    CHECK(run_tinyformer_ok(args).out == each);
}
