// `tinyformer explore` (tools/cli/explore.cpp), run as a user would: the
// page's embedded data parses, says what the pass was, and holds the
// engine's numbers — the weights equal what `tinyformer forward --attention`
// writes for the same tokens, computed by another route (a batch file of
// ids through run_forward). The page in a real browser: tests/browser/.
#include <doctest/doctest.h>

#include "engine/io/safetensors.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <nlohmann/json.hpp>

#include <cmath>

using test_helpers::CliRun;
using test_helpers::TempDirectory;
using test_helpers::run_tinyformer;
using json = nlohmann::json;

namespace {

// The JSON of <script type="application/json" id="tinyformer-data">; no raw '<'
// may be inside it (they are written \u003c, which JSON reads back as '<').
json page_data(const std::string& html) {
    const std::string open = "id=\"tinyformer-data\">";
    const size_t begin = html.find(open);
    REQUIRE(begin != std::string::npos);
    const size_t end = html.find("</script>", begin);
    REQUIRE(end != std::string::npos);
    const std::string text = html.substr(begin + open.size(), end - begin - open.size());
    CHECK(text.find('<') == std::string::npos);
    return json::parse(text);
}

json explore(const TempDirectory& dir, const std::vector<std::string>& args) {
    std::vector<std::string> command = {"explore"};
    command.insert(command.end(), args.begin(), args.end());
    command.insert(command.end(), {"--html", dir.file("page.html")});
    const CliRun run = run_tinyformer(command);
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    CHECK(run.out == dir.file("page.html") + "\n");
    return page_data(test_helpers::read_file(dir.file("page.html")));
}

// The weights of `forward --attention` on one row of ids.
std::map<std::string, tinyformer::Tensor> forward_weights(const TempDirectory& dir, const std::string& model,
                                                          const std::vector<tinyformer::TensorToWrite>& inputs) {
    tinyformer::write_safetensors(dir.file("in.safetensors"), inputs);
    const CliRun run = run_tinyformer({"forward", model, "--inputs", dir.file("in.safetensors"), "--output",
                                       dir.file("out.safetensors"), "--attention"});
    REQUIRE(run.status == 0);
    const tinyformer::SafetensorsFile out = tinyformer::SafetensorsFile::read(dir.file("out.safetensors"));
    std::map<std::string, tinyformer::Tensor> weights;
    for (const auto& [name, stored] : out.tensors())
        if (name.ends_with(".weights")) weights[name] = out.read_float(name);
    return weights;
}

// Every head, query and key of data["weights"] [H][L][S] against [1,H,L,S].
void check_same_weights(const json& weights, const tinyformer::Tensor& expected) {
    REQUIRE(static_cast<int64_t>(weights.size()) == expected.dim(1));
    double worst = 0;
    for (int64_t h = 0; h < expected.dim(1); ++h) {
        REQUIRE(static_cast<int64_t>(weights[h].size()) == expected.dim(2));
        for (int64_t l = 0; l < expected.dim(2); ++l) {
            REQUIRE(static_cast<int64_t>(weights[h][l].size()) == expected.dim(3));
            for (int64_t s = 0; s < expected.dim(3); ++s)
                worst = std::max(worst, std::fabs(weights[h][l][s].get<double>() - expected.at({0, h, l, s})));
        }
    }
    CHECK(worst <= 1e-6);
}

}  // namespace

TEST_CASE("explore's page holds the reverse model's pass: tokens, masks, and forward --attention's weights") {
    TempDirectory dir;
    const json data = explore(dir, {"data/models/reverse.safetensors", "hello"});
    CHECK(data["format"] == "tinyformer-explore/1");
    CHECK(data["model"]["arch"] == "encoder_decoder");
    CHECK(data["input"]["target"] == "olleh");  // the greedy output
    CHECK(data["sequences"]["source"] == json({"h", "e", "l", "l", "o"}));
    CHECK(data["sequences"]["target"] == json({"<bos>", "o", "l", "l", "e", "h"}));
    REQUIRE(data["attentions"].size() == 6);  // 2 encoder self, 2 x (decoder self, cross)

    // reverse's vocabulary: <pad> <bos> <eos> <unk> a b ..., so h=11 e=8 l=15 o=18.
    const auto expected = forward_weights(dir, "data/models/reverse.safetensors",
                                          {test_helpers::ids("src_ids", {1, 5}, {11, 8, 15, 15, 18}),
                                           test_helpers::ids("tgt_ids", {1, 6}, {1, 18, 15, 15, 8, 11})});
    const std::vector<std::string> calls = {"encoder.0.self_attn", "encoder.1.self_attn", "decoder.0.self_attn",
                                            "decoder.0.cross_attn", "decoder.1.self_attn", "decoder.1.cross_attn"};
    for (size_t i = 0; i < calls.size(); ++i) CHECK(data["attentions"][i]["name"] == calls[i]);  // in the order they run
    for (const json& attention : data["attentions"]) {
        const std::string name = attention["name"];
        CAPTURE(name);
        check_same_weights(attention["weights"], expected.at(name + ".weights"));  // forward's name for them
        const int64_t L = static_cast<int64_t>(attention["mask"].size());
        // The decoder's self-attention is causal: query l sees keys 0..l; the rest sees everything.
        for (int64_t l = 0; l < L; ++l)
            for (int64_t s = 0; s < static_cast<int64_t>(attention["mask"][l].size()); ++s)
                CHECK(attention["mask"][l][s] == (name.ends_with(".self_attn") && name.starts_with("decoder") ? int(s <= l) : 1));
        CHECK(attention["dk"] == 16);  // D=64, H=4
        CHECK(attention["q"].size() == static_cast<size_t>(L));
        CHECK(attention["q"][0].size() == 64);
    }
    CHECK(data["attentions"][3]["group"] == "cross");
    CHECK(data["attentions"][3]["queries"] == "target");
    CHECK(data["attentions"][3]["keys"] == "source");

    // Decoding: five characters and <eos>, each the most likely token of its step.
    const json& steps = data["decoding"]["steps"];
    REQUIRE(steps.size() == 6);
    const std::vector<std::string> path = {"o", "l", "l", "e", "h", "<eos>"};
    for (size_t t = 0; t < steps.size(); ++t) {
        CHECK(steps[t]["chosen_token"] == path[t]);
        CHECK(steps[t]["candidates"][0]["token"] == path[t]);
        CHECK(steps[t]["candidates"].size() == 5);
        double previous = 2;
        for (const json& candidate : steps[t]["candidates"]) {  // best first, probabilities
            CHECK(candidate["p"].get<double>() <= previous);
            previous = candidate["p"].get<double>();
        }
    }
}

TEST_CASE("explore on a decoder-only model labels the whole sequence and marks the prefix-LM mask") {
    TempDirectory dir;
    const json data = explore(dir, {"data/models/reverse-prefixlm.safetensors", "abc"});
    CHECK(data["input"]["target"] == "cba");
    // <bos> a b c = (the prompt suffix), then the continuation c b a.
    CHECK(data["sequences"]["source"] == json({"<bos>", "a", "b", "c", "=", "c", "b", "a"}));
    CHECK_FALSE(data["sequences"].contains("target"));
    const json& mask = data["attentions"][0]["mask"];
    // prefix-LM, prefix 5: every query sees keys 0..4, and query l sees l itself and before.
    for (int64_t l = 0; l < 8; ++l)
        for (int64_t s = 0; s < 8; ++s) CHECK(mask[l][s] == int(s < 5 || s <= l));
    CHECK(data["attentions"][0]["mask_name"] == "prefix-LM (prefix 5)");
    // <bos>=1, a=4 .. c=6, '='=30 in reverse-prefixlm's vocabulary (the alphabet, then '=').
    const auto expected = forward_weights(dir, "data/models/reverse-prefixlm.safetensors",
                                          {test_helpers::ids("ids", {1, 8}, {1, 4, 5, 6, 30, 6, 5, 4}),
                                           test_helpers::ids("prefix_len", {1}, {5})});
    for (size_t i = 0; i < 4; ++i) check_same_weights(data["attentions"][i]["weights"], expected.at("layers." + std::to_string(i) + ".self_attn.weights"));
}

TEST_CASE("explore's weights equal forward --attention's on every toy model, read back through the page's own ids") {
    for (const std::string name : {"reverse", "sort", "reverse-prefixlm", "reverse-causal"}) {
        CAPTURE(name);
        TempDirectory dir;
        const std::string model = "data/models/" + name + ".safetensors";
        const json data = explore(dir, {model, name == "sort" ? "31415926" : "attention"});
        std::vector<tinyformer::TensorToWrite> inputs;
        const auto row = [](const json& ids) { return ids.get<std::vector<int64_t>>(); };
        if (data["model"]["arch"] == "encoder_decoder") {
            const std::vector<int64_t> source = row(data["ids"]["source"]), target = row(data["ids"]["target"]);
            CHECK(source.size() == data["sequences"]["source"].size());
            inputs = {test_helpers::ids("src_ids", {1, static_cast<int64_t>(source.size())}, source),
                      test_helpers::ids("tgt_ids", {1, static_cast<int64_t>(target.size())}, target)};
        } else {
            const std::vector<int64_t> sequence = row(data["ids"]["source"]);
            inputs = {test_helpers::ids("ids", {1, static_cast<int64_t>(sequence.size())}, sequence)};
            // prefix-LM: the prefix is <bos> + "attention" + "=" = 11 tokens
            if (name == "reverse-prefixlm") inputs.push_back(test_helpers::ids("prefix_len", {1}, {11}));
        }
        const auto expected = forward_weights(dir, model, inputs);
        REQUIRE(expected.size() == data["attentions"].size());
        for (const json& attention : data["attentions"]) {
            const std::string forward_name = attention["name"].get<std::string>() + ".weights";
            CAPTURE(forward_name);
            check_same_weights(attention["weights"], expected.at(forward_name));
        }
    }
}

TEST_CASE("explore --beam lists the hypotheses, best first, and follows the best") {
    TempDirectory dir;
    const json data = explore(dir, {"data/models/reverse.safetensors", "hello", "--beam", "3"});
    CHECK(data["decoding"]["mode"] == "beam");
    const json& hypotheses = data["decoding"]["hypotheses"];
    REQUIRE(hypotheses.size() >= 3);
    CHECK(hypotheses[0]["best"] == true);
    CHECK(hypotheses[0]["tokens"] == json({"o", "l", "l", "e", "h"}));
    for (size_t i = 1; i < hypotheses.size(); ++i) CHECK(hypotheses[i]["score"].get<double>() <= hypotheses[i - 1]["score"].get<double>());
    CHECK(data["input"]["target"] == "olleh");
}

// The decoding record says why the decoding ended, and its steps hold only
// chosen tokens: <eos> is a step only when it was chosen. Each case's
// expected stop follows from the lengths given (never from the page).
TEST_CASE("explore's decoding says why it stopped (eos, max_new_tokens, max_len) and lists no unchosen <eos>") {
    TempDirectory dir;
    const auto stop_of = [](const json& data) {  // (a missing "stop" is a failure, not a crash)
        REQUIRE(data["decoding"].contains("stop"));
        return data["decoding"]["stop"];
    };
    const auto check_greedy_steps = [](const json& steps) {
        for (const json& step : steps) {  // greedy: each chosen token is its step's most likely one
            CHECK(step["chosen"] == step["candidates"][0]["id"]);
            CHECK(step["chosen_p"] == step["candidates"][0]["p"]);
        }
    };
    SUBCASE("eos: reverse on \"hello\" chooses <eos> after the five letters") {
        const json data = explore(dir, {"data/models/reverse.safetensors", "hello"});
        CHECK(stop_of(data) == "eos");
        REQUIRE(data["decoding"]["steps"].size() == 6);
        CHECK(data["decoding"]["steps"][5]["chosen_token"] == "<eos>");
        check_greedy_steps(data["decoding"]["steps"]);
    }
    SUBCASE("max_new_tokens: reverse on \"hello\" cut after 3 tokens shows 3 steps, no <eos>") {
        const json data = explore(dir, {"data/models/reverse.safetensors", "hello", "--max-new-tokens", "3"});
        CHECK(stop_of(data) == "max_new_tokens");
        CHECK(data["decoding"]["max_new_tokens"] == 3);
        CHECK(data["input"]["target"] == "oll");
        REQUIRE(data["decoding"]["steps"].size() == 3);
        for (const json& step : data["decoding"]["steps"]) CHECK(step["chosen_token"] != "<eos>");
        check_greedy_steps(data["decoding"]["steps"]);
    }
    SUBCASE("max_len: reverse-causal (max_len 40) on 30 letters has 8 positions left, fills them, no <eos>") {
        // <bos> + 30 letters + "=" is 32 tokens of the 40: 8 generated tokens fill max_len.
        const json data = explore(dir, {"data/models/reverse-causal.safetensors", "abcdefghijklmnopqrstuvwxyzabcd"});
        CHECK(stop_of(data) == "max_len");
        REQUIRE(data["decoding"]["steps"].size() == 8);
        CHECK(data["sequences"]["source"].size() == 40);
        for (const json& step : data["decoding"]["steps"]) CHECK(step["chosen_token"] != "<eos>");
        check_greedy_steps(data["decoding"]["steps"]);
    }
    SUBCASE("a given target decodes nothing: no stop") {
        const json data = explore(dir, {"data/models/reverse.safetensors", "hello", "--target", "olleh"});
        CHECK(data["decoding"]["mode"] == "none");
        CHECK(stop_of(data) == nullptr);
    }
}
