// Tests of `tinyformer trace` (docs/FORMAT.md section 3), without PyTorch:
//   - names, order and shapes are the table's, on the four toy models (text
//     input) and on padded `--inputs` batches of data/reference/;
//   - the values are `forward`'s: logits and per-head weights equal those of
//     run_forward / `tinyformer forward --attention`;
//   - the names mean what the table says: scores = q_h k_h^T / sqrt(Dk),
//     weights = softmax of the allowed scores (rows sum to 1, masked cells
//     exactly 0), z = weights v_h, padded rows exactly 0; the mask is the
//     causal / prefix-LM / padding rule written out here;
//   - compare_traces (tests/trace_compare.h, the rule of tools/python/compare_trace.py)
//     finds an injected difference at the right name, the first in forward
//     order, and skips padded positions.
// tests/python/test_trace.py (make parity) compares the traces with PyTorch's.

#include "models/study/forward.h"
#include "models/text.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"
#include "tests/trace_compare.h"
#include "models/study/trace.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace tinyformer;
using namespace test_helpers;

namespace {

const std::string kModels = "data/models/";
const std::string kReference = "data/reference/";

struct Named {
    std::string name;
    Shape shape;
};

// The table of docs/FORMAT.md section 3, in forward order, for a pass with
// batch B, source length S (encoder_decoder) and T decoder / stack positions.
std::vector<Named> table(const ModelConfig& c, int64_t B, int64_t S, int64_t T) {
    const int64_t D = c.d_model, H = c.nhead, F = c.dim_feedforward;
    std::vector<Named> names;
    auto attention = [&](const std::string& p, int64_t L, int64_t K) {
        names.push_back({p + ".q", {B, L, D}});
        names.push_back({p + ".k", {B, K, D}});
        names.push_back({p + ".v", {B, K, D}});
        names.push_back({p + ".scores", {B, H, L, K}});
        names.push_back({p + ".mask", {B, L, K}});
        names.push_back({p + ".weights", {B, H, L, K}});
        names.push_back({p + ".z", {B, L, D}});
        names.push_back({p + ".output", {B, L, D}});
    };
    auto block = [&](const std::string& p, int64_t L, int64_t cross) {
        names.push_back({p + ".input", {B, L, D}});
        attention(p + ".self_attn", L, L);
        if (cross > 0) attention(p + ".cross_attn", L, cross);
        names.push_back({p + ".ffn.hidden", {B, L, F}});
        names.push_back({p + ".output", {B, L, D}});
    };
    if (c.arch == Architecture::EncoderDecoder) {
        names.push_back({"src_embed.output", {B, S, D}});
        for (int64_t i = 0; i < c.num_encoder_layers; ++i) block("encoder." + std::to_string(i), S, 0);
        names.push_back({"encoder.norm.output", {B, S, D}});
        names.push_back({"tgt_embed.output", {B, T, D}});
        for (int64_t i = 0; i < c.num_decoder_layers; ++i) block("decoder." + std::to_string(i), T, S);
        names.push_back({"decoder.norm.output", {B, T, D}});
        names.push_back({"logits", {B, T, c.tgt_vocab_size}});
    } else {
        names.push_back({"embed.output", {B, T, D}});
        for (int64_t i = 0; i < c.num_layers; ++i) block("layers." + std::to_string(i), T, 0);
        if (c.final_norm) names.push_back({"layers.norm.output", {B, T, D}});
        names.push_back({"logits", {B, T, c.vocab_size}});
    }
    return names;
}

void check_table(const TraceFile& trace, const std::vector<Named>& expected) {
    std::vector<std::string> names;
    for (const Named& n : expected) names.push_back(n.name);
    CHECK(trace.names == names);
    CHECK(trace.tensors.size() == expected.size());
    for (const Named& n : expected) {
        INFO(n.name);
        REQUIRE(trace.tensors.count(n.name) == 1);
        const TraceTensor& t = trace.at(n.name);
        CHECK(t.shape == n.shape);
        CHECK(t.mask == n.name.ends_with(".mask"));
        for (float v : t.values) REQUIRE(std::isfinite(v));
    }
}

std::vector<int64_t> ids_of(const TraceFile& trace, const std::string& key) {
    return nlohmann::json::parse(trace.metadata.at(key)).get<std::vector<int64_t>>();
}

std::string id_list(const std::vector<int64_t>& ids) {
    std::string text;
    for (int64_t id : ids) text.append(text.empty() ? "" : ",").append(std::to_string(id));
    return text;
}

TraceFile trace_cli(const std::vector<std::string>& args) {
    const CliRun run = run_tinyformer(args);
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == "--output") return read_trace(args[i + 1]);
    FAIL("test setup: no --output");
    return {};
}

// Which keys query l of batch row b may attend in an attention call, by hand.
using Rule = std::function<bool(int64_t b, int64_t l, int64_t s)>;

// The padding flags [B, n] of an inputs file (all false when absent).
std::vector<uint8_t> flags(const SafetensorsFile& inputs, const std::string& name, int64_t B, int64_t n) {
    if (!inputs.contains(name)) return std::vector<uint8_t>(static_cast<size_t>(B * n), 0);
    return inputs.read_bool(name).values;
}

// What a pass was run on: batch, lengths, padding and prefix lengths.
struct Pass {
    int64_t B = 1, S = 0, T = 0;
    std::vector<uint8_t> source_padding, target_padding;  // [B,S], [B,T]; target = the single stack's
    std::vector<int64_t> prefix;                         // prefix_lm: [B]
    bool src_pad(int64_t b, int64_t s) const { return source_padding[static_cast<size_t>(b * S + s)] != 0; }
    bool tgt_pad(int64_t b, int64_t t) const { return target_padding[static_cast<size_t>(b * T + t)] != 0; }
};

Pass pass_of_inputs(const Model& model, const SafetensorsFile& inputs) {
    Pass p;
    if (model.encoder_decoder) {
        const IntTensor src = inputs.read_int("src_ids"), tgt = inputs.read_int("tgt_ids");
        p.B = src.shape[0], p.S = src.shape[1], p.T = tgt.shape[1];
        p.source_padding = flags(inputs, "src_key_padding_mask", p.B, p.S);
        p.target_padding = flags(inputs, "tgt_key_padding_mask", p.B, p.T);
    } else {
        const IntTensor ids = inputs.read_int("ids");
        p.B = ids.shape[0], p.T = ids.shape[1];
        p.target_padding = flags(inputs, "key_padding_mask", p.B, p.T);
        if (inputs.contains("prefix_len")) p.prefix = inputs.read_int("prefix_len").values;
    }
    return p;
}

Pass pass_of_example(const Model& model, const TraceFile& trace) {
    Pass p;
    const std::vector<int64_t> input = ids_of(trace, "input_ids"), decoder = ids_of(trace, "decoder_ids");
    p.S = model.encoder_decoder ? static_cast<int64_t>(input.size()) : 0;
    p.T = static_cast<int64_t>(decoder.size());
    p.source_padding.assign(static_cast<size_t>(p.S), 0);
    p.target_padding.assign(static_cast<size_t>(p.T), 0);
    if (model.config.attention == SelfAttentionKind::PrefixLm && !model.encoder_decoder)
        p.prefix = {static_cast<int64_t>(input.size())};
    return p;
}

// The mask rule of attention `prefix` ("decoder.1.cross_attn"), written out.
Rule rule_for(const Model& model, const Pass& p, const std::string& prefix) {
    if (prefix.starts_with("encoder.")) return [&p](int64_t b, int64_t, int64_t s) { return !p.src_pad(b, s); };
    if (prefix.ends_with("cross_attn")) return [&p](int64_t b, int64_t, int64_t s) { return !p.src_pad(b, s); };
    if (prefix.starts_with("decoder."))
        return [&p](int64_t b, int64_t l, int64_t s) { return s <= l && !p.tgt_pad(b, s); };
    switch (model.config.attention) {
        case SelfAttentionKind::Causal:
            return [&p](int64_t b, int64_t l, int64_t s) { return s <= l && !p.tgt_pad(b, s); };
        case SelfAttentionKind::PrefixLm:
            return [&p](int64_t b, int64_t l, int64_t s) {
                return (s < p.prefix[static_cast<size_t>(b)] || s <= l) && !p.tgt_pad(b, s);
            };
        case SelfAttentionKind::Bidirectional: break;
    }
    return [&p](int64_t b, int64_t, int64_t s) { return !p.tgt_pad(b, s); };
}

// Every attention call of a trace: the mask is the rule; scores are
// q_h k_h^T / sqrt(Dk) and finite; weights are the softmax of the allowed
// scores (rows sum to 1, masked cells exactly 0) and exactly 0 for padded
// queries, as z and output are; z = weights v_h.
void check_attention_calls(const Model& model, const TraceFile& trace, const Pass& p) {
    int64_t calls = 0;
    for (const std::string& name : trace.names) {
        if (!name.ends_with(".mask")) continue;
        ++calls;
        const std::string prefix = name.substr(0, name.size() - 5);
        INFO(prefix);
        const Rule allowed = rule_for(model, p, prefix);
        const bool encoder = prefix.starts_with("encoder.");
        const TraceTensor &mask = trace.at(name), &scores = trace.at(prefix + ".scores"),
                          &weights = trace.at(prefix + ".weights"), &q = trace.at(prefix + ".q"),
                          &k = trace.at(prefix + ".k"), &v = trace.at(prefix + ".v"), &z = trace.at(prefix + ".z"),
                          &output = trace.at(prefix + ".output");
        const int64_t B = scores.shape[0], H = scores.shape[1], L = scores.shape[2], S = scores.shape[3];
        const int64_t D = q.shape[2], Dk = D / H;
        auto at = [](const TraceTensor& t, int64_t i) { return static_cast<double>(t.values[static_cast<size_t>(i)]); };
        double worst_scores = 0, worst_softmax = 0, worst_z = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t l = 0; l < L; ++l) {
                const bool padded_query = encoder ? p.src_pad(b, l) : p.tgt_pad(b, l);
                for (int64_t s = 0; s < S; ++s)
                    REQUIRE(mask.values[static_cast<size_t>((b * L + l) * S + s)] == (allowed(b, l, s) ? 1.0f : 0.0f));
                for (int64_t h = 0; h < H; ++h) {
                    const int64_t row = ((b * H + h) * L + l) * S;
                    double top = -INFINITY, sum = 0, weight_sum = 0;
                    for (int64_t s = 0; s < S; ++s) {
                        double dot = 0;
                        for (int64_t j = 0; j < Dk; ++j) dot += at(q, (b * L + l) * D + h * Dk + j) * at(k, (b * S + s) * D + h * Dk + j);
                        worst_scores = std::max(worst_scores, std::fabs(dot / std::sqrt(double(Dk)) - at(scores, row + s)) /
                                                                  (1e-5 + 1e-5 * std::fabs(dot)));
                        if (allowed(b, l, s)) top = std::max(top, at(scores, row + s));
                    }
                    for (int64_t s = 0; s < S; ++s)
                        if (allowed(b, l, s)) sum += std::exp(at(scores, row + s) - top);
                    for (int64_t s = 0; s < S; ++s) {
                        const double w = at(weights, row + s);
                        weight_sum += w;
                        if (padded_query || !allowed(b, l, s)) {
                            REQUIRE(w == 0.0);  // exactly 0, not small
                            continue;
                        }
                        worst_softmax = std::max(worst_softmax, std::fabs(w - std::exp(at(scores, row + s) - top) / sum));
                    }
                    if (!padded_query) CHECK(weight_sum == doctest::Approx(1.0).epsilon(1e-5));
                    for (int64_t j = 0; j < Dk; ++j) {
                        double mix = 0;
                        for (int64_t s = 0; s < S; ++s) mix += at(weights, row + s) * at(v, (b * S + s) * D + h * Dk + j);
                        const double zz = at(z, (b * L + l) * D + h * Dk + j);
                        if (padded_query) REQUIRE(zz == 0.0);
                        worst_z = std::max(worst_z, std::fabs(zz - mix));
                    }
                }
                if (padded_query)
                    for (int64_t j = 0; j < D; ++j) REQUIRE(at(output, (b * L + l) * D + j) == 0.0);
            }
        CHECK(worst_scores <= 1.0);
        CHECK(worst_softmax <= 1e-6);
        CHECK(worst_z <= 1e-5);
    }
    CHECK(calls > 0);
}

// Padded rows of the outputs FORMAT defines as 0: logits, encoder.norm.output.
void check_padded_rows_zero(const Model& model, const TraceFile& trace, const Pass& p) {
    auto rows_zero = [&](const std::string& name, bool source) {
        const TraceTensor& t = trace.at(name);
        const int64_t n = t.shape[1], width = t.shape[2];
        for (int64_t b = 0; b < t.shape[0]; ++b)
            for (int64_t i = 0; i < n; ++i)
                if (source ? p.src_pad(b, i) : p.tgt_pad(b, i))
                    for (int64_t j = 0; j < width; ++j) REQUIRE(t.values[static_cast<size_t>((b * n + i) * width + j)] == 0.0f);
    };
    rows_zero("logits", false);
    if (model.encoder_decoder) rows_zero("encoder.norm.output", true);
}

// The trace's logits and weights against run_forward's outputs: as `forward
// --attention` (the same materialized pass) logits within 1e-6 and weights
// exactly; `forward` without --attention takes the streaming attention path,
// whose logits agree within FORMAT's 1e-4 + 1e-4|b| (not bit for bit).
void check_against_forward(const Model& model, const TraceFile& trace, const SafetensorsFile& inputs) {
    const std::map<std::string, Tensor> plain = run_forward(model, inputs, false);
    const std::map<std::string, Tensor> with_weights = run_forward(model, inputs, true);
    const TraceTensor& logits = trace.at("logits");
    for (const auto* outputs : {&plain, &with_weights}) {
        const Tensor& l = outputs->at("logits");
        REQUIRE(l.shape() == logits.shape);
        double worst = 0, worst_abs = 0;
        for (int64_t i = 0; i < l.numel(); ++i) {
            const double d = std::fabs(l.data()[i] - logits.values[static_cast<size_t>(i)]);
            worst_abs = std::max(worst_abs, d);
            worst = std::max(worst, d / (1e-4 + 1e-4 * std::fabs(logits.values[static_cast<size_t>(i)])));
        }
        if (outputs == &with_weights) {
            CHECK(worst_abs <= 1e-6);  // the same materialized pass: equal (measured: exactly)
        } else {
            INFO("forward (streaming attention): max |a-b| ", worst_abs);
            CHECK(worst <= 1.0);  // another attention path: FORMAT's tolerance (measured: up to 6.7e-5 on logits ~10)
        }
    }
    int64_t weights = 0;
    for (const std::string& name : trace.names) {
        if (!name.ends_with(".weights")) continue;
        INFO(name);  // forward's output names the weights as the trace does
        REQUIRE(with_weights.count(name) == 1);
        const Tensor& w = with_weights.at(name);
        REQUIRE(w.shape() == trace.at(name).shape);
        CHECK(std::equal(w.data(), w.data() + w.numel(), trace.at(name).values.begin()));
        ++weights;
    }
    CHECK(weights + 1 == static_cast<int64_t>(with_weights.size()));
}

// The forward inputs of a one-example trace (its input_ids / decoder_ids).
std::string inputs_of_example(const TempDirectory& dir, const Model& model, const TraceFile& trace) {
    const std::vector<int64_t> input = ids_of(trace, "input_ids"), decoder = ids_of(trace, "decoder_ids");
    const auto n = [](const std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); };
    std::vector<TensorToWrite> tensors;
    if (model.encoder_decoder) {
        tensors = {ids("src_ids", {1, n(input)}, input), ids("tgt_ids", {1, n(decoder)}, decoder)};
    } else {
        tensors = {ids("ids", {1, n(decoder)}, decoder)};
        if (model.config.attention == SelfAttentionKind::PrefixLm) tensors.push_back(ids("prefix_len", {1}, {n(input)}));
    }
    const std::string path = dir.file("example.inputs.safetensors");
    write_safetensors(path, tensors);
    return path;
}

struct Toy {
    const char* model;
    const char* text;
    const char* output;  // the greedy output the decoder reads after the input
};
const Toy kToys[] = {{"reverse", "hello", "olleh"},
                     {"sort", "31415926", "11234569"},
                     {"reverse-prefixlm", "abc", "cba"},
                     {"reverse-causal", "abc", "cba"}};

const char* kPadded[] = {"ed_pre_gelu_learned_pad", "do_pre_relu_none_leftpad", "do_prefix_post_relu_learned_pad",
                         "eo_pre_gelu_sin_pad"};

}  // namespace

TEST_CASE("trace: the table's names, order and shapes on the toy models; values are forward's") {
    for (const Toy& toy : kToys) {
        const std::string model_name = toy.model;
        CAPTURE(model_name);
        TempDirectory dir;
        const std::string path = kModels + toy.model + ".safetensors";
        const Model model = Model::load(path);
        const TraceFile trace = trace_cli({"trace", path, toy.text, "--output", dir.file("trace.safetensors")});
        const std::vector<int64_t> input = ids_of(trace, "input_ids"), decoder = ids_of(trace, "decoder_ids");
        const ModelText text(model);
        std::vector<int64_t> user = text.encode_input(toy.text);
        if (model.encoder_decoder) {
            CHECK(input == user);
            REQUIRE(decoder.size() >= 1);
            CHECK(decoder[0] == model.config.bos_id);  // [<bos>] + target
            CHECK(text.decode_output({decoder.begin() + 1, decoder.end()}) == toy.output);
        } else {  // <bos> + prompt + the prompt suffix "="; then the target
            std::vector<int64_t> framed = {model.config.bos_id};
            framed.insert(framed.end(), user.begin(), user.end());
            for (int64_t id : text.encode_input(model.text.prompt_suffix)) framed.push_back(id);
            CHECK(input == framed);
            REQUIRE(decoder.size() > input.size());
            CHECK(std::equal(input.begin(), input.end(), decoder.begin()));
            CHECK(text.decode_output({decoder.begin() + static_cast<long>(input.size()), decoder.end()}) == toy.output);
        }
        const Pass pass = pass_of_example(model, trace);
        check_table(trace, table(model.config, 1, pass.S, pass.T));
        check_attention_calls(model, trace, pass);
        const SafetensorsFile inputs = SafetensorsFile::read(inputs_of_example(dir, model, trace));
        check_against_forward(model, trace, inputs);
        // --ids / --target-ids give the same pass as TEXT with its greedy target
        const std::vector<int64_t> target(decoder.begin() + (model.encoder_decoder ? 1 : static_cast<long>(input.size())),
                                          decoder.end());
        const TraceFile again = trace_cli({"trace", path, "--ids", id_list(user), "--target-ids", id_list(target),
                                           "--output", dir.file("again.safetensors")});
        CHECK(again.metadata.at("decoder_ids") == trace.metadata.at("decoder_ids"));
        const TraceComparison same = compare_traces(again, trace, 0.0, 1e-30);
        CHECK_MESSAGE(!same.first, (same.first ? same.first->line() : std::string()));
        CHECK(same.compared == static_cast<int64_t>(trace.names.size()));
    }
}

TEST_CASE("trace --inputs: padded batches (right, left, prefix-LM, encoder-only) follow the table and FORMAT's zeros") {
    for (const char* name : kPadded) {
        const std::string case_name = name;
        CAPTURE(case_name);
        TempDirectory dir;
        const std::string model_path = kReference + name + ".model.safetensors";
        const std::string inputs_path = kReference + name + ".inputs.safetensors";
        const Model model = Model::load(model_path);
        const SafetensorsFile inputs = SafetensorsFile::read(inputs_path);
        const TraceFile trace = trace_cli({"trace", model_path, "--inputs", inputs_path, "--output", dir.file("t.safetensors")});
        const Pass pass = pass_of_inputs(model, inputs);
        int64_t padded = 0;
        for (uint8_t f : pass.target_padding) padded += f;
        for (uint8_t f : pass.source_padding) padded += f;
        REQUIRE(padded > 0);  // the case really has padding
        check_table(trace, table(model.config, pass.B, pass.S, pass.T));
        check_attention_calls(model, trace, pass);
        check_padded_rows_zero(model, trace, pass);
        check_against_forward(model, trace, inputs);
        if (std::string(name) == "ed_pre_gelu_learned_pad") {  // and the CLI's forward --attention, as a user runs it
            const std::string out = dir.file("forward.safetensors");
            REQUIRE(run_tinyformer({"forward", model_path, "--inputs", inputs_path, "--output", out, "--attention"}).status == 0);
            const SafetensorsFile forward = SafetensorsFile::read(out);
            for (const std::string& n : trace.names)
                if (n.ends_with(".weights") || n == "logits") {
                    const Tensor w = forward.read_float(n);  // the trace's own name
                    CHECK(max_abs_difference(w, Tensor(trace.at(n).shape, trace.at(n).values)) <= 1e-6);
                }
        }
    }
}

TEST_CASE("compare_traces finds an injected difference at its name, the first in forward order") {
    TempDirectory dir;
    const std::string path = kModels + std::string("reverse.safetensors");
    const TraceFile base = trace_cli({"trace", path, "hello", "--output", dir.file("base.safetensors")});
    SUBCASE("a trace agrees with itself") {
        const TraceComparison c = compare_traces(base, base);
        CHECK(!c.first);
        CHECK(c.compared == static_cast<int64_t>(base.names.size()));
    }
    SUBCASE("two changed tensors: the earlier one is reported, with the worst |a-b| and its index") {
        TraceFile changed = base;
        const Shape& shape = changed.at("decoder.1.cross_attn.scores").shape;  // [1, 4, T, 5]
        const int64_t at = ((0 * shape[1] + 2) * shape[2] + 3) * shape[3] + 1;
        changed.tensors["decoder.1.cross_attn.scores"].values[static_cast<size_t>(at)] += 0.05f;
        changed.tensors["decoder.1.cross_attn.scores"].values[0] += 0.01f;
        changed.tensors["logits"].values[7] += 1.0f;
        const TraceComparison c = compare_traces(changed, base);
        REQUIRE(c.first);
        CHECK(c.first->name == "decoder.1.cross_attn.scores");
        CHECK(c.first->index == std::vector<int64_t>{0, 2, 3, 1});
        CHECK(c.first->max_abs == doctest::Approx(0.05).epsilon(1e-3));
        CHECK(c.first->line() == "first divergence: decoder.1.cross_attn.scores (max 5.0e-2 at [0,2,3,1])");
        CHECK(c.worst_ratio.count("logits") == 0);  // stopped at the first
        CHECK(c.worst_ratio.at("decoder.1.cross_attn.q") == 0.0);
    }
    SUBCASE("a difference within the tolerance is no divergence") {
        TraceFile changed = base;
        changed.tensors["encoder.0.ffn.hidden"].values[3] += 1e-6f;
        const TraceComparison c = compare_traces(changed, base);
        CHECK(!c.first);
        CHECK(c.worst_ratio.at("encoder.0.ffn.hidden") > 0.0);
    }
    SUBCASE("a mask cell, a missing name, a shape") {
        TraceFile changed = base;
        changed.tensors["decoder.0.self_attn.mask"].values[1] = 1.0f;  // query 0 may see key 1: not causal
        TraceComparison c = compare_traces(changed, base);
        REQUIRE(c.first);
        CHECK(c.first->name == "decoder.0.self_attn.mask");
        CHECK(c.first->reason == "mask");
        CHECK(c.first->index == std::vector<int64_t>{0, 0, 1});
        TraceFile fewer = base;
        fewer.tensors.erase("encoder.1.self_attn.z");
        c = compare_traces(base, fewer);
        REQUIRE(c.first);
        CHECK(c.first->name == "encoder.1.self_attn.z");
        CHECK(c.first->reason == "missing");
        std::erase(fewer.names, "encoder.1.self_attn.z");
        c = compare_traces(fewer, base);  // B has a name A lacks: reported, no value differs
        CHECK(c.only_in_b == std::vector<std::string>{"encoder.1.self_attn.z"});
        TraceFile reshaped = base;
        reshaped.tensors["encoder.0.self_attn.v"].shape = {1, 1, 5 * 64};
        c = compare_traces(reshaped, base);
        REQUIRE(c.first);
        CHECK(c.first->reason == "shape");
    }
    SUBCASE("one weight of the model file perturbed: the first activation that reads it diverges") {
        const std::vector<int64_t> input = ids_of(base, "input_ids"), decoder = ids_of(base, "decoder_ids");
        const std::string target = id_list({decoder.begin() + 1, decoder.end()});
        const int64_t D = 64;
        struct Case {
            const char* tensor;
            int64_t index;
            const char* first;
        };
        for (const Case& k : {Case{"transformer.decoder.layers.1.multihead_attn.in_proj_weight", (D + 3) * D + 5,
                                   "decoder.1.cross_attn.k"},
                              Case{"transformer.encoder.layers.0.linear1.bias", 17, "encoder.0.ffn.hidden"},
                              Case{"transformer.encoder.norm.weight", 2, "encoder.norm.output"},
                              Case{"transformer.decoder.layers.0.self_attn.out_proj.weight", 70, "decoder.0.self_attn.output"}}) {
            const std::string tensor_name = k.tensor;
            CAPTURE(tensor_name);
            const std::string perturbed = edited(dir, "perturbed.safetensors", path, [&](Contents& c) {
                TensorToWrite& t = c.tensor(k.tensor);
                float value;
                std::memcpy(&value, t.bytes.data() + 4 * k.index, 4);
                set_float(t, static_cast<size_t>(k.index), value + 0.5f);
            });
            const TraceFile other = trace_cli({"trace", perturbed, "--ids", id_list(input), "--target-ids", target,
                                               "--output", dir.file("perturbed.trace.safetensors")});
            const TraceComparison c = compare_traces(other, base);
            REQUIRE(c.first);
            CHECK(c.first->name == k.first);
            CHECK(c.first->reason == "values");
        }
    }
}

TEST_CASE("compare_traces skips padded positions, and only those") {
    TempDirectory dir;
    const std::string model_path = kReference + std::string("do_pre_relu_none_leftpad.model.safetensors");
    const std::string inputs_path = kReference + std::string("do_pre_relu_none_leftpad.inputs.safetensors");
    const Model model = Model::load(model_path);
    const SafetensorsFile inputs = SafetensorsFile::read(inputs_path);
    const TraceFile base = trace_cli({"trace", model_path, "--inputs", inputs_path, "--output", dir.file("t.safetensors")});
    const Pass p = pass_of_inputs(model, inputs);
    int64_t pb = -1, pt = -1, rb = -1, rt = -1;  // a padded and a real position
    for (int64_t b = 0; b < p.B; ++b)
        for (int64_t t = 0; t < p.T; ++t) {
            if (p.tgt_pad(b, t) && pb < 0) pb = b, pt = t;
            if (!p.tgt_pad(b, t) && rb < 0 && b > 0) rb = b, rt = t;
        }
    REQUIRE(pb >= 0);
    REQUIRE(rb >= 0);
    const TraceTensor& logits = base.at("logits");
    const int64_t V = logits.shape[2], T = logits.shape[1];
    const TraceTensor& k = base.at("layers.1.self_attn.k");
    const int64_t D = k.shape[2];
    TraceFile changed = base;
    changed.tensors["logits"].values[static_cast<size_t>((pb * T + pt) * V + 2)] += 5.0f;   // a padded query's logits
    changed.tensors["layers.1.self_attn.k"].values[static_cast<size_t>((pb * T + pt) * D)] += 5.0f;  // a padded key
    CHECK(!compare_traces(changed, base).first);
    changed.tensors["logits"].values[static_cast<size_t>((rb * T + rt) * V + 2)] += 5.0f;   // a real one
    const TraceComparison c = compare_traces(changed, base);
    REQUIRE(c.first);
    CHECK(c.first->name == "logits");
    CHECK(c.first->index == std::vector<int64_t>{rb, rt, 2});
}
