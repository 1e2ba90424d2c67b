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

// The source files of the floors (engine/, layers/, models/, tools/) under `root`, relative to it.
std::vector<std::string> source_files(const fs::path& root = ".") {
    std::vector<std::string> files;
    for (const char* top : {"engine", "layers", "models", "tools"}) {
        if (!fs::exists(root / top)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
            const std::string ext = entry.path().extension().string();
            if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".inc"))
                files.push_back(fs::relative(entry.path(), root).generic_string());
        }
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

Spine read_spine(std::vector<std::string>* problems) {
    Spine spine;
    bool inside = false;
    static const std::regex numbered(R"(^\|\s*[0-9]+\s*\|)");
    static const std::regex row(R"(^\|\s*([0-9]+)\s*\|.*`([A-Za-z0-9_./-]+\.(?:cpp|h)):([A-Za-z0-9_:~]+)`\s*\|\s*([0-9]+)\s*\|\s*$)");
    static const std::regex spine_budget(R"(the spine at most ([0-9,]+) lines)");
    static const std::regex core_budget(R"(the core at most ([0-9,]+) lines)");
    for (const std::string& line : lines_of(read_file("README.md"))) {
        if (starts_with(line, "## ")) inside = line == "## The spine";
        if (!inside) continue;
        std::smatch match;
        if (std::regex_search(line, match, row)) {
            spine.entries.push_back({match[2], match[3], line, std::stoi(match[4])});
            if (std::stoi(match[1]) != static_cast<int>(spine.entries.size()))
                problems->push_back("step " + std::string(match[1]) + " is row " + std::to_string(spine.entries.size()));
        } else if (std::regex_search(line, numbered)) {
            problems->push_back("a row the check cannot read (| N | what | `file:function` | lines |): " + line);
        }
        if (std::regex_search(line, match, spine_budget)) spine.spine_budget = number(match[1]);
        if (std::regex_search(line, match, core_budget)) spine.core_budget = number(match[1]);
    }
    return spine;
}

std::string bare_name(const std::string& function) {
    const size_t colon = function.rfind("::");
    return colon == std::string::npos ? function : function.substr(colon + 2);
}

std::string owner_name(const std::string& function) {
    const size_t colon = function.rfind("::");
    return colon == std::string::npos ? "" : function.substr(0, colon);
}

// The class an object is declared with in `code` ("LayerNorm norm1, norm2;" gives norm2
// LayerNorm; "const FeedForward& ffn" gives ffn FeedForward), or "" when it is not found.
std::string declared_class(const std::string& code, const std::string& object) {
    const std::regex declaration("(^|[\\n;(,{])\\s*(?:const\\s+)?([A-Z][A-Za-z0-9_]*)\\s*[&*]?\\s+(?:[a-z_][A-Za-z0-9_]*\\s*,\\s*)*" +
                                 object + "\\b");
    std::smatch match;
    return std::regex_search(code, match, declaration) ? match[2].str() : "";
}

// The reading order: step i may call only functions of steps 1..i (or functions the spine
// does not list). A call of a later step's function from step i is a problem. `bodies[i]`
// is step i's code; `context[i]` the code of its file and header, where the objects it calls
// through are declared: `norm1.forward(x)` is LayerNorm::forward when norm1 is a LayerNorm.
std::vector<std::string> order_problems(const std::vector<SpineEntry>& entries, const std::vector<std::string>& bodies,
                                        const std::vector<std::string>& context) {
    std::vector<std::string> problems;
    static const std::regex call(R"((?:([A-Za-z_][A-Za-z0-9_]*)\s*(?:\.|->)\s*|([A-Za-z_][A-Za-z0-9_]*)::)?([A-Za-z_~][A-Za-z0-9_]*)\s*\()");
    for (size_t i = 0; i < entries.size(); ++i) {
        const std::string own_class = owner_name(entries[i].function);
        for (auto it = std::sregex_iterator(bodies[i].begin(), bodies[i].end(), call); it != std::sregex_iterator(); ++it) {
            const std::smatch& match = *it;
            const std::string object = match[1], qualifier = match[2], name = match[3];
            // The called function's class: by its object's declared class, its qualifier, or
            // (a plain call from a method) the method's own class; "?" when not known.
            std::string owner = "?";
            if (!object.empty()) owner = object == "this" ? own_class : declared_class(context[i], object);
            else if (!qualifier.empty()) owner = qualifier;
            if (owner.empty()) owner = "?";
            for (size_t j = i + 1; j < entries.size(); ++j) {
                if (bare_name(entries[j].function) != name) continue;
                const std::string later_owner = owner_name(entries[j].function);
                bool same = false;
                if (owner == "?") {
                    // Unknown class: a plain call is the free function or the own class's method;
                    // a call through an unknown object matches only if no earlier step has that name.
                    if (object.empty()) same = later_owner.empty() || later_owner == own_class;
                    else {
                        same = true;
                        for (size_t k = 0; k <= i; ++k) same = same && bare_name(entries[k].function) != name;
                    }
                } else {
                    same = later_owner == owner;
                }
                if (same)
                    problems.push_back("step " + std::to_string(i + 1) + " (" + entries[i].function + ") calls " +
                                       entries[j].function + ", which the spine lists later, at step " +
                                       std::to_string(j + 1));
            }
        }
    }
    return problems;
}

}  // namespace

// What breaks the floors under `root`: an include that runs up a floor, one that is not
// written from the repository's root ("../study/trace.h" would hide its floor), one of a
// test file, and every circle between modules. `modules` counts the modules that include
// another (a wrong root would see none).
std::vector<std::string> include_problems(const fs::path& root, size_t* modules = nullptr) {
    std::vector<std::string> problems;
    std::map<std::string, std::set<std::string>> edges;  // module -> modules it includes
    for (const std::string& file : source_files(root)) {
        const int floor = floor_of(file);
        for (const std::string& included : includes_of((root / file).string())) {
            const int to = floor_of(included);
            if (starts_with(included, "tests/")) {
                problems.push_back(file + " includes a test file: " + included);
            } else if (to < 0) {
                if (!starts_with(included, "build/generated/"))  // made by the Makefile (the font)
                    problems.push_back(file + " includes \"" + included + "\", not a path from the root");
            } else {
                if (to > floor)
                    problems.push_back(file + " includes " + included + ": up from floor " + std::to_string(floor) +
                                       " to floor " + std::to_string(to));
                if (module_of(included) != module_of(file)) edges[module_of(file)].insert(module_of(included));
            }
        }
    }
    // Depth-first search; a module met again on the current path closes a circle.
    std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
    std::vector<std::string> path;
    std::function<void(const std::string&)> visit = [&](const std::string& module) {
        state[module] = 1;
        path.push_back(module);
        for (const std::string& next : edges[module]) {
            if (state[next] == 1) {
                std::string circle = "an include circle: ";
                for (auto it = std::find(path.begin(), path.end(), next); it != path.end(); ++it) circle += *it + " -> ";
                problems.push_back(circle + next);
            } else if (state[next] == 0) {
                visit(next);
            }
        }
        path.pop_back();
        state[module] = 2;
    };
    for (const auto& [module, to] : edges)
        if (state[module] == 0) visit(module);
    if (modules) *modules = edges.size();
    return problems;
}

void write_text(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

TEST_CASE("No include runs up a floor, and no circle runs between modules") {
    size_t modules = 0;
    for (const std::string& problem : include_problems(".", &modules)) FAIL_CHECK(problem);
    CHECK(modules > 50);  // the walk saw the tree

    SUBCASE("the check finds each kind of break in a hand-made tree") {
        test_helpers::TempDirectory dir;
        const fs::path root = dir.path();
        write_text(root / "models/a.h", "#include \"models/study/b.h\"\n");        // up: 3 -> 4
        write_text(root / "models/study/b.h", "#include \"engine/x.h\"\n");        // down: fine
        write_text(root / "models/c.h", "#include \"../study/b.h\"\n");            // not from the root
        write_text(root / "engine/x.h", "#include \"engine/y.h\"\n");              // x -> y
        write_text(root / "engine/y.cpp", "#include \"engine/x.h\"\n");            // y -> x: a circle
        write_text(root / "layers/t.cpp", "#include \"tests/helpers.h\"\n");       // a test file
        const std::vector<std::string> problems = include_problems(root);
        std::string all;
        for (const std::string& problem : problems) all += problem + "\n";
        INFO(all);
        CHECK(problems.size() == 4);
        CHECK(all.find("models/a.h includes models/study/b.h: up from floor 3 to floor 4") != std::string::npos);
        CHECK(all.find("models/c.h includes \"../study/b.h\", not a path from the root") != std::string::npos);
        CHECK(all.find("an include circle: engine/x -> engine/y -> engine/x") != std::string::npos);
        CHECK(all.find("layers/t.cpp includes a test file: tests/helpers.h") != std::string::npos);
    }
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
    std::vector<std::string> problems;
    const Spine spine = read_spine(&problems);
    for (const std::string& problem : problems) FAIL_CHECK(problem);
    REQUIRE_MESSAGE(spine.entries.size() >= 10, "README.md has no table under \"## The spine\"");
    REQUIRE_MESSAGE(spine.spine_budget > 0, "the spine section states no \"the spine at most N lines\"");
    long total = 0;
    std::vector<std::string> bodies, context;
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
        const fs::path header = fs::path(entry.file).replace_extension(".h");
        context.push_back(code_only(read_file(entry.file)) + (fs::exists(header) ? code_only(read_file(header.string())) : ""));
    }
    MESSAGE("the spine: ", spine.entries.size(), " functions, ", total, " lines (budget ", spine.spine_budget, ")");
    CHECK(total <= spine.spine_budget);
    for (const std::string& problem : order_problems(spine.entries, bodies, context)) FAIL_CHECK(problem);
}

TEST_CASE("The order check tells functions of one name apart by their objects' classes") {
    // Hand-made: LayerNorm::forward and Block::forward share a name; Block's body calls
    // norm.forward (a LayerNorm) and helper() (a free function).
    const std::string context = "struct Block { LayerNorm norm, other; FeedForward ffn; };";
    const std::string block = "Tensor Block::forward(Tensor x) const {\n    return helper(ffn.forward(norm.forward(x)));\n}\n";
    const auto entries_of = [](std::vector<std::string> functions) {
        std::vector<SpineEntry> entries;
        for (const std::string& function : functions) entries.push_back({"f.cpp", function, "", 1});
        return entries;
    };
    const auto problems = [&](std::vector<std::string> functions) {
        std::vector<std::string> bodies, contexts;
        for (const std::string& function : functions) {
            bodies.push_back(function == "Block::forward" ? block : "{}");
            contexts.push_back(context);
        }
        return order_problems(entries_of(functions), bodies, contexts);
    };
    CHECK(problems({"LayerNorm::forward", "FeedForward::forward", "helper", "Block::forward"}).empty());
    // Block::forward read before LayerNorm::forward, though an earlier step is named forward too.
    const std::vector<std::string> late_norm = problems({"FeedForward::forward", "helper", "Block::forward", "LayerNorm::forward"});
    REQUIRE(late_norm.size() == 1);
    CHECK(late_norm[0] == "step 3 (Block::forward) calls LayerNorm::forward, which the spine lists later, at step 4");
    CHECK(problems({"LayerNorm::forward", "FeedForward::forward", "Block::forward", "helper"}).size() == 1);
    CHECK(declared_class(context, "other") == "LayerNorm");
    CHECK(declared_class(context, "ffn") == "FeedForward");
    CHECK(declared_class("void f(const Mask& mask, Observer* observer)", "observer") == "Observer");
}

TEST_CASE("The core stays within the README's budget") {
    std::vector<std::string> problems;
    const Spine spine = read_spine(&problems);
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
