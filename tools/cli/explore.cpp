// `tinyformer explore`: one self-contained HTML file to walk through one
// teacher-forced pass — the model view, one head, one cell, the arithmetic
// of one softmax row, the decoding steps. The page is tools/explore/page.html,
// page.css and page.js (plain JavaScript, no network), embedded at build time
// (build/generated/explore_page.h); the data is the engine's trace of the
// pass (models/trace.h) as JSON in <script type="application/json"
// id="tinyformer-data"> (docs/FORMAT.md section 4), with every '<' written \u003c.

#include "build/generated/explore_page.h"
#include "engine/io/output_file.h"
#include "models/attention_maps.h"
#include "tools/cli/generation_flags.h"
#include "tools/cli/inputs.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace tinyformer::cli {

namespace {

using json = nlohmann::json;

const char* kExploreHelp =
    "usage: tinyformer explore MODEL.safetensors (TEXT | --ids 5,17,3) [--target TEXT | --target-ids 4,9]\n"
    "                          [--beam K | --temperature T --top-k K --top-p P --seed S]\n"
    "                          [--max-new-tokens N] --html FILE.html [--json FILE.json] [--unk]\n"
    "                          [--max-page-mb N] [--overrides FILE.json] [--block ...] [--allow ...]\n"
    "                          [--ablate ...]\n"
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
    "                 seed), each generated step's top-5 next tokens, the chosen path (beams with --beam)\n"
    "Every number is the engine's, from the trace of the pass (tinyformer trace). Keys: arrows\n"
    "move between heads (left/right) and layers (up/down). The data is also in the page as\n"
    "JSON (<script id=\"tinyformer-data\">, docs/FORMAT.md section 4); --json writes it alone.\n"
    "--unk reads a character of TEXT outside the vocabulary as <unk>, with a warning (as `run`).\n"
    "  --max-page-mb N  refuse a page above N MiB (default 8: a bigger page opens slowly, if\n"
    "                 at all): before the pass when the lengths already show it, else once the\n"
    "                 page is made; a refused page writes nothing (and no --json file either)\n"
    "The decoding (none with --target, which excludes the flags below) stops at <eos>, at the\n"
    "model's max_len positions or after N new tokens; as in `tinyformer run`:\n";

const char* kExploreHelpInterventions =
    "The recorded page is of the intervened model (its decoding and its pass) with these:\n";

// A float as the shortest decimal that reads back as the same float32, so
// that the JSON holds exactly the engine's number and stays small.
double exact(float value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
    for (int digits = 6; digits < 9; ++digits) {  // fewer digits when they already read back exactly
        char shorter[32];
        std::snprintf(shorter, sizeof shorter, "%.*g", digits, static_cast<double>(value));
        if (std::strtof(shorter, nullptr) == value) return std::strtod(shorter, nullptr);
    }
    return std::strtod(text, nullptr);
}

// Row r of a [1, R, C] (or [1, H, R, C] with h) tensor as a JSON array of arrays.
json matrix(const Tensor& t, int64_t h = 0) {
    const int64_t rows = t.dim(-2), cols = t.dim(-1);
    const float* base = t.data() + h * rows * cols;
    json out = json::array();
    for (int64_t r = 0; r < rows; ++r) {
        json row = json::array();
        for (int64_t c = 0; c < cols; ++c) row.push_back(exact(base[r * cols + c]));
        out.push_back(std::move(row));
    }
    return out;
}

json per_head(const Tensor& t) {  // [1, H, L, S] -> [H][L][S]
    json out = json::array();
    for (int64_t h = 0; h < t.dim(1); ++h) out.push_back(matrix(t, h));
    return out;
}

json mask_matrix(const BoolTensor& mask) {  // [1, L, S] U8
    const int64_t rows = mask.shape[1], cols = mask.shape[2];
    json out = json::array();
    for (int64_t r = 0; r < rows; ++r) {
        json row = json::array();
        for (int64_t c = 0; c < cols; ++c) row.push_back(mask.values[static_cast<size_t>(r * cols + c)]);
        out.push_back(std::move(row));
    }
    return out;
}

std::string group_of(const AttentionMap& map) {
    if (map.stack == "encoder") return "encoder self";
    if (map.stack == "decoder") return map.kind == "cross" ? "cross" : "decoder self";
    return "self";
}

json attention_json(const AttentionMap& map, const Trace& trace, int64_t heads) {
    const std::string& name = map.trace_name;
    const bool decoder_queries = map.stack == "decoder";
    const bool decoder_keys = map.stack == "decoder" && map.kind == "self";
    json out = {{"name", name},
            {"stack", map.stack},
            {"layer", map.layer},
            {"attn", map.kind == "cross" ? "cross_attn" : "self_attn"},
            {"group", group_of(map)},
            {"queries", decoder_queries ? "target" : "source"},
            {"keys", decoder_keys ? "target" : "source"},
            {"mask_name", map.mask_name},
            {"mask", mask_matrix(trace.masks().at(name + ".mask"))},
            {"dk", trace.tensor(name + ".q").dim(2) / heads},
            {"q", matrix(trace.tensor(name + ".q"))},
            {"k", matrix(trace.tensor(name + ".k"))},
            {"v", matrix(trace.tensor(name + ".v"))},
            {"scores", per_head(trace.tensor(name + ".scores"))},
            {"weights", per_head(trace.tensor(name + ".weights"))},
            {"z", matrix(trace.tensor(name + ".z"))}};
    // Only when the pass recorded them: the mask's additive term (ALiBi), per
    // head, and q and k before rotation (rotary), docs/FORMAT.md section 4.
    if (trace.has(name + ".bias")) out["bias"] = per_head(trace.tensor(name + ".bias"));
    for (const char* unrotated : {"q_unrotated", "k_unrotated"})
        if (trace.has(name + "." + unrotated)) out[unrotated] = matrix(trace.tensor(name + "." + unrotated));
    return out;
}

// Each step along the decoded (or given) path: the top-5 next tokens of the
// pass's logits at the position that predicts it, and the token taken.
json decoding_steps(const Model& model, const AttentionRun& run, const ModelText& text) {
    json steps = json::array();
    if (run.pass.first_prediction < 0) return steps;
    std::vector<int64_t> chosen = run.target;
    if (model.config.eos_id >= 0) chosen.push_back(model.config.eos_id);
    const int64_t V = run.pass.logits.dim(2), rows = run.pass.logits.dim(1);
    for (size_t t = 0; t < chosen.size(); ++t) {
        const int64_t row = run.pass.first_prediction + static_cast<int64_t>(t);
        if (row >= rows) break;
        const std::vector<double> log_p = log_softmax(run.pass.logits.data() + row * V, V);
        std::vector<int64_t> order(static_cast<size_t>(V));
        for (int64_t i = 0; i < V; ++i) order[static_cast<size_t>(i)] = i;
        const size_t top = std::min<size_t>(5, order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                          [&](int64_t a, int64_t b) { return log_p[static_cast<size_t>(a)] > log_p[static_cast<size_t>(b)]; });
        json candidates = json::array();
        for (size_t i = 0; i < top; ++i)
            candidates.push_back({{"id", order[i]},
                                  {"token", text.output_label(order[i])},
                                  {"p", exact(static_cast<float>(std::exp(log_p[static_cast<size_t>(order[i])])))}});
        steps.push_back({{"position", t}, {"candidates", candidates}, {"chosen", chosen[t]},
                         {"chosen_token", text.output_label(chosen[t])},
                         {"chosen_p", exact(static_cast<float>(std::exp(log_p[static_cast<size_t>(chosen[t])])))}});
    }
    return steps;
}

const char* arch_name(const ModelConfig& config) { return architecture_name(config.arch); }

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
// weights per head, z), each at least two bytes ("0,"). input: the model's
// input as model_input frames it; target: the target's length.
double page_bytes_at_least(const Model& model, int64_t input, int64_t target) {
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
    return 2 * numbers + static_cast<double>(std::strlen(kExplorePageHtml) + std::strlen(kExplorePageCss) +
                                             std::strlen(kExplorePageJs));
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

// --- decode: the target, when none is given (greedy, or beam search) ---

// The page's "decoding" record; `target` becomes the decoded one. Beam search
// keeps every hypothesis for the page. A model without an eos_id generates
// up to the token limit, as in `run`.
json decode_target(const Model& model, const ModelText& text, const std::vector<int64_t>& input, int64_t beam,
                   const GenerationFlags& generation, std::optional<std::vector<int64_t>>& target) {
    const bool decodes = !target && model.config.arch != Architecture::EncoderOnly;
    json sampling = nullptr;
    if (generation.sampling)
        sampling = {{"temperature", generation.sampling->temperature},
                    {"top_k", generation.sampling->top_k},
                    {"top_p", generation.sampling->top_p},
                    {"seed", generation.sampling->seed}};
    json decoding = {{"mode", !decodes ? "none" : beam > 1 ? "beam" : generation.sampling ? "sample" : "greedy"},
                     {"beam", beam},
                     {"max_new_tokens", decodes ? json(new_token_limit(model, generation.options)) : json(nullptr)},
                     {"sampling", decodes ? sampling : json(nullptr)},
                     {"hypotheses", json::array()}};
    if (!decodes) return decoding;
    if (model.encoder_decoder && model.config.bos_id < 0)
        fail("the model's config has no bos_id, so it cannot generate a target; give the decoder's tokens with "
             "--target or --target-ids");
    if (beam > 1) {
        const Generation generated = beam_search(model, input, beam, 1.0, generation.options);
        for (size_t i = 0; i < generated.hypotheses.size(); ++i) {
            const Hypothesis& h = generated.hypotheses[i];
            json labels = json::array();
            for (int64_t id : h.tokens) labels.push_back(text.output_label(id));
            decoding["hypotheses"].push_back({{"tokens", labels}, {"log_p", h.log_prob}, {"score", h.score}, {"best", i == 0}});
        }
        target = generated.tokens[0];
    } else if (generation.sampling) {
        target = sample_decode(model, {input}, *generation.sampling, generation.options).tokens[0];
    } else {
        target = greedy_decode(model, {input}, generation.options).tokens[0];
    }
    return decoding;
}

// --- the page's data: what the one pass recorded, as docs/FORMAT.md's explore document ---

json explore_data(const Model& model, const AttentionRun& run, const json& decoding, const std::string& model_path,
                  const std::string& shown, bool target_given) {
    const ModelConfig& config = model.config;
    json attentions = json::array();
    for (const AttentionMap& map : run.maps) attentions.push_back(attention_json(map, run.trace, config.nhead));
    json sequences = {{"source", run.source_tokens}};
    json ids = {{"source", model.encoder_decoder ? run.pass.input : run.pass.decoder}};
    json padding = {{"source", std::vector<bool>(run.source_tokens.size(), false)}};
    if (model.encoder_decoder) {
        sequences["target"] = run.target_tokens;
        ids["target"] = run.pass.decoder;
        padding["target"] = std::vector<bool>(run.target_tokens.size(), false);
    }
    const bool rotary = config.pos_encoding == PositionalEncoding::Rotary;
    return {{"format", "tinyformer-explore/1"},
            {"model",
             {{"name", std::filesystem::path(model_path).stem().string()},
              {"arch", arch_name(config)},
              {"d_model", config.d_model},
              {"nhead", config.nhead},
              {"head_dim", config.d_model / config.nhead},
              {"norm_first", config.norm_first},
              {"pos_encoding", pos_encoding_name(config.pos_encoding)},
              {"n_kv_heads", config.n_kv_heads},
              {"rope_theta", rotary ? json(config.rope_theta) : json(nullptr)},
              {"rope_pairs", rotary ? json(rope_pairs_name(config.rope_pairs)) : json(nullptr)},
              {"attention", model.encoder_decoder ? json(nullptr) : json(attention_kind_name(config.attention))}}},
            {"input", {{"text", shown}, {"target", run.output}, {"target_given", target_given}}},
            {"sequences", sequences},
            {"ids", ids},
            {"padding", padding},
            {"attentions", attentions},
            {"decoding", decoding}};
}

// --- the page: tools/explore/page.html with its CSS, script and data in place ---

std::string explore_page(const std::string& data_text) {
    // The data goes in last, so that no placeholder is ever looked for inside it.
    std::string page = replaced_once(kExplorePageHtml, "/*TINYFORMER_CSS*/", kExplorePageCss);
    page = replaced_once(page, "/*TINYFORMER_JS*/", kExplorePageJs);
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

}  // namespace

// Parse, refuse what the lengths already show, decode, run the one recorded
// pass, build the data and the page, write.
int explore_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--html", "--json", "--ids", "--target", "--target-ids", "--beam", "--max-page-mb"};
    value_flags.insert(generation_flag_names().begin(), generation_flag_names().end());
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags, {"--unk"}, "explore");
    if (parsed.help()) {
        std::printf("%s%s%s%s", kExploreHelp, kGenerationFlagsHelp, kExploreHelpInterventions, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().empty() || parsed.positional().size() > 2)
        throw UsageError("explore: expected MODEL and TEXT, or MODEL and --ids (see 'tinyformer explore --help')");
    const std::string& html_path = parsed.value("--html");
    if (!html_path.ends_with(".html") && !is_stream_output(html_path)) throw UsageError("explore: --html must name a .html file, got '" + html_path + "'");
    const int64_t beam = parsed.integer("--beam", 1, 1, 64);
    const GenerationFlags generation = generation_flags(parsed, beam, "explore");
    const int64_t page_limit_mib = parsed.integer("--max-page-mb", 8, 1, 1 << 20);
    const std::string& path = parsed.positional()[0];
    std::vector<std::string> outputs = {html_path};
    if (parsed.has("--json")) outputs.push_back(parsed.value("--json"));
    check_outputs("explore", {path}, outputs);
    const Interventions interventions = intervention_flags(parsed, "explore");
    Model model = Model::load(path);
    const AppliedInterventions applied(model, interventions);  // the decoding and the recorded pass are intervened
    const ModelText text(model);
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
        refuse_large_page(page_bytes_at_least(model, static_cast<int64_t>(input.size()), target_length), true,
                          page_limit_mib, named, target_length);
        refuse_teacher_forced_beyond_memory(model, input, target_length);
    };
    if (!target && model.config.arch != Architecture::EncoderOnly)
        refuse_inputs_without_room(model, {input});  // a decoding comes first
    refuse_before_pass(target ? static_cast<int64_t>(target->size()) : 0);

    json decoding = decode_target(model, text, input, beam, generation, target);
    if (target) refuse_before_pass(static_cast<int64_t>(target->size()));
    const AttentionRun run = attention_maps(model, tokens, target, Trace::Detail::Everything);
    decoding["steps"] = decoding_steps(model, run, text);

    const std::string shown = parsed.has("--ids") ? parsed.value("--ids") : parsed.positional()[1];
    const std::string data_text = explore_data(model, run, decoding, path, shown, target_given)
                                      .dump(-1, ' ', false, json::error_handler_t::replace);
    const std::string page = explore_page(data_text);
    refuse_large_page(static_cast<double>(page.size()), false, page_limit_mib, named, static_cast<int64_t>(run.target.size()));
    write_explore(parsed, html_path, data_text, page);
    std::fprintf(stderr, "tinyformer explore: %s -> %s; %zu attention calls, %.1f KiB\n", terminal_text(shown).c_str(),
                 terminal_text(run.output).c_str(), run.maps.size(), static_cast<double>(page.size()) / 1024.0);
    return 0;
}

}  // namespace tinyformer::cli
