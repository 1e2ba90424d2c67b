// The shipped toy models of data/models/ (tools/train_toy.py) really work:
// exact-match accuracy on fresh C++-generated examples above each target,
// and tinyformer's greedy outputs equal PyTorch's on the committed held-out
// examples, token for token.

#include "models/attention_maps.h"
#include "models/toy_tasks.h"

#include <doctest/doctest.h>

#include "engine/random.h"

#include <algorithm>
#include <fstream>

using namespace tinyformer;

namespace {

struct Shipped {
    const char* name;
    const char* task;
    double target;  // exact match, from the issue
};

const Shipped kModels[] = {
    {"reverse", "reverse", 0.99},
    {"sort", "sort", 0.99},
    {"reverse-prefixlm", "reverse", 0.97},
    {"reverse-causal", "reverse", 0.97},
};

std::string model_path(const std::string& name) { return "data/models/" + name + ".safetensors"; }

}  // namespace

TEST_CASE("Every shipped toy model beats its exact-match target on 1000 fresh examples") {
    for (const Shipped& shipped : kModels) {
        CAPTURE(shipped.name);
        const Model model = Model::load(model_path(shipped.name));
        const Evaluation evaluation = evaluate(model, toy_task(shipped.task), 1000, /*seed=*/2026);
        MESSAGE(std::string(shipped.name), ": exact match ", evaluation.correct, "/", evaluation.total);
        CHECK(evaluation.accuracy() >= shipped.target);
    }
}

TEST_CASE("Greedy outputs equal PyTorch's greedy outputs on the committed held-out examples, token for token") {
    for (const Shipped& shipped : kModels) {
        CAPTURE(shipped.name);
        const Model model = Model::load(model_path(shipped.name));
        const Tokenizer tokenizer(model.text.vocab);
        std::ifstream file("data/models/" + std::string(shipped.name) + ".greedy.tsv");
        REQUIRE_MESSAGE(file.good(), "missing data/models/", shipped.name, ".greedy.tsv (run the tests from the repository root)");
        std::vector<std::string> inputs, expected;
        for (std::string line; std::getline(file, line);) {
            if (line.empty() || line[0] == '#') continue;
            const size_t tab = line.find('\t');
            REQUIRE(tab != std::string::npos);
            inputs.push_back(model.encoder_decoder ? line.substr(0, tab) : line.substr(0, tab) + "=");
            expected.push_back(line.substr(tab + 1));
        }
        REQUIRE(inputs.size() == 200);
        const std::vector<std::string> outputs = generate_text(model, inputs, 1, {});
        int64_t same = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
            CAPTURE(inputs[i]);
            CHECK(outputs[i] == expected[i]);
            same += outputs[i] == expected[i];
        }
        MESSAGE(std::string(shipped.name), ": ", same, "/", inputs.size(), " outputs identical to PyTorch's");
    }
}

TEST_CASE("attention_maps of a trained model name every attention call with its tokens and mask") {
    const Model model = Model::load(model_path("reverse"));
    const AttentionRun run = attention_maps(model, ModelText(model).encode_input("abc"), std::nullopt);
    CHECK(run.output == "cba");  // greedy output of the trained model
    // 2 encoder layers (self) + 2 decoder layers (self, cross).
    REQUIRE(run.maps.size() == 6);
    for (const AttentionMap& map : run.maps) {
        CAPTURE(map.stack); CAPTURE(map.layer); CAPTURE(map.kind);
        const int64_t L = map.weights.dim(2), S = map.weights.dim(3);
        CHECK(map.weights.dim(1) == 4);  // per head, never averaged
        CHECK(static_cast<int64_t>(map.query_tokens.size()) == L);
        CHECK(static_cast<int64_t>(map.key_tokens.size()) == S);
        for (int64_t h = 0; h < 4; ++h)
            for (int64_t l = 0; l < L; ++l) {
                double sum = 0;
                for (int64_t s = 0; s < S; ++s) {
                    const float w = map.weights.at({0, h, l, s});
                    if (!map.mask.allows(0, 0, l, s))  // broadcast axes have stride 0
                        CHECK(w == 0.0f);
                    sum += w;
                }
                CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
            }
    }
    // In the order they run: encoder 0, encoder 1, decoder 0 self, decoder 0 cross, decoder 1 self, decoder 1 cross.
    CHECK(run.maps[0].stack == "encoder");
    CHECK(run.maps[2].kind == "self");
    const AttentionMap& cross = run.maps[3];  // decoder layer 0 cross: "<bos> c b a" over "a b c"
    CHECK(cross.stack == "decoder");
    CHECK(cross.kind == "cross");
    CHECK(cross.query_tokens == std::vector<std::string>{"<bos>", "c", "b", "a"});
    CHECK(cross.key_tokens == std::vector<std::string>{"a", "b", "c"});
    CHECK(cross.layer == 0);
    CHECK(run.maps[2].mask_name == "causal");
}

TEST_CASE("The dates task: weekdays of hand-checked dates, the six forms, and their ISO answer") {
    // Weekdays as the issue gives them, and as Python's datetime.date(...).strftime("%A") gives them.
    CHECK(std::string(weekday_name(weekday({1979, 5, 3}))) == "thursday");
    CHECK(std::string(weekday_name(weekday({2000, 1, 1}))) == "saturday");
    CHECK(std::string(weekday_name(weekday({1900, 1, 1}))) == "monday");
    CHECK(std::string(weekday_name(weekday({2099, 12, 31}))) == "thursday");
    CHECK(std::string(weekday_name(weekday({1970, 1, 1}))) == "thursday");
    CHECK(std::string(weekday_name(weekday({2000, 2, 29}))) == "tuesday");   // 2000 is a leap year
    CHECK(std::string(weekday_name(weekday({1900, 3, 1}))) == "thursday");   // 1900 is not: no 29 february
    CHECK(days_from_civil({1970, 1, 1}) == 0);
    CHECK(days_from_civil({2000, 3, 1}) - days_from_civil({2000, 2, 28}) == 2);
    CHECK(days_from_civil({1900, 3, 1}) - days_from_civil({1900, 2, 28}) == 1);
    CHECK(days_from_civil({2099, 12, 31}) - days_from_civil({1900, 1, 1}) + 1 == 73049);  // 200 years, 48 leap days
    for (int64_t days = days_from_civil({1900, 1, 1}); days <= days_from_civil({2099, 12, 31}); days += 97) {
        const Date date = civil_from_days(days);
        CHECK(days_from_civil(date) == days);
    }

    const Date date{1979, 5, 3};
    CHECK(date_text(date, 0) == "3 may 1979");
    CHECK(date_text(date, 1) == "may 3 1979");
    CHECK(date_text(date, 2) == "may 3, 1979");
    CHECK(date_text(date, 3) == "03/05/1979");
    CHECK(date_text(date, 4) == "1979.05.03");
    CHECK(date_text(date, 5) == "thursday 3 may 1979");
    for (int64_t form = 0; form < 6; ++form) CHECK(iso_date(date_text(date, form)) == "1979-05-03");
    CHECK(iso_date("wednesday 30 september 1998") == "1998-09-30");
    CHECK(iso_date("31/12/2099") == "2099-12-31");
    // Not one of the forms, or not a date: no answer.
    CHECK(iso_date("friday 3 may 1979") == "");   // the wrong weekday
    CHECK(iso_date("31 april 1979") == "");
    CHECK(iso_date("3/5/1979") == "");            // the slash form is zero-padded
    CHECK(iso_date("may 03 1979") == "");         // the word forms are not
    CHECK(iso_date("3 may 1899") == "");
    CHECK(iso_date("3 may 79") == "");

    // The generator: uniform forms, dates in range, every input its own answer's source.
    Random random(11);
    const ToyTask& task = toy_task("dates");
    int64_t forms[6] = {};
    size_t longest = 0;
    for (int i = 0; i < 6000; ++i) {
        const std::string text = task.sample(random);
        const std::string answer = task.answer(text);
        REQUIRE_MESSAGE(answer.size() == 10, text);
        CHECK(answer >= "1900-01-01");
        CHECK(answer <= "2099-12-31");
        longest = std::max(longest, text.size());
        for (char c : text) CHECK(task.alphabet.find(c) != std::string::npos);
        const int form = text.find('/') != std::string::npos   ? 3
                         : text.find('.') != std::string::npos ? 4
                         : text.find(',') != std::string::npos ? 2
                         : text.find("day ") != std::string::npos ? 5
                         : (text[0] >= '0' && text[0] <= '9') ? 0 : 1;
        ++forms[form];
    }
    for (int64_t count : forms) CHECK(count > 900);  // 1000 expected each
    CHECK(longest <= 27);  // "wednesday 30 september 1998", the model's train_max_len
}
