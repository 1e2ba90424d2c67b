// The layout's promises (README.md "The spine" and "Layout", docs/LAYOUT.md), checked on the
// source tree itself, from the repository root:
//
//   1. Floors. Every #include "..." of a file points to its own floor or one below:
//        engine/ (the math, with its rooms cpu/, memory/, io/)   0
//        layers/                                                  1
//        models/tokenizers/                                       2
//        models/ (config, checkpoint, the models, decoding)       3
//        models/study/ (trace, probe, interventions, ...)         4
//        tools/                                                   5
//      and no circle runs between modules (a module is x.h with x.cpp; within a floor too).
//   2. The spine. The README's table under "## The spine" lists `file:function` entries in
//      the order the data flows, each with its line count. Each count must be the function's
//      length in the file today (a definition from the line naming it to its closing brace;
//      every overload of that name in the file, summed), the sum must be within the budget
//      the README states, and a step may call only functions of the steps before it (a name
//      first listed at a later step is an error when it is called from an earlier one).
//   3. The core. engine/'s root files, layers/ and models/'s root files (not its tokenizers/
//      and study/ floors) together stay within the line budget the README states.
// The counts are the test's own: it reads the files, nothing of the engine runs.
#include <doctest/doctest.h>

#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using test_helpers::read_file;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The source files of the floors (engine/, layers/, models/, tools/), relative to the root.
std::vector<std::string> source_files() {
    std::vector<std::string> files;
    for (const char* top : {"engine", "layers", "models", "tools"})
        for (const auto& entry : fs::recursive_directory_iterator(top)) {
            const std::string ext = entry.path().extension().string();
            if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".inc"))
                files.push_back(entry.path().generic_string());
        }
    std::sort(files.begin(), files.end());
    return files;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The floor of a path (see the top of this file); -1 for a path outside them.
int floor_of(const std::string& path) {
    if (starts_with(path, "engine/")) return 0;
    if (starts_with(path, "layers/")) return 1;
    if (starts_with(path, "models/tokenizers/")) return 2;
    if (starts_with(path, "models/study/")) return 4;
    if (starts_with(path, "models/")) return 3;
    if (starts_with(path, "tools/")) return 5;
    return -1;
}

// "models/stepper.cpp" -> "models/stepper": a header and its source are one module.
std::string module_of(const std::string& path) { return path.substr(0, path.rfind('.')); }

// The quoted includes of a file.
std::vector<std::string> includes_of(const std::string& path) {
    static const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
    std::vector<std::string> found;
    for (const std::string& line : lines_of(read_file(path))) {
        std::smatch match;
        if (std::regex_search(line, match, include)) found.push_back(match[1]);
    }
    return found;
}

// Text with comments, string and character literals blanked (their newlines kept), so that
// braces and names are only the code's.
std::string code_only(const std::string& text) {
    std::string out = text;
    enum { Code, Line, Block, String, Char } state = Code;
    for (size_t i = 0; i < out.size(); ++i) {
        const char c = out[i], next = i + 1 < out.size() ? out[i + 1] : '\0';
        switch (state) {
        case Code:
            if (c == '/' && next == '/') state = Line, out[i] = ' ';
            else if (c == '/' && next == '*') state = Block, out[i] = ' ';
            else if (c == '"') state = String;
            else if (c == '\'') state = Char;
            break;
        case Line:
            if (c == '\n') state = Code; else out[i] = ' ';
            break;
        case Block:
            if (c == '*' && next == '/') { out[i] = out[i + 1] = ' '; ++i; state = Code; }
            else if (c != '\n') out[i] = ' ';
            break;
        case String:
        case Char:
            if (c == '\\') { out[i] = ' '; if (i + 1 < out.size() && out[i + 1] != '\n') out[++i] = ' '; }
            else if ((state == String && c == '"') || (state == Char && c == '\'')) state = Code;
            else if (c != '\n') out[i] = ' ';
            break;
        }
    }
    return out;
}

struct Definition {
    int first_line = 0, last_line = 0;  // 1-based, inclusive
    std::string body;                   // the code of those lines (comments and literals blanked)
};

// The definition whose name is at lines[first], column `col`: its parameter list's
// parentheses, then "{" (a definition, to the brace that closes it) or ";" (a declaration:
// none).
std::optional<Definition> definition_at(const std::vector<std::string>& lines, size_t first, size_t col) {
    int parens = 0, braces = 0;
    bool opened = false;
    for (size_t line = first; line < lines.size(); ++line, col = 0)
        for (; col < lines[line].size(); ++col) {
            const char c = lines[line][col];
            if (!opened) {
                if (c == '(') ++parens;
                else if (c == ')') --parens;
                else if (parens == 0 && c == ';') return std::nullopt;
                else if (parens == 0 && c == '{') opened = true, braces = 1;
            } else if (c == '{') {
                ++braces;
            } else if (c == '}' && --braces == 0) {
                Definition definition{static_cast<int>(first) + 1, static_cast<int>(line) + 1, ""};
                for (size_t k = first; k <= line; ++k) definition.body += lines[k] + "\n";
                return definition;
            }
        }
    return std::nullopt;
}

bool is_indented(const std::string& line) { return !line.empty() && (line[0] == ' ' || line[0] == '\t'); }

// Every definition of `name` in a file, overloads included: a free function or
// "Class::method" defined at the file's top level (a line that is not indented names it,
// followed by "("), or "Class::method" defined inside the body of `struct Class` /
// `class Class` (a header's inline method).
std::vector<Definition> definitions_of(const std::string& path, const std::string& name) {
    const std::vector<std::string> lines = lines_of(code_only(read_file(path)));
    const std::regex named("(^|[^A-Za-z0-9_:.>])" + name + R"(\s*\()");
    std::vector<Definition> found;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].empty() || is_indented(lines[i]) || lines[i][0] == '#') continue;
        if (!std::regex_search(lines[i], named)) continue;
        if (const auto definition = definition_at(lines, i, lines[i].find(name))) {
            found.push_back(*definition);
            i = static_cast<size_t>(definition->last_line) - 1;
        }
    }
    const size_t colons = name.rfind("::");
    if (!found.empty() || colons == std::string::npos) return found;
    const std::string owner = name.substr(0, colons), method = name.substr(colons + 2);
    const std::regex opens("^(struct|class) " + owner + R"(\b[^;]*$)");
    const std::regex member("(^|[^A-Za-z0-9_:.>])" + method + R"(\s*\()");
    for (size_t i = 0; i < lines.size(); ++i) {
        if (!std::regex_search(lines[i], opens)) continue;
        for (size_t k = i + 1; k < lines.size() && !starts_with(lines[k], "};"); ++k) {
            std::smatch match;
            if (!is_indented(lines[k]) || !std::regex_search(lines[k], match, member)) continue;
            if (const auto definition = definition_at(lines, k, static_cast<size_t>(match.position(0)))) {
                found.push_back(*definition);
                k = static_cast<size_t>(definition->last_line) - 1;
            }
        }
    }
    return found;
}

struct SpineEntry {
    std::string file, function, text;
    int stated = 0;
};

// The README section "## The spine": its table rows with a `file:function` and a count, and
// the two budgets it states.
struct Spine {
    std::vector<SpineEntry> entries;
    long spine_budget = -1, core_budget = -1;
};

long number(std::string digits) {
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    return std::stol(digits);
}

Spine read_spine() {
    Spine spine;
    bool inside = false;
    static const std::regex row(R"(^\|.*`([a-z_/]+\.(?:cpp|h)):([A-Za-z_:~]+)`.*\|\s*([0-9]+)\s*\|\s*$)");
    static const std::regex spine_budget(R"(the spine at most ([0-9,]+) lines)");
    static const std::regex core_budget(R"(the core at most ([0-9,]+) lines)");
    for (const std::string& line : lines_of(read_file("README.md"))) {
        if (starts_with(line, "## ")) inside = line == "## The spine";
        if (!inside) continue;
        std::smatch match;
        if (std::regex_search(line, match, row)) spine.entries.push_back({match[1], match[2], line, std::stoi(match[3])});
        if (std::regex_search(line, match, spine_budget)) spine.spine_budget = number(match[1]);
        if (std::regex_search(line, match, core_budget)) spine.core_budget = number(match[1]);
    }
    return spine;
}

std::string bare_name(const std::string& function) {
    const size_t colon = function.rfind("::");
    return colon == std::string::npos ? function : function.substr(colon + 2);
}

}  // namespace

TEST_CASE("No include runs up a floor, and no circle runs between modules") {
    std::map<std::string, std::set<std::string>> edges;  // module -> modules it includes
    for (const std::string& file : source_files()) {
        const int floor = floor_of(file);
        for (const std::string& included : includes_of(file)) {
            const int to = floor_of(included);
            if (to < 0) continue;  // tests/ helpers are not included by the floors; checked below
            INFO(file, " includes ", included);
            CHECK_MESSAGE(to <= floor, "an include runs up from floor ", floor, " to floor ", to);
            if (module_of(included) != module_of(file)) edges[module_of(file)].insert(module_of(included));
        }
        for (const std::string& included : includes_of(file))
            CHECK_MESSAGE(!starts_with(included, "tests/"), file, " includes a test file: ", included);
    }
    // Depth-first search; a module met again on the current path closes a circle.
    std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
    std::vector<std::string> path;
    std::vector<std::string> circles;
    std::function<void(const std::string&)> visit = [&](const std::string& module) {
        state[module] = 1;
        path.push_back(module);
        for (const std::string& next : edges[module]) {
            if (state[next] == 1) {
                std::string circle;
                for (auto it = std::find(path.begin(), path.end(), next); it != path.end(); ++it) circle += *it + " -> ";
                circles.push_back(circle + next);
            } else if (state[next] == 0) {
                visit(next);
            }
        }
        path.pop_back();
        state[module] = 2;
    };
    for (const auto& [module, to] : edges)
        if (state[module] == 0) visit(module);
    for (const std::string& circle : circles) FAIL_CHECK("an include circle: ", circle);
    CHECK(edges.size() > 50);  // the walk saw the tree (a wrong root would see nothing)
}

TEST_CASE("The finder of definitions counts what a reader reads") {
    // Hand-made: a declaration, a definition over lines 3-7 with a brace in a string and a
    // comment, and an indented call that is no definition.
    test_helpers::TempDirectory dir;
    const std::string path = dir.file("sample.cpp");
    {
        std::ofstream out(path);
        out << "int twice(int x);\n"                    // 1: a declaration
            << "\n"                                      // 2
            << "int twice(int x) {\n"                    // 3
            << "    const char* s = \"}\";  // }\n"     // 4
            << "    /* { */\n"                           // 5
            << "    return 2 * x;\n"                     // 6
            << "}\n"                                     // 7
            << "int four() { return twice(2); }\n";      // 8
    }
    const std::vector<Definition> found = definitions_of(path, "twice");
    REQUIRE(found.size() == 1);
    CHECK(found[0].first_line == 3);
    CHECK(found[0].last_line == 7);
    CHECK(definitions_of(path, "four").size() == 1);
    CHECK(definitions_of(path, "four")[0].last_line == 8);
}

TEST_CASE("The README's spine: true counts, within its budget, each step needing only the steps before it") {
    const Spine spine = read_spine();
    REQUIRE_MESSAGE(spine.entries.size() >= 10, "README.md has no table under \"## The spine\"");
    REQUIRE_MESSAGE(spine.spine_budget > 0, "the spine section states no \"the spine at most N lines\"");
    long total = 0;
    std::vector<std::string> bodies;
    for (const SpineEntry& entry : spine.entries) {
        INFO(entry.file, ":", entry.function);
        REQUIRE_MESSAGE(fs::exists(entry.file), "no such file");
        const std::vector<Definition> found = definitions_of(entry.file, entry.function);
        REQUIRE_MESSAGE(!found.empty(), "no definition of that function in that file");
        int lines = 0;
        std::string body;
        for (const Definition& definition : found) {
            lines += definition.last_line - definition.first_line + 1;
            body += definition.body;
        }
        CHECK_MESSAGE(lines == entry.stated, entry.file, ":", entry.function, ": the README says ", entry.stated,
                      " lines; the file has ", lines);
        total += lines;
        bodies.push_back(body);
    }
    MESSAGE("the spine: ", spine.entries.size(), " functions, ", total, " lines (budget ", spine.spine_budget, ")");
    CHECK(total <= spine.spine_budget);
    // A step may call only what the steps up to it list: a bare name first listed later,
    // called from an earlier step, breaks the reading order.
    for (size_t i = 0; i < spine.entries.size(); ++i) {
        std::set<std::string> known;
        for (size_t k = 0; k <= i; ++k) known.insert(bare_name(spine.entries[k].function));
        for (size_t j = i + 1; j < spine.entries.size(); ++j) {
            const std::string later = bare_name(spine.entries[j].function);
            if (known.count(later)) continue;
            const std::regex call("(^|[^A-Za-z0-9_])" + later + R"(\s*\()");
            CHECK_MESSAGE(!std::regex_search(bodies[i], call), "step ", i + 1, " (", spine.entries[i].function,
                          ") calls ", later, ", which the spine lists later, at step ", j + 1);
        }
    }
}

TEST_CASE("The core stays within the README's budget") {
    const Spine spine = read_spine();
    REQUIRE_MESSAGE(spine.core_budget > 0, "the spine section states no \"the core at most N lines\"");
    long lines = 0;
    for (const std::string& file : source_files()) {
        const bool engine_root = starts_with(file, "engine/") && file.find('/', 7) == std::string::npos;
        const bool models_root = starts_with(file, "models/") && file.find('/', 7) == std::string::npos;
        if (engine_root || starts_with(file, "layers/") || models_root)
            lines += static_cast<long>(lines_of(read_file(file)).size());
    }
    MESSAGE("the core (engine/*, layers/, models/*): ", lines, " lines (budget ", spine.core_budget, ")");
    CHECK(lines <= spine.core_budget);
    CHECK(lines > 1000);  // the files were found
}
