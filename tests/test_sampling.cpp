// Tests for sampling (models/decoding.h) and generation without an end
// token: the drawn first-token frequencies against softmax(logits / T)
// restricted to top-k / top-p (the expected probabilities computed here,
// from the formula, with std::exp, and the kept sets written by hand), a few
// draws pinned from SplitMix64's published outputs, seed reproducibility
// (KvCache and Recompute, batched and alone), models without eos_id
// generating exactly N tokens and stopping at max_len, and the CLI flags.

#include "models/decoding.h"
#include "models/text.h"
#include "models/study/toy_tasks.h"
#include "tests/helpers.h"
#include "tests/decoding_cases.h"
#include "tests/greedy_margin.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>

using namespace tinyformer;
using namespace tinyformer::decoding_cases;
using namespace test_helpers;

namespace {

// Six hand-chosen logits with a tie (tokens 2 and 3) and the largest last.
// In the sampling order (largest logit first, equal logits by smaller id):
// 5 (3.0), 0 (2.0), 1 (1.0), 2 (0.5), 3 (0.5), 4 (-1.0).
const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.5f, -1.0f, 3.0f};

struct Case {
    Sampling sampling;
    std::vector<int64_t> kept;  // written by hand: the tokens the draw may give, in the sampling order
};

// softmax(logits / T) over all six (std::exp, no max shift: another route
// than the engine's), restricted to `kept` and renormalised.
std::map<int64_t, double> expected_distribution(const Case& c) {
    double total = 0;
    for (float logit : kLogits) total += std::exp(static_cast<double>(logit) / c.sampling.temperature);
    double kept_mass = 0;
    for (int64_t token : c.kept) kept_mass += std::exp(kLogits[static_cast<size_t>(token)] / c.sampling.temperature) / total;
    std::map<int64_t, double> q;
    for (int64_t token : c.kept)
        q[token] = std::exp(kLogits[static_cast<size_t>(token)] / c.sampling.temperature) / total / kept_mass;
    return q;
}

Sampling sampling(double temperature, int64_t top_k, double top_p, uint64_t seed = 0) {
    Sampling s;
    s.temperature = temperature;
    s.top_k = top_k;
    s.top_p = top_p;
    s.seed = seed;
    return s;
}

// The cases, their kept sets worked out by hand (the running sums that
// decide top-p are in the comments; none is within 0.009 of its p).
const std::vector<Case> kCases6 = {
    // T = 1, everything: softmax(logits) itself, p = 0.593, 0.218, 0.080, 0.049, 0.049, 0.011.
    {sampling(1.0, 0, 1.0), {5, 0, 1, 2, 3, 4}},
    // T = 0.7, top-k 4: the tie 2 / 3 is cut, token 2 (the smaller id) stays.
    {sampling(0.7, 4, 1.0), {5, 0, 1, 2}},
    // T = 1.3, top-p 0.8: running sums 0.496, 0.726, 0.832 >= 0.8: three tokens.
    {sampling(1.3, 0, 0.8), {5, 0, 1}},
    // Hand-worked in full, T = 1, top-k 3, top-p 0.9:
    //   softmax: e^3, e^2, e^1, e^0.5, e^0.5, e^-1 = 20.086, 7.389, 2.718, 1.649, 1.649, 0.368;
    //            sum 33.859 -> p = 0.5932, 0.2182, 0.0803, ...
    //   top-k 3 keeps 5, 0, 1 (mass 0.8917); renormalised 0.6652, 0.2447, 0.0900;
    //   running sums 0.6652, 0.9100 >= 0.9: top-p keeps 5 and 0;
    //   q = e^3 / (e^3 + e^2) = 1 / (1 + e^-1) = 0.731059 and 0.268941.
    //   (Top-p on the un-renormalised p would keep three: 0.5932 + 0.2182 = 0.811 < 0.9.)
    {sampling(1.0, 3, 0.9), {5, 0}},
    // T = 2, top-p 0.5: running sums 0.373, 0.599 >= 0.5: two tokens.
    {sampling(2.0, 0, 0.5), {5, 0}},
    // top-k 1: the argmax only, whatever T.
    {sampling(5.0, 1, 1.0), {5}},
    // top-k larger than V keeps all; top-p so small that one token is kept.
    {sampling(1.0, 100, 1e-9), {5}},
};

}  // namespace

TEST_CASE("sampling's distribution is softmax(logits / T) restricted to top-k then top-p, renormalised") {
    for (size_t i = 0; i < kCases6.size(); ++i) {
        const Case& c = kCases6[i];
        CAPTURE(i);
        const SamplingDistribution d = sampling_distribution(kLogits.data(), 6, c.sampling);
        CHECK(d.tokens == c.kept);  // the kept set, in the sampling order
        const std::map<int64_t, double> expected = expected_distribution(c);
        REQUIRE(d.q.size() == d.tokens.size());
        for (size_t j = 0; j < d.tokens.size(); ++j) CHECK(d.q[j] == doctest::Approx(expected.at(d.tokens[j])).epsilon(1e-12));
    }
    // The hand-worked case's numbers.
    const SamplingDistribution d = sampling_distribution(kLogits.data(), 6, kCases6[3].sampling);
    CHECK(d.q[0] == doctest::Approx(0.731059).epsilon(1e-6));
    CHECK(d.q[1] == doctest::Approx(0.268941).epsilon(1e-6));
}

TEST_CASE("20000 sampled first tokens have the frequencies of the restricted softmax (5 standard errors)") {
    // Each frequency f of a kept token with probability q is a mean of N
    // Bernoulli draws: its standard error is sqrt(q (1 - q) / N), and
    // |f - q| <= 5 of them fails by chance about once in 1.7 million per token.
    // A token outside the kept set is never drawn (count exactly 0).
    constexpr int kDraws = 20000;
    for (size_t i = 0; i < kCases6.size(); ++i) {
        const Case& c = kCases6[i];
        CAPTURE(i);
        Random random(12345 + i);
        std::map<int64_t, int> counts;
        for (int n = 0; n < kDraws; ++n) ++counts[sample_token(kLogits.data(), 6, c.sampling, random)];
        const std::map<int64_t, double> expected = expected_distribution(c);
        double worst = 0;
        for (int64_t token = 0; token < 6; ++token) {
            CAPTURE(token);
            const int count = counts.count(token) ? counts.at(token) : 0;
            if (!expected.count(token)) {
                CHECK(count == 0);
                continue;
            }
            const double q = expected.at(token), f = static_cast<double>(count) / kDraws;
            const double standard_error = std::sqrt(q * (1 - q) / kDraws);
            if (standard_error == 0) {
                CHECK(count == kDraws);  // the only kept token
                continue;
            }
            CHECK(std::fabs(f - q) <= 5 * standard_error);
            worst = std::max(worst, std::fabs(f - q) / standard_error);
        }
        MESSAGE("case ", i, ": worst |frequency - q| = ", worst, " standard errors");
    }
}

TEST_CASE("sample_token's draws for seed 0 follow SplitMix64's published outputs") {
    // SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c) from state 0
    // gives 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f,
    // 0xf88bb8a8724c81ec, 0x1b39896a51a8749b, 0x53cb9f0c747ea2ea; the top 53
    // bits times 2^-53 are u = 0.8833, 0.4315, 0.0264, 0.9709, 0.1063, 0.3273.
    // The hand-worked case keeps token 5 with q = 0.731059, then token 0:
    // token 5 owns [0, 0.731059), token 0 [0.731059, 1). So the draws are
    // 0, 5, 5, 0, 5, 5.
    Random random(0);
    std::vector<int64_t> drawn;
    for (int i = 0; i < 6; ++i) drawn.push_back(sample_token(kLogits.data(), 6, kCases6[3].sampling, random));
    CHECK(drawn == std::vector<int64_t>{0, 5, 5, 0, 5, 5});
    // draw_token on its own: u against the running sums.
    const SamplingDistribution d = sampling_distribution(kLogits.data(), 6, kCases6[3].sampling);
    CHECK(draw_token(d, 0.0) == 5);
    CHECK(draw_token(d, 0.731) == 5);
    CHECK(draw_token(d, 0.7311) == 0);
    CHECK(draw_token(d, 0.9999999999) == 0);
    CHECK_ERROR_CONTAINS(draw_token(d, 1.0), "u must be in [0, 1)");
}

TEST_CASE("sampling refuses bad settings and logits, naming them") {
    const std::vector<float> nan_logits = {1.0f, std::nanf(""), 0.0f};
    CHECK_ERROR_CONTAINS(sampling_distribution(nan_logits.data(), 3, Sampling{}), "logit 1 is");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(0.0, 0, 1.0)),
                         "temperature must be a finite number > 0");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(-1.0, 0, 1.0)), "temperature");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(INFINITY, 0, 1.0)), "temperature");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(1.0, -1, 1.0)), "top_k must be >= 1");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(1.0, 0, 0.0)), "top_p must be in (0, 1]");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 6, sampling(1.0, 0, 1.5)), "top_p");
    CHECK_ERROR_CONTAINS(sampling_distribution(kLogits.data(), 0, Sampling{}), "at least one logit");
    // A tiny temperature is the argmax, not a NaN: (logit - max) / T is 0 or -huge.
    const SamplingDistribution cold = sampling_distribution(kLogits.data(), 6, sampling(1e-300, 0, 1.0));
    CHECK(cold.q[0] == 1.0);
    CHECK(cold.tokens[0] == 5);
}

TEST_CASE("sampling is reproducible for a seed: KvCache and Recompute, batched and alone; other seeds differ") {
    // The reference models have random weights: at T = 1 their continuations vary.
    for (const std::string name : kCases) {
        CAPTURE(name);
        const Model model = load_case(name);
        const auto inputs = inputs_for(model);
        const Sampling s = sampling(1.0, 0, 1.0, 7);
        GenerationOptions recompute;
        recompute.mode = StepMode::Recompute;
        GenerationOptions recorded;
        recorded.record_logits = true;
        const Generation cached = sample_decode(model, inputs, s, recorded);
        // The same call again: the same floats and uniforms, exactly (same calls, same shapes, same data).
        CHECK(sample_decode(model, inputs, s).tokens == cached.tokens);
        // Recompute, and each input alone (input b draws from Random(seed + b)): other products,
        // logits within 1e-5 (tests/test_stepper.cpp), so the same tokens wherever no uniform
        // falls near an edge of its token's interval (tests/greedy_margin.h), and none does here.
        const test_helpers::LogitBound bound{1e-5, 0};
        recompute.record_logits = true;
        const Generation recomputed = sample_decode(model, inputs, s, recompute);
        for (size_t b = 0; b < inputs.size(); ++b) {
            const test_helpers::Decided decided =
                test_helpers::check_same_sampled_tokens(cached, b, 7 + b, s, recomputed.tokens[b], bound);
            CHECK(decided.all());
            CHECK(test_helpers::largest_logit_difference(cached, b, recomputed, b, decided.steps) <= bound.absolute);
            const Generation alone = sample_decode(model, {inputs[b]}, sampling(1.0, 0, 1.0, 7 + b), recorded);
            CHECK(test_helpers::check_same_sampled_tokens(cached, b, 7 + b, s, alone.tokens[0], bound).all());
            CHECK(test_helpers::largest_logit_difference(cached, b, alone, 0, decided.steps) <= bound.absolute);
        }
        // generate() batches by 64 and keeps each input's seed: these 4 inputs are one
        // sample_decode call with the same arguments, exactly the call above.
        CHECK(generate(model, inputs, 1, {}, s) == cached.tokens);
        // Other seeds: some row differs (over three seeds, four rows each).
        int differing = 0;
        for (uint64_t seed : {8, 100, 123456789})
            differing += sample_decode(model, inputs, sampling(1.0, 0, 1.0, seed)).tokens != cached.tokens;
        CHECK(differing >= 2);
        // top-k 1 is greedy: the same stepping on the same inputs, so the same logits exactly,
        // and top-1 takes the largest logit with greedy's tie rule (the smaller id).
        CHECK(sample_decode(model, inputs, sampling(3.0, 1, 1.0, 7)).tokens == greedy_decode(model, inputs).tokens);
    }
    CHECK_ERROR_CONTAINS(generate(load_case(kCases[0]), {{3, 4}}, 2, {}, Sampling{}), "choose one");
}

TEST_CASE("A model without eos_id generates exactly max_new_tokens, 64 by default, and stops at max_len") {
    TempDirectory dir;
    // The causal reverse model (max_len 40) and a decoder-only reference model
    // with sinusoidal positions, its max_len raised to 200, both without eos_id.
    const std::string reverse = edited(dir, "reverse-noeos.safetensors", "data/models/reverse-causal.safetensors", [](Contents& c) {
        nlohmann::json config = c.config();
        config.erase("eos_id");
        c.set_config(config);
    });
    const std::string long_one = edited(dir, "long-noeos.safetensors", "data/reference/do_post_relu_sin_h1.model.safetensors",
                                        [](Contents& c) {
                                            nlohmann::json config = c.config();
                                            config.erase("eos_id");
                                            config["max_len"] = 200;
                                            c.set_config(config);
                                        });
    const std::string ed = edited(dir, "ed-noeos.safetensors", "data/reference/ed_post_relu_sin.model.safetensors", [](Contents& c) {
        nlohmann::json config = c.config();
        config.erase("eos_id");
        c.set_config(config);
    });
    const Model small = Model::load(reverse), large = Model::load(long_one), seq2seq = Model::load(ed);
    CHECK(default_max_new_tokens(small) == kMaxNewTokensWithoutEos);
    CHECK(default_max_new_tokens(load_case("do_post_relu_sin_h1")) == kMaxNewTokensWithEos);
    const std::vector<int64_t> prompt = {1, 4, 5, 6, 30};  // <bos> a b c =
    for (const int64_t n : {1, 7, 20}) {
        CAPTURE(n);
        GenerationOptions options;
        options.max_new_tokens = n;
        CHECK(greedy_decode(small, {prompt}, options).tokens[0].size() == static_cast<size_t>(n));
        CHECK(sample_decode(small, {prompt}, sampling(1.5, 0, 1.0, 3), options).tokens[0].size() == static_cast<size_t>(n));
        CHECK(beam_search(small, prompt, 3, 1.0, options).tokens[0].size() == static_cast<size_t>(n));
        CHECK(greedy_decode(seq2seq, {{3, 4, 5}}, options).tokens[0].size() == static_cast<size_t>(std::min<int64_t>(n, 15)));
    }
    // The default: 64, and max_len decides first when it is nearer: 40 - 5 prompt tokens.
    CHECK(greedy_decode(large, {{1, 3, 4}}).tokens[0].size() == 64);
    CHECK(sample_decode(large, {{1, 3, 4}}, sampling(1.0, 0, 1.0)).tokens[0].size() == 64);
    CHECK(greedy_decode(small, {prompt}).tokens[0].size() == 35);
    GenerationOptions unlimited;
    unlimited.max_new_tokens = 0;  // up to max_len
    CHECK(greedy_decode(large, {{1, 3, 4}}, unlimited).tokens[0].size() == 197);
    GenerationOptions many;
    many.max_new_tokens = 1000;  // never past max_len
    CHECK(sample_decode(small, {prompt}, sampling(1.0, 0, 1.0), many).tokens[0].size() == 35);
    CHECK(greedy_decode(seq2seq, {{3, 4, 5}}).tokens[0].size() == 15);  // <bos> + 15 = max_len 16
    GenerationOptions negative;
    negative.max_new_tokens = -5;
    CHECK_ERROR_CONTAINS(greedy_decode(small, {prompt}, negative), "max_new_tokens must be >= 0");

    // The CLI: run and explore generate for it.
    const CliRun run = run_tinyformer_ok({"run", reverse, "abc", "--max-new-tokens", "5", "--print-ids"});
    CHECK(std::count(run.out.begin(), run.out.end(), ',') == 4);  // five ids
    CHECK(run_tinyformer_ok({"run", reverse, "abc", "--max-new-tokens", "5"}).out.size() > 1);
    const CliRun explore = run_tinyformer_ok({"explore", reverse, "abc", "--max-new-tokens", "6", "--temperature", "1.5",
                                              "--seed", "2", "--html", dir.file("p.html"), "--json", dir.file("p.json")});
    const nlohmann::json decoding = nlohmann::json::parse(read_file(dir.file("p.json")))["decoding"];
    CHECK(decoding["mode"] == "sample");
    CHECK(decoding["max_new_tokens"] == 6);
    CHECK(decoding["sampling"]["temperature"] == 1.5);
    CHECK(decoding["sampling"]["top_k"] == 0);
    CHECK(decoding["sampling"]["top_p"] == 1.0);
    CHECK(decoding["sampling"]["seed"] == 2);
    CHECK(decoding["steps"].size() == 6);  // six tokens, no <eos> step
}

TEST_CASE("run and explore: the same seed gives the same output; bad generation flags exit 2 with one line") {
    const std::string model = "data/models/reverse.safetensors";
    // T = 10 flattens the trained model's near-certain outputs, so the seed shows.
    const std::vector<std::string> args = {"run", model, "hello", "abcdef", "--seed", "3", "--temperature", "10"};
    const CliRun first = run_tinyformer_ok(args), second = run_tinyformer_ok(args);
    CHECK(first.out == second.out);
    std::vector<std::string> other = args;
    other[5] = "4";
    CHECK(run_tinyformer_ok(other).out != first.out);
    CHECK(run_tinyformer_ok({"run", model, "hello", "--seed", "3", "--temperature", "0.8"}).out ==
          run_tinyformer_ok({"run", model, "hello", "--seed", "3", "--temperature", "0.8"}).out);
    // Greedy unchanged: no flag, and --top-k 1.
    CHECK(run_tinyformer_ok({"run", model, "hello"}).out == "olleh\n");
    CHECK(run_tinyformer_ok({"run", model, "hello", "--top-k", "1", "--temperature", "10"}).out == "olleh\n");
    CHECK(run_tinyformer_ok({"run", model, "hello", "--max-new-tokens", "2"}).out == "ol\n");
    CHECK(run_tinyformer_ok({"run", model, "hello", "--max-len", "3"}).out == "oll\n");

    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"--temperature", "0"}, "--temperature must be > 0"},
        {{"--temperature", "-1"}, "--temperature must be > 0"},
        {{"--temperature", "abc"}, "--temperature needs a number"},
        {{"--temperature", "inf"}, "--temperature needs a number"},
        {{"--temperature", "1e999"}, "--temperature needs a number"},
        {{"--top-k", "0"}, "--top-k must be in 1.."},
        {{"--top-k", "2.5"}, "--top-k needs an integer"},
        {{"--top-p", "0"}, "--top-p must be in (0, 1]"},
        {{"--top-p", "1.01"}, "--top-p must be in (0, 1]"},
        {{"--top-p", "nan"}, "--top-p needs a number"},
        {{"--seed", "3"}, "--seed seeds sampling, which is off"},
        {{"--seed", "-1", "--top-k", "2"}, "--seed must be in 0.."},
        {{"--beam", "2", "--temperature", "0.8"}, "--beam and sampling"},
        {{"--max-new-tokens", "0"}, "--max-new-tokens must be in 1.."},
        {{"--max-new-tokens", "2", "--max-len", "2"}, "give --max-new-tokens once"},
    };
    for (const auto& [flags, message] : bad) {
        for (const std::string command : {"run", "explore"}) {
            if (command == "explore" && flags.back() == "2" && flags[0] == "--max-new-tokens") continue;  // run's old name only
            std::vector<std::string> call = {command, model, "hello"};
            call.insert(call.end(), flags.begin(), flags.end());
            if (command == "explore") call.insert(call.end(), {"--html", "/dev/null"});
            CAPTURE(call);
            const CliRun r = run_tinyformer(call);
            CHECK(r.status == 2);
            CHECK(r.out.empty());
            CHECK(r.err.find(message) != std::string::npos);
            CHECK(r.err.starts_with("tinyformer: error: " + command + ": "));
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        }
    }
    // explore's decoding record names the search: greedy with the model's default limit.
    TempDirectory dir;
    run_tinyformer_ok({"explore", model, "hello", "--html", dir.file("g.html"), "--json", dir.file("g.json")});
    const nlohmann::json greedy = nlohmann::json::parse(read_file(dir.file("g.json")))["decoding"];
    CHECK(greedy["mode"] == "greedy");
    CHECK(greedy["max_new_tokens"] == 1024);
    CHECK(greedy["sampling"].is_null());
    run_tinyformer_ok({"explore", model, "hello", "--top-k", "3", "--seed", "5", "--html", dir.file("s.html"), "--json",
                       dir.file("s.json")});
    const nlohmann::json sampled = nlohmann::json::parse(read_file(dir.file("s.json")))["decoding"];
    CHECK(sampled["mode"] == "sample");
    CHECK(sampled["sampling"] == nlohmann::json{{"temperature", 1.0}, {"top_k", 3}, {"top_p", 1.0}, {"seed", 5}});
    const CliRun with_target = run_tinyformer({"explore", model, "hello", "--target", "olleh", "--temperature", "2", "--html", "/dev/null"});
    CHECK(with_target.status == 2);
    CHECK(with_target.err.find("give --target or them, not both") != std::string::npos);
    // --help names every flag and the defaults.
    for (const std::string command : {"run", "explore"}) {
        const CliRun help = run_tinyformer_ok({command, "--help"});
        for (const char* flag : {"--max-new-tokens N", "--temperature T", "--top-k K", "--top-p P", "--seed S", "default 0",
                                 "1024 for a model with an eos_id", "64 for a model without"})
            CHECK_MESSAGE(help.out.find(flag) != std::string::npos, command, " --help lacks ", flag);
    }
}

TEST_CASE("The sampled examples of docs/TOY_MODELS.md are decided draws: their shown outputs hold on other CPUs") {
    // tests/test_docs.cpp compares those outputs exactly. Another CPU's BLAS rounds the
    // logits otherwise (by ~1e-6 on these models); the shown tokens are what it draws too
    // when no draw is within the slack of such a change (tests/greedy_margin.h), here with
    // a bound ten times larger.
    struct Example {
        const char* model;
        const char* text;
        double temperature;
        int64_t top_k;
        double top_p;
        uint64_t seed;
    };
    const Example examples[] = {{"reverse", "hello", 3, 0, 1.0, 1},
                                {"reverse", "hello", 3, 2, 1.0, 1},
                                {"sort", "31415926", 4, 0, 0.9, 5},
                                {"dates", "may 3, 1979", 4, 0, 1.0, 1}};
    for (const Example& example : examples) {
        const std::string name = example.model, text = example.text;
        CAPTURE(name);
        CAPTURE(text);
        const Model model = Model::load(std::string("data/models/") + example.model + ".safetensors");
        const std::vector<int64_t> input = model_input(model, ModelText(model).encode_input(example.text));
        const Sampling s = sampling(example.temperature, example.top_k, example.top_p, example.seed);
        GenerationOptions options;
        options.record_logits = true;
        const Generation drawn = sample_decode(model, {input}, s, options);
        const test_helpers::Decided decided =
            test_helpers::check_same_sampled_tokens(drawn, 0, example.seed, s, drawn.tokens[0], {1e-5, 1e-5});
        CHECK(decided.all());
        MESSAGE(name, " \"", text, "\": ", decided.steps, " draws, the nearest ", decided.smallest_margin,
                " from an edge");
    }
}
