// Hooks (layers/hooks.h): where a pass calls them, in which order and under
// which names; that a hook which changes nothing changes no bit; and that a
// residual hook changes what follows its point and nothing before it.
#include "layers/hooks.h"
#include "models/decoding.h"
#include "models/study/teacher_forcing.h"
#include "models/study/trace.h"
#include "models/text.h"
#include "models/transformer.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

using namespace tinyformer;

namespace {

const std::string kReverse = "data/models/reverse.safetensors";               // encoder_decoder, 2 + 2 layers
const std::string kReverseCausal = "data/models/reverse-causal.safetensors";  // decoder_only, 4 layers

// One hook call as a test sees it.
struct Event {
    std::string what;  // "mask CALL", "heads CALL" or the residual point's name
    int64_t first = 0;
    bool whole_pass = true;
};

// Records every hook call and changes nothing; `change` may change a residual point.
class Recorder final : public Hooks {
public:
    std::optional<Mask> attention_mask(const AttentionCallInfo& call, const Mask&) const override {
        events.push_back({"mask " + call.name, call.first, call.whole_pass});
        calls.push_back({call.name, call.batch, call.heads, call.queries, call.keys});
        return std::nullopt;
    }
    void attention_heads(const AttentionCallInfo& call, Tensor&) const override {
        events.push_back({"heads " + call.name, call.first, call.whole_pass});
    }
    void residual(const ResidualPoint& point, Tensor& x) const override {
        events.push_back({point.name, point.first, point.whole_pass});
        if (change) change(point.name, x);
    }

    struct CallShape {
        std::string name;
        int64_t batch, heads, queries, keys;
    };
    mutable std::vector<Event> events;
    mutable std::vector<CallShape> calls;
    std::function<void(const std::string&, Tensor&)> change;
};

std::vector<std::string> names_of(const std::vector<Event>& events) {
    std::vector<std::string> names;
    for (const Event& event : events) names.push_back(event.what);
    return names;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.numel(), b.data());
}

std::vector<int64_t> input_of(const Model& model, const std::string& text) {
    return model_input(model, ModelText(model).encode_input(text));
}

// A teacher-forced pass with everything recorded.
struct Pass {
    Trace trace{Trace::Detail::Everything};
    Tensor logits;
};

void run_pass(const Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target, Pass& pass) {
    pass.logits = teacher_forced_pass(model, input, target, &pass.trace).logits;
}

}  // namespace

TEST_CASE("hooks fire in the order the data flows, under the names of layers/hooks.h: encoder-decoder") {
    Model model = Model::load(kReverse);
    const std::vector<int64_t> input = input_of(model, "hello");            // <5 tokens>
    const std::vector<int64_t> target = ModelText(model).encode_output("olleh");
    Recorder recorder;
    const HookScope scope(model, &recorder);
    teacher_forced_pass(model, input, target);
    const std::vector<std::string> expected = {
        "src_embed.output",
        "mask encoder.0.self_attn", "heads encoder.0.self_attn", "encoder.0.self_attn.output",
        "encoder.0.after_self_attn", "encoder.0.ffn.output", "encoder.0.output",
        "mask encoder.1.self_attn", "heads encoder.1.self_attn", "encoder.1.self_attn.output",
        "encoder.1.after_self_attn", "encoder.1.ffn.output", "encoder.1.output",
        "tgt_embed.output",
        "mask decoder.0.self_attn", "heads decoder.0.self_attn", "decoder.0.self_attn.output",
        "decoder.0.after_self_attn",
        "mask decoder.0.cross_attn", "heads decoder.0.cross_attn", "decoder.0.cross_attn.output",
        "decoder.0.after_cross_attn", "decoder.0.ffn.output", "decoder.0.output",
        "mask decoder.1.self_attn", "heads decoder.1.self_attn", "decoder.1.self_attn.output",
        "decoder.1.after_self_attn",
        "mask decoder.1.cross_attn", "heads decoder.1.cross_attn", "decoder.1.cross_attn.output",
        "decoder.1.after_cross_attn", "decoder.1.ffn.output", "decoder.1.output",
    };
    CHECK(names_of(recorder.events) == expected);
    for (const Event& event : recorder.events) CHECK((event.first == 0 && event.whole_pass));  // a whole pass
    // What each attention call is told: B, H, L, S. Source: 5 tokens; decoder: <bos> + 5.
    REQUIRE(recorder.calls.size() == 6);
    const int64_t S = static_cast<int64_t>(input.size()), T = static_cast<int64_t>(target.size()) + 1;
    CHECK(recorder.calls[0].name == "encoder.0.self_attn");
    CHECK((recorder.calls[0].batch == 1 && recorder.calls[0].heads == 4));
    CHECK((recorder.calls[0].queries == S && recorder.calls[0].keys == S));
    CHECK(recorder.calls[3].name == "decoder.0.cross_attn");
    CHECK((recorder.calls[3].queries == T && recorder.calls[3].keys == S));
    CHECK((recorder.calls[4].queries == T && recorder.calls[4].keys == T));  // decoder.1.self_attn
}

TEST_CASE("hooks fire in the order the data flows: decoder-only, a whole pass and KV-cache steps") {
    Model model = Model::load(kReverseCausal);
    const std::vector<int64_t> input = input_of(model, "abc");  // <bos> a b c =
    Recorder recorder;
    const HookScope scope(model, &recorder);
    teacher_forced_pass(model, input, ModelText(model).encode_output("cba"));
    const std::vector<std::string> expected = {
        "embed.output",
        "mask layers.0.self_attn", "heads layers.0.self_attn", "layers.0.self_attn.output",
        "layers.0.after_self_attn", "layers.0.ffn.output", "layers.0.output",
        "mask layers.1.self_attn", "heads layers.1.self_attn", "layers.1.self_attn.output",
        "layers.1.after_self_attn", "layers.1.ffn.output", "layers.1.output",
        "mask layers.2.self_attn", "heads layers.2.self_attn", "layers.2.self_attn.output",
        "layers.2.after_self_attn", "layers.2.ffn.output", "layers.2.output",
        "mask layers.3.self_attn", "heads layers.3.self_attn", "layers.3.self_attn.output",
        "layers.3.after_self_attn", "layers.3.ffn.output", "layers.3.output",
    };
    CHECK(names_of(recorder.events) == expected);

    // Greedy decoding over the KV cache: the prompt once, then one position per
    // step; every pass calls the same points in the same order, told its first slot.
    recorder.events.clear();
    GenerationOptions options;
    options.max_new_tokens = 2;
    greedy_decode(model, {input}, options);
    const auto P = static_cast<int64_t>(input.size());
    REQUIRE(recorder.events.size() >= 2 * expected.size());
    const size_t passes = recorder.events.size() / expected.size();
    CHECK(recorder.events.size() == passes * expected.size());
    for (size_t pass = 0; pass < passes; ++pass) {
        CAPTURE(pass);
        for (size_t i = 0; i < expected.size(); ++i) {
            const Event& event = recorder.events[pass * expected.size() + i];
            CHECK(event.what == expected[i]);
            CHECK(!event.whole_pass);
            CHECK(event.first == (pass == 0 ? 0 : P + static_cast<int64_t>(pass) - 1));  // the prompt, then its slots
        }
    }
}

TEST_CASE("a hook that changes nothing leaves every output bit-identical") {
    // Exact by construction: with hooks set, a pass runs the same calls on the
    // same numbers — a hook that returns no mask leaves the model's mask object
    // in use, and one that writes nothing leaves z and the stream as they were.
    for (const std::string& path : {kReverse, kReverseCausal}) {
        CAPTURE(path);
        Model model = Model::load(path);
        const std::vector<int64_t> input = input_of(model, "kayak");
        const std::vector<int64_t> target = ModelText(model).encode_output("kayak");
        GenerationOptions options;
        options.record_logits = true;
        Pass plain;
        run_pass(model, input, target, plain);
        const Generation plain_greedy = greedy_decode(model, {input, input_of(model, "ab")}, options);
        Recorder recorder;
        const HookScope scope(model, &recorder);
        Pass hooked;
        run_pass(model, input, target, hooked);
        const Generation hooked_greedy = greedy_decode(model, {input, input_of(model, "ab")}, options);
        CHECK(!recorder.events.empty());
        CHECK(same_bits(hooked.logits, plain.logits));
        CHECK(hooked.trace.names() == plain.trace.names());
        for (const std::string& name : plain.trace.names()) {
            CAPTURE(name);
            if (plain.trace.has(name)) CHECK(same_bits(hooked.trace.tensor(name), plain.trace.tensor(name)));
        }
        for (const auto& [name, mask] : plain.trace.masks()) CHECK(hooked.trace.masks().at(name).values == mask.values);
        CHECK(hooked_greedy.tokens == plain_greedy.tokens);
        REQUIRE(hooked_greedy.step_logits.size() == plain_greedy.step_logits.size());
        for (size_t step = 0; step < plain_greedy.step_logits.size(); ++step)
            CHECK(same_bits(hooked_greedy.step_logits[step], plain_greedy.step_logits[step]));
    }
}

// One teacher-forced pass without hooks and one with a hook that changes the residual
// stream at `point` (and nothing else).
struct PlainAndHooked {
    Pass plain, hooked;
};

void run_plain_and_hooked(Model& model, const std::string& input_text, const std::string& target_text,
                          const std::string& point, const std::function<void(Tensor&)>& change, PlainAndHooked& out) {
    const std::vector<int64_t> input = input_of(model, input_text);
    const std::vector<int64_t> target = ModelText(model).encode_output(target_text);
    run_pass(model, input, target, out.plain);
    Recorder recorder;
    recorder.change = [&](const std::string& name, Tensor& x) {
        if (name == point) change(x);
    };
    const HookScope scope(model, &recorder);
    run_pass(model, input, target, out.hooked);
}

// In the trace's order, every tensor before `first_after` is the same bits in both passes and
// every one from it on differs, except those `unchanged_after` names (they do not read the
// stream after the point).
void check_changed_from(const PlainAndHooked& passes, const std::string& first_after,
                        const std::function<bool(const std::string&)>& unchanged_after) {
    bool after = false;
    for (const std::string& name : passes.plain.trace.names()) {
        CAPTURE(name);
        if (!passes.plain.trace.has(name)) continue;  // a mask
        if (name == first_after) after = true;
        const bool same = same_bits(passes.hooked.trace.tensor(name), passes.plain.trace.tensor(name));
        CHECK(same == (!after || unchanged_after(name)));
    }
    CHECK(after);
}

TEST_CASE("a residual hook changes what follows its point, and nothing before it") {
    SUBCASE("decoder-only: one position of the stream after layers.1's self-attention") {
        Model model = Model::load(kReverseCausal);
        const int64_t p = 3;  // a position in the middle
        PlainAndHooked passes;
        // One channel: the same number added to every channel of a row would be invisible
        // to the next LayerNorm (it subtracts the row's mean), up to rounding only.
        run_plain_and_hooked(model, "abcd", "dcba", "layers.1.after_self_attn",
                             [&](Tensor& x) { x.at({0, p, 0}) += 1.0f; }, passes);
        // Up to layers.1.self_attn.output the tensors come before the point; from
        // layers.1.ffn.hidden on, after it.
        check_changed_from(passes, "layers.1.ffn.hidden", [](const std::string&) { return false; });
        // Causal: the positions before p never see it, at any layer.
        const Tensor& plain = passes.plain.logits;
        const Tensor& hooked = passes.hooked.logits;
        const int64_t V = plain.dim(2), T = plain.dim(1);
        for (int64_t t = 0; t < T; ++t) {
            CAPTURE(t);
            const bool row_same = std::equal(plain.data() + t * V, plain.data() + (t + 1) * V, hooked.data() + t * V);
            CHECK(row_same == (t < p));
        }
    }
    SUBCASE("encoder-decoder: the stream after decoder.0's cross-attention leaves the encoder and decoder.0's attentions alone") {
        Model model = Model::load(kReverse);
        PlainAndHooked passes;
        run_plain_and_hooked(model, "hello", "olleh", "decoder.0.after_cross_attn",
                             [](Tensor& x) { x.at({0, 0, 0}) -= 2.0f; }, passes);  // <bos>'s position
        // After the point: the decoder reads the stream, the encoder's memory does not change.
        check_changed_from(passes, "decoder.0.ffn.hidden", [](const std::string& name) {
            return name.find("cross_attn.k") != std::string::npos || name.find("cross_attn.v") != std::string::npos;
        });
    }
    SUBCASE("the trace records a point's tensor after its hook: z before it, the output after") {
        Model model = Model::load(kReverseCausal);
        const std::vector<int64_t> input = input_of(model, "abc");
        const std::vector<int64_t> target = ModelText(model).encode_output("cba");
        Pass plain;
        run_pass(model, input, target, plain);
        Recorder recorder;
        recorder.change = [&](const std::string& point, Tensor& x) {
            if (point == "layers.2.self_attn.output" || point == "layers.3.output") x = Tensor(x.shape());
        };
        const HookScope scope(model, &recorder);
        Pass hooked;
        run_pass(model, input, target, hooked);
        CHECK(same_bits(hooked.trace.tensor("layers.2.self_attn.z"), plain.trace.tensor("layers.2.self_attn.z")));
        for (const char* name : {"layers.2.self_attn.output", "layers.3.output"}) {
            CAPTURE(name);
            const Tensor& recorded = hooked.trace.tensor(name);
            CHECK(std::all_of(recorded.data(), recorded.data() + recorded.numel(), [](float v) { return v == 0.0f; }));
            CHECK(!same_bits(recorded, plain.trace.tensor(name)));
        }
    }
}
