#include "tools/explore/explore_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace tinyformer {

using json = nlohmann::json;

namespace {

// m * 10^e as the nearest double when m < 2^53 and |e| <= 22: then m and
// 10^|e| are exact doubles and one IEEE multiply or divide rounds the product
// correctly (Clinger's fast path). Else nothing.
std::optional<double> fast_decimal(uint64_t m, int e) {
    static constexpr double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (m >= (uint64_t{1} << 53) || e < -22 || e > 22) return std::nullopt;
    const double digits = static_cast<double>(m);
    return e >= 0 ? digits * kPowers[e] : digits / kPowers[-e];
}

}  // namespace

// A float as the shortest decimal that reads back as the same float32, so
// that the JSON holds exactly the engine's number and stays small:
//   1. the digits m and power e (value = m * 10^e): nlohmann's to_chars for
//      a float (Grisu2 over float32's own neighbours), which strtof reads
//      back as `value`;
//   2. Grisu2 is one digit long for a few floats (235000990 for 2.35001e+08),
//      so digits are rounded off while the shorter number still reads back
//      as `value` the way the page's JavaScript reads it (the nearest
//      double, then the nearest float: Math.fround);
//   3. the double nearest to m * 10^e (fast_decimal, else strtod), which
//      nlohmann then writes as those digits.
// printf("%.9g") and strtod give the same numbers, but in the page's
// WebAssembly they run on 128-bit software long doubles: they took 70% of
// a live recompute.
double exact(float value) {
    if (!std::isfinite(value)) return static_cast<double>(value);
    char text[64] = {};
    char* end = nlohmann::detail::to_chars(text, text + sizeof text - 1, value);
    *end = '\0';
    uint64_t m = 0;
    int e = 0;
    bool fraction = false;
    const char* c = text + (std::signbit(value) ? 1 : 0);  // after the '-'
    for (; *c != '\0' && *c != 'e'; ++c) {
        if (*c == '.') {
            fraction = true;
        } else {
            m = m * 10 + static_cast<uint64_t>(*c - '0');
            if (fraction) --e;
        }
    }
    if (*c == 'e') e += std::atoi(c + 1);
    std::optional<double> magnitude = fast_decimal(m, e);
    if (!magnitude) return std::strtod(text, nullptr);
    while (m >= 10) {
        const std::optional<double> shorter = fast_decimal((m + 5) / 10, e + 1);
        if (!shorter || static_cast<float>(*shorter) != std::fabs(value)) break;
        m = (m + 5) / 10, ++e, magnitude = shorter;
    }
    return std::signbit(value) ? -*magnitude : *magnitude;
}

json FloatArrays::add(const float* data, const std::vector<int64_t>& shape) {
    int64_t size = 1;
    for (int64_t n : shape) size *= n;
    arrays.emplace_back(data, data + size);
    const int64_t offset = count;
    count += size;
    return {{"f32", offset}, {"shape", shape}};
}

std::vector<float> FloatArrays::joined() const {
    std::vector<float> out;
    out.reserve(static_cast<size_t>(count));
    for (const std::vector<float>& array : arrays) out.insert(out.end(), array.begin(), array.end());
    return out;
}

// Matrix h of a [..., R, C] tensor as a JSON array of R arrays of C numbers.
json matrix(const Tensor& t, int64_t h, FloatArrays* arrays) {
    const int64_t rows = t.dim(-2), cols = t.dim(-1);
    const float* base = t.data() + h * rows * cols;
    if (arrays) return arrays->add(base, {rows, cols});
    json out = json::array();
    for (int64_t r = 0; r < rows; ++r) {
        json row = json::array();
        for (int64_t c = 0; c < cols; ++c) row.push_back(exact(base[r * cols + c]));
        out.push_back(std::move(row));
    }
    return out;
}

json per_head(const Tensor& t, FloatArrays* arrays, int64_t b) {  // [B, H, L, S] -> row b's [H][L][S]
    const int64_t H = t.dim(1), L = t.dim(2), S = t.dim(3);
    if (arrays) return arrays->add(t.data() + b * H * L * S, {H, L, S});
    json out = json::array();
    for (int64_t h = 0; h < H; ++h) out.push_back(matrix(t, b * H + h));
    return out;
}

namespace {

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

}  // namespace

const char* stop_name(StopReason why) {
    switch (why) {
        case StopReason::Eos: return "eos";
        case StopReason::MaxNewTokens: return "max_new_tokens";
        case StopReason::MaxLen: return "max_len";
    }
    return "eos";
}

json attention_json(const AttentionMap& map, const Trace& trace, int64_t heads, FloatArrays* arrays) {
    const std::string& name = map.name;
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
            {"q", matrix(trace.tensor(name + ".q"), 0, arrays)},
            {"k", matrix(trace.tensor(name + ".k"), 0, arrays)},
            {"v", matrix(trace.tensor(name + ".v"), 0, arrays)},
            {"scores", per_head(trace.tensor(name + ".scores"), arrays)},
            {"weights", per_head(trace.tensor(name + ".weights"), arrays)},
            {"z", matrix(trace.tensor(name + ".z"), 0, arrays)}};
    // Only when the pass recorded them: the mask's additive term (ALiBi), per
    // head, and q and k before rotation (rotary), docs/FORMAT.md section 4.
    if (trace.has(name + ".bias")) out["bias"] = per_head(trace.tensor(name + ".bias"), arrays);
    for (const char* unrotated : {"q_unrotated", "k_unrotated"})
        if (trace.has(name + "." + unrotated)) out[unrotated] = matrix(trace.tensor(name + "." + unrotated), 0, arrays);
    return out;
}

// Each step along the decoded (or given) path: the top-5 next tokens of the
// pass's logits at the position that predicts it, and the token taken.
json decoding_steps(const Model& model, const AttentionRun& run, const ModelText& text, const json& decoding) {
    json steps = json::array();
    if (run.pass.first_prediction < 0) return steps;
    std::vector<int64_t> chosen = run.target;
    // <eos> is a step only when it was chosen: a decoding cut by max_new_tokens
    // or max_len never chose it (its p there is whatever the model gave it).
    const bool eos_chosen = !decoding.contains("stop") || decoding["stop"].is_null() || decoding["stop"] == "eos";
    if (model.config.eos_id >= 0 && eos_chosen) chosen.push_back(model.config.eos_id);
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

// The page's "decoding" record; `target` becomes the decoded one. Beam search
// keeps every hypothesis for the page. A model without an eos_id generates
// up to the token limit, as in `run`.
json decode_target(const Model& model, const ModelText& text, const std::vector<int64_t>& input,
                   const DecodeSettings& generation, std::optional<std::vector<int64_t>>& target) {
    const int64_t beam = generation.beam;
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
                     {"stop", nullptr},
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
        decoding["stop"] = stop_name(generated.stops[0]);
    } else {
        const Generation generated = generation.sampling
                                         ? sample_decode(model, {input}, *generation.sampling, generation.options)
                                         : greedy_decode(model, {input}, generation.options);
        target = generated.tokens[0];
        decoding["stop"] = stop_name(generated.stops[0]);
    }
    return decoding;
}

json explore_data(const Model& model, const AttentionRun& run, const json& decoding, const std::string& model_name,
                  const std::string& shown, bool target_given, FloatArrays* arrays) {
    const ModelConfig& config = model.config;
    json attentions = json::array();
    for (const AttentionMap& map : run.maps) attentions.push_back(attention_json(map, run.trace, config.nhead, arrays));
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
             {{"name", model_name},
              {"arch", architecture_name(config.arch)},
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

}  // namespace tinyformer
