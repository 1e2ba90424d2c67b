// Tests of the live engine's request -> result (tools/explore/live.h): every
// bad field refused by name, and the result's numbers equal to independent
// paths on the same ids — the model's own passes (models/transformer.h),
// models/study/probe.h's score, models/decoding.h's sampler — bit for bit where
// the path is the same arithmetic.
#include <doctest/doctest.h>

#include "tests/helpers.h"
#include "tests/run_cli.h"

#include "models/decoding.h"
#include "models/study/interventions.h"
#include "models/study/probe.h"
#include "models/study/trace.h"
#include "tools/explore/explore_data.h"
#include "tools/explore/live.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace tinyformer;
using json = nlohmann::json;

namespace {

Model load(const std::string& name) { return Model::load("data/models/" + name + ".safetensors"); }

TokenIds row_of(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

// Every number of a [1, n, V] (or row b of [B, n, V]) tensor as exact() writes it. Exact by
// construction: each caller makes the live pass's own calls (a recorded, materialized pass on
// the same ids, batch and padding), so the same floats.
void check_rows_equal(const json& rows, const Tensor& t, int64_t b = 0) {
    const int64_t n = t.dim(-2), V = t.dim(-1);
    REQUIRE(rows.size() == static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        REQUIRE(rows[static_cast<size_t>(r)].size() == static_cast<size_t>(V));
        for (int64_t c = 0; c < V; ++c)
            if (rows[static_cast<size_t>(r)][static_cast<size_t>(c)].get<double>() != exact(t.data()[(b * n + r) * V + c]))
                FAIL_CHECK("row ", r, " column ", c, " differs");
    }
}

}  // namespace

TEST_CASE("live: each bad request is one Error naming its field") {
    Model model = load("reverse");
    const std::vector<std::pair<json, std::string>> cases = {
        {json::array({1}), "must be a JSON object"},
        {json::object(), "as \"text\" or as \"ids\", one of them"},
        {{{"text", "abc"}, {"ids", {1}}}, "not both"},
        {{{"text", 5}}, "\"text\" must be a string, got 5"},
        {{{"ids", "1,2"}}, "\"ids\" must be a non-empty array"},
        {{{"ids", json::array()}}, "\"ids\" must be a non-empty array"},
        {{{"ids", {1.5}}}, "\"ids\" must be an array of whole numbers"},
        {{{"ids", {1000}}}, "request: \"ids\": "},
        {{{"text", "ABC"}}, "request: \"text\": "},
        {{{"text", "abc"}, {"colour", 1}}, "unknown key \"colour\""},
        {{{"text", "abc"}, {"second", {{"text", "ab"}}}, {"mask_overrides", {{"encoder.0.self_attn", {{0, 1, 0}}}}}},
         "give them without \"second\""},
        {{{"text", "abc"}, {"target", "a"}, {"target_ids", {1}}}, "not both"},
        {{{"text", "abc"}, {"target_ids", {99999}}}, "request: \"target_ids\": "},
        {{{"text", "abc"}, {"unk", "yes"}}, "\"unk\" must be true or false"},
        {{{"text", "abc"}, {"pad_side", "up"}}, "\"pad_side\" must be \"right\" or \"left\""},
        {{{"text", "abc"}, {"second", "abc"}}, "\"second\" must be an object"},
        {{{"text", "abc"}, {"second", {{"text", "a"}, {"beam", 2}}}}, "unknown key \"second.beam\""},
        {{{"text", "abc"}, {"second", json::object()}}, "the second row as \"second.text\" or as \"second.ids\""},
        {{{"text", "abc"}, {"decode", 3}}, "\"decode\" must be an object"},
        {{{"text", "abc"}, {"decode", {{"mode", "fast"}}}}, "\"decode.mode\" must be \"greedy\", \"beam\" or \"sample\""},
        {{{"text", "abc"}, {"decode", {{"mode", "beam"}, {"beam", 1}}}}, "\"decode.beam\" must be a whole number in 2..64, got 1"},
        {{{"text", "abc"}, {"decode", {{"beam", 65}}}}, "\"decode.beam\" must be a whole number in 2..64, got 65"},
        {{{"text", "abc"}, {"decode", {{"temperature", 0}}}}, "\"decode.temperature\" must be a number > 0, got 0"},
        {{{"text", "abc"}, {"decode", {{"temperature", "hot"}}}}, "\"decode.temperature\" must be a finite number"},
        {{{"text", "abc"}, {"decode", {{"top_p", 1.5}}}}, "\"decode.top_p\" must be a number in (0, 1], got 1.5"},
        {{{"text", "abc"}, {"decode", {{"top_k", -1}}}}, "\"decode.top_k\" must be a whole number in 0.."},
        {{{"text", "abc"}, {"decode", {{"seed", 2.5}}}}, "\"decode.seed\" must be a whole number"},
        {{{"text", "abc"}, {"decode", {{"max_new_tokens", 0}}}}, "\"decode.max_new_tokens\" must be a whole number in 1..1048576, got 0"},
        {{{"text", "abc"}, {"decode", {{"steps", 3}}}}, "unknown key \"decode.steps\""},
    };
    for (const auto& [request, message] : cases) {
        CAPTURE(request.dump());
        CHECK_ERROR_CONTAINS(live_run(model, request, "reverse"), message.c_str());
    }
}

TEST_CASE("live: an encoder-decoder's logits and weights are the model's own pass on the same ids, bit for bit") {
    Model model = load("reverse");
    const json result = live_run(model, {{"text", "hello"}}, "reverse");
    CHECK(result["text"] == "olleh");  // the reverse model reverses
    const std::vector<int64_t> source = result["src_ids"].get<std::vector<int64_t>>();
    const std::vector<int64_t> target = result["tgt_ids"].get<std::vector<int64_t>>();
    CHECK(source.size() == 5);
    CHECK(target.size() == 6);  // <bos> + 5
    CHECK(target[0] == model.config.bos_id);
    CHECK(result["target_ids"].get<std::vector<int64_t>>() == std::vector<int64_t>(target.begin() + 1, target.end()));

    Trace trace(Trace::Detail::Weights);
    const Tensor memory = model.encoder_decoder->encode(row_of(source), Padding(), &trace);
    const Tensor logits = model.encoder_decoder->decode(row_of(target), memory, Padding(), Padding(), &trace);
    check_rows_equal(result["logits"], logits);
    CHECK(result["weights"].size() == 6);  // 2 encoder, 2 decoder self, 2 cross
    for (const char* call : {"encoder.0.self_attn", "encoder.1.self_attn", "decoder.0.self_attn", "decoder.1.cross_attn"}) {
        CAPTURE(call);
        const Tensor& weights = trace.tensor(std::string(call) + ".weights");  // [1, H, L, S]
        REQUIRE(result["weights"][call].size() == static_cast<size_t>(model.config.nhead));
        for (int64_t h = 0; h < model.config.nhead; ++h) CHECK(result["weights"][call][static_cast<size_t>(h)] == matrix(weights, h));
    }
    CHECK(result["forward_inputs"] == json({{"src_ids", {source}}, {"tgt_ids", {target}}}));

    // token_log_p: the target's 5 tokens and <eos>, summing to models/study/probe.h's score (its pass
    // records nothing, so it takes the streaming attention: the same within float rounding).
    REQUIRE(result["token_log_p"].size() == 6);
    const double probe_score =
        target_log_prob(model, probe_example(model, {source}, std::vector<int64_t>(target.begin() + 1, target.end())));
    CHECK(result["log_p"].get<double>() == doctest::Approx(probe_score).epsilon(1e-6).scale(1));
    CHECK(result["page"]["format"] == "tinyformer-explore/1");
    CHECK(result["page"]["model"]["name"] == "reverse");
    CHECK(result["page"]["decoding"]["mode"] == "greedy");
}

TEST_CASE("live: a given target is teacher-forced, and a sampled one is models/decoding.h's draw for that seed") {
    Model model = load("reverse");
    const json forced = live_run(model, {{"text", "abc"}, {"target", "abd"}}, "reverse");
    CHECK(forced["text"] == "abd");
    CHECK(forced["page"]["decoding"]["mode"] == "none");
    CHECK(forced["page"]["input"]["target_given"] == true);

    const json sampled = live_run(
        model, {{"text", "attention"}, {"decode", {{"mode", "sample"}, {"temperature", 3}, {"seed", 7}}}}, "reverse");
    Sampling sampling;
    sampling.temperature = 3;
    sampling.seed = 7;
    const std::vector<int64_t> input = model_input(model, ModelText(model).encode_input("attention"));
    // Exact by construction: live_run makes this same sample_decode call (one row, the same seed).
    CHECK(sampled["target_ids"].get<std::vector<int64_t>>() == sample_decode(model, {input}, sampling).tokens[0]);
    CHECK(sampled["page"]["decoding"]["mode"] == "sample");

    const json beam = live_run(model, {{"text", "attention"}, {"decode", {{"mode", "beam"}, {"beam", 3}}}}, "reverse");
    CHECK(beam["target_ids"].get<std::vector<int64_t>>() == beam_search(model, input, 3).tokens[0]);
    CHECK(beam["page"]["decoding"]["hypotheses"].size() >= 1);
}

TEST_CASE("live: a prefix-LM decoder's ids, prefix_len and logits are its forward pass") {
    Model model = load("reverse-prefixlm");
    const json result = live_run(model, {{"text", "abc"}}, "reverse-prefixlm");
    CHECK(result["text"] == "cba");
    const std::vector<int64_t> ids = result["ids"].get<std::vector<int64_t>>();
    CHECK(ids.size() == 8);            // <bos> a b c = c b a
    CHECK(result["prefix_len"] == 5);  // <bos> a b c =
    Trace trace(Trace::Detail::Weights);  // a recorded pass: the materialized attention, as the live one
    const Tensor logits = model.single_stack->forward(row_of(ids), Padding(), {5}, &trace);
    check_rows_equal(result["logits"], logits);
    CHECK(result["forward_inputs"]["prefix_len"] == json({5}));
    CHECK(result["token_log_p"].size() == 4);  // c b a <eos>
}

TEST_CASE("live: a second row is padded into one batch whose rows are the model's padded pass") {
    Model model = load("reverse");
    for (const char* side : {"right", "left"}) {
        CAPTURE(side);
        const json result = live_run(model, {{"text", "hello"}, {"second", {{"text", "ab"}}}, {"pad_side", side}}, "reverse");
        CHECK(result["text"] == "olleh");
        CHECK(result["second"]["text"] == "ba");
        const json& inputs = result["forward_inputs"];
        // The source "ab" is 2 of 5 positions, the target "<bos> b a" 3 of 6.
        const json source_mask = std::string(side) == "right" ? json({{0, 0, 0, 0, 0}, {0, 0, 1, 1, 1}})
                                                              : json({{0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}});
        CHECK(inputs["src_key_padding_mask"] == source_mask);
        const json target_mask = std::string(side) == "right" ? json({{0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 1, 1}})
                                                              : json({{0, 0, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0}});
        CHECK(inputs["tgt_key_padding_mask"] == target_mask);

        // The same batch through the model's own pass (models/study/forward.h's path).
        auto ids_of = [](const json& rows) {
            TokenIds ids{static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size()), {}};
            for (const json& row : rows)
                for (const json& id : row) ids.values.push_back(id.get<int64_t>());
            return ids;
        };
        auto padding_of = [](const json& rows) {
            BoolTensor flags{{static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, {}};
            for (const json& row : rows)
                for (const json& flag : row) flags.values.push_back(static_cast<uint8_t>(flag.get<int>()));
            return Padding::from_flags(flags);
        };
        const Padding source_padding = padding_of(inputs["src_key_padding_mask"]);
        Trace trace(Trace::Detail::Weights);  // a recorded pass: the materialized attention, as the live one
        const Tensor memory = model.encoder_decoder->encode(ids_of(inputs["src_ids"]), source_padding, &trace);
        const Tensor logits = model.encoder_decoder->decode(ids_of(inputs["tgt_ids"]), memory,
                                                            padding_of(inputs["tgt_key_padding_mask"]), source_padding, &trace);
        check_rows_equal(result["logits"], logits, 0);
        check_rows_equal(result["second"]["logits"], logits, 1);
        CHECK(result["second"]["token_log_p"].size() == 3);  // b a <eos>
        // Right padding changes nothing for a real position: row 1's score is the one of "ab" alone.
        // (Left padding moves the row's positions, and so its numbers.)
        if (std::string(side) == "right") {
            const json alone = live_run(model, {{"text", "ab"}}, "reverse");
            CHECK(result["second"]["log_p"].get<double>() == doctest::Approx(alone["log_p"].get<double>()).epsilon(1e-5));
        }
    }
}

TEST_CASE("live: mask overrides and ablations are the intervened model's pass, for that request only") {
    Model model = load("reverse");
    const json plain = live_run(model, {{"text", "hello"}, {"target", "olleh"}}, "reverse");
    const json request = json::parse(R"({"text": "hello", "target": "olleh",
        "mask_overrides": {"decoder.0.cross_attn": [[1, 3, 0]]}, "ablate": [["decoder.1.cross_attn", 0]]})");
    const json intervened = live_run(model, request, "reverse");
    // The blocked cell: query 1, key 3 of decoder.0.cross_attn, weight 0 in every head.
    for (int64_t h = 0; h < model.config.nhead; ++h) CHECK(intervened["weights"]["decoder.0.cross_attn"][h][1][3] == 0);
    CHECK(plain["weights"]["decoder.0.cross_attn"][0][1][3] != 0);

    // The same interventions applied natively, then the model's own recorded pass.
    {
        Interventions interventions;
        interventions.mask_overrides["decoder.0.cross_attn"] = {MaskCell{1, 3, false}};
        interventions.ablate = {{"decoder.1.cross_attn", 0}};
        const AppliedInterventions applied(model, interventions);
        const std::vector<int64_t> source = intervened["src_ids"].get<std::vector<int64_t>>();
        const std::vector<int64_t> target = intervened["tgt_ids"].get<std::vector<int64_t>>();
        Trace trace(Trace::Detail::Weights);
        const Tensor memory = model.encoder_decoder->encode(row_of(source), Padding(), &trace);
        check_rows_equal(intervened["logits"], model.encoder_decoder->decode(row_of(target), memory, Padding(), Padding(), &trace));
    }
    CHECK(intervened["log_p"] != plain["log_p"]);
    // The model is restored after the request: the plain request gives the plain numbers again.
    CHECK(live_run(model, {{"text", "hello"}, {"target", "olleh"}}, "reverse")["logits"] == plain["logits"]);

    CHECK_ERROR_CONTAINS(live_run(model, json::parse(R"({"text": "hello", "ablate": [["decoder.1.cross_attn", 9]]})"), "reverse"),
                         "head");
    CHECK_ERROR_CONTAINS(live_run(model, json::parse(R"({"text": "hello", "ablate": [["decoder.7.cross_attn", 0]]})"), "reverse"),
                         "decoder.7.cross_attn");
    CHECK_ERROR_CONTAINS(live_run(model, {{"text", "hello"}, {"mask_overrides", 3}}, "reverse"),
                         "request");
    CHECK(live_run(model, {{"text", "hello"}, {"target", "olleh"}}, "reverse")["logits"] == plain["logits"]);
}

// exact() against the way it was first written: the fewest digits of "%.6g",
// "%.7g", "%.8g" that strtof reads back as the value, else "%.9g" (always
// enough for a float32). The JSON of exact(v) must read back as v and be no
// longer than that form, over float bit patterns spread across every binade
// (subnormals, 7.0385307e-26f, the one float Grisu2's double-boundary form
// misses, and large and tiny exponents outside the fast path included).
TEST_CASE("live: exact() writes each float32 as digits that read back as it, no longer than %.9g's shortest") {
    auto printf_shortest = [](float value) {
        char text[32];
        for (int digits = 6; digits <= 9; ++digits) {
            std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
            if (std::strtof(text, nullptr) == value) break;
        }
        return std::string(text);
    };
    std::vector<float> values = {0.0f, -0.0f, 1.0f, 0.1f, 1.0f / 3.0f, 7.0385307e-26f, 1e-45f, 1.17549435e-38f,
                                 3.4028235e38f, 0.99999976f, -2.5e-8f, 123456.78f, 16777217.0f};
    uint32_t bits = 12345u;
    for (int i = 0; i < 20000; ++i) {  // a linear congruential walk over bit patterns
        bits = bits * 1664525u + 1013904223u;
        float value;
        std::memcpy(&value, &bits, sizeof value);
        if (std::isfinite(value)) values.push_back(value);
    }
    int64_t longer = 0;
    for (float value : values) {
        const std::string written = nlohmann::json(exact(value)).dump();
        CHECK_MESSAGE(std::strtof(written.c_str(), nullptr) == value, written);
        // The old form went through strtod and nlohmann's double writer too.
        const std::string reference = nlohmann::json(std::strtod(printf_shortest(value).c_str(), nullptr)).dump();
        // Compare significant digits: strip sign, exponent, leading zeros and the point.
        auto significant = [](const std::string& text) {
            std::string digits;
            for (char c : text.substr(0, text.find_first_of("eE"))) if (c >= '0' && c <= '9') digits += c;
            digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
            while (!digits.empty() && digits.back() == '0') digits.pop_back();
            return digits.size();
        };
        if (significant(written) > significant(reference)) ++longer;
    }
    CHECK(longer == 0);
}

// --- the study keys: "lens", "patch", "patch_cell" (docs/FORMAT.md section 4) ---

TEST_CASE("live: each bad study key is one Error naming its field") {
    Model model = load("reverse");
    const json corrupted = {{"text", "hallo"}};
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"text", "hello"}, {"lens", 5}}, "\"lens\" must be an object"},
        {{{"text", "hello"}, {"lens", {{"top", 0}}}}, "\"lens.top\" must be a whole number in 1..100, got 0"},
        {{{"text", "hello"}, {"lens", {{"top", "5"}}}}, "\"lens.top\" must be a whole number in 1..100"},
        {{{"text", "hello"}, {"lens", {{"depth", 2}}}}, "unknown key \"lens.depth\""},
        {{{"text", "hello"}, {"lens", {{"attribute", 7}}}}, "\"lens.attribute\" must be a string"},
        {{{"text", "hello"}, {"lens", {{"attribute", "ab"}}}}, "\"lens.attribute\" must be one token"},
        {{{"text", "hello"}, {"patch", json::array()}}, "\"patch\" must be an object"},
        {{{"text", "hello"}, {"patch", json::object()}}, "\"patch\" needs \"corrupted\""},
        {{{"text", "hello"}, {"patch", {{"corrupted", "hallo"}}}}, "\"patch.corrupted\" must be an object"},
        {{{"text", "hello"}, {"patch", {{"corrupted", {{"text", "hallo"}, {"target", "x"}}}}}},
         "unknown key \"patch.corrupted.target\""},
        {{{"text", "hello"}, {"patch", {{"corrupted", json::object()}}}}, "give \"patch.corrupted\" as \"patch.corrupted.text\""},
        {{{"text", "hello"}, {"patch", {{"corrupted", {{"text", "HALLO"}}}}}}, "request: \"patch.corrupted.text\": "},
        {{{"text", "hello"}, {"patch", {{"corrupted", {{"ids", {99999}}}}}}}, "request: \"patch.corrupted.ids\": "},
        {{{"text", "hello"}, {"patch", {{"corrupted", corrupted}, {"what", "neurons"}}}},
         "\"patch.what\": patch: --what must be resid, attn_out, mlp_out or head, got 'neurons'"},
        {{{"text", "hello"}, {"patch", {{"corrupted", corrupted}, {"what", 2}}}}, "\"patch.what\" must be a string"},
        {{{"text", "hello"}, {"lens", {{"attribute_id", 99}}}}, "\"lens.attribute_id\" must be a whole number in 0.."},
        {{{"text", "hello"}, {"lens", {{"attribute", "a"}, {"attribute_id", 3}}}},
         "give the token to attribute as \"lens.attribute\" or as \"lens.attribute_id\", not both"},
        {{{"text", "hello"}, {"page", "no"}}, "\"page\" must be true or false, got \"no\""},
        {{{"text", "hello"}, {"patch", {{"corrupted", corrupted}, {"row", "decoder.1.output"}}}}, "unknown key \"patch.row\""},
        {{{"text", "hello"}, {"patch", {{"corrupted", {{"text", "hall"}}}}}}, "CLEAN has 5 tokens and CORRUPTED has 4"},
        {{{"text", "hello"}, {"patch", {{"corrupted", {{"text", "hello"}}}}}}, "nothing to restore"},
        {{{"text", "hello"}, {"patch_cell", {{"corrupted", corrupted}}}}, "\"patch_cell\" needs \"row\""},
        {{{"text", "hello"}, {"patch_cell", {{"corrupted", corrupted}, {"row", 3}, {"position", 1}}}},
         "\"patch_cell.row\" must be a string"},
        {{{"text", "hello"}, {"patch_cell", {{"corrupted", corrupted}, {"row", "decoder.9.output"}, {"position", 1}}}},
         "\"patch_cell.row\" must be one of the 6 rows of resid (src_embed.output .. decoder.1.output), got \"decoder.9.output\""},
        {{{"text", "hello"}, {"patch_cell", {{"corrupted", corrupted}, {"row", "decoder.1.output"}, {"position", -1}}}},
         "\"patch_cell.position\" must be a whole number in 0.."},
        {{{"text", "hello"}, {"patch_cell", {{"corrupted", corrupted}, {"row", "encoder.0.output"}, {"position", 5}}}},
         "position 5 is outside encoder.0.output's positions 0..4"},
    };
    for (const auto& [request, message] : cases) {
        CAPTURE(request.dump());
        CHECK_ERROR_CONTAINS(live_run(model, request, "reverse"), message.c_str());
    }
}

namespace {

// Every string, integer and structure of `actual` equal to `expected`'s; every
// float within 1e-5 * max(1, |expected|): the CLI and this test run the same
// code on the same ids, but in two processes whose OpenBLAS may choose another
// kernel or split a product over another number of threads (seen: 1.1e-6 on a
// residual norm of 43, 2.6e-8 relative, under OPENBLAS_CORETYPE=Prescott; 0 with
// the machine's own kernel).
void check_json_close(const json& actual, const json& expected, const std::string& where = "") {
    CAPTURE(where);
    if (expected.is_number_float() || actual.is_number_float()) {
        REQUIRE(actual.is_number());
        const double a = actual.get<double>(), b = expected.get<double>();
        CHECK(std::fabs(a - b) <= 1e-5 * std::max(1.0, std::fabs(b)));
        return;
    }
    if (expected.is_number() && actual.is_number()) {  // a parsed 3 is unsigned, a built one signed
        CHECK(actual.get<int64_t>() == expected.get<int64_t>());
        return;
    }
    REQUIRE(actual.type() == expected.type());
    if (expected.is_object()) {
        REQUIRE(actual.size() == expected.size());
        for (const auto& [key, value] : expected.items()) {
            REQUIRE(actual.contains(key));
            check_json_close(actual.at(key), value, where + "." + key);
        }
    } else if (expected.is_array()) {
        REQUIRE(actual.size() == expected.size());
        for (size_t i = 0; i < expected.size(); ++i) check_json_close(actual[i], expected[i], where + "[" + std::to_string(i) + "]");
    } else {
        CHECK(actual == expected);
    }
}

json cli_json(std::vector<std::string> args, const test_helpers::TempDirectory& dir) {
    const std::string path = dir.file(args[0] + ".json");
    args.insert(args.end(), {"--output", path});
    test_helpers::run_tinyformer_ok(args);
    return json::parse(test_helpers::read_file(path));
}

}  // namespace

TEST_CASE("live: \"lens\" and \"patch\" are the CLI's lens and patch JSON of the same input and target") {
    test_helpers::TempDirectory dir;
    struct Case {
        std::string model, clean, corrupted, target, what;
    };
    for (const Case& c : {Case{"reverse", "hello", "hallo", "", "attn_out"}, Case{"reverse", "hello", "hallo", "olleh", "head"},
                          Case{"reverse-causal", "abc=", "abd=", "", "resid"}, Case{"dates", "thursday 3 may 1979", "thursday 3 may 1971", "", "mlp_out"}}) {
        CAPTURE(c.model);
        CAPTURE(c.target);
        Model model = load(c.model);
        json request = {{"text", c.clean}, {"lens", {{"top", 3}}}, {"patch", {{"corrupted", {{"text", c.corrupted}}}, {"what", c.what}}}};
        std::vector<std::string> target;
        if (!c.target.empty()) {
            request["target"] = c.target;
            target = {"--target", c.target};
        }
        const json result = live_run(model, request, c.model);
        const std::string path = "data/models/" + c.model + ".safetensors";
        std::vector<std::string> lens = {"lens", path, c.clean, "--top", "3"}, patch = {"patch", path, c.clean, c.corrupted, "--what", c.what};
        lens.insert(lens.end(), target.begin(), target.end());
        patch.insert(patch.end(), target.begin(), target.end());
        check_json_close(result["lens"], cli_json(lens, dir));
        check_json_close(result["patch"], cli_json(patch, dir));
    }
    // --attribute (a pre-LN model: reverse-causal's stack is pre-LN) as lens.attribute.
    Model model = load("reverse-causal");
    const json result = live_run(model, {{"text", "abc="}, {"lens", {{"attribute", "c"}}}}, "reverse-causal");
    REQUIRE(result["lens"].contains("attribution"));
    check_json_close(result["lens"], cli_json({"lens", "data/models/reverse-causal.safetensors", "abc=", "--attribute", "c"}, dir));
    // lens.attribute_id as --attribute-id (a model without a vocabulary has only ids).
    const int64_t id = result["lens"]["attribution"]["id"].get<int64_t>();
    const json by_id = live_run(model, {{"text", "abc="}, {"lens", {{"attribute_id", id}}}}, "reverse-causal");
    CHECK(by_id["lens"] == result["lens"]);
    check_json_close(by_id["lens"], cli_json({"lens", "data/models/reverse-causal.safetensors", "abc=", "--attribute-id",
                                              std::to_string(id)}, dir));
}

TEST_CASE("live: \"page\": false answers the study keys alone, the same as with the page pass") {
    Model model = load("reverse");
    const json corrupted = {{"text", "hallo"}};
    json request = {{"text", "hello"},
                    {"lens", {{"top", 3}}},
                    {"patch", {{"corrupted", corrupted}}},
                    {"patch_cell", {{"corrupted", corrupted}, {"row", "decoder.1.output"}, {"position", 1}}}};
    const json with_page = live_run(model, request, "reverse");
    REQUIRE(with_page.contains("page"));
    request["page"] = false;
    const json alone = live_run(model, request, "reverse");
    // No decoding, no recorded pass: none of the row fields, no "page".
    std::vector<std::string> keys;
    for (const auto& [key, value] : alone.items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"lens", "patch", "patch_cell"});
    for (const std::string key : {"lens", "patch", "patch_cell"}) {
        CAPTURE(key);
        CHECK(alone[key] == with_page[key]);
    }
    request["page"] = true;
    CHECK(live_run(model, request, "reverse") == with_page);
}

TEST_CASE("live: \"patch_cell\" is one cell of the grid, with the three runs' answer rows") {
    for (const std::string name : {"reverse", "reverse-causal"}) {
        CAPTURE(name);
        Model model = load(name);
        const bool decoder_only = name == "reverse-causal";
        const json clean = decoder_only ? json("abc=") : json("hello");
        const json corrupted = {{"text", decoder_only ? "abd=" : "hallo"}};
        const json grid = live_run(model, {{"text", clean}, {"patch", {{"corrupted", corrupted}}}}, name)["patch"];
        const std::vector<std::string> rows = grid["layers"].get<std::vector<std::string>>();
        for (size_t r = 0; r < rows.size(); ++r)
            for (size_t p = 0; p < grid["effect"][r].size(); ++p) {
                CAPTURE(rows[r]);
                CAPTURE(p);
                const json cell = live_run(model,
                                           {{"text", clean},
                                            {"patch_cell", {{"corrupted", corrupted}, {"row", rows[r]}, {"position", p}}}},
                                           name)["patch_cell"];
                // The same patched run as the grid's: the same bits.
                CHECK(cell["effect"] == grid["effect"][r][p]);
                CHECK(cell["row"] == rows[r]);
                CHECK(cell["position"] == p);
                CHECK(cell["clean"]["logit_diff"] == grid["clean"]["logit_diff"]);
                CHECK(cell["corrupted"]["logit_diff"] == grid["corrupted"]["logit_diff"]);
                CHECK(cell["effect"].get<double>() ==
                      (cell["logit_diff"].get<double>() - grid["corrupted"]["logit_diff"].get<double>()) /
                          (grid["clean"]["logit_diff"].get<double>() - grid["corrupted"]["logit_diff"].get<double>()));
                // Each run's top token at the answer row is its own answer: the argmax.
                CHECK(cell["clean"]["top"][0]["token"] == grid["clean"]["answer"]);
                CHECK(cell["corrupted"]["top"][0]["token"] == grid["corrupted"]["answer"]);
                CHECK(cell["patched"]["top"].size() == 5);
            }
        // The last layer's stream at the answer row patched: the clean run's answer row, bit for bit.
        const json last = live_run(model,
                                   {{"text", clean},
                                    {"patch_cell", {{"corrupted", corrupted}, {"row", rows.back()}, {"position", grid["answer_row"]}}}},
                                   name)["patch_cell"];
        CHECK(last["effect"] == 1.0);
        CHECK(last["patched"] == last["clean"]);
        CHECK(last["patched"] != last["corrupted"]);
    }
}

namespace {

// A result made with FloatArrays, each {"f32": offset, "shape": [...]} read back from `values` (joined())
// as the plain result writes it (nested arrays of exact() numbers): independent of the writer,
// which never reads a reference back.
json resolved(const json& value, const std::vector<float>& values, int* references) {
    if (value.is_object() && value.size() == 2 && value.contains("f32") && value.contains("shape")) {
        ++*references;
        const auto offset = value["f32"].get<size_t>();
        const std::vector<size_t> shape = value["shape"].get<std::vector<size_t>>();
        std::function<json(size_t, size_t)> nested = [&](size_t axis, size_t at) {
            json out = json::array();
            size_t inner = 1;
            for (size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
            for (size_t i = 0; i < shape[axis]; ++i) {
                if (axis + 1 == shape.size()) {
                    if (at + i >= values.size()) FAIL("a reference past the buffer's ", values.size(), " floats");
                    out.push_back(exact(values[at + i]));
                } else {
                    out.push_back(nested(axis + 1, at + i * inner));
                }
            }
            return out;
        };
        return nested(0, offset);
    }
    json out = value;
    if (value.is_object() || value.is_array())
        for (auto& [key, item] : value.items()) (value.is_object() ? out[key] : out[std::stoul(key)]) = resolved(item, values, references);
    return out;
}

}  // namespace

TEST_CASE("live: with FloatArrays (the page's engine) the big arrays are references into one float buffer, the same numbers") {
    struct Case {
        std::string model;
        json request;
        int references;  // logits, weights per call and row; q k v scores weights z (+ bias / q k unrotated) per call
    };
    const std::vector<Case> cases = {
        {"reverse", {{"text", "hello"}}, 1 + 6 + 6 * 6},                                          // 6 calls
        {"reverse", {{"text", "hello"}, {"second", {{"text", "ab"}}}}, 2 * (1 + 6) + 6 * 6},     // two rows' fields
        {"reverse-rotary", {{"text", "abc"}, {"decode", {{"max_new_tokens", 3}}}}, 0},            // counted below
        {"reverse-alibi", {{"text", "abc"}, {"target", "cba"}}, 0},
        {"reverse-prefixlm", {{"text", "abc"}}, 0},
    };
    for (const Case& c : cases) {
        CAPTURE(c.model);
        CAPTURE(c.request.dump());
        Model model = load(c.model);
        const json plain = live_run(model, c.request, c.model);
        FloatArrays arrays;
        const json referring = live_run(model, c.request, c.model, &arrays);
        CHECK(referring.dump().size() * 4 < plain.dump().size());  // the numbers are most of the text
        CHECK(referring["logits"].contains("f32"));
        CHECK(referring["page"]["attentions"][0]["weights"]["shape"] ==
              json::array({model.config.nhead, plain["page"]["attentions"][0]["weights"][0].size(),
                           plain["page"]["attentions"][0]["weights"][0][0].size()}));
        int references = 0;
        const std::vector<float> values = arrays.joined();
        CHECK(values.size() == static_cast<size_t>(arrays.count));
        CHECK(resolved(referring, values, &references) == plain);
        const size_t calls = plain["page"]["attentions"].size();
        const size_t rows = plain.contains("second") ? 2 : 1;
        size_t extra = 0;
        for (const json& a : plain["page"]["attentions"]) extra += a.contains("bias") + a.contains("q_unrotated") + a.contains("k_unrotated");
        CHECK(references == static_cast<int>(rows * (1 + calls) + calls * 6 + extra));
        if (c.references) CHECK(references == c.references);
        if (c.model == "reverse-rotary") CHECK(extra == 2 * calls);
        if (c.model == "reverse-alibi") CHECK(extra == calls);
        // Every float is in the buffer once: no two references overlap, none is left over.
        size_t floats = 0;
        std::function<void(const json&)> count = [&](const json& v) {
            if (v.is_object() && v.contains("f32")) {
                size_t n = 1;
                for (const json& d : v["shape"]) n *= d.get<size_t>();
                floats += n;
            } else if (v.is_structured()) {
                for (const json& item : v) count(item);
            }
        };
        count(referring);
        CHECK(floats == values.size());
    }
}
