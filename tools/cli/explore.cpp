// `tinyformer explore`: one self-contained HTML file to walk through one
// teacher-forced pass — the model view, one head, one cell, the arithmetic
// of one softmax row, the decoding steps. The page is tools/explore/page.html,
// page.css and page.js (plain JavaScript, no network), embedded at build time
// (build/generated/explore_page.h); the data is the engine's trace of the
// pass (models/study/trace.h) as JSON in <script type="application/json"
// id="tinyformer-data"> (docs/FORMAT.md section 4), with every '<' written \u003c.

#include "build/generated/explore_page.h"
#include "engine/io/output_file.h"
#include "models/study/attention_maps.h"
#include "tools/cli/generation_flags.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"
#include "tools/explore/explore_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <iterator>
#include <set>
#include <system_error>

namespace tinyformer::cli {

namespace {

using json = nlohmann::json;

const char* kExploreHelp =
    "usage: tinyformer explore MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                          [--beam K | --temperature T --top-k K --top-p P --seed S]\n"
    "                          [--max-new-tokens N] --html FILE.html [--json FILE.json] [--unk]\n"
    "                          [--max-page-mb N] [--engine FILE.js | --recorded | --no-embed]\n"
    "                          [--overrides FILE.json] [--block ...] [--allow ...] [--ablate ...]\n"
    "       tinyformer explore --html FILE.html [--engine FILE.js] [--max-page-mb N]\n"
    "\n"
    "Runs the model once on TEXT (teacher-forced on its greedy output, its best beam with\n"
    "--beam K, a sampled continuation with the sampling flags, or --target) and writes ONE\n"
    "self-contained HTML file that opens from disk, offline, in any current browser (no\n"
    "network request of any kind):\n"
    "  model view     every attention call as layers x heads thumbnails; click one to open it\n"
    "  head view      query tokens and key tokens joined by lines whose opacity is the weight;\n"
    "                 hover a token to keep its lines; head chips show one, several or all heads\n"
    "  matrix view    the heatmap; hover a cell for its weight, raw and scaled score, the mask\n"
    "                 value and what that cell is in PyTorch's three mask conventions\n"
    "  step view      one head and one query: q, every k, q.k, / sqrt(Dk), + mask, minus the row\n"
    "                 maximum, exp, / sum, the weights, the weighted sum of v (this head's z)\n"
    "  decoding view  which search made the tokens (greedy, beam or sample with its settings and\n"
    "                 seed), each generated step's top-5 next tokens, the chosen path (beams with --beam),\n"
    "                 and why it stopped: <eos> chosen, max new tokens reached, or max_len filled\n"
    "Every number is the engine's, from the trace of the pass (tinyformer trace). Keys: arrows\n"
    "move between heads (left/right) and layers (up/down). The data is also in the page as\n"
    "JSON (<script id=\"tinyformer-data\">, docs/FORMAT.md section 4); --json writes it alone.\n"
    "--unk reads a character of TEXT outside the vocabulary as <unk>, with a warning (as `run`).\n"
    "The page carries the engine too (built to WebAssembly, build/wasm/tinyformer-engine.js, found\n"
    "next to this program as wasm/tinyformer-engine.js) and the checkpoint, so its controls run\n"
    "the model in the browser, still offline (window.tinyformer, docs/FORMAT.md section 4), and\n"
    "it has two more views, run by that engine:\n"
    "  patch view     (live page only) type a corrupted input: activation patching's layers x\n"
    "                 positions grid of effects (as `tinyformer patch`); click a cell to patch it\n"
    "                 alone and see the answer's top tokens clean / corrupted / patched\n"
    "  lens view      (live page only) the logit lens: per layer and position the top token and\n"
    "                 its probability, hover for the top K; the residual stream's norms (as\n"
    "                 `tinyformer lens`)\n"
    "                 Both read the model without --block/--allow/--ablate (as the CLI's)\n"
    "Flags:\n"
    "  --engine FILE.js  the engine file to embed instead of the one next to the program\n"
    "  --recorded   write the recorded page only: this pass's data, no engine, no checkpoint.\n"
    "               Also what is written, with one line on stderr saying why, when there is no\n"
    "               engine file next to the program\n"
    "  --no-embed   the live page without the checkpoint: it shows this pass (MODEL and TEXT\n"
    "               are still needed) and runs once the reader opens a model in it. Also what\n"
    "               is written, with one line on stderr, for a checkpoint above 64 MiB or one\n"
    "               that alone would carry the page over --max-page-mb\n"
    "  --max-page-mb N  refuse a page above N MiB (default 8: a bigger page opens slowly, if\n"
    "                 at all; the engine and the checkpoint count): before the pass when the\n"
    "                 lengths already show it, else once the page is made; a refused page\n"
    "                 writes nothing (and no --json file either). A checkpoint that alone\n"
    "                 carries the page over N is left out instead (the page stays live)\n"
    "Without MODEL (only --html, --engine, --max-page-mb): the live page without weights or a\n"
    "pass. Both pages have an \"Open model\" button and take a .safetensors file dropped on them\n"
    "(read in the browser from disk, no request), checked by the same loader as the CLI's,\n"
    "with the same error in words; every live page has the button (a toy page starts with\n"
    "its own model). The page's engine holds the weights once in its memory, which grows\n"
    "to 2 GiB (WebAssembly, 32-bit); a model takes about its file's size there (a GPT-2-124M-\n"
    "shaped checkpoint of 475 MiB: 577 MiB), so a float32 checkpoint up to about 1.6 GiB opens\n"
    "The decoding (none with --target, which excludes the flags below) stops at <eos>, at the\n"
    "model's max_len positions or after N new tokens; as in `tinyformer run`:\n";

const char* kExploreHelpInterventions =
    "The recorded page is of the intervened model (its decoding and its pass) with these:\n";

// Inside <script>, "</script>" or "<!--" in a token would end or confuse the
// element: every '<' of the JSON (only ever inside a string) is written as
// the JSON escape \u003c, which reads back as the same string.
std::string escape_for_script(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
    return out;
}

// The page's size in bytes at least, from the lengths alone (before the
// pass): every attention call's JSON numbers (mask, q, k, v, scores and
// weights per head, z), each at least two bytes ("0,"), and the `embedded`
// bytes (a live page's engine and checkpoint). input: the model's input as
// model_input frames it; target: the target's length.
double page_bytes_at_least(const Model& model, int64_t input, int64_t target, double embedded) {
    const ModelConfig& config = model.config;
    const double D = static_cast<double>(config.d_model), H = static_cast<double>(config.nhead);
    auto call = [&](double L, double S) { return L * S * (1 + 2 * H) + (2 * L + 2 * S) * D; };  // numbers of one call
    double numbers = 0;
    if (model.encoder_decoder) {
        const double S = static_cast<double>(input), T = static_cast<double>((config.bos_id >= 0 ? 1 : 0) + target);
        numbers = static_cast<double>(config.num_encoder_layers) * call(S, S) +
                  static_cast<double>(config.num_decoder_layers) * (call(T, T) + call(T, S));
    } else {
        const double n = static_cast<double>(input + target);
        numbers = static_cast<double>(config.num_layers) * call(n, n);
    }
    return 2 * numbers + embedded +
           static_cast<double>(std::strlen(kExplorePageHtml) + std::strlen(kExplorePageCss) + std::strlen(kExplorePageJs));
}

// The input as a message names it: "hello" (7 tokens), or the ids by count.
std::string input_name(const ParsedArguments& parsed, int64_t tokens) {
    const std::string tokens_text = text_of(" (", tokens, " tokens)");
    if (parsed.has("--ids")) return "--ids" + tokens_text;
    const std::string& text = parsed.positional()[1];
    size_t cut = std::min<size_t>(text.size(), 40);
    while (cut < text.size() && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole characters
    return "\"" + (cut == text.size() ? text : text.substr(0, cut) + "...") + "\"" + tokens_text;
}

// Error when a page of `bytes` (or of at least that many) is above the limit.
void refuse_large_page(double bytes, bool at_least, int64_t limit_mib, const std::string& input, int64_t target) {
    const double mib = bytes / (1024.0 * 1024.0);
    if (mib <= static_cast<double>(limit_mib)) return;
    char size[32];
    std::snprintf(size, sizeof size, "%.1f", mib);
    fail("explore: the page for the input ", input, target > 0 ? text_of(" and its target of ", target, " tokens") : "",
         " would be ", at_least ? "at least " : "", size, " MiB, above the limit of ", limit_mib,
         " MiB; nothing was written; give --max-page-mb ", static_cast<int64_t>(std::ceil(mib)),
         at_least ? " or more" : "", " to write it");
}

std::string replaced_once(std::string page, const std::string& placeholder, const std::string& content) {
    const size_t at = page.find(placeholder);
    if (at == std::string::npos || page.find(placeholder, at + 1) != std::string::npos)
        fail("explore: the page template must hold ", placeholder, " exactly once (tools/explore/page.html)");
    return page.replace(at, placeholder.size(), content);
}

// --- the engine in the page: the WebAssembly engine, the checkpoint, or why not ---

// A live page embeds checkpoints up to this size: the page holds it as
// base64 (4/3 of it) and the browser a decoded copy besides.
constexpr uintmax_t kLiveCheckpointLimit = uintmax_t{64} << 20;

struct LiveEngine {
    std::string engine;        // build/wasm/tinyformer-engine.js, as it is
    std::string model_base64;  // the checkpoint
    json status;               // {"live": true, "model_file": "reverse.safetensors"} or {"live": false, "reason": ...}
    double bytes() const { return static_cast<double>(engine.size() + model_base64.size()); }
};

std::string base64(const std::string& bytes) {
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t group = 0;
        for (size_t j = 0; j < 3; ++j)
            group = group << 8 | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
        for (size_t j = 0; j < 4; ++j) out += j <= n ? digits[(group >> (18 - 6 * j)) & 63] : '=';
    }
    return out;
}

// A regular file of at most `limit` bytes, read whole: a FIFO, a device or a
// folder is refused before any read (none would end, or be an engine).
std::string file_bytes(const std::string& path, const char* what, uintmax_t limit) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) fail("explore: ", what, " '", path, "' does not exist");
    if (!std::filesystem::is_regular_file(status)) fail("explore: ", what, " '", path, "' is not a regular file");
    const uintmax_t size = std::filesystem::file_size(path, error);
    if (error || size > limit)
        fail("explore: ", what, " '", path, "' is ", error ? std::string("of unknown size") : text_of(size, " bytes"),
             ", above the ", limit >> 20, " MiB a page embeds");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("explore: cannot read ", what, " '", path, "'");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) fail("explore: cannot read ", what, " '", path, "'");
    return bytes;
}

// The engine file next to the running program: <its folder>/wasm/tinyformer-engine.js.
std::string engine_next_to_program() {
    std::error_code error;
    const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) return "";
    return (program.parent_path() / "wasm" / "tinyformer-engine.js").string();
}

bool contains_nocase(const std::string& text, const std::string& lower) {
    auto found = std::search(text.begin(), text.end(), lower.begin(), lower.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
    });
    return found != text.end();
}

// A recorded page, and the line that says why (printed once the page is written).
LiveEngine recorded(const std::string& reason) { return {"", "", {{"live", false}, {"reason", reason}}}; }

// The engine file's text, checked: it goes inside <script> as it is, so text
// that would end or confuse the element is refused.
std::string engine_text(const std::string& engine_path) {
    std::string engine = file_bytes(engine_path, "the engine file", kLiveCheckpointLimit);
    if (contains_nocase(engine, "</script") || engine.find("<!--") != std::string::npos)
        fail("explore: the engine file '", engine_path, "' holds \"</script\" or \"<!--\", which would end its ",
             "<script> element; it is not an engine tinyformer built");
    return engine;
}

// The engine file to embed: --engine's, else the one next to the program
// ("" when there is none there).
std::string engine_path_of(const ParsedArguments& parsed) {
    const std::string path = parsed.has("--engine") ? parsed.value("--engine") : engine_next_to_program();
    std::error_code error;
    if (!parsed.has("--engine") && (path.empty() || !std::filesystem::is_regular_file(path, error))) return "";
    return path;
}

// The live page without a checkpoint (no MODEL, or --no-embed): the engine
// only; the reader opens a model in the page. recorded_model: the file the
// page's pass is of ("" for none). Error without an engine file: such a page
// would be nothing at all.
LiveEngine engine_without_weights(const ParsedArguments& parsed, const std::string& recorded_model) {
    const std::string engine_path = engine_path_of(parsed);
    if (engine_path.empty())
        fail("explore: a page without the checkpoint needs the engine, and there is no engine file ",
             engine_next_to_program().empty() ? std::string("next to the program") : engine_next_to_program(),
             " (make wasm builds it; or give --engine FILE.js)");
    LiveEngine live;
    live.engine = engine_text(engine_path);
    live.status = {{"live", true}, {"model_file", nullptr},
                   {"recorded_model", recorded_model.empty() ? json(nullptr) : json(recorded_model)}};
    return live;
}

// The live page for MODEL: with its checkpoint embedded; without it (and a
// `note` saying so) when --no-embed asks or the checkpoint is above 64 MiB;
// recorded (and `why_recorded` saying why) with --recorded or without an
// engine file.
LiveEngine live_engine(const ParsedArguments& parsed, const std::string& model_path, std::string& why_recorded,
                       std::string& note) {
    if (parsed.has("--recorded")) return recorded("this page was written with --recorded: it holds no engine");
    const std::string file_name = std::filesystem::path(model_path).stem().string() + ".safetensors";
    if (parsed.has("--no-embed")) return engine_without_weights(parsed, file_name);
    const std::string engine_path = engine_path_of(parsed);
    std::error_code error;
    if (engine_path.empty()) {
        const std::string next = engine_next_to_program();
        why_recorded = "no engine file " + (next.empty() ? std::string("next to the program") : next) +
                       " (make wasm builds it)";
        return recorded("this page is recorded: there was " + why_recorded + " when it was written");
    }
    const uintmax_t model_size = std::filesystem::file_size(model_path, error);
    if (!error && model_size > kLiveCheckpointLimit) {
        char size[32];
        std::snprintf(size, sizeof size, "%.1f", static_cast<double>(model_size) / (1024.0 * 1024.0));
        note = std::string("the checkpoint is ") + size + " MiB, above the 64 MiB a page embeds: the page is live " +
               "without it (open " + file_name + " in it: Open model, or drop the file on the page)";
        return engine_without_weights(parsed, file_name);
    }
    LiveEngine live;
    live.engine = engine_text(engine_path);
    live.model_base64 = base64(file_bytes(model_path, "the checkpoint", kLiveCheckpointLimit));
    live.status = {{"live", true}, {"model_file", file_name}};
    return live;
}

// The document of a page without a pass (docs/FORMAT.md section 4): no
// model, no input, no attention call; the page fills it from the engine
// once the reader has opened a model and run an input.
json empty_document() {
    return {{"format", "tinyformer-explore/1"},
            {"model", nullptr},
            {"input", nullptr},
            {"sequences", json::object()},
            {"ids", json::object()},
            {"padding", json::object()},
            {"attentions", json::array()},
            {"decoding",
             {{"mode", "none"}, {"beam", 1}, {"max_new_tokens", nullptr}, {"sampling", nullptr}, {"stop", nullptr},
              {"steps", json::array()}, {"hypotheses", json::array()}}}};
}

// --- the page: tools/explore/page.html with its CSS, script and data in place ---

std::string explore_page(const std::string& data_text, const LiveEngine& live) {
    // What the page is made of goes in first and the user's text last, so that no
    // placeholder is ever looked for inside a file, the checkpoint or the data.
    std::string page = replaced_once(kExplorePageHtml, "/*TINYFORMER_CSS*/", kExplorePageCss);
    page = replaced_once(page, "/*TINYFORMER_JS*/", kExplorePageJs);
    page = replaced_once(page, "/*TINYFORMER_LIVE_JS*/", kExplorePageLiveJs);
    page = replaced_once(page, "/*TINYFORMER_STUDY_JS*/", kExplorePageStudyJs);
    page = replaced_once(page, "/*TINYFORMER_ENGINE_JS*/", kExplorePageEngineJs);
    page = replaced_once(page, "/*TINYFORMER_ENGINE*/", live.engine);
    page = replaced_once(page, "/*TINYFORMER_MODEL*/", live.model_base64);
    page = replaced_once(page, "/*TINYFORMER_ENGINE_STATUS*/", escape_for_script(live.status.dump()));
    return replaced_once(page, "/*TINYFORMER_DATA*/", escape_for_script(data_text));
}

// --- write: the page, and the data with --json; says where unless it went to a stream ---

void write_explore(const ParsedArguments& parsed, const std::string& html_path, const std::string& data_text,
                   const std::string& page) {
    bool streamed = false;  // an output written as a stream may be stdout itself
    if (parsed.has("--json")) {
        OutputFile json_file(parsed.value("--json"), "explore");
        json_file.write(data_text + "\n");
        json_file.commit();
        streamed = json_file.is_stream();
    }
    OutputFile page_file(html_path, "explore");
    page_file.write(page);
    page_file.commit();
    streamed = streamed || page_file.is_stream();
    if (!streamed) std::printf("%s\n", terminal_text(html_path).c_str());
}

// `explore --html FILE` without MODEL: the live page without weights or a
// pass. Only --engine and --max-page-mb shape it: any other flag is about a
// pass, which needs a model.
int explore_without_model(const ParsedArguments& parsed, const std::set<std::string>& flags, const std::string& html_path) {
    for (const std::string& flag : flags)
        if (parsed.has(flag) && flag != "--html" && flag != "--engine" && flag != "--max-page-mb" && flag != "--no-embed")
            throw UsageError("explore: " + flag + " is about the pass of a model: give MODEL and TEXT, or only --html " +
                             "(and --engine, --max-page-mb) for the page without a model");
    const int64_t page_limit_mib = parsed.integer("--max-page-mb", 8, 1, 1 << 20);
    check_outputs("explore", {}, {html_path});
    const LiveEngine live = engine_without_weights(parsed, "");
    const std::string data_text = empty_document().dump();
    const std::string page = explore_page(data_text, live);
    const double mib = static_cast<double>(page.size()) / (1024.0 * 1024.0);
    if (mib > static_cast<double>(page_limit_mib))
        fail("explore: the page without a model would be ", text_of(static_cast<int64_t>(std::ceil(mib))), " MiB, above the limit of ",
             page_limit_mib, " MiB; nothing was written; give --max-page-mb ", static_cast<int64_t>(std::ceil(mib)), " to write it");
    write_explore(parsed, html_path, data_text, page);
    std::fprintf(stderr, "tinyformer explore: the page without a model (open one in it); %.1f KiB\n",
                 static_cast<double>(page.size()) / 1024.0);
    return 0;
}

}  // namespace

// Parse, refuse what the lengths already show, decode, run the one recorded
// pass, build the data and the page, write.
int explore_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--html", "--json", "--ids", "--target", "--target-ids", "--beam", "--max-page-mb",
                                         "--engine"};
    value_flags.insert(generation_flag_names().begin(), generation_flag_names().end());
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const std::set<std::string> switches = {"--unk", "--recorded", "--no-embed"};
    const ParsedArguments parsed(args, value_flags, switches, "explore");
    if (parsed.help()) {
        std::printf("%s%s%s%s", kExploreHelp, kGenerationFlagsHelp, kExploreHelpInterventions, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().size() > 2)
        throw UsageError("explore: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer explore --help')");
    const std::string& html_path = parsed.value("--html");
    if (!html_path.ends_with(".html") && !is_stream_output(html_path)) throw UsageError("explore: --html must name a .html file, got '" + html_path + "'");
    if (parsed.positional().empty()) {
        std::set<std::string> flags = value_flags;
        flags.insert(switches.begin(), switches.end());
        return explore_without_model(parsed, flags, html_path);
    }
    if (parsed.has("--no-embed") && parsed.has("--recorded"))
        throw UsageError("explore: --recorded writes a page without an engine, --no-embed one with it; give one, not both");
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const GenerationFlags generation = generation_flags(parsed, beam, "explore");
    const int64_t page_limit_mib = parsed.integer("--max-page-mb", 8, 1, 1 << 20);
    const std::string& path = parsed.positional()[0];
    std::vector<std::string> outputs = {html_path};
    if (parsed.has("--json")) outputs.push_back(parsed.value("--json"));
    check_outputs("explore", {path}, outputs);
    if (parsed.has("--engine") && parsed.has("--recorded"))
        throw UsageError("explore: --recorded writes a page without an engine; give --engine or --recorded, not both");
    const Interventions interventions = intervention_flags(parsed, "explore");
    Model model = Model::load(path);
    const AppliedInterventions applied(model, interventions);  // the decoding and the recorded pass are intervened
    const ModelText text(model);
    std::string why_recorded;  // set when a live page was asked for but a recorded one is written
    std::string note;          // set when the checkpoint is left out of the page
    LiveEngine live = live_engine(parsed, path, why_recorded, note);
    // A checkpoint that alone carries the page over --max-page-mb is left out
    // (the page is live without it) rather than the page refused.
    auto leave_out_checkpoint_for = [&](double page_bytes, bool at_least) {
        const double limit = static_cast<double>(page_limit_mib) * 1024.0 * 1024.0;
        const auto embedded = static_cast<double>(live.model_base64.size());
        if (embedded == 0 || page_bytes <= limit || page_bytes - embedded > limit) return false;
        char size[32];
        std::snprintf(size, sizeof size, "%.1f", page_bytes / (1024.0 * 1024.0));
        const std::string file_name = std::filesystem::path(path).stem().string() + ".safetensors";
        note = text_of("the page with the checkpoint would be ", at_least ? "at least " : "", size, " MiB, above the limit of ", page_limit_mib,
                       " MiB (--max-page-mb): the page is live without it (open ", file_name,
                       " in it: Open model, or drop the file on the page)");
        live = engine_without_weights(parsed, file_name);
        return true;
    };
    const std::vector<int64_t> tokens = input_tokens(parsed, 1, model, "explore");
    std::optional<std::vector<int64_t>> target = target_tokens(parsed, model, "explore");
    const bool target_given = target.has_value();
    if (target && beam > 1) throw UsageError("explore: --beam decodes a target; give --target or --beam, not both");
    if (target && generation.any_given)
        throw UsageError("explore: --max-new-tokens and the sampling flags shape a decoded target; give --target or "
                         "them, not both");

    // Refused before any pass when the lengths already show it: the page,
    // and the recorded pass's memory (with the target's length when it is
    // given, else at least the input's); and again once a decoding has
    // chosen the target, before the pass.
    const std::vector<int64_t> input = model_input(model, tokens);
    const std::string named = input_name(parsed, static_cast<int64_t>(tokens.size()));
    auto refuse_before_pass = [&](int64_t target_length) {
        auto at_least = [&] { return page_bytes_at_least(model, static_cast<int64_t>(input.size()), target_length, live.bytes()); };
        leave_out_checkpoint_for(at_least(), true);
        refuse_large_page(at_least(), true, page_limit_mib, named, target_length);
        refuse_teacher_forced_beyond_memory(model, input, target_length);
    };
    if (!target && model.config.arch != Architecture::EncoderOnly)
        refuse_inputs_without_room(model, {input});  // a decoding comes first
    refuse_before_pass(target ? static_cast<int64_t>(target->size()) : 0);

    json decoding = decode_target(model, text, input, DecodeSettings{beam, generation.sampling, generation.options}, target);
    if (target) refuse_before_pass(static_cast<int64_t>(target->size()));
    const AttentionRun run = attention_maps(model, tokens, target, Trace::Detail::Everything);
    decoding["steps"] = decoding_steps(model, run, text, decoding);

    const std::string shown = parsed.has("--ids") ? parsed.value("--ids") : parsed.positional()[1];
    json data = explore_data(model, run, decoding, std::filesystem::path(path).stem().string(), shown, target_given);
    // The page starts from them: its live controls keep them until reset.
    if (!interventions.empty()) data["interventions"] = interventions_json(interventions);
    const std::string data_text = data.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string page = explore_page(data_text, live);
    if (leave_out_checkpoint_for(static_cast<double>(page.size()), false)) page = explore_page(data_text, live);
    refuse_large_page(static_cast<double>(page.size()), false, page_limit_mib, named, static_cast<int64_t>(run.target.size()));
    write_explore(parsed, html_path, data_text, page);
    if (!why_recorded.empty())
        std::fprintf(stderr, "tinyformer explore: a recorded page (no engine): %s\n", terminal_text(why_recorded).c_str());
    if (!note.empty()) std::fprintf(stderr, "tinyformer explore: %s\n", terminal_text(note).c_str());
    std::fprintf(stderr, "tinyformer explore: %s -> %s; %zu attention calls, %.1f KiB\n", terminal_text(shown).c_str(),
                 terminal_text(run.output).c_str(), run.maps.size(), static_cast<double>(page.size()) / 1024.0);
    return 0;
}

}  // namespace tinyformer::cli
