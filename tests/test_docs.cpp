// Every command shown in README.md and docs/*.md runs as shown.
//
// The convention (also in docs/BUILDING.md, "Every command shown here runs as shown"):
//   - A fenced block marked ```console is a terminal session. A line starting with "$ " is a
//     command; the lines after it, up to the next "$ " line or the closing fence, are what it
//     prints on standard output.
//   - A `build/tinyformer ...` or `./build/tinyformer ...` command is RUN from the repository
//     root (tests/run_cli.h: one OpenBLAS thread, stdin /dev/null), must exit 0, and its stdout
//     must be exactly the lines shown, except for two markers in the shown output:
//       a line that is `...` (spaces around it allowed) stands for any number of lines, an excerpt;
//       a line ending in `# varies` stands for any one line: a number that depends on the
//       machine (e.g. the last digit of a log-probability under another OpenBLAS core).
//     A number printed with a decimal point may differ from the shown one by one unit of its
//     last digit (0.265 for 0.266, 1.2e-05 for 1.3e-05): another CPU's BLAS rounds the floats
//     otherwise by ~1e-7 relative, which moves a rounded decimal across an edge, by one unit,
//     when it lies that close to it. Everything else on the line, integers included (counts,
//     ids), must be as shown.
//     Words are split as /bin/sh would for plain words, '...' and "..."; an unquoted `#` starts
//     a comment. A run command is one program: no pipes, redirections or `&&`. It may write
//     files only under build/ (the value of every output flag, --output, --out, --html, --json,
//     --plot and --png, must start with build/: test_helpers::writes_outside_build),
//     so the check never changes the source tree.
//   - A console block preceded by the line `<!-- not run: REASON -->` (an HTML comment: Markdown
//     does not show it) is not run; its commands are checked to exist, as an ```sh block's are.
//     Used for commands that need PyTorch (torch_trace.py), take minutes (`make bench`), or are
//     dated records of one machine (`tinyformer version`, `cost --measure` timings). Every other
//     console command must be a tinyformer command.
//   - A fenced block marked ```sh shows commands without output (one per line, `#` comments
//     allowed); they are checked to exist, never run:
//       tinyformer: `build/tinyformer SUBCOMMAND --help` exits 0 and names every --flag used;
//       make: `make -n TARGET... [VAR=value...]` exits 0 (the Makefile parses, the targets exist);
//       /usr/bin/python3 SCRIPT.py: the script exists and parses (Python's ast; nothing imported,
//       so PyTorch is not needed); `python3 -c CODE` is not checked; a bare `python3` is refused
//       (the docs use Debian's /usr/bin/python3, which has numpy and torch);
//       mkdir and tee are taken as given; any other program fails the check (add a rule here).
//     Commands joined by `&&`, `;` or `|` are checked one by one.
//   - A ```python block must parse (Python's ast).
//   - A line starting with "$ " in any other fenced block is an error: every command shown is
//     in a block that is checked.
// Also: every relative link of these pages, [text](path#anchor) or a picture ![text](path),
// leads to a file that exists (pictures in docs/ are `reverse/...` from docs/*.md and
// `docs/reverse/...` from README.md), and an anchor into a .md file names one of its headings
// (GitHub's rule: lowercase, punctuation but - and _ dropped, spaces as -).
// Inline `code` in the prose is not checked. The whole suite runs in a few seconds.
#include <doctest/doctest.h>

#include "engine/memory/float_buffer.h"
#include "tests/run_cli.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using test_helpers::CliRun;
using test_helpers::TempDirectory;

namespace {

// One fenced block of a Markdown file.
struct Block {
    std::string where;  // "docs/LESSONS.md:62", the line of the opening fence
    std::string info;   // what follows the opening ``` ("console", "sh", "" ...)
    std::string not_run_reason;  // from <!-- not run: REASON --> on the line before the fence
    std::vector<std::string> lines;
};

// One "$ " command of a console block, with the output shown after it.
struct Session {
    std::string where;
    std::string command;
    std::vector<std::string> expected;
};

std::string trimmed(const std::string& text) {
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t") + 1 - first);
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The fenced blocks of `text` (a Markdown file called `name`). Fences may be indented (inside a
// list item); a block's lines lose that indentation.
std::vector<Block> fenced_blocks(const std::string& name, const std::string& text) {
    const std::vector<std::string> lines = split_lines(text);
    std::vector<Block> blocks;
    std::string previous;  // the last line before the current one
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string line = trimmed(lines[i]);
        if (!starts_with(line, "```")) {
            previous = line;
            continue;
        }
        Block block;
        block.where = name + ":" + std::to_string(i + 1);
        block.info = trimmed(line.substr(3));
        const std::string marker = "<!-- not run:";
        if (starts_with(previous, marker) && ends_with(previous, "-->"))
            block.not_run_reason = trimmed(previous.substr(marker.size(), previous.size() - marker.size() - 3));
        const size_t indent = lines[i].find('`');
        size_t j = i + 1;
        for (; j < lines.size() && trimmed(lines[j]) != "```"; ++j)
        {
            const size_t cut = std::min({indent, lines[j].find_first_not_of(' '), lines[j].size()});
            block.lines.push_back(lines[j].substr(cut));
        }
        REQUIRE_MESSAGE(j < lines.size(), block.where, ": the fence is never closed");
        blocks.push_back(block);
        i = j;
        previous.clear();
    }
    return blocks;
}

// The "$ " commands of a console block, each with the output lines shown after it.
std::vector<Session> sessions(const Block& block) {
    std::vector<Session> result;
    for (size_t i = 0; i < block.lines.size(); ++i) {
        const std::string& line = block.lines[i];
        if (starts_with(line, "$ ")) {
            result.push_back({block.where + " (line " + std::to_string(i + 1) + " of the block)", line.substr(2), {}});
            continue;
        }
        REQUIRE_MESSAGE(!result.empty(), block.where, ": a console block must start with a \"$ \" command, not: ", line);
        result.back().expected.push_back(line);
    }
    return result;
}

// A command line split into words as /bin/sh splits plain words and quotes; an unquoted # at
// the start of a word ends the line. Operators (&&, |, ;, >, <) come out as words of their own,
// flagged by `operators`. An unterminated quote (a `python3 -c '...` spanning lines) keeps
// what it has.
struct Words {
    std::vector<std::string> words;
    std::vector<bool> is_operator;
};

Words split_words(const std::string& command) {
    Words result;
    std::string word;
    bool in_word = false;
    auto finish = [&] {
        if (in_word) {
            result.words.push_back(word);
            result.is_operator.push_back(false);
        }
        word.clear();
        in_word = false;
    };
    for (size_t i = 0; i < command.size(); ++i) {
        const char c = command[i];
        if (c == ' ' || c == '\t') {
            finish();
        } else if (c == '#' && !in_word) {
            break;
        } else if (c == '\'') {
            in_word = true;
            const size_t end = command.find('\'', i + 1);
            word += command.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
            if (end == std::string::npos) break;
            i = end;
        } else if (c == '"') {
            in_word = true;
            for (++i; i < command.size() && command[i] != '"'; ++i) {
                if (command[i] == '\\' && i + 1 < command.size() && std::string("\"\\$`").find(command[i + 1]) != std::string::npos)
                    ++i;
                word += command[i];
            }
        } else if (c == '&' || c == '|' || c == ';' || c == '>' || c == '<' || c == '`' || (c == '$' && i + 1 < command.size() && command[i + 1] == '(')) {
            finish();
            std::string op(1, c);
            if (i + 1 < command.size() && (command[i + 1] == c || (c == '$' && command[i + 1] == '('))) op += command[++i];
            result.words.push_back(op);
            result.is_operator.push_back(true);
        } else if (c == '\\' && i + 1 < command.size()) {
            in_word = true;
            word += command[++i];
        } else {
            in_word = true;
            word += c;
        }
    }
    finish();
    return result;
}

// The simple commands of a line: its words cut at &&, ; and |.
std::vector<std::vector<std::string>> simple_commands(const Words& words) {
    std::vector<std::vector<std::string>> commands(1);
    for (size_t i = 0; i < words.words.size(); ++i) {
        if (words.is_operator[i]) {
            const std::string& op = words.words[i];
            REQUIRE_MESSAGE((op == "&&" || op == ";" || op == "|"), "the check cannot follow the shell operator ", op);
            commands.emplace_back();
        } else {
            commands.back().push_back(words.words[i]);
        }
    }
    commands.erase(std::remove_if(commands.begin(), commands.end(), [](const auto& c) { return c.empty(); }), commands.end());
    return commands;
}

bool is_tinyformer(const std::string& program) { return program == "build/tinyformer" || program == "./build/tinyformer"; }

// The line as text and numbers: a number with a decimal point becomes its value and the size
// of one unit of its last digit; the rest (integers too) stays text.
struct LinePieces {
    std::vector<std::string> text;               // the pieces between decimals
    std::vector<std::pair<double, double>> decimals;  // value, one unit of the last digit
};

LinePieces line_pieces(const std::string& line) {
    static const std::regex decimal(R"(-?[0-9]+\.([0-9]+)(?:[eE]([-+]?[0-9]+))?)");
    LinePieces pieces;
    size_t last = 0;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), decimal); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        pieces.text.push_back(line.substr(last, static_cast<size_t>(m.position(0)) - last));
        const int exponent = m[2].matched ? std::stoi(m[2].str()) : 0;
        const double unit = std::pow(10.0, exponent - static_cast<int>(m[1].length()));
        pieces.decimals.emplace_back(std::stod(m[0].str()), unit);
        last = static_cast<size_t>(m.position(0) + m.length(0));
    }
    pieces.text.push_back(line.substr(last));
    return pieces;
}

// The same line but for decimals off by at most one unit of their last digit (see the top).
bool same_but_last_digits(const std::string& expected, const std::string& actual) {
    if (expected == actual) return true;
    const LinePieces a = line_pieces(expected), b = line_pieces(actual);
    if (a.text != b.text || a.decimals.size() != b.decimals.size()) return false;
    for (size_t i = 0; i < a.decimals.size(); ++i) {
        const double unit = std::max(a.decimals[i].second, b.decimals[i].second);
        if (!(std::fabs(a.decimals[i].first - b.decimals[i].first) <= 1.001 * unit)) return false;
    }
    return true;
}

// True when `actual` is what `expected` shows: lines equal (decimals to one unit of their last
// digit), `...` any number of lines, a line ending in "# varies" any one line. failed[i][j]
// remembers pairs already ruled out.
bool output_matches(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
    std::vector<std::vector<char>> failed(expected.size() + 1, std::vector<char>(actual.size() + 1, 0));
    auto match = [&](auto&& self, size_t i, size_t j) -> bool {
        if (failed[i][j]) return false;
        bool ok = false;
        if (i == expected.size()) {
            ok = j == actual.size();
        } else if (trimmed(expected[i]) == "...") {
            for (size_t k = j; k <= actual.size() && !ok; ++k) ok = self(self, i + 1, k);
        } else if (j < actual.size()) {
            const bool same = ends_with(expected[i], "# varies") || same_but_last_digits(expected[i], actual[j]);
            ok = same && self(self, i + 1, j + 1);
        }
        if (!ok) failed[i][j] = 1;
        return ok;
    };
    return match(match, 0, 0);
}

std::string joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
}

// README.md and docs/*.md, in a fixed order.
std::vector<std::string> doc_files() {
    std::vector<std::string> files{"README.md"};
    std::vector<std::string> docs;
    for (const auto& entry : std::filesystem::directory_iterator("docs"))
        if (entry.is_regular_file() && entry.path().extension() == ".md") docs.push_back(entry.path().string());
    std::sort(docs.begin(), docs.end());
    files.insert(files.end(), docs.begin(), docs.end());
    return files;
}

std::vector<Block> every_block() {
    REQUIRE_MESSAGE(std::filesystem::is_regular_file("README.md"), "run the tests from the repository root (make test)");
    std::vector<Block> blocks;
    for (const std::string& file : doc_files()) {
        const std::vector<Block> found = fenced_blocks(file, test_helpers::read_file(file));
        blocks.insert(blocks.end(), found.begin(), found.end());
    }
    return blocks;
}

// Runs a shown tinyformer command and compares its stdout with the lines shown.
void check_run(const Session& session) {
    INFO(session.where, ": $ ", session.command);
    const Words words = split_words(session.command);
    for (bool op : words.is_operator) REQUIRE_MESSAGE(!op, "a command that is run must be one program, without shell operators");
    REQUIRE_MESSAGE(!words.words.empty(), "an empty command");
    REQUIRE_MESSAGE(is_tinyformer(words.words[0]),
                    "a console command that is run must be build/tinyformer; mark the block <!-- not run: REASON --> "
                    "if it needs another program");
    const std::vector<std::string> args(words.words.begin() + 1, words.words.end());
    const std::string outside = test_helpers::writes_outside_build(args);
    REQUIRE_MESSAGE(outside.empty(), outside, ": a command that is run may write only under build/");
    // 60 s is far above any shown command's time (lesson quantization: 9 s); the
    // sanitizer build (build/sanitize, about ten times slower) gets five times it.
    const bool sanitized = tinyformer::float_buffer_pool_state().starts_with("off (sanitizer");
    const CliRun run = test_helpers::run_tinyformer(args, 1, sanitized ? 300 : 60);
    INFO("stderr: ", run.err);
    CHECK(run.status == 0);
    const std::vector<std::string> actual = split_lines(run.out);
    CHECK_MESSAGE(output_matches(session.expected, actual), "shown:\n", joined(session.expected), "printed:\n", run.out);
}

// Collects what the commands of not-run blocks and sh blocks need, to check it in few runs.
struct ExistenceChecks {
    std::map<std::string, std::set<std::string>> tinyformer_flags;  // subcommand -> --flags used
    std::map<std::string, std::string> tinyformer_where;
    std::vector<std::pair<std::string, std::vector<std::string>>> make_calls;  // where, arguments
    std::map<std::string, std::string> python_scripts;  // script -> where

    void add(const std::string& where, const std::string& line) {
        for (const std::vector<std::string>& command : simple_commands(split_words(line))) {
            INFO(where, ": ", line);
            const std::string& program = command[0];
            if (is_tinyformer(program)) {
                const std::string sub = command.size() > 1 && !starts_with(command[1], "-") ? command[1] : "";
                tinyformer_where.emplace(sub, where);
                for (size_t i = 1; i < command.size(); ++i)
                    if (starts_with(command[i], "--")) tinyformer_flags[sub].insert(command[i].substr(0, command[i].find('=')));
            } else if (program == "make") {
                make_calls.emplace_back(where, std::vector<std::string>(command.begin() + 1, command.end()));
            } else if (program == "/usr/bin/python3") {
                if (std::find(command.begin(), command.end(), "-c") != command.end()) continue;  // inline code: not checked
                auto script = std::find_if(command.begin(), command.end(), [](const std::string& w) { return ends_with(w, ".py"); });
                REQUIRE_MESSAGE(script != command.end(), "a python3 command without a .py script");
                python_scripts.emplace(*script, where);
            } else if (program == "build/tinyformer-bench") {
                // The benchmarks are not built by make test: a suite named is one tools/bench/main.cpp lists.
                if (command.size() > 1 && !starts_with(command[1], "-"))
                    CHECK_MESSAGE(test_helpers::read_file("tools/bench/main.cpp").find("{\"" + command[1] + "\",") !=
                                      std::string::npos,
                                  "tinyformer-bench has no suite ", command[1]);
            } else {
                REQUIRE_MESSAGE(program != "python3", "use Debian's /usr/bin/python3, as the rest of the docs do");
                REQUIRE_MESSAGE((program == "mkdir" || program == "tee"), "no rule checks the program ", program,
                                ": add one to tests/test_docs.cpp");
            }
        }
    }
};

std::string sh_quoted_list(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& w : words) text.append(" ").append(test_helpers::shell_quoted(w));
    return text;
}

// Runs a /bin/sh command line with its output discarded; its exit status.
int exit_status(const std::string& command) {
    const int raw = std::system((command + " >/dev/null 2>&1").c_str());
    return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// True when each Python file parses (nothing is imported or run).
int python_parses(const std::vector<std::string>& files) {
    return exit_status("/usr/bin/python3 -c " +
                       test_helpers::shell_quoted("import ast, sys\nfor f in sys.argv[1:]: ast.parse(open(f).read(), f)") +
                       sh_quoted_list(files));
}

// The anchors GitHub makes for the headings of a Markdown text (outside fenced blocks).
std::set<std::string> heading_anchors(const std::string& text) {
    std::set<std::string> anchors;
    bool fenced = false;
    for (const std::string& line : split_lines(text)) {
        if (starts_with(trimmed(line), "```")) fenced = !fenced;
        if (fenced || !starts_with(line, "#")) continue;
        const std::string heading = trimmed(line.substr(line.find(' ') == std::string::npos ? line.size() : line.find(' ')));
        std::string anchor;
        for (unsigned char c : heading) {
            if (std::isalnum(c) || c == '-' || c == '_') anchor += static_cast<char>(std::tolower(c));
            else if (c == ' ') anchor += '-';
            else if (c >= 0x80) anchor += static_cast<char>(c);  // letters of other scripts stay
        }
        anchors.insert(anchor);
    }
    return anchors;
}

}  // namespace

TEST_CASE("Docs check: the convention, on a hand-made page") {
    const std::string page =
        "Some prose with `build/tinyformer inline` code, never checked.\n"
        "```console\n"
        "$ ./build/tinyformer mask causal --len 2   # a comment\n"
        "causal mask\n"
        "...\n"
        "q1: k0 k1\n"
        "```\n"
        "<!-- not run: needs PyTorch -->\n"
        "```console\n"
        "$ /usr/bin/python3 tools/python/torch_trace.py x --output y\n"
        "anything\n"
        "```\n"
        "1. a list\n"
        "   ```sh\n"
        "   make test\n"
        "   ```\n";
    const std::vector<Block> blocks = fenced_blocks("page.md", page);
    REQUIRE(blocks.size() == 3);
    CHECK(blocks[0].where == "page.md:2");
    CHECK(blocks[0].info == "console");
    CHECK(blocks[0].not_run_reason.empty());
    CHECK(blocks[1].not_run_reason == "needs PyTorch");
    CHECK(blocks[2].info == "sh");
    CHECK(blocks[2].lines == std::vector<std::string>{"make test"});
    const std::vector<Session> shown = sessions(blocks[0]);
    REQUIRE(shown.size() == 1);
    CHECK(shown[0].expected == std::vector<std::string>{"causal mask", "...", "q1: k0 k1"});
    CHECK(split_words(shown[0].command).words ==
          std::vector<std::string>{"./build/tinyformer", "mask", "causal", "--len", "2"});
    CHECK(split_words("build/tinyformer run m \"may 3, 1979\" 'a b'").words ==
          std::vector<std::string>{"build/tinyformer", "run", "m", "may 3, 1979", "a b"});
    CHECK(simple_commands(split_words("make && /usr/bin/python3 a.py | tee log")).size() == 3);

    SUBCASE("an excerpt matches the lines it shows, in order, and nothing else") {
        const std::vector<std::string> printed{"causal mask", "q0: k0", "q1: k0 k1"};
        CHECK(output_matches({"causal mask", "...", "q1: k0 k1"}, printed));
        CHECK(output_matches({"...", "q1: k0 k1"}, printed));
        CHECK(output_matches({"  ...  "}, printed));
        CHECK(output_matches({"causal mask", "q0: k9   # varies", "q1: k0 k1"}, printed));
        CHECK_FALSE(output_matches({"causal mask", "q1: k0 k1"}, printed));           // a line left out without ...
        CHECK_FALSE(output_matches({"causal mask", "...", "q1: k0 k2"}, printed));    // one character off
        CHECK_FALSE(output_matches({"...", "q0: k0", "causal mask"}, printed));       // out of order
        CHECK_FALSE(output_matches({"causal mask", "q0: k0", "q1: k0 k1", ""}, printed));  // a line too many
        CHECK_FALSE(output_matches({"q0: k0   # varies"}, printed));                  // varies is one line, not many
    }
    SUBCASE("a decimal may be one unit of its last digit off; integers and text may not") {
        CHECK(output_matches({"p 0.265 of 12"}, {"p 0.266 of 12"}));
        CHECK(output_matches({"log p -75.0542"}, {"log p -75.0541"}));
        CHECK(output_matches({"diff 1.2e-05"}, {"diff 1.3e-05"}));
        CHECK(output_matches({"x 9.99"}, {"x 10.00"}));                               // a carry
        CHECK_FALSE(output_matches({"p 0.265 of 12"}, {"p 0.267 of 12"}));          // two units
        CHECK_FALSE(output_matches({"p 0.265 of 12"}, {"p 0.265 of 13"}));          // an integer
        CHECK_FALSE(output_matches({"p 0.265 of 12"}, {"q 0.265 of 12"}));          // the text
        CHECK_FALSE(output_matches({"exact match 199/200"}, {"exact match 200/200"}));
    }
}

TEST_CASE("Docs check: every command shown with its output prints that output") {
    int run = 0;
    for (const Block& block : every_block()) {
        if (block.info != "console" || !block.not_run_reason.empty()) continue;
        for (const Session& session : sessions(block)) {
            check_run(session);
            ++run;
        }
    }
    CHECK(run >= 10);  // the tour and the docs show at least that many; zero would mean the parser missed them
}

TEST_CASE("Docs check: every command shown without its output exists") {
    ExistenceChecks checks;
    TempDirectory scratch;
    std::vector<std::string> python_blocks;
    for (const Block& block : every_block()) {
        if (block.info == "console" && !block.not_run_reason.empty()) {
            for (const Session& session : sessions(block)) checks.add(session.where, session.command);
        } else if (block.info == "sh") {
            for (size_t i = 0; i < block.lines.size(); ++i)
                if (!trimmed(block.lines[i]).empty() && !starts_with(trimmed(block.lines[i]), "#"))
                    checks.add(block.where + " (line " + std::to_string(i + 1) + " of the block)", block.lines[i]);
        } else if (block.info == "python") {
            python_blocks.push_back(scratch.file("block" + std::to_string(python_blocks.size()) + ".py"));
            std::ofstream(python_blocks.back()) << joined(block.lines);
        } else if (block.info != "console") {
            for (const std::string& line : block.lines)
                CHECK_MESSAGE(!starts_with(line, "$ "), block.where, ": a command in a block marked \"", block.info,
                              "\", which nothing checks; mark it ```console (or ```sh): ", line);
        }
    }

    for (const auto& [sub, flags] : checks.tinyformer_flags) {
        INFO(checks.tinyformer_where[sub], ": tinyformer ", sub);
        std::vector<std::string> args;
        if (!sub.empty()) args.push_back(sub);
        args.push_back("--help");
        const CliRun help = test_helpers::run_tinyformer(args, 1, 30);
        CHECK(help.status == 0);
        for (const std::string& flag : flags)
            if (flag != "--help") CHECK_MESSAGE(help.out.find(flag) != std::string::npos, flag, " is not in --help");
    }
    CHECK(checks.tinyformer_flags.size() >= 3);

    for (const auto& [where, args] : checks.make_calls) {
        INFO(where, ": make", sh_quoted_list(args));
        // A dry run (-n) of the docs' make command, outside the make that runs these tests.
        CHECK(exit_status("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n" + sh_quoted_list(args)) == 0);
    }
    CHECK(checks.make_calls.size() >= 2);

    std::vector<std::string> scripts;
    for (const auto& [script, where] : checks.python_scripts) {
        INFO(where, ": ", script);
        CHECK(std::filesystem::is_regular_file(script));
        scripts.push_back(script);
    }
    CHECK(scripts.size() >= 3);
    scripts.insert(scripts.end(), python_blocks.begin(), python_blocks.end());
    INFO("scripts: ", sh_quoted_list(scripts));
    CHECK(python_parses(scripts) == 0);
}

TEST_CASE("Docs check: every relative link and picture of the pages leads to a file") {
    CHECK(heading_anchors("# Two commands\n## Explore in a browser (`tinyformer explore`)\n```\n# not a heading\n```\n") ==
          std::set<std::string>{"two-commands", "explore-in-a-browser-tinyformer-explore"});
    const std::regex link(R"(\]\(([^)\s]+)\))");
    int links = 0;
    for (const std::string& file : doc_files()) {
        const std::string text = test_helpers::read_file(file);
        const std::filesystem::path folder = std::filesystem::path(file).parent_path();
        for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
            const std::string target = (*it)[1];
            if (starts_with(target, "http://") || starts_with(target, "https://")) continue;
            ++links;
            const size_t hash = target.find('#');
            const std::string path = target.substr(0, hash);
            const std::filesystem::path resolved = path.empty() ? std::filesystem::path(file) : folder / path;
            INFO(file, ": ", target);
            CHECK_MESSAGE(std::filesystem::exists(resolved), resolved.string(), " does not exist");
            if (hash != std::string::npos && resolved.extension() == ".md" && std::filesystem::exists(resolved))
                CHECK_MESSAGE(heading_anchors(test_helpers::read_file(resolved.string())).count(target.substr(hash + 1)) == 1,
                              "no heading of ", resolved.string(), " makes the anchor #", target.substr(hash + 1));
        }
    }
    CHECK(links >= 50);
}

TEST_CASE("A shown command that would write outside build/ is caught before it runs") {
    using test_helpers::writes_outside_build;
    CHECK(writes_outside_build({"eval", "m", "--plot", "docs/extrapolation/lm-loss.png"}) ==
          "--plot docs/extrapolation/lm-loss.png");
    CHECK(writes_outside_build({"attention", "m", "x", "--output=docs/reverse"}) == "--output docs/reverse");
    CHECK(writes_outside_build({"mask", "causal", "--png", "build/../README.md"}) == "--png build/../README.md");
    CHECK(writes_outside_build({"trace", "m", "x", "--json", "out.json"}) == "--json out.json");
    CHECK(writes_outside_build({"eval", "m", "--plot", "build/lm-loss.png", "--html", "build/p.html"}).empty());
    CHECK(writes_outside_build({"run", "m", "hello"}).empty());
}
