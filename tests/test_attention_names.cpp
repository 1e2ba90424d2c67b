// One name per attention call (models/transformer.h): the name the model
// lists ("decoder.1.cross_attn") is the call's name in every place a user
// meets it — the trace's tensors, `forward --attention`'s output, the
// pictures of `attention`, the page's data and interventions.
#include <doctest/doctest.h>

#include "engine/io/output_file.h"
#include "engine/io/safetensors.h"
#include "models/study/interventions.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

using namespace tinyformer;
using test_helpers::CliRun;
using test_helpers::TempDirectory;
using test_helpers::run_tinyformer_ok;

namespace {

struct Case {
    const char* model;
    const char* text;
    std::vector<TensorToWrite> (*inputs)();  // forward's inputs for the same kind of model
    std::vector<std::string> calls;         // what the model must list, in the order they run
};

std::vector<TensorToWrite> reverse_inputs() {
    return {test_helpers::ids("src_ids", {1, 5}, {11, 8, 15, 15, 18}),
            test_helpers::ids("tgt_ids", {1, 6}, {1, 18, 15, 15, 8, 11})};
}

std::vector<TensorToWrite> causal_inputs() { return {test_helpers::ids("ids", {1, 4}, {1, 5, 6, 7})}; }

// The names in `names` that end with `suffix`, without it.
std::set<std::string> stems(const std::set<std::string>& names, const std::string& suffix) {
    std::set<std::string> out;
    for (const std::string& name : names)
        if (name.size() > suffix.size() && name.ends_with(suffix)) out.insert(name.substr(0, name.size() - suffix.size()));
    return out;
}

std::set<std::string> tensor_names(const std::string& path) {
    std::set<std::string> names;
    const SafetensorsFile file = SafetensorsFile::read(path);
    for (const auto& [name, stored] : file.tensors()) names.insert(name);
    return names;
}

}  // namespace

TEST_CASE("An attention call has one name: the model's list, the trace, forward, the pictures, the page, interventions") {
    const Case cases[] = {
        {"data/models/reverse.safetensors", "hello", reverse_inputs,
         {"encoder.0.self_attn", "encoder.1.self_attn", "decoder.0.self_attn", "decoder.0.cross_attn",
          "decoder.1.self_attn", "decoder.1.cross_attn"}},
        {"data/models/reverse-causal.safetensors", "abc=", causal_inputs,
         {"layers.0.self_attn", "layers.1.self_attn", "layers.2.self_attn", "layers.3.self_attn"}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.model);
        TempDirectory dir;
        Model model = Model::load(c.model);
        REQUIRE(model.attention_names() == c.calls);
        const std::set<std::string> calls(c.calls.begin(), c.calls.end());
        for (const NamedAttentionCall& call : model.attention_calls())  // its place, beside its name
            CHECK(call.name == call.stack + "." + std::to_string(call.layer) + "." + call.kind + "_attn");

        // The trace: each call's tensors are "<call>.q", ..., "<call>.weights".
        run_tinyformer_ok({"trace", c.model, c.text, "--output", dir.file("trace.safetensors")});
        const std::set<std::string> traced = tensor_names(dir.file("trace.safetensors"));
        CHECK(stems(traced, ".weights") == calls);
        CHECK(stems(traced, ".scores") == calls);

        // forward --attention: the same tensor under the same name, and nothing else but the logits.
        write_safetensors(dir.file("in.safetensors"), c.inputs());
        run_tinyformer_ok({"forward", c.model, "--inputs", dir.file("in.safetensors"), "--output",
                           dir.file("out.safetensors"), "--attention"});
        std::set<std::string> outputs = tensor_names(dir.file("out.safetensors"));
        CHECK(outputs.erase("logits") == 1);
        CHECK(stems(outputs, ".weights") == calls);
        CHECK(outputs.size() == calls.size());

        // The pictures: "<call>.heads.png", "<call>.head0.png".
        run_tinyformer_ok({"attention", c.model, c.text, "--output", dir.file("maps")});
        std::set<std::string> pictures;
        for (const auto& entry : std::filesystem::directory_iterator(dir.file("maps")))
            pictures.insert(entry.path().filename().string());
        CHECK(stems(pictures, ".heads.png") == calls);
        CHECK(stems(pictures, ".head0.png") == calls);

        // The page's data, in the order the calls run.
        run_tinyformer_ok({"explore", c.model, c.text, "--recorded", "--html", dir.file("page.html"), "--json",
                           dir.file("page.json")});
        const nlohmann::json page = nlohmann::json::parse(test_helpers::read_file(dir.file("page.json")));
        std::vector<std::string> page_names;
        for (const nlohmann::json& attention : page["attentions"]) page_names.push_back(attention["name"]);
        CHECK(page_names == c.calls);

        // Interventions take the same names; the module of a name in another form is refused.
        Interventions interventions;
        for (const std::string& call : c.calls) interventions.ablate.emplace_back(call, 0);
        { AppliedInterventions applied(model, interventions); }  // Error for a name it does not know
        for (const std::string& call : c.calls) CHECK_NOTHROW(model.attention_module(call));
        CHECK_ERROR_CONTAINS(model.attention_module("attention." + c.calls.back()), "no attention named",
                             c.calls.front().c_str());
    }
}
