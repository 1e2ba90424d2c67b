// The numbers in the docs' tables come from the commands they name (tests/test_docs.cpp runs
// the ```console blocks; this file covers the prose of tables):
//   - docs/LESSONS.md: every number in a lesson's row occurs in what `tinyformer lesson NAME`
//     prints (its part of `lesson all`, tests/lesson_output.h);
//   - docs/TOY_MODELS.md: each model's exact-match counts are what `tinyformer eval MODEL
//     --task T [--lengths A-B]` prints (the table's stated command: 1000 fresh examples,
//     seed 1), the numbers of its architecture are in `tinyformer info MODEL`, and ALiBi's
//     "slopes A .. B" are the first and last of alibi_slopes(H) for the model's H;
//   - any page (README.md, docs/*.md): a paragraph preceded by the line
//       <!-- numbers from: build/tinyformer ARGS... -->
//     or, with numbers of its prose that are not the command's (a section, a year),
//       <!-- numbers from: build/tinyformer ARGS... | prose: 10.3 2021 -->
//     has every number printed by that command (run as tests/test_docs.cpp runs a console
//     command: from the repository root, one OpenBLAS thread). The paragraph ends at the
//     next blank line. Use it for prose that quotes a command's output.
// Numbers are compared as values, in the forms the docs and lessons write them: 13824,
// 3.244919, 1e-5, 96%, 14/3, 1/256, 2^-8. A decimal in the doc matches an output number that
// rounds to it (3.375 and 3.3750; 0.4 and 0.41 for "about 0.4"), never a coarser one (3.344919
// is not a 3 somewhere), a fraction or power one printed from it to the output's digits (14/3 and 4.666667, 1/4 and 2^-2 and 0.25), a whole
// number only the same whole number (6 and 6.00).
#include <doctest/doctest.h>

#include "engine/mask.h"
#include "tests/lesson_output.h"
#include "tests/run_cli.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using test_helpers::run_tinyformer;

namespace {

// A number as written: its value and how exactly it is written.
struct Number {
    std::string text;
    double value = 0;
    int decimals = 0;        // digits after the point (0 for whole numbers)
    bool exact = false;      // a fraction or a power: exact, whatever digits it is printed with
    bool scientific = false;  // 1e-5, 2.3e-05: compared to its significant digits
    bool percent = false;     // 96%: also matches 0.96x printed as a fraction
};

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The numbers of `text`. Digits that are part of a name (stories15M, Q8_0, log2, D/H) are not
// numbers; neither is a section sign's number (§2). A '-' is a sign only where a number starts
// (after a space, '(', '[', ',', '=', ':' or at the start), so 17-24 is 17 and 24.
std::vector<Number> numbers_of(const std::string& text) {
    static const std::regex number(R"(-?\d+(\.\d+)?([eE][-+]?\d+)?(\^\(?-?\d+(\.\d+)?\)?|/\d+)?)");
    std::vector<Number> found;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
        std::string written = it->str();
        size_t at = size_t(it->position());
        const char before = at > 0 ? text[at - 1] : ' ';
        if (written[0] == '-' && before == '^') continue;  // e^-0.5: an exponent of a name
        if (written[0] == '-' && !(at == 0 || std::string(" ([,=:").find(before) != std::string::npos)) {
            written.erase(0, 1);  // a dash between numbers, not a sign
            ++at;
        }
        const char first_before = at > 0 ? text[at - 1] : ' ';
        if (identifier_char(first_before) || first_before == '.' || first_before == '^' || first_before == '/') continue;
        if (at >= 2 && text.compare(at - 2, 2, "\xC2\xA7") == 0) continue;  // §2
        const size_t end = at + written.size();
        const char after = end < text.size() ? text[end] : ' ';
        // 5x and 3.27x are numbers; 2D, Q8_0's 8, h5 are names.
        if (identifier_char(after) && !(after == 'x' && (end + 1 >= text.size() || !identifier_char(text[end + 1]))))
            continue;
        if (written.find('/') != std::string::npos && after == '(') continue;  // 1/(1-p): not a fraction
        Number n;
        n.text = written;
        const size_t slash = written.find('/'), caret = written.find('^');
        if (slash != std::string::npos) {
            n.value = std::stod(written.substr(0, slash)) / std::stod(written.substr(slash + 1));
            n.exact = true;
        } else if (caret != std::string::npos) {
            std::string exponent = written.substr(caret + 1);
            exponent.erase(std::remove(exponent.begin(), exponent.end(), '('), exponent.end());
            exponent.erase(std::remove(exponent.begin(), exponent.end(), ')'), exponent.end());
            n.value = std::pow(std::stod(written.substr(0, caret)), std::stod(exponent));
            n.exact = true;
        } else {
            n.value = std::stod(written);
            const size_t e = written.find_first_of("eE");
            const std::string mantissa = written.substr(0, e);
            const size_t point = mantissa.find('.');
            n.decimals = point == std::string::npos ? 0 : int(mantissa.size() - point - 1);
            if (e != std::string::npos) {
                n.scientific = true;
                n.decimals -= std::stoi(written.substr(e + 1));
            }
        }
        n.percent = after == '%';
        found.push_back(n);
    }
    return found;
}

// Whether the doc's number `doc` is the output's number `out`, as the two are written.
bool same_number(const Number& doc, const Number& out) {
    const double difference = std::fabs(doc.value - out.value);
    const double tiny = 1e-12 * std::max(1.0, std::fabs(doc.value));
    if (out.exact && doc.exact) return difference <= tiny;
    const double out_half_unit = out.exact ? 0.0 : 0.5 * std::pow(10.0, -out.decimals);
    if (doc.exact) return difference <= out_half_unit * (1 + 1e-9) + tiny;
    if (doc.scientific) return difference <= 0.5 * std::pow(10.0, -doc.decimals) * (1 + 1e-9) + tiny;
    if (doc.decimals == 0 && !out.exact) return difference <= tiny;  // a whole number: the same one
    // The output rounds to the doc's digits; a doc number is never matched by a coarser one
    // (3.344919 by a 3 somewhere).
    return difference <= 0.5 * std::pow(10.0, -doc.decimals) * (1 + 1e-9) + tiny;
}

// The doc numbers of `cell` that no number of `output` matches.
std::vector<std::string> unmatched(const std::string& cell, const std::string& output, const std::set<std::string>& allowed) {
    const std::vector<Number> printed = numbers_of(output);
    std::vector<std::string> missing;
    for (const Number& doc : numbers_of(cell)) {
        if (allowed.count(doc.text)) continue;
        bool seen = false;
        Number fraction = doc;  // 96% as 0.96
        fraction.value /= 100;
        fraction.decimals += 2;
        for (const Number& out : printed) seen = seen || same_number(doc, out) || (doc.percent && same_number(fraction, out));
        if (!seen) missing.push_back(doc.text);
    }
    return missing;
}

// Where a doc lists numbers after a label that the output prints as a line's label too
// ("H = 4: 2^-2, 2^-4, 2^-6, 2^-8" and "  H = 4: 2^-2 2^-4 2^-6 2^-8"), the lists must agree
// in order, not only occur somewhere: "A .. B" stands for the output's first and last. Returns
// the labels whose lists differ.
std::vector<std::string> differing_lists(const std::string& cell, const std::string& output) {
    static const std::regex labelled(R"(([A-Za-z]+ = \d+): ([^;|]+))");
    std::vector<std::string> differ;
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), labelled); it != std::sregex_iterator(); ++it) {
        const std::string label = (*it)[1].str() + ":";
        const size_t at = output.find("\n" + label);
        const size_t indented = output.find("  " + label);
        const size_t found = at != std::string::npos ? at : indented;
        if (found == std::string::npos) continue;  // the output does not label a list so
        const size_t start = output.find(label, found) + label.size();
        const std::vector<Number> printed = numbers_of(output.substr(start, output.find('\n', start) - start));
        const std::string listed = (*it)[2].str();
        const std::vector<Number> doc = numbers_of(listed);
        // A list that starts with words ("those, then 2^-1") is prose, not the printed list.
        if (doc.empty() || std::isalpha(static_cast<unsigned char>(listed[0]))) continue;
        bool same = !printed.empty();
        if (listed.find("..") != std::string::npos && doc.size() == 2) {
            same = same && same_number(doc[0], printed.front()) && same_number(doc[1], printed.back());
        } else {
            same = same && doc.size() <= printed.size();
            for (size_t i = 0; same && i < doc.size(); ++i) same = same_number(doc[i], printed[i]);
        }
        if (!same) differ.push_back((*it)[0].str());
    }
    return differ;
}

// The cells of a Markdown table row "| a | b |" ('\|' inside a cell is a '|').
std::vector<std::string> cells_of(const std::string& row) {
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < row.size(); ++i) {
        if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
            cell += '|';
            ++i;
        } else if (row[i] == '|') {
            cells.push_back(cell);
            cell.clear();
        } else {
            cell += row[i];
        }
    }
    return cells;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("the number reader reads the docs' forms and leaves names alone") {
    std::vector<std::string> texts;
    for (const Number& n : numbers_of("13824, 3.244919 at 17-24; 1/256 and 2^-8, e^-0.5, -1e4 (§2) stories15M Q8_0 5x D/H 1/(1-p) 96%"))
        texts.push_back(n.text);
    CHECK(texts == std::vector<std::string>{"13824", "3.244919", "17", "24", "1/256", "2^-8", "-1e4", "5", "1", "1", "96"});
    const Number quarter = numbers_of("1/4")[0], printed = numbers_of("0.25")[0], power = numbers_of("2^-2")[0];
    CHECK(same_number(quarter, printed));
    CHECK(same_number(quarter, power));
    CHECK(same_number(numbers_of("14/3")[0], numbers_of("4.666667")[0]));
    CHECK(same_number(numbers_of("3.375")[0], numbers_of("3.3750")[0]));
    CHECK(same_number(numbers_of("6")[0], numbers_of("6.00")[0]));
    CHECK_FALSE(same_number(numbers_of("6")[0], numbers_of("6.2")[0]));
    CHECK_FALSE(same_number(numbers_of("3.344919")[0], numbers_of("3.244919")[0]));
    CHECK_FALSE(same_number(numbers_of("1/2")[0], numbers_of("2^-2")[0]));
    CHECK(same_number(numbers_of("1e-5")[0], numbers_of("1.0e-05")[0]));
    CHECK_FALSE(same_number(numbers_of("3.344919")[0], numbers_of("3")[0]));
    CHECK_FALSE(same_number(numbers_of("3.72")[0], numbers_of("3.7")[0]));
    CHECK_FALSE(same_number(numbers_of("4.0297995")[0], numbers_of("4.029799")[0]));
    const std::string slopes = "  H = 4: 2^-2 2^-4 2^-6 2^-8\n  H = 8: 2^-1 2^-2 2^-3 2^-4 2^-5 2^-6 2^-7 2^-8\n";
    CHECK(differing_lists("H = 4: 2^-2, 2^-4, 2^-6, 2^-8; H = 8: 2^-1 .. 2^-8", slopes).empty());
    CHECK(differing_lists("H = 4: 2^-1, 2^-2, 2^-3, 2^-4; H = 8: 2^-1 .. 2^-7", slopes) ==
          std::vector<std::string>{"H = 4: 2^-1, 2^-2, 2^-3, 2^-4", "H = 8: 2^-1 .. 2^-7"});
}

TEST_CASE("docs/LESSONS.md: every number in a lesson's row is printed by `tinyformer lesson NAME`") {
    // Numbers of the rows' prose that are not the lesson's output: which lesson the row
    // belongs to and the PyTorch versions it names where the lesson prints them otherwise.
    const std::set<std::string> prose = {
        "10.3", "10.4",  // "(10.4)": the lesson's section, as `lesson all` names it
    };
    int rows = 0;
    static const std::regex row(R"(^\| `([a-z-]+)` \|)");
    for (const std::string& line : lines_of(test_helpers::read_file("docs/LESSONS.md"))) {
        std::smatch match;
        if (!std::regex_search(line, match, row)) continue;
        const std::string name = match[1];
        const std::vector<std::string> cells = cells_of(line);
        REQUIRE(cells.size() >= 2);
        CAPTURE(name);
        CAPTURE(cells[1]);
        const std::vector<std::string> missing = unmatched(cells[1], test_helpers::lesson_output(name), prose);
        std::string list;
        for (const std::string& each : missing) list += " " + each;
        INFO("numbers in docs/LESSONS.md's row that `tinyformer lesson ", name, "` does not print:", list);
        CHECK(missing.empty());
        const std::vector<std::string> differ = differing_lists(cells[1], test_helpers::lesson_output(name));
        std::string lists;
        for (const std::string& each : differ) lists += "\n  " + each;
        INFO("lists in the row that the lesson prints otherwise after the same label:", lists);
        CHECK(differ.empty());
        ++rows;
    }
    CHECK(rows >= 20);
}

TEST_CASE("docs/TOY_MODELS.md: each model's exact match is what its stated `eval` command prints; its shape is `info`'s") {
    static const std::regex row(R"(^\| `([a-z-]+)` \|)");
    // "882/1000 (`--lengths 1-16`); 8/1000 at 17-24": each count with its lengths, if any.
    static const std::regex count(R"((\d+)/1000( \(`--lengths (\d+-\d+)`\)| at (\d+-\d+))?)");
    int rows = 0;
    for (const std::string& line : lines_of(test_helpers::read_file("docs/TOY_MODELS.md"))) {
        std::smatch match;
        if (!std::regex_search(line, match, row)) continue;
        const std::string name = match[1];
        const std::string path = "data/models/" + name + ".safetensors";
        const std::vector<std::string> cells = cells_of(line);
        REQUIRE(cells.size() >= 4);
        CAPTURE(name);
        // The task eval needs: the reverse models all reverse, the others are their task.
        const std::string task = name.rfind("reverse", 0) == 0 ? "reverse" : name;
        const std::string& counts = cells[3];
        int checked = 0;
        for (auto it = std::sregex_iterator(counts.begin(), counts.end(), count); it != std::sregex_iterator(); ++it) {
            const std::string lengths = (*it)[3].matched ? (*it)[3].str() : (*it)[4].str();
            std::vector<std::string> args = {"eval", path, "--task", task};
            if (!lengths.empty()) args.insert(args.end(), {"--lengths", lengths});
            const auto run = run_tinyformer(args);
            CAPTURE(lengths);
            INFO("stderr: ", run.err);
            REQUIRE(run.status == 0);
            INFO("eval printed: ", run.out);
            CHECK(run.out.find("exact match " + (*it)[1].str() + "/1000 ") != std::string::npos);
            ++checked;
        }
        CHECK(checked >= 1);
        // The architecture: its numbers are info's (but the training steps, from the training log),
        // and ALiBi's "slopes A .. B" the first and last of alibi_slopes(H).
        const auto info = run_tinyformer({"info", path});
        REQUIRE(info.status == 0);
        std::string architecture = cells[1];
        static const std::regex slopes(R"(slopes (\S+) \.\. (\S+?)\))");
        std::smatch slope_match;
        if (std::regex_search(architecture, slope_match, slopes)) {
            const size_t at = info.out.find("nhead H=");
            REQUIRE(at != std::string::npos);
            const std::vector<float> expected = tinyformer::alibi_slopes(std::stoll(info.out.substr(at + 8)));
            const std::vector<Number> first = numbers_of(slope_match[1]), last = numbers_of(slope_match[2]);
            REQUIRE(first.size() == 1);
            REQUIRE(last.size() == 1);
            CAPTURE(slope_match[0].str());
            CHECK(first[0].value == double(expected.front()));
            CHECK(last[0].value == double(expected.back()));
            architecture = slope_match.prefix().str() + slope_match.suffix().str();
        }
        architecture = std::regex_replace(architecture, std::regex(R"(\(\d+ steps\))"), "");
        const std::vector<std::string> missing = unmatched(architecture, info.out, {});
        std::string list;
        for (const std::string& each : missing) list += " " + each;
        INFO("numbers of the architecture that `tinyformer info ", path, "` does not print:", list);
        CHECK(missing.empty());
        ++rows;
    }
    CHECK(rows >= 10);
}

namespace {

// A marker's command split into words as /bin/sh would split plain words and '...' / "...".
std::vector<std::string> words_of(const std::string& command) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (char c : command) {
        if (quote) {
            if (c == quote) quote = 0;
            else word += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == ' ') {
            if (in_word) words.push_back(word);
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (in_word) words.push_back(word);
    return words;
}

}  // namespace

TEST_CASE("a paragraph marked <!-- numbers from: COMMAND --> has only numbers that COMMAND prints") {
    std::vector<std::string> pages = {"README.md"};
    for (const auto& entry : std::filesystem::directory_iterator("docs"))
        if (entry.path().extension() == ".md") pages.push_back(entry.path().string());
    const std::string marker = "<!-- numbers from: ";
    int marked = 0;
    for (const std::string& page : pages) {
        const std::vector<std::string> lines = lines_of(test_helpers::read_file(page));
        for (size_t i = 0; i < lines.size(); ++i) {
            if (lines[i].rfind(marker, 0) != 0) continue;
            CAPTURE(page);
            CAPTURE(i + 1);
            const size_t close = lines[i].rfind(" -->");
            REQUIRE(close != std::string::npos);
            std::string command = lines[i].substr(marker.size(), close - marker.size());
            std::set<std::string> prose;
            const size_t bar = command.find(" | prose: ");
            if (bar != std::string::npos) {
                std::istringstream listed(command.substr(bar + 10));
                for (std::string each; listed >> each;) prose.insert(each);
                command = command.substr(0, bar);
            }
            std::vector<std::string> args = words_of(command);
            REQUIRE(!args.empty());
            REQUIRE(args[0] == "build/tinyformer");
            args.erase(args.begin());
            const std::string outside = test_helpers::writes_outside_build(args);
            REQUIRE_MESSAGE(outside.empty(), outside, ": a command that is run may write only under build/");
            const auto run = run_tinyformer(args);
            INFO("command: ", command, "\nstderr: ", run.err);
            REQUIRE(run.status == 0);
            std::string paragraph;
            for (size_t j = i + 1; j < lines.size() && !lines[j].empty(); ++j) paragraph += lines[j] + "\n";
            REQUIRE(!paragraph.empty());
            const std::vector<std::string> missing = unmatched(paragraph, run.out, prose);
            std::string list;
            for (const std::string& each : missing) list += " " + each;
            INFO("numbers of the paragraph that the command does not print:", list, "\n", paragraph);
            CHECK(missing.empty());
            ++marked;
        }
    }
    MESSAGE(marked, " marked paragraphs checked");
    CHECK(marked >= 1);
}
