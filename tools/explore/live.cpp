#include "tools/explore/live.h"

#include "engine/io/json.h"
#include "models/study/attention_maps.h"
#include "models/study/interventions.h"
#include "models/study/lens.h"
#include "models/study/patching.h"
#include "models/study/teacher_forcing.h"
#include "tools/explore/explore_data.h"
#include "tools/explore/study_json.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace tinyformer {

namespace {

using json = nlohmann::json;

// --- the request's fields, each checked with a message naming it ---

// "request: "decode.beam" must be ..., got ...".
[[noreturn]] void bad_field(const std::string& field, const std::string& expected, const json& value) {
    fail("request: \"", field, "\" must be ", expected, ", got ", json_excerpt(value));
}

void refuse_unknown_keys(const json& object, const std::string& where, const std::set<std::string>& known) {
    for (const auto& [key, value] : object.items())
        if (!known.count(key)) {
            std::string list;
            for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
            fail("request: unknown key \"", where.empty() ? key : where + "." + key, "\"; ",
                 where.empty() ? "a request" : "\"" + where + "\"", " takes ", list);
        }
}

// A whole number in [low, high]: an integer, or a float with no fraction (1.0).
int64_t integer_field(const json& object, const std::string& key, const std::string& field, int64_t fallback,
                      int64_t low, int64_t high) {
    if (!object.contains(key)) return fallback;
    const json& value = object.at(key);
    const std::string range = text_of("a whole number in ", low, "..", high);
    double number = 0;
    if (value.is_number_integer() || value.is_number_unsigned()) {
        if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad_field(field, range, value);
        const int64_t whole = value.get<int64_t>();
        if (whole < low || whole > high) bad_field(field, range, value);
        return whole;
    }
    if (!value.is_number_float()) bad_field(field, range, value);
    number = value.get<double>();
    if (!std::isfinite(number) || number != std::floor(number) || number < static_cast<double>(low) ||
        number > static_cast<double>(high))
        bad_field(field, range, value);
    return static_cast<int64_t>(number);
}

double number_field(const json& object, const std::string& key, const std::string& field, double fallback) {
    if (!object.contains(key)) return fallback;
    const json& value = object.at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>())) bad_field(field, "a finite number", value);
    return value.get<double>();
}

std::vector<int64_t> ids_field(const json& value, const std::string& field) {
    if (!value.is_array() || value.empty()) bad_field(field, "a non-empty array of token ids", value);
    std::vector<int64_t> ids;
    for (const json& id : value) {
        if (!(id.is_number_integer() || (id.is_number_unsigned() && id.get<uint64_t>() <= INT64_MAX)))
            bad_field(field, "an array of whole numbers (token ids)", value);
        ids.push_back(id.get<int64_t>());
    }
    return ids;
}

const std::string& string_field(const json& value, const std::string& field) {
    if (!value.is_string()) bad_field(field, "a string", value);
    return value.get_ref<const std::string&>();
}

std::string joined(const std::vector<int64_t>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(ids[i]);
    }
    return out;
}

// One row of the request: "text" | "ids", and "target" | "target_ids" (at most one).
struct Row {
    std::vector<int64_t> tokens;                 // the user's tokens
    std::vector<int64_t> input;                  // model_input(tokens)
    std::optional<std::vector<int64_t>> target;  // given, or (after decoding) decoded
    bool target_given = false;
    std::string shown;                           // the input as given: the text, or the ids "5,17,3"
};

// A model's Error about a field's tokens, with the field named first.
template <typename F>
auto about(const std::string& field, F&& work) {
    try {
        return work();
    } catch (const Error& error) {
        fail("request: \"", field, "\": ", error.message());
    }
}

Row parse_row(const json& object, const std::string& prefix, const Model& model, const ModelText& text, bool unk) {
    Row row;
    const bool has_text = object.contains("text"), has_ids = object.contains("ids");
    if (has_text == has_ids)
        fail("request: give ",
             prefix.empty() ? "the input" : prefix == "second." ? "the second row" : "\"" + prefix.substr(0, prefix.size() - 1) + "\"",
             " as \"", prefix, "text\" or as \"", prefix, "ids\", ", has_text ? "not both" : "one of them");
    if (has_text) {
        row.shown = string_field(object.at("text"), prefix + "text");
        row.tokens = about(prefix + "text", [&] { return text.encode_input(row.shown, unk); });
    } else {
        row.tokens = ids_field(object.at("ids"), prefix + "ids");
        row.shown = joined(row.tokens);
    }
    const std::string input_field = prefix + (has_text ? "text" : "ids");
    row.input = about(input_field, [&] { return model_input(model, row.tokens); });
    if (object.contains("target") && object.contains("target_ids"))
        fail("request: give the target as \"", prefix, "target\" or as \"", prefix, "target_ids\", not both");
    if (object.contains("target")) {
        const std::string& target = string_field(object.at("target"), prefix + "target");
        row.target = about(prefix + "target", [&] { return text.encode_output(target); });
    } else if (object.contains("target_ids")) {
        row.target = ids_field(object.at("target_ids"), prefix + "target_ids");
        about(prefix + "target_ids", [&] { check_output_ids(model, *row.target); return 0; });
    }
    row.target_given = row.target.has_value();
    return row;
}

DecodeSettings parse_decode(const json& request) {
    DecodeSettings settings;
    if (!request.contains("decode")) return settings;
    const json& decode = request.at("decode");
    if (!decode.is_object()) bad_field("decode", "an object", decode);
    refuse_unknown_keys(decode, "decode", {"mode", "beam", "temperature", "top_k", "top_p", "seed", "max_new_tokens"});
    const std::string mode = decode.contains("mode") ? string_field(decode.at("mode"), "decode.mode") : "greedy";
    if (mode != "greedy" && mode != "beam" && mode != "sample")
        bad_field("decode.mode", "\"greedy\", \"beam\" or \"sample\"", decode.at("mode"));
    // The CLI's limits (--beam 1..64, --max-new-tokens 1..2^20, the sampling flags'); a seed up to
    // 2^53, the whole numbers a page's JavaScript holds exactly.
    const int64_t beam = integer_field(decode, "beam", "decode.beam", 3, 2, 64);
    Sampling sampling;
    sampling.temperature = number_field(decode, "temperature", "decode.temperature", 1.0);
    if (!(sampling.temperature > 0)) bad_field("decode.temperature", "a number > 0", decode.at("temperature"));
    sampling.top_k = integer_field(decode, "top_k", "decode.top_k", 0, 0, INT64_MAX);
    sampling.top_p = number_field(decode, "top_p", "decode.top_p", 1.0);
    if (!(sampling.top_p > 0 && sampling.top_p <= 1)) bad_field("decode.top_p", "a number in (0, 1]", decode.at("top_p"));
    sampling.seed = static_cast<uint64_t>(integer_field(decode, "seed", "decode.seed", 0, 0, int64_t{1} << 53));
    settings.options.max_new_tokens =
        integer_field(decode, "max_new_tokens", "decode.max_new_tokens", GenerationOptions::kModelDefault, 1, 1 << 20);
    if (mode == "beam") settings.beam = beam;
    if (mode == "sample") settings.sampling = sampling;
    return settings;
}

// --- the study keys: "lens", "patch", "patch_cell" (models/study/lens.h, patching.h) ---

struct LensRequest {
    int64_t top = 5;
    std::optional<int64_t> attribute;
};

LensRequest parse_lens(const json& object, const Model& model, const ModelText& text) {
    if (!object.is_object()) bad_field("lens", "an object", object);
    refuse_unknown_keys(object, "lens", {"top", "attribute", "attribute_id"});
    LensRequest lens;
    lens.top = integer_field(object, "top", "lens.top", 5, 1, 100);  // the CLI's --top 1..100
    if (object.contains("attribute") && object.contains("attribute_id"))
        fail("request: give the token to attribute as \"lens.attribute\" or as \"lens.attribute_id\", not both");
    if (object.contains("attribute_id")) {  // as --attribute-id: an id of the output vocabulary
        const int64_t V = model.encoder_decoder ? model.config.tgt_vocab_size : model.config.vocab_size;
        lens.attribute = integer_field(object, "attribute_id", "lens.attribute_id", 0, 0, V - 1);
    }
    if (object.contains("attribute")) {
        const std::string& token = string_field(object.at("attribute"), "lens.attribute");
        const std::vector<int64_t> ids = about("lens.attribute", [&] { return text.encode_output(token); });
        if (ids.size() != 1)
            fail("request: \"lens.attribute\" must be one token of the output vocabulary; ", json_excerpt(object.at("attribute")),
                 " is ", ids.size(), " tokens");
        lens.attribute = ids[0];
    }
    return lens;
}

// "patch" and "patch_cell" share "corrupted" and "what"; the cell adds "row" and "position".
struct PatchRequest {
    std::vector<int64_t> corrupted;  // the user's tokens, framed by prepare_patching
    PatchWhat what = PatchWhat::Resid;
    std::string row;
    int64_t position = 0;
};

PatchRequest parse_patch(const json& object, const std::string& key, const Model& model, const ModelText& text, bool unk) {
    if (!object.is_object()) bad_field(key, "an object", object);
    const bool cell = key == "patch_cell";
    refuse_unknown_keys(object, key,
                        cell ? std::set<std::string>{"corrupted", "what", "row", "position"}
                             : std::set<std::string>{"corrupted", "what"});
    PatchRequest patch;
    if (!object.contains("corrupted")) fail("request: \"", key, "\" needs \"corrupted\": {\"text\": ...} or {\"ids\": [...]}");
    const json& corrupted = object.at("corrupted");
    if (!corrupted.is_object()) bad_field(key + ".corrupted", "an object", corrupted);
    refuse_unknown_keys(corrupted, key + ".corrupted", {"text", "ids"});
    patch.corrupted = parse_row(corrupted, key + ".corrupted.", model, text, unk).tokens;
    if (object.contains("what")) {
        const std::string& what = string_field(object.at("what"), key + ".what");
        patch.what = about(key + ".what", [&] { return parse_patch_what(what); });
    }
    if (cell) {
        if (!object.contains("row") || !object.contains("position"))
            fail("request: \"patch_cell\" needs \"row\" (a name of the patch's \"layers\") and \"position\"");
        patch.row = string_field(object.at("row"), "patch_cell.row");
        patch.position = integer_field(object, "position", "patch_cell.position", 0, 0, INT32_MAX);
    }
    return patch;
}

// The row named `name` of the experiment, or an Error naming the first and the last.
const PatchRow& patch_row_named(const PatchExperiment& experiment, const std::string& name) {
    const std::vector<PatchRow>& rows = experiment.report.rows;
    for (const PatchRow& row : rows)
        if (row.name == name) return row;
    fail("request: \"patch_cell.row\" must be one of the ", rows.size(), " rows of ",
         patch_what_name(experiment.report.what), " (", rows.front().name, " .. ", rows.back().name, "), got ",
         json_excerpt(json(name)));
}

// --- the result's row fields ---

// Where the row's sequences sit in the pass: B = 1 unpadded, or a row of the padded batch.
struct RowPlace {
    int64_t batch_row = 0;
    int64_t input_offset = 0;    // the first real position of the input (left padding moves it)
    int64_t decoder_offset = 0;  // ... of the decoder's sequence (encoder_decoder)
};

// log p of each target token, then <eos>, from the logits rows that predict them (as models/study/probe.h scores).
json token_log_p(const Model& model, const Tensor& logits, const Row& row, const RowPlace& place) {
    json out = json::array();
    const int64_t n = logits.dim(1), V = logits.dim(2);
    int64_t first = 0;
    if (model.encoder_decoder) {
        if (model.config.bos_id < 0) return out;  // no row predicts the first target token
        first = place.decoder_offset;
    } else {
        first = place.input_offset + static_cast<int64_t>(row.input.size()) - 1;
    }
    std::vector<int64_t> labels = *row.target;
    if (model.config.eos_id >= 0) labels.push_back(model.config.eos_id);
    for (size_t t = 0; t < labels.size(); ++t) {
        const int64_t position = first + static_cast<int64_t>(t);
        if (position >= n) break;
        const float* predicting = logits.data() + (place.batch_row * n + position) * V;
        out.push_back(log_softmax(predicting, V)[static_cast<size_t>(labels[t])]);
    }
    return out;
}

json row_fields(const Model& model, const ModelText& text, const Row& row, const RowPlace& place,
                const std::vector<int64_t>& source, const std::vector<int64_t>& decoder, const Tensor& logits,
                const Trace& trace, const std::vector<std::string>& calls, int64_t prefix_len, FloatArrays* arrays) {
    json out;
    if (model.encoder_decoder) {
        out["src_ids"] = source;
        out["tgt_ids"] = decoder;
    } else {
        out["ids"] = decoder;
        if (model.config.attention == SelfAttentionKind::PrefixLm) out["prefix_len"] = prefix_len;
    }
    out["text"] = text.decode_output(*row.target);
    out["target_ids"] = *row.target;
    out["logits"] = matrix(logits, place.batch_row, arrays);
    json weights = json::object();
    for (const std::string& call : calls) weights[call] = per_head(trace.tensor(call + ".weights"), arrays, place.batch_row);
    out["weights"] = weights;
    out["token_log_p"] = token_log_p(model, logits, row, place);
    double sum = 0;
    for (const json& value : out["token_log_p"]) sum += value.get<double>();
    out["log_p"] = sum;
    return out;
}

// The names of the model's attention calls ("decoder.0.self_attn"), in the order they run.
std::vector<std::string> call_names(const AttentionRun& run) {
    std::vector<std::string> names;
    for (const AttentionMap& map : run.maps) names.push_back(map.name);
    return names;
}

// Row 0 decoded (when it has no target) and recorded alone: the page, and its row fields.
void decode_row(const Model& model, const ModelText& text, Row& row, const DecodeSettings& settings, json* decoding) {
    if (!row.target && model.config.arch != Architecture::EncoderOnly) refuse_inputs_without_room(model, {row.input});
    refuse_teacher_forced_beyond_memory(model, row.input, row.target ? static_cast<int64_t>(row.target->size()) : 0);
    const json record = decode_target(model, text, row.input, settings, row.target);
    if (decoding) *decoding = record;
    if (!row.target) row.target = std::vector<int64_t>();  // an encoder_only model: no target
    refuse_teacher_forced_beyond_memory(model, row.input, static_cast<int64_t>(row.target->size()));
}

json id_rows(const TokenIds& ids) {
    json out = json::array();
    for (int64_t b = 0; b < ids.batch; ++b)
        out.push_back(std::vector<int64_t>(ids.values.begin() + b * ids.length, ids.values.begin() + (b + 1) * ids.length));
    return out;
}

json flag_rows(const BoolTensor& flags) {
    json out = json::array();
    const int64_t B = flags.shape[0], n = flags.shape[1];
    for (int64_t b = 0; b < B; ++b) {
        json row = json::array();
        for (int64_t t = 0; t < n; ++t) row.push_back(static_cast<int>(flags.values[static_cast<size_t>(b * n + t)]));
        out.push_back(row);
    }
    return out;
}

// Two sequences padded into one [2, n] batch: ids (padding positions hold
// pad_id, or 0 without one) and flags (1 = padding); offsets[b] is row b's first real position.
struct Padded {
    TokenIds ids;
    BoolTensor flags;
    std::vector<int64_t> offsets;
};
Padded pad_rows(const std::vector<std::vector<int64_t>>& rows, bool left, int64_t pad_id) {
    int64_t n = 0;
    for (const auto& row : rows) n = std::max<int64_t>(n, static_cast<int64_t>(row.size()));
    const auto B = static_cast<int64_t>(rows.size());
    Padded out{{B, n, std::vector<int64_t>(static_cast<size_t>(B * n), pad_id)},
               {{B, n}, std::vector<uint8_t>(static_cast<size_t>(B * n), 1)},
               {}};
    for (int64_t b = 0; b < B; ++b) {
        const auto& row = rows[static_cast<size_t>(b)];
        const int64_t offset = left ? n - static_cast<int64_t>(row.size()) : 0;
        out.offsets.push_back(offset);
        for (size_t t = 0; t < row.size(); ++t) {
            const auto at = static_cast<size_t>(b * n + offset + static_cast<int64_t>(t));
            out.ids.values[at] = row[t];
            out.flags.values[at] = 0;
        }
    }
    return out;
}

void check_positions(const Model& model, int64_t length, const char* what) {
    if (model.config.pos_encoding != PositionalEncoding::None && length > model.config.max_len)
        fail("request: the padded batch's ", what, " needs ", length, " positions but the model's max_len is ",
             model.config.max_len);
}

// The page pass: row 0 decoded and recorded (and row 1 with it, "second"): the row
// fields, "forward_inputs", "second" and "page" of the RESULT (live.h).
json page_pass_of(Model& model, const ModelText& text, Row& first, std::optional<Row>& second, bool left,
                  const DecodeSettings& settings, const std::string& model_name, FloatArrays* arrays) {
    // Row 0: decoded alone, then the one recorded pass the page shows.
    json decoding;
    decode_row(model, text, first, settings, &decoding);
    const AttentionRun run = attention_maps(model, first.tokens, first.target, Trace::Detail::Everything);
    decoding["steps"] = decoding_steps(model, run, text, decoding);
    const std::vector<std::string> calls = call_names(run);
    const bool prefix_lm = !model.encoder_decoder && model.config.attention == SelfAttentionKind::PrefixLm;

    json result;
    if (!second) {
        const std::vector<int64_t>& source = model.encoder_decoder ? run.pass.input : std::vector<int64_t>{};
        const auto prefix = static_cast<int64_t>(first.input.size());
        result = row_fields(model, text, first, {}, source, run.pass.decoder, run.pass.logits, run.trace, calls, prefix, arrays);
        if (model.encoder_decoder)
            result["forward_inputs"] = {{"src_ids", json::array({run.pass.input})},
                                        {"tgt_ids", json::array({run.pass.decoder})}};
        else if (prefix_lm)
            result["forward_inputs"] = {{"ids", json::array({run.pass.decoder})}, {"prefix_len", json::array({prefix})}};
        else
            result["forward_inputs"] = {{"ids", json::array({run.pass.decoder})}};
    } else {
        // Row 1 decoded alone too, then both rows in one padded teacher-forced pass (models/study/forward.h's path).
        decode_row(model, text, *second, settings, nullptr);
        const std::vector<Row*> rows = {&first, &*second};
        const int64_t pad_id = model.config.pad_id >= 0 ? model.config.pad_id : 0;
        Trace trace(Trace::Detail::Weights);
        Tensor logits;
        json forward_inputs;
        std::vector<RowPlace> places(2);
        std::vector<int64_t> prefixes;
        Padded source, decoder;
        if (model.encoder_decoder) {
            source = pad_rows({first.input, second->input}, left, pad_id);
            decoder = pad_rows({decoder_input(model, *first.target), decoder_input(model, *second->target)}, left, pad_id);
            check_positions(model, source.ids.length, "source");
            check_positions(model, decoder.ids.length, "target");
            const Padding source_padding = Padding::from_flags(source.flags);
            const Padding target_padding = Padding::from_flags(decoder.flags);
            const Tensor memory = model.encoder_decoder->encode(source.ids, source_padding, &trace);
            logits = model.encoder_decoder->decode(decoder.ids, memory, target_padding, source_padding, &trace);
            forward_inputs = {{"src_ids", id_rows(source.ids)}, {"tgt_ids", id_rows(decoder.ids)},
                              {"src_key_padding_mask", flag_rows(source.flags)},
                              {"tgt_key_padding_mask", flag_rows(decoder.flags)}};
        } else {
            std::vector<std::vector<int64_t>> sequences;
            for (const Row* row : rows) {
                sequences.push_back(row->input);
                sequences.back().insert(sequences.back().end(), row->target->begin(), row->target->end());
            }
            decoder = pad_rows(sequences, left, pad_id);
            check_positions(model, decoder.ids.length, "sequence");
            for (size_t b = 0; b < 2; ++b)
                prefixes.push_back(decoder.offsets[b] + static_cast<int64_t>(rows[b]->input.size()));
            logits = model.single_stack->forward(decoder.ids, Padding::from_flags(decoder.flags),
                                                 prefix_lm ? prefixes : std::vector<int64_t>{}, &trace);
            forward_inputs = {{"ids", id_rows(decoder.ids)}, {"key_padding_mask", flag_rows(decoder.flags)}};
            if (prefix_lm) forward_inputs["prefix_len"] = prefixes;
        }
        std::vector<json> fields;
        for (int64_t b = 0; b < 2; ++b) {
            const auto i = static_cast<size_t>(b);
            RowPlace place{b, model.encoder_decoder ? 0 : decoder.offsets[i], decoder.offsets[i]};
            const json ids = id_rows(decoder.ids)[i];
            fields.push_back(row_fields(model, text, *rows[i], place,
                                        model.encoder_decoder ? id_rows(source.ids)[i].get<std::vector<int64_t>>()
                                                              : std::vector<int64_t>{},
                                        ids.get<std::vector<int64_t>>(), logits, trace, calls,
                                        prefix_lm ? prefixes[i] : 0, arrays));
        }
        result = fields[0];
        result["second"] = fields[1];
        result["forward_inputs"] = forward_inputs;
    }
    result["page"] = explore_data(model, run, decoding, model_name, first.shown, first.target_given, arrays);
    return result;
}

}  // namespace

json live_run(Model& model, const json& request, const std::string& model_name, FloatArrays* arrays) {
    if (!request.is_object()) bad_field("(the request)", "a JSON object", request);
    refuse_unknown_keys(request, "",
                        {"text", "ids", "target", "target_ids", "unk", "second", "pad_side", "decode", "mask_overrides",
                         "ablate", "lens", "patch", "patch_cell", "page"});
    bool unk = false;
    if (request.contains("unk")) {
        if (!request.at("unk").is_boolean()) bad_field("unk", "true or false", request.at("unk"));
        unk = request.at("unk").get<bool>();
    }
    bool page_pass = true;
    if (request.contains("page")) {
        if (!request.at("page").is_boolean()) bad_field("page", "true or false", request.at("page"));
        page_pass = request.at("page").get<bool>();
    }
    const ModelText text(model);
    Row first = parse_row(request, "", model, text, unk);
    std::optional<Row> second;
    if (request.contains("second")) {
        const json& object = request.at("second");
        if (!object.is_object()) bad_field("second", "an object", object);
        refuse_unknown_keys(object, "second", {"text", "ids", "target", "target_ids"});
        second = parse_row(object, "second.", model, text, unk);
    }
    bool left = false;
    if (request.contains("pad_side")) {
        const json& side = request.at("pad_side");
        if (!side.is_string() || (side.get<std::string>() != "right" && side.get<std::string>() != "left"))
            bad_field("pad_side", "\"right\" or \"left\"", side);
        left = side.get<std::string>() == "left";
    }
    const DecodeSettings settings = parse_decode(request);
    std::optional<LensRequest> lens;
    if (request.contains("lens")) lens = parse_lens(request.at("lens"), model, text);
    std::optional<PatchRequest> patch, cell;
    if (request.contains("patch")) patch = parse_patch(request.at("patch"), "patch", model, text, unk);
    if (request.contains("patch_cell")) cell = parse_patch(request.at("patch_cell"), "patch_cell", model, text, unk);
    // Both rows' decodings and passes are the intervened model's; the model is as it was after.
    const Interventions interventions = parse_interventions(request, "request");
    // A cell names one sequence's query and key positions; in the padded batch
    // of two rows the shorter row's tokens sit at other slots (left padding)
    // or beside padding keys an allowed cell would open (right padding).
    if (second && !interventions.mask_overrides.empty())
        fail("request: mask_overrides are cells of one input's own positions; give them without \"second\" "
             "(a padded batch moves the second row's tokens to other slots); ablate works with both rows");
    const AppliedInterventions applied(model, interventions);

    // The page pass, unless "page": false (the Patch and Lens views read only their keys).
    json result = page_pass ? page_pass_of(model, text, first, second, left, settings, model_name, arrays) : json::object();

    // The study keys, on row 0 and the intervened model like every pass above.
    // Their target is the CLI's, whatever "decode" asks: the given one, or none
    // (then `tinyformer lens` reads the greedy output, or a decoder-only model
    // without <eos> its input alone; `tinyformer patch` the clean greedy output,
    // or a decoder-only model's next token).
    const std::optional<std::vector<int64_t>> given_target =
        first.target_given ? first.target : std::optional<std::vector<int64_t>>{};
    if (lens) {
        LensOptions options;
        options.top = lens->top;
        options.target = given_target;
        options.attribute = lens->attribute;
        result["lens"] = lens_report_json(model_name, logit_lens(model, first.tokens, options));
    }
    if (patch)
        result["patch"] = patch_report_json(model, model_name,
                                            activation_patching(model, first.tokens, patch->corrupted, given_target, patch->what));
    if (cell) {
        const PatchExperiment experiment = prepare_patching(model, first.tokens, cell->corrupted, given_target, cell->what);
        const PatchRow& row = patch_row_named(experiment, cell->row);
        const Tensor logits = patch_cell(model, experiment, row, cell->position);
        result["patch_cell"] = patch_cell_json(model, experiment, row, cell->position, logits, 5);
    }
    return result;
}

}  // namespace tinyformer
