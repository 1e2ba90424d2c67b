// `tinyformer explore --html` with the engine in the page (tools/cli/explore.cpp):
// the engine file as it is, the checkpoint as base64 (decoded here by a
// separate decoder and compared with the file's bytes), the engine status;
// --recorded; the refusals of an engine file that would end its <script>;
// the page limit counting the engine and the checkpoint.
#include <doctest/doctest.h>

#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <fstream>
#include <string>

using namespace test_helpers;

namespace {

const std::string kReverse = "data/models/reverse.safetensors";
const std::string kFakeEngine = "var TinyformerEngine = function () { return Promise.reject(new Error(\"fake\")); };\n";

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// The text between `open` and the next "</script>" after it.
std::string element(const std::string& page, const std::string& open) {
    const size_t start = page.find(open);
    REQUIRE(start != std::string::npos);
    const size_t from = start + open.size();
    return page.substr(from, page.find("</script>", from) - from);
}

std::string trimmed(const std::string& text) {
    const size_t first = text.find_first_not_of(" \n"), last = text.find_last_not_of(" \n");
    return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

std::string from_base64(const std::string& text) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::string out;
    unsigned bits = 0, count = 0;
    for (char c : text) {
        const int v = value(c);
        if (v < 0) continue;  // '=' and line breaks
        bits = bits << 6 | static_cast<unsigned>(v);
        count += 6;
        if (count >= 8) {
            count -= 8;
            out += static_cast<char>((bits >> count) & 0xFF);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("explore live page: the engine file and the checkpoint are embedded as they are") {
    TempDirectory dir;
    write_text(dir.file("engine.js"), kFakeEngine);
    run_tinyformer_ok({"explore", kReverse, "abc", "--engine", dir.file("engine.js"), "--html", dir.file("p.html")});
    const std::string page = read_file(dir.file("p.html"));
    CHECK(page.find(kFakeEngine) != std::string::npos);
    CHECK(trimmed(element(page, "<script type=\"application/json\" id=\"tinyformer-engine-status\">")) ==
          R"({"live":true,"model_file":"reverse.safetensors"})");
    CHECK(from_base64(element(page, "<script type=\"application/octet-stream\" id=\"tinyformer-model\">")) == read_file(kReverse));
}

TEST_CASE("explore live page: --recorded holds no engine and no checkpoint, and says so") {
    TempDirectory dir;
    run_tinyformer_ok({"explore", kReverse, "abc", "--recorded", "--html", dir.file("p.html")});
    const std::string page = read_file(dir.file("p.html"));
    CHECK(trimmed(element(page, "<script type=\"application/octet-stream\" id=\"tinyformer-model\">")).empty());
    CHECK(element(page, "<script type=\"application/json\" id=\"tinyformer-engine-status\">").find("\"live\":false") !=
          std::string::npos);
    CHECK(page.find("TinyformerEngine = ") == std::string::npos);
    const CliRun both = run_tinyformer({"explore", kReverse, "abc", "--recorded", "--engine", "x.js", "--html", dir.file("q.html")});
    CHECK(both.status == 2);
    CHECK(both.err.find("--engine or --recorded, not both") != std::string::npos);
}

TEST_CASE("explore live page: an engine file that would end its <script> is refused, and nothing is written") {
    TempDirectory dir;
    for (const std::string& bad : {std::string("a </SCRIPT> b"), std::string("a <!-- b")}) {
        CAPTURE(bad);
        write_text(dir.file("bad.js"), bad);
        const CliRun run = run_tinyformer({"explore", kReverse, "abc", "--engine", dir.file("bad.js"), "--html", dir.file("p.html")});
        CHECK(run.status == 1);
        CHECK(run.err.find("holds \"</script\" or \"<!--\"") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(dir.file("p.html")));
    }
    const CliRun missing = run_tinyformer({"explore", kReverse, "abc", "--engine", dir.file("none.js"), "--html", dir.file("p.html")});
    CHECK(missing.status == 1);
    CHECK(missing.err.find("the engine file '" + dir.file("none.js") + "' does not exist") != std::string::npos);
    // Not a regular file: refused before any read (a FIFO would hang, /dev/zero never ends).
    for (const std::string& odd : {std::string("/dev/zero"), dir.path().string()}) {
        CAPTURE(odd);
        const CliRun run = run_tinyformer({"explore", kReverse, "abc", "--engine", odd, "--html", dir.file("p.html")});
        CHECK(run.status == 1);
        CHECK(run.err.find("is not a regular file") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(dir.file("p.html")));
    }
}

TEST_CASE("explore live page: a checkpoint that carries the page over the limit is left out, the page stays live") {
    TempDirectory dir;
    write_text(dir.file("engine.js"), kFakeEngine);
    const std::string model_open = "<script type=\"application/octet-stream\" id=\"tinyformer-model\">";
    const std::string status_open = "<script type=\"application/json\" id=\"tinyformer-engine-status\">";
    // The checkpoint is 966072 bytes, 1288096 as base64: above 1 MiB with it, about 0.27 MiB without.
    const CliRun live = run_tinyformer({"explore", kReverse, "abc", "--engine", dir.file("engine.js"), "--max-page-mb", "1",
                                        "--html", dir.file("p.html")});
    CHECK(live.status == 0);
    CHECK(live.err.find("tinyformer explore: the page with the checkpoint would be at least 1.") == 0);
    CHECK(live.err.find(" MiB, above the limit of 1 MiB (--max-page-mb): the page is live without it (open "
                        "reverse.safetensors in it: Open model, or drop the file on the page)\n") != std::string::npos);
    const std::string page = read_file(dir.file("p.html"));
    CHECK(trimmed(element(page, model_open)).empty());
    CHECK(trimmed(element(page, status_open)) == R"({"live":true,"model_file":null,"recorded_model":"reverse.safetensors"})");
    CHECK(page.size() < (size_t{1} << 20));
    // With room for it, the checkpoint is in the page, and nothing is said.
    const CliRun roomy = run_tinyformer({"explore", kReverse, "abc", "--engine", dir.file("engine.js"), "--max-page-mb", "2",
                                         "--html", dir.file("p2.html")});
    CHECK(roomy.status == 0);
    CHECK(roomy.err.find("the page is live without it") == std::string::npos);
    CHECK_FALSE(trimmed(element(read_file(dir.file("p2.html")), model_open)).empty());
    // A page too large without the checkpoint too is refused, naming the size with the checkpoint (nothing written).
    const std::string long_input(30, 'a');  // 30 positions and 30 targets: a recorded page of 1.10 MiB, above 1 MiB without it
    const CliRun large = run_tinyformer({"explore", kReverse, long_input, "--target", long_input, "--engine",
                                         dir.file("engine.js"), "--max-page-mb", "1", "--html", dir.file("large.html")});
    CHECK(large.status == 1);
    CHECK(large.err.find("MiB, above the limit of 1 MiB; nothing was written; give --max-page-mb") != std::string::npos);
    CHECK(large.err.find("the page is live without it") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("large.html")));
}

TEST_CASE("explore live page: a checkpoint above 64 MiB is never embedded, whatever --max-page-mb allows") {
    TempDirectory dir;
    write_text(dir.file("engine.js"), kFakeEngine);
    // reverse's checkpoint with 65 MiB of spaces after its header's JSON (allowed padding): the same model, 65.9 MiB.
    const std::string bytes = read_file(kReverse);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    const std::string header = bytes.substr(8, length) + std::string(size_t{65} << 20, ' ');
    std::string big;
    for (int i = 0; i < 8; ++i) big.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    write_text(dir.file("big.safetensors"), big + header + bytes.substr(8 + length));
    const CliRun run = run_tinyformer({"explore", dir.file("big.safetensors"), "abc", "--engine", dir.file("engine.js"),
                                       "--max-page-mb", "1000", "--html", dir.file("p.html")});
    CHECK(run.status == 0);
    CHECK(run.err.find("tinyformer explore: the checkpoint is 65.9 MiB, above the 64 MiB a page embeds: the page is live "
                       "without it (open big.safetensors in it: Open model, or drop the file on the page)\n") == 0);
    const std::string page = read_file(dir.file("p.html"));
    CHECK(trimmed(element(page, "<script type=\"application/octet-stream\" id=\"tinyformer-model\">")).empty());
    CHECK(page.find(R"({"live":true,"model_file":null,"recorded_model":"big.safetensors"})") != std::string::npos);
    CHECK(page.size() < (size_t{1} << 20));
}

TEST_CASE("explore live page without weights: --html alone, and --no-embed with a model's pass") {
    TempDirectory dir;
    write_text(dir.file("engine.js"), kFakeEngine);
    const std::string status_open = "<script type=\"application/json\" id=\"tinyformer-engine-status\">";
    const std::string model_open = "<script type=\"application/octet-stream\" id=\"tinyformer-model\">";
    const std::string data_open = "<script type=\"application/json\" id=\"tinyformer-data\">";

    // No MODEL: the engine, no checkpoint, no pass.
    run_tinyformer_ok({"explore", "--engine", dir.file("engine.js"), "--html", dir.file("empty.html")});
    const std::string empty = read_file(dir.file("empty.html"));
    CHECK(empty.find(kFakeEngine) != std::string::npos);
    CHECK(trimmed(element(empty, model_open)).empty());
    CHECK(trimmed(element(empty, status_open)) == R"({"live":true,"model_file":null,"recorded_model":null})");
    const std::string data = trimmed(element(empty, data_open));
    CHECK(data.find(R"("model":null)") != std::string::npos);
    CHECK(data.find(R"("attentions":[])") != std::string::npos);
    CHECK(empty.find("id=\"open-model\"") != std::string::npos);

    // --no-embed: the pass as usual (the same data as the embedded page's), the engine, no checkpoint.
    run_tinyformer_ok({"explore", kReverse, "abc", "--no-embed", "--engine", dir.file("engine.js"), "--html", dir.file("n.html")});
    run_tinyformer_ok({"explore", kReverse, "abc", "--engine", dir.file("engine.js"), "--html", dir.file("e.html")});
    const std::string no_embed = read_file(dir.file("n.html")), embedded = read_file(dir.file("e.html"));
    CHECK(trimmed(element(no_embed, model_open)).empty());
    CHECK(from_base64(element(embedded, model_open)) == read_file(kReverse));
    CHECK(trimmed(element(no_embed, status_open)) == R"({"live":true,"model_file":null,"recorded_model":"reverse.safetensors"})");
    CHECK(element(no_embed, data_open) == element(embedded, data_open));
    // Below the 1 MiB the embedded page needs (test above): the checkpoint is not in it.
    run_tinyformer_ok({"explore", kReverse, "abc", "--no-embed", "--engine", dir.file("engine.js"), "--max-page-mb", "1",
                       "--html", dir.file("n1.html")});
}

TEST_CASE("explore live page without weights: what it refuses") {
    TempDirectory dir;
    write_text(dir.file("engine.js"), kFakeEngine);
    // Flags about a pass need a model (usage, exit 2), and nothing is written.
    for (const std::string flag : {"--beam", "--ids", "--target", "--json", "--max-new-tokens"}) {
        CAPTURE(flag);
        const CliRun run = run_tinyformer({"explore", flag, "3", "--engine", dir.file("engine.js"), "--html", dir.file("p.html")});
        CHECK(run.status == 2);
        CHECK(run.err.find("explore: " + flag + " is about the pass of a model") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(dir.file("p.html")));
    }
    const CliRun recorded = run_tinyformer({"explore", "--recorded", "--html", dir.file("p.html")});
    CHECK(recorded.status == 2);
    // --no-embed still needs TEXT (the pass the page shows).
    const CliRun no_text = run_tinyformer({"explore", kReverse, "--no-embed", "--engine", dir.file("engine.js"), "--html", dir.file("p.html")});
    CHECK(no_text.status != 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("p.html")));
    const CliRun both = run_tinyformer({"explore", kReverse, "abc", "--no-embed", "--recorded", "--html", dir.file("p.html")});
    CHECK(both.status == 2);
    CHECK(both.err.find("--no-embed") != std::string::npos);
    // Without an engine there is no page to write: an error, not a recorded page of nothing.
    const CliRun no_engine = run_tinyformer({"explore", "--engine", dir.file("none.js"), "--html", dir.file("p.html")});
    CHECK(no_engine.status == 1);
    CHECK(no_engine.err.find("does not exist") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("p.html")));
}
