// The picture commands as a user runs them (issue 14): one output flag with
// its old names, folders written afresh, index.md with the pictures inline,
// titles naming the model, the input and the attention, prefix_lm spelled
// as a config spells it. The pictures' pixels are tested in test_heatmap.cpp;
// refusals are in the bad-input catalogue (test_bad_inputs.cpp).
#include <doctest/doctest.h>

#include "tests/run_cli.h"

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using test_helpers::CliRun;
using test_helpers::TempDirectory;
using test_helpers::read_file;
using test_helpers::run_tinyformer;
using test_helpers::run_tinyformer_ok;

namespace {

const std::string kReverse = "data/models/reverse.safetensors";
const std::string kPrefixLm = "data/models/reverse-prefixlm.safetensors";


std::set<std::string> files_in(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
}

// Width and height of a PNG read back with stb_image.
std::pair<int, int> png_size(const std::string& path) {
    int width = 0, height = 0, channels = 0;
    REQUIRE_MESSAGE(stbi_info(path.c_str(), &width, &height, &channels) == 1, "stb_image cannot read ", path);
    return {width, height};
}

// A copy of the reverse model at `path` whose vocabulary spells 'e' as `e`.
void reverse_with_e_as(const std::string& e, const std::string& path) {
    const std::string bytes = read_file(kReverse);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length));
    nlohmann::json vocab = nlohmann::json::parse(header["__metadata__"]["vocab"].get<std::string>());
    for (auto& token : vocab)
        if (token == "e") token = e;
    header["__metadata__"]["vocab"] = vocab.dump();
    const std::string text = header.dump();
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xFF));
    std::ofstream(path, std::ios::binary) << out << text << bytes.substr(8 + length);
}

}  // namespace

TEST_CASE("A model's UTF-8 tokens reach the pictures as they are: z\u00e9ro is drawn neither as z?ro nor as zero") {
    TempDirectory dir;
    // Three copies of the reverse model, all named reverse (the title names the model), that spell 'e' as é, e and ?.
    const std::string spellings[3] = {"\xc3\xa9", "e", "?"};
    const std::string folders[3] = {"accent", "plain", "question"};
    for (int i = 0; i < 3; ++i) {
        std::filesystem::create_directory(dir.file(folders[i]));
        const std::string model = dir.file(folders[i] + "/reverse.safetensors");
        reverse_with_e_as(spellings[i], model);
        run_tinyformer_ok({"attention", model, "z" + spellings[i] + "ro", "--kind", "cross", "--layer", "1", "--head", "0",
                           "--output", dir.file(folders[i] + "/maps")});
    }
    const auto picture = [&](int i) { return dir.file(folders[i] + "/maps/decoder.1.cross_attn.head0.png"); };
    // The same ids, so the same weights; 'é' advances as 'e' does (1260 font units), so the same layout:
    // only the drawn letters differ.
    CHECK(png_size(picture(0)) == png_size(picture(1)));
    CHECK(read_file(picture(0)) != read_file(picture(1)));
    CHECK(read_file(picture(0)) != read_file(picture(2)));
    CHECK(read_file(dir.file("accent/maps/index.md")).find("reverse  \"z\xc3\xa9ro\"  decoder layer 1 cross-attention  head 0") !=
          std::string::npos);
}

TEST_CASE("attention writes pictures, an overview and an index.md that shows every picture inline") {
    TempDirectory dir;
    const std::string maps = dir.file("maps");
    const CliRun run = run_tinyformer_ok({"attention", kReverse, "abc", "--output", maps});
    const std::set<std::string> files = files_in(maps);
    // 2 encoder self + 2 decoder self + 2 decoder cross layers, 4 heads each: a grid and 4 heads per call.
    CHECK(files.size() == 6 * 5 + 1 + 1);
    CHECK(files.count("overview.png") == 1);
    CHECK(files.count("decoder.1.cross_attn.head2.png") == 1);
    const std::string index = read_file(maps + "/index.md");
    for (const std::string& name : files) {
        if (name == "index.md") continue;
        CAPTURE(name);
        CHECK(index.find("](" + name + ")") != std::string::npos);  // ![title](file)
        CHECK(run.out.find(name) != std::string::npos);
    }
    CHECK(index.find("## decoder.1.cross_attn.head2.png\n\nreverse  \"abc\"  decoder layer 1 cross-attention  head 2\n") !=
          std::string::npos);
    // The overview has 6 layers x 4 heads: as wide as 4 panels, taller than wide.
    const auto [width, height] = png_size(maps + "/overview.png");
    CHECK(height > width);
}

TEST_CASE("index.md holds a model's and a user's text as text: no control character, no markup, no code span broken out of") {
    TempDirectory dir;
    // The model's name (its file's) carries an escape sequence and markup; its 'e' is spelled "`" (a token
    // may be a backtick), so the input and the greedy output hold backticks.
    std::filesystem::create_directories(dir.file("m"));
    const std::string model = dir.file("m/# rev\x1b[2J*x*`](y).safetensors");
    reverse_with_e_as("`", model);
    const std::string maps = dir.file("maps");
    run_tinyformer_ok({"attention", model, "a`b", "--kind", "cross", "--layer", "1", "--head", "0", "--output", maps});
    const std::string index = read_file(maps + "/index.md");
    INFO(index);
    CHECK(std::none_of(index.begin(), index.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 && c != '\n'; }));
    CHECK(index.find("\n# Attention of \\# rev\\\\x1b\\[2J\\*x\\*\\`\\](y)\n") != std::string::npos);
    CHECK(index.find("\n\ninput: ``a`b``, greedy output: ``") != std::string::npos);
    // The title: the escaped name and input, and the same as the picture's alt text.
    const std::string title = "\\# rev\\\\x1b\\[2J\\*x\\*\\`\\](y)  \"a\\`b\"  decoder layer 1 cross-attention  head 0";
    CHECK(index.find("\n\n" + title + "\n\n![" + title + "](decoder.1.cross_attn.head0.png)\n") != std::string::npos);
}

TEST_CASE("A decoder-only title says 'layer 3 self-attention', never 'layers layer 3'") {
    TempDirectory dir;
    run_tinyformer_ok({"attention", kPrefixLm, "abc=", "--layer", "3", "--head", "1", "--output", dir.file("maps")});
    const std::string index = read_file(dir.file("maps/index.md"));
    CHECK(index.find("reverse-prefixlm  \"abc=\"  layer 3 self-attention, prefix-LM mask  head 1") != std::string::npos);
    CHECK(index.find("layers layer") == std::string::npos);
}

TEST_CASE("A second attention run into the same folder removes the pictures it no longer writes, and only those") {
    TempDirectory dir;
    const std::string maps = dir.file("maps");
    run_tinyformer_ok({"attention", kReverse, "abc", "--out", maps});  // --out: the old name of --output
    std::ofstream(maps + "/notes.txt") << "mine";
    std::ofstream(maps + "/my-picture.png") << "mine too";
    std::ofstream(maps + "/decoder.1.cross_attn.head2.png.bak") << "not a name attention writes";
    std::ofstream(maps + "/decoder-layer1-cross-head2.png") << "a name of tinyformer 0.1's, not of this command";
    const CliRun second = run_tinyformer_ok({"attention", kReverse, "abc", "--kind", "cross", "--layer", "1", "--grids-only",
                                     "--output", maps});
    CHECK(files_in(maps) == std::set<std::string>{"decoder.1.cross_attn.heads.png", "overview.png", "index.md",
                                                   "notes.txt", "my-picture.png", "decoder.1.cross_attn.head2.png.bak",
                                                   "decoder-layer1-cross-head2.png"});
    CHECK(second.err.find("removed 29 older pictures") != std::string::npos);
    const std::string index = read_file(maps + "/index.md");
    CHECK(index.find("head2.png") == std::string::npos);
}

TEST_CASE("--positions labels every token with its position; --scale 2 doubles the picture") {
    TempDirectory dir;
    run_tinyformer_ok({"attention", kReverse, "aaa", "--kind", "cross", "--layer", "0", "--head", "0", "--output", dir.file("plain")});
    run_tinyformer_ok({"attention", kReverse, "aaa", "--kind", "cross", "--layer", "0", "--head", "0", "--positions", "--output",
               dir.file("positions")});
    run_tinyformer_ok({"attention", kReverse, "aaa", "--kind", "cross", "--layer", "0", "--head", "0", "--scale", "2", "--output",
               dir.file("scaled")});
    const std::string picture = "/decoder.0.cross_attn.head0.png";
    const auto plain = png_size(dir.file("plain") + picture);
    const auto positions = png_size(dir.file("positions") + picture);
    const auto scaled = png_size(dir.file("scaled") + picture);
    // The row label "<bos>:0" is wider than "<bos>" (the title may still set the width).
    CHECK(positions.first >= plain.first);
    CHECK(read_file(dir.file("positions") + picture) != read_file(dir.file("plain") + picture));
    CHECK(scaled.first == 2 * plain.first);
    CHECK(scaled.second == 2 * plain.second);
}

TEST_CASE("mask and probe take --output, and their old --png; mask takes prefix_lm as a config spells it") {
    TempDirectory dir;
    const CliRun dash = run_tinyformer_ok({"mask", "prefix-lm", "--len", "6", "--prefix", "2", "--output", dir.file("a.png")});
    const CliRun underscore = run_tinyformer_ok({"mask", "prefix_lm", "--len", "6", "--prefix", "2", "--png", dir.file("b.png")});
    // Exact by construction: two spellings of one command run the same calls on the same numbers.
    CHECK(dash.out == underscore.out);
    CHECK(read_file(dir.file("a.png")) == read_file(dir.file("b.png")));
    run_tinyformer_ok({"probe", "data/models/sort.safetensors", "3141", "--output", dir.file("p.png")});
    run_tinyformer_ok({"probe", "data/models/sort.safetensors", "3141", "--png", dir.file("q.png")});
    CHECK(read_file(dir.file("p.png")) == read_file(dir.file("q.png")));
    CHECK(png_size(dir.file("p.png")).first > 0);
}

TEST_CASE("align prints, per output token, the source tokens the last cross-attention layer weighs most") {
    const CliRun run = run_tinyformer_ok({"align", kReverse, "abc"});
    std::istringstream lines(run.out);
    std::string line;
    std::getline(lines, line);
    CHECK(line == "cross-attention of decoder layer 1, mean over 4 heads; output \"cba\"");
    std::getline(lines, line);  // the header
    std::vector<std::string> rows;
    while (std::getline(lines, line)) rows.push_back(line);
    REQUIRE(rows.size() == 4);  // c, b, a, <eos>
    CHECK(rows[0].rfind("'c'    <bos>   2:'c' ", 0) == 0);  // writing 'c', it looks at the source 'c' first
    CHECK(rows[3].rfind("<eos>  'a'", 0) == 0);
}

TEST_CASE("Every all-heads picture of the toy models fits a slide: at most 1600x1300 px, between 0.9:1 and 16:9") {
    // Four heads of 600 px matrices side by side were 3088x850 px: now they wrap into two rows.
    struct Model {
        std::string name, input;
    };
    const Model models[] = {{"reverse", "attention"},        {"sort", "31415926"},
                            {"dates", "thursday 3 may 1979"}, {"reverse-prefixlm", "attention="},
                            {"reverse-causal", "attention="}};
    TempDirectory dir;
    for (const Model& model : models) {
        CAPTURE(model.name);
        const std::string maps = dir.file(model.name);
        run_tinyformer_ok({"attention", "data/models/" + model.name + ".safetensors", model.input, "--grids-only", "--output", maps});
        int pictures = 0;
        for (const std::string& name : files_in(maps)) {
            if (!name.ends_with(".heads.png")) continue;
            CAPTURE(name);
            ++pictures;
            const auto [width, height] = png_size(maps + "/" + name);
            CHECK(width <= 1600);
            CHECK(height <= 1300);
            CHECK(width * 10 >= height * 9);
            CHECK(width * 9 <= height * 16);
        }
        CHECK(pictures >= 4);
    }
}

TEST_CASE("A missing font file is one error line naming the path and the package, and nothing is written") {
    TempDirectory dir;
    const std::string font = dir.file("no-such-font.ttf");
    ::setenv("TINYFORMER_FONT", font.c_str(), 1);
    const CliRun mask = run_tinyformer({"mask", "causal", "--output", dir.file("m.png")});
    const CliRun attention = run_tinyformer({"attention", kReverse, "abc", "--output", dir.file("maps")});
    ::unsetenv("TINYFORMER_FONT");
    for (const CliRun& run : {mask, attention}) {
        CHECK(run.status == 1);
        CHECK(run.out.empty());
        CHECK(run.err == "tinyformer: error: cannot read the font " + font +
                             ": No such file or directory (install the Debian package fonts-dejavu-core, e.g. with "
                             "`make deps`, or name a TrueType file in TINYFORMER_FONT)\n");
    }
    CHECK(files_in(dir.path()).empty());
    // A file that is not a font
    std::ofstream(font) << "not a font";
    ::setenv("TINYFORMER_FONT", font.c_str(), 1);
    const CliRun not_a_font = run_tinyformer({"mask", "causal", "--output", dir.file("m.png")});
    ::unsetenv("TINYFORMER_FONT");
    CHECK(not_a_font.status == 1);
    CHECK(not_a_font.err.find("the font " + font + " is not a TrueType file") != std::string::npos);
    CHECK(not_a_font.err.find("fonts-dejavu-core") != std::string::npos);
    CHECK(files_in(dir.path()) == std::set<std::string>{"no-such-font.ttf"});
}
