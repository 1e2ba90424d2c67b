// Interventions (models/study/interventions.h): mask overrides and head ablation,
// in one module, through a model, in decoding, and on the command line.
#include "engine/io/json.h"
#include "engine/random.h"
#include "layers/multi_head_attention.h"
#include "models/decoding.h"
#include "models/study/forward.h"
#include "models/study/interventions.h"
#include "models/stepper.h"
#include "models/study/teacher_forcing.h"
#include "models/text.h"
#include "tests/greedy_margin.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "models/study/trace.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace tinyformer;

namespace {

// D = 2, H = 1 (Dh = 2), no biases, W_O = I:
//   W_Q = W_K = [[1, 0], [0, 0]]: q and k are [x0, 0], so score(l, s) = x_q[l][0] x_kv[s][0] / sqrt(2)
//   W_V = [[0, 1], [0, 0]]: v_s = [x_kv[s][1], 0], so output[l][0] = sum_s w(l, s) x_kv[s][1]
MultiHeadAttention hand_attention() {
    MultiHeadAttentionWeights w;
    w.in_proj_weight = Tensor({6, 2}, {1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
    w.out_proj_weight = Tensor({2, 2}, {1, 0, 0, 1});
    return MultiHeadAttention(w, 1, "hand", std::nullopt, std::nullopt, "hand");  // call name "hand"
}

MultiHeadAttentionWeights random_weights(Random& random, int64_t D) {
    return {random.normal_tensor({3 * D, D}, 0.4f), random.normal_tensor({3 * D}, 0.2f),
            random.normal_tensor({D, D}, 0.4f), random.normal_tensor({D}, 0.2f)};
}

// The interventions' hooks with mask cells of the call "hand" (hand_attention).
InterventionHooks hand_cells(std::vector<MaskCell> cells) { return InterventionHooks({{"hand", std::move(cells)}}, {}); }

// A hook of the test's own that zeroes heads of one call: z's columns h*Dh..(h+1)*Dh-1, written out.
class ZeroHeads final : public Hooks {
public:
    ZeroHeads(std::string call, std::vector<int64_t> heads) : call_(std::move(call)), heads_(std::move(heads)) {}
    void attention_heads(const AttentionCallInfo& call, Tensor& z) const override {
        if (call.name != call_) return;
        const int64_t Dh = z.dim(2) / call.heads;
        for (int64_t head : heads_)
            for (int64_t b = 0; b < z.dim(0); ++b)
                for (int64_t l = 0; l < z.dim(1); ++l)
                    for (int64_t c = head * Dh; c < (head + 1) * Dh; ++c) z.at({b, l, c}) = 0.0f;
    }

private:
    std::string call_;
    std::vector<int64_t> heads_;
};

const std::string kReverse = "data/models/reverse.safetensors";
const std::string kReverseCausal = "data/models/reverse-causal.safetensors";

std::vector<int64_t> input_of(const Model& model, const std::string& text) {
    return model_input(model, ModelText(model).encode_input(text));
}

Tensor logits_of(const Model& model, const std::vector<int64_t>& input, const std::vector<int64_t>& target) {
    return teacher_forced_pass(model, input, target).logits;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.numel(), b.data());
}

// The argmax of logits row `row` of [1, n, V].
int64_t argmax_at(const Tensor& logits, int64_t row) {
    const int64_t V = logits.dim(2);
    const float* r = logits.data() + row * V;
    return std::max_element(r, r + V) - r;
}

// Greedy's tokens are the argmax path: in one teacher-forced pass over them,
// each prediction row's argmax is the next token, and the last one is <eos>
// (causality makes each row depend only on the tokens before it). Greedy
// stepped with the KV cache, the pass is one whole-sequence pass: their logits
// are within kStepsAgainstPass of each other (checked here), not the same
// floats, so each argmax is compared only where the pass's top-2 margin is
// above twice that (tests/greedy_margin.h); the checks stop at a near tie.
constexpr test_helpers::LogitBound kStepsAgainstPass{1e-5, 1e-5};

std::vector<int64_t> greedy_tokens(const Model& model, const std::vector<int64_t>& input, Generation* recorded) {
    GenerationOptions options;
    options.record_logits = true;
    *recorded = greedy_decode(model, {input}, options);
    return recorded->tokens[0];
}

// Each greedy step's token is the teacher-forced pass's argmax at its position,
// where the top-2 gap decides it. The pass's inputs are the greedy tokens
// themselves, so a near tie at one step changes nothing at the next: a tied
// step is skipped, not the rest. At least half the steps must be compared.
void check_argmax_path(const Model& model, const std::vector<int64_t>& input, const Generation& greedy) {
    const std::vector<int64_t>& tokens = greedy.tokens[0];
    size_t compared = 0;
    const TeacherForced pass = teacher_forced_pass(model, input, tokens);
    const int64_t V = pass.logits.dim(2);
    for (size_t t = 0; t <= tokens.size(); ++t) {
        CAPTURE(t);
        const int64_t expected = t < tokens.size() ? tokens[t] : model.config.eos_id;
        const float* row = pass.logits.data() + (pass.first_prediction + static_cast<int64_t>(t)) * V;
        REQUIRE(t < greedy.step_logits.size());
        const float* stepped = greedy.step_logits[t].data();
        double difference = 0;
        for (int64_t i = 0; i < V; ++i) difference = std::max(difference, static_cast<double>(std::fabs(stepped[i] - row[i])));
        const double leader = *std::max_element(row, row + V);
        CHECK(difference <= kStepsAgainstPass.at(leader));
        if (!(test_helpers::top_two_gap(row, V) > 2 * kStepsAgainstPass.at(leader))) {
            MESSAGE("a near tie at step ", t, ": its token is not compared");
            continue;
        }
        CHECK(argmax_at(pass.logits, pass.first_prediction + static_cast<int64_t>(t)) == expected);
        ++compared;
    }
    CHECK(2 * compared >= tokens.size() + 1);
}

bool untouched(const Model& model) { return model.hooks() == nullptr; }

std::string error_of(const std::function<void()>& run) {
    try {
        run();
    } catch (const Error& error) {
        return error.message();
    }
    return "";
}

}  // namespace

TEST_CASE("interventions: blocking one cell renormalises its row over the other keys") {
    const MultiHeadAttention attention = hand_attention();
    // One query x_q = [sqrt 2, 0]; keys x_kv[s] = [a_s, v_s] with a = 0, ln 2, ln 3 and v = 10, 20, 40.
    // score(0, s) = sqrt2 a_s / sqrt2 = a_s = 0, ln 2, ln 3; exp = 1, 2, 3 (sum 6):
    //   weights 1/6, 2/6, 3/6;  output = (10 + 2*20 + 3*40) / 6 = 170/6
    // Blocking key 2: exp = 1, 2 (sum 3): weights 1/3, 2/3, 0;  output = (10 + 2*20) / 3 = 50/3
    const Tensor x_q({1, 1, 2}, {std::sqrt(2.0f), 0});
    const Tensor x_kv({1, 3, 2}, {0, 10, std::log(2.0f), 20, std::log(3.0f), 40});
    AttentionOptions options;
    options.want_weights = true;
    const AttentionResult plain = attention.forward(x_q, x_kv, Mask(), options);
    CHECK(plain.weights.data()[0] == doctest::Approx(1.0 / 6));
    CHECK(plain.weights.data()[2] == doctest::Approx(3.0 / 6));
    CHECK(plain.output.data()[0] == doctest::Approx(170.0 / 6));

    MultiHeadAttention blocked = hand_attention();
    const InterventionHooks cells = hand_cells({{0, 2, false}});
    blocked.set_hooks(&cells);
    const AttentionResult result = blocked.forward(x_q, x_kv, Mask(), options);
    CHECK(result.weights.data()[0] == doctest::Approx(1.0 / 3));
    CHECK(result.weights.data()[1] == doctest::Approx(2.0 / 3));
    CHECK(result.weights.data()[2] == 0.0f);
    CHECK(result.output.data()[0] == doctest::Approx(50.0 / 3));
    CHECK(result.output.data()[1] == 0.0f);

    AttentionOptions streaming;  // no weights: the streaming path, which skips what the mask blocks
    streaming.path = AttentionPath::Streaming;
    CHECK(blocked.forward(x_q, x_kv, Mask(), streaming).output.data()[0] == doctest::Approx(50.0 / 3));

    // Reset: the model's mask again, bit for bit (exact by construction: the same calls on the same numbers).
    blocked.set_hooks(nullptr);
    CHECK(same_bits(blocked.forward(x_q, x_kv, Mask(), options).output, plain.output));
}

TEST_CASE("interventions: zeroing a head equals removing its columns of W_O; its weights are still returned") {
    const int64_t B = 2, L = 3, S = 4, D = 12, H = 3, Dh = D / H;
    Random random(13);
    const MultiHeadAttentionWeights w = random_weights(random, D);
    const Tensor x_q = random.normal_tensor({B, L, D});
    const Tensor x_kv = random.normal_tensor({B, S, D});
    AttentionOptions options;
    options.want_weights = true;
    const AttentionResult full = MultiHeadAttention(w, H).forward(x_q, x_kv, Mask(), options);
    for (const std::vector<int64_t>& heads : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {0, 1, 2}}) {
        CAPTURE(heads.size());
        MultiHeadAttention zeroed(w, H, "", std::nullopt, std::nullopt, "m");
        const InterventionHooks hooks({}, {{"m", heads}});
        zeroed.set_hooks(&hooks);
        // The same module without the heads: Concat(heads) W_O^T with W_O's columns h*Dh..(h+1)*Dh set to 0.
        MultiHeadAttentionWeights without = w;
        for (int64_t head : heads)
            for (int64_t row = 0; row < D; ++row)
                for (int64_t c = head * Dh; c < (head + 1) * Dh; ++c) without.out_proj_weight.at({row, c}) = 0.0f;
        for (AttentionPath path : {AttentionPath::Materialized, AttentionPath::Streaming}) {
            CAPTURE(path_name(path));
            AttentionOptions path_options;
            path_options.path = path;
            path_options.want_weights = path == AttentionPath::Materialized;
            const AttentionResult result = zeroed.forward(x_q, x_kv, Mask(), path_options);
            const AttentionResult expected = MultiHeadAttention(without, H).forward(x_q, x_kv, Mask(), path_options);
            for (int64_t i = 0; i < expected.output.numel(); ++i)
                CHECK(std::fabs(result.output.data()[i] - expected.output.data()[i]) <= 1e-5f);
            // Exact by construction: zeroing acts after the weights, which come from the same calls.
            if (path_options.want_weights) CHECK(result.weights.values() == full.weights.values());
        }
    }
    // Every head zeroed: only b_O is left, at every query.
    MultiHeadAttention silent(w, H, "", std::nullopt, std::nullopt, "m");
    const InterventionHooks every_head({}, {{"m", {0, 1, 2}}});
    silent.set_hooks(&every_head);
    const Tensor output = silent.forward(x_q, x_kv).output;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t c = 0; c < D; ++c)  // exactly: a product of zeros is 0, and b + 0 is b
                CHECK(output.at({b, l, c}) == w.out_proj_bias.at({c}));
    // No hooks: the module as it was.
    silent.set_hooks(nullptr);  // exact by construction: the same calls on the same numbers
    CHECK(silent.forward(x_q, x_kv).output.values() == MultiHeadAttention(w, H).forward(x_q, x_kv).output.values());
}

TEST_CASE("interventions: Mask::with_cells keeps the key ranges right, holes included") {
    // causal(4) with [3, 1] blocked: row 3 allows keys 0, 2, 3 (a hole at 1); [0, 2] allowed: row 0 allows 0 and 2.
    const Mask mask = Mask::causal(4).with_cells(2, 4, 4, {{3, 1, false}, {0, 2, true}});
    CHECK(mask.shape() == Shape{2, 1, 4, 4});
    for (int64_t b = 0; b < 2; ++b) {
        CHECK(!mask.allows(b, 0, 3, 1));
        CHECK(mask.allows(b, 0, 3, 2));
        const Mask::KeyRange row3 = mask.key_range(b, 0, 3), row0 = mask.key_range(b, 0, 0), row1 = mask.key_range(b, 0, 1);
        CHECK((row3.first == 0 && row3.last == 3 && !row3.contiguous));
        CHECK((row0.first == 0 && row0.last == 2 && !row0.contiguous));
        CHECK((row1.first == 0 && row1.last == 1 && row1.contiguous));
    }
    CHECK(error_of([] { Mask::causal(4).with_cells(1, 4, 4, {{4, 0, true}}); }).find("[4, 0] is outside [L,S] = [4,4]") !=
          std::string::npos);
}

TEST_CASE("interventions: allowing a causal-blocked future key lets the query attend it") {
    MultiHeadAttention attention = hand_attention();
    // Self-attention over x = [[0, 10], [1, 20]] with a causal mask. Query 0 has x0 = 0, so its
    // scores are 0 for every key: causal, it sees key 0 alone (output 10); with [0, 1] allowed,
    // weights 1/2, 1/2 (output (10 + 20) / 2 = 15). Query 1 sees both keys either way.
    const Tensor x({1, 2, 2}, {0, 10, 1, 20});
    AttentionOptions options;
    options.want_weights = true;
    const AttentionResult causal = attention.forward(x, x, Mask::causal(2), options);
    CHECK(causal.output.data()[0] == doctest::Approx(10.0));
    const InterventionHooks cells = hand_cells({{0, 1, true}});
    attention.set_hooks(&cells);
    const AttentionResult allowed = attention.forward(x, x, Mask::causal(2), options);
    CHECK(allowed.weights.data()[0] == doctest::Approx(0.5));
    CHECK(allowed.weights.data()[1] == doctest::Approx(0.5));
    CHECK(allowed.output.data()[0] == doctest::Approx(15.0));
    // Query 1's row: the same numbers, exactly. The same calls in the same shapes; its scores, mask
    // row and softmax are the same floats, and a product's row depends only on its own row's inputs.
    CHECK(allowed.output.data()[2] == causal.output.data()[2]);
    CHECK(allowed.output.data()[3] == causal.output.data()[3]);
}

TEST_CASE("interventions: an override equal to the mask changes nothing, bit for bit, and the trace shows the mask used") {
    Model model = Model::load(kReverse);
    const std::vector<int64_t> input = input_of(model, "hello");
    const std::vector<int64_t> target = ModelText(model).encode_output("olleh");
    const Tensor plain = logits_of(model, input, target);
    Interventions same;
    // decoder self: causal (query 1 may not see key 3, may see key 0); cross: every source key.
    same.mask_overrides["decoder.0.self_attn"] = {{1, 3, false}, {2, 0, true}};
    same.mask_overrides["decoder.1.cross_attn"] = {{0, 4, true}};
    {
        // Exact by construction: the overridden mask allows the same cells, so the same key
        // ranges and tiles are computed by the same calls on the same numbers.
        const AppliedInterventions applied(model, same);
        CHECK(same_bits(logits_of(model, input, target), plain));
    }
    Interventions blocking;
    blocking.mask_overrides["decoder.0.self_attn"] = {{3, 1, false}};
    const AppliedInterventions applied(model, blocking);
    Trace trace(Trace::Detail::Everything);
    const TeacherForced pass = teacher_forced_pass(model, input, target, &trace);
    CHECK(!same_bits(pass.logits, plain));
    const BoolTensor& mask = trace.masks().at("decoder.0.self_attn.mask");  // [1, T, T]
    const int64_t T = mask.shape[2];
    CHECK(mask.values[static_cast<size_t>(3 * T + 1)] == 0);
    CHECK(mask.values[static_cast<size_t>(3 * T + 0)] == 1);
    const Tensor& weights = trace.tensor("decoder.0.self_attn.weights");  // [1, H, T, T]
    for (int64_t h = 0; h < weights.dim(1); ++h) CHECK(weights.data()[(h * T + 3) * T + 1] == 0.0f);
}

TEST_CASE("interventions: ablation through Interventions equals zeroing the heads' columns of z, and the model is restored") {
    Model model = Model::load(kReverse);
    const std::vector<int64_t> input = input_of(model, "hello");
    const std::vector<int64_t> target = ModelText(model).encode_output("olleh");
    const Tensor plain = logits_of(model, input, target);
    const ZeroHeads zero_heads("decoder.1.cross_attn", {1, 3});
    model.set_hooks(&zero_heads);
    const Tensor direct = logits_of(model, input, target);
    model.set_hooks(nullptr);
    CHECK(!same_bits(direct, plain));
    // Exact comparisons below by construction: Interventions zeroes the same columns of the same
    // call's z, and a model without hooks runs the same calls on the same numbers as before.
    Interventions ablate;
    ablate.ablate = {{"decoder.1.cross_attn", 3}, {"decoder.1.cross_attn", 1}};
    {
        const AppliedInterventions applied(model, ablate);
        CHECK(same_bits(logits_of(model, input, target), direct));
    }
    CHECK(untouched(model));
    CHECK(same_bits(logits_of(model, input, target), plain));

    SUBCASE("they replace earlier hooks, which come back after") {
        const ZeroHeads earlier("encoder.0.self_attn", {2});
        const HookScope scope(model, &earlier);
        {
            const AppliedInterventions applied(model, ablate);
            CHECK(model.hooks() != &earlier);
            CHECK(same_bits(logits_of(model, input, target), direct));
        }
        CHECK(model.hooks() == &earlier);
    }
    SUBCASE("restored after an Error in the scope, bit for bit") {
        Interventions outside;
        outside.mask_overrides["decoder.0.self_attn"] = {{0, 0, false}, {40, 2, true}};
        outside.ablate = {{"encoder.1.self_attn", 0}};
        const std::string message = error_of([&] {
            const AppliedInterventions applied(model, outside);
            logits_of(model, input, target);
        });
        CHECK(message.find("transformer.decoder.layers.0.self_attn") != std::string::npos);
        CHECK(message.find("[40, 2]") != std::string::npos);
        CHECK(message.find("[L,S] = [6,6]") != std::string::npos);
        CHECK(untouched(model));
        CHECK(same_bits(logits_of(model, input, target), plain));
    }
    SUBCASE("a refused intervention changes no module") {
        Interventions bad = ablate;
        bad.ablate.emplace_back("decoder.0.self_attn", 4);  // heads 0..3
        const ZeroHeads earlier("decoder.0.self_attn", {0});
        const HookScope scope(model, &earlier);
        CHECK(error_of([&] { AppliedInterventions applied(model, bad); }).find("heads 0..3") != std::string::npos);
        CHECK(model.hooks() == &earlier);
    }
}

TEST_CASE("interventions: greedy decoding over the KV cache honours an ablation and a mask override") {
    Model model = Model::load(kReverse);
    bool masking = false;
    Interventions interventions;
    SUBCASE("ablation") { interventions.ablate = {{"decoder.1.cross_attn", 0}, {"decoder.0.cross_attn", 2}}; }
    SUBCASE("mask override: decoder query 2 may see only the source's first token") { masking = true; }
    int changed = 0;
    for (const char* text : {"hello", "abcdef", "tinyformer", "kayak"}) {
        CAPTURE(text);
        const std::vector<int64_t> input = input_of(model, text);
        if (masking)
            for (const char* call : {"decoder.0.cross_attn", "decoder.1.cross_attn"}) {
                std::vector<MaskCell>& cells = interventions.mask_overrides[call];
                cells.clear();
                for (int64_t key = 1; key < static_cast<int64_t>(input.size()); ++key) cells.push_back({2, key, false});
            }
        Generation plain_greedy, intervened_greedy;
        const std::vector<int64_t> plain = greedy_tokens(model, input, &plain_greedy);
        std::vector<int64_t> intervened;
        {
            const AppliedInterventions applied(model, interventions);
            intervened = greedy_tokens(model, input, &intervened_greedy);
            check_argmax_path(model, input, intervened_greedy);
        }
        check_argmax_path(model, input, plain_greedy);
        changed += intervened != plain;
    }
    CHECK(changed > 0);  // the interventions matter for some input
}

TEST_CASE("interventions: a decoder-only model's greedy decoding honours them too (prompt and steps)") {
    Model model = Model::load(kReverseCausal);
    Interventions interventions;
    SUBCASE("ablation") { interventions.ablate = {{"layers.1.self_attn", 0}, {"layers.1.self_attn", 1}}; }
    SUBCASE("mask override: query 8 (a prompt query for a long prompt, else a decoding step's) may not see keys 1..4") {
        for (const char* call : {"layers.0.self_attn", "layers.1.self_attn"})
            for (int64_t key = 1; key <= 4; ++key) interventions.mask_overrides[call].push_back({8, key, false});
    }
    int changed = 0;
    for (const char* text : {"hello", "abcdef", "kayak", "tinyformer"}) {
        CAPTURE(text);
        const std::vector<int64_t> input = input_of(model, text);
        const std::vector<int64_t> plain = greedy_decode(model, {input}).tokens[0];
        const AppliedInterventions applied(model, interventions);
        Generation recorded;
        const std::vector<int64_t> intervened = greedy_tokens(model, input, &recorded);
        check_argmax_path(model, input, recorded);
        changed += intervened != plain;
    }
    CHECK(changed > 0);
}

TEST_CASE("interventions: the stepper's KV-cache and recompute steps give the same logits with an ablation") {
    Model model = Model::load(kReverse);
    Interventions interventions;
    interventions.ablate = {{"decoder.0.self_attn", 1}, {"encoder.1.self_attn", 3}};
    const AppliedInterventions applied(model, interventions);
    const std::vector<std::vector<int64_t>> inputs = {input_of(model, "hello"), input_of(model, "abc")};
    auto cached = make_stepper(model, inputs, StepMode::KvCache, 8);
    auto recomputed = make_stepper(model, inputs, StepMode::Recompute, 8);
    for (int step = 0; step < 4; ++step) {
        const Tensor a = cached->next_logits(), b = recomputed->next_logits();
        REQUIRE(a.shape() == b.shape());
        for (int64_t i = 0; i < a.numel(); ++i) CHECK(a.data()[i] == doctest::Approx(b.data()[i]).epsilon(1e-4));
        std::vector<int64_t> next;
        for (int64_t row = 0; row < a.dim(0); ++row) next.push_back(argmax_at(Tensor({1, 1, a.dim(1)}, std::vector<float>(a.data() + row * a.dim(1), a.data() + (row + 1) * a.dim(1))), 0));
        cached->append(next);
        recomputed->append(next);
    }
}

TEST_CASE("interventions: refusals name the call, the head, the cell and the JSON") {
    Model model = Model::load(kReverse);
    Interventions unknown;
    unknown.ablate = {{"decoder.7.self_attn", 0}};
    const std::string names = error_of([&] { AppliedInterventions applied(model, unknown); });
    CHECK(names.find("\"decoder.7.self_attn\"") != std::string::npos);
    CHECK(names.find("encoder.0.self_attn, encoder.1.self_attn, decoder.0.self_attn, decoder.0.cross_attn, "
                     "decoder.1.self_attn, decoder.1.cross_attn") != std::string::npos);
    Interventions unknown_cells;
    unknown_cells.mask_overrides["attention.decoder.0.self"] = {{0, 0, false}};  // forward's old output name, not a call's
    CHECK(error_of([&] { AppliedInterventions applied(model, unknown_cells); }).find("no attention call named") !=
          std::string::npos);
    Interventions head;
    head.ablate = {{"encoder.0.self_attn", 4}};
    CHECK(error_of([&] { AppliedInterventions applied(model, head); }).find("cannot ablate head 4") != std::string::npos);
    Interventions negative;
    negative.mask_overrides["encoder.0.self_attn"] = {{-1, 0, false}};
    CHECK(error_of([&] { AppliedInterventions applied(model, negative); }).find(">= 0, got [-1, 0]") != std::string::npos);
    CHECK(untouched(model));
    MultiHeadAttention attention = hand_attention();
    const InterventionHooks cells = hand_cells({{1, 0, false}});
    attention.set_hooks(&cells);  // query 1 of a call with one query: whole pass, an Error
    const std::string outside = error_of([&] { attention.forward(Tensor({1, 1, 2}), Tensor({1, 3, 2})); });
    CHECK(outside == "hand: the mask override [1, 0] is outside this call's [L,S] = [1,3]");

    const auto parsed = [](const std::string& text) {
        return error_of([&] { parse_interventions_file(parse_json(text, 3, "f.json"), "--overrides f.json"); });
    };
    CHECK(parsed(R"({"mask_overrides": {"decoder.0.self_attn": [[2, 4, 1]]}, "ablate": [["x", 0]]})").empty());
    CHECK(parsed(R"([])").find("must be a JSON object") != std::string::npos);
    CHECK(parsed(R"({"ablate": [["x", 0]], "extra": 1})").find("unknown key \"extra\"") != std::string::npos);
    CHECK(parsed(R"({"mask_overrides": [[1, 2, 0]]})").find("mask_overrides must be an object") != std::string::npos);
    CHECK(parsed(R"({"mask_overrides": {"a": [[1, 2]]}})").find("mask_overrides[\"a\"][0] must be [query, key, allowed]") !=
          std::string::npos);
    CHECK(parsed(R"({"mask_overrides": {"a": [[-1, 2, 0]]}})").find("the query must be >= 0, got -1") != std::string::npos);
    CHECK(parsed(R"({"mask_overrides": {"a": [[1, 2.5, 0]]}})").find("the key must be a whole number >= 0, got 2.5") !=
          std::string::npos);
    CHECK(parsed(R"({"mask_overrides": {"a": [[1, 2, 2]]}})").find("allowed must be 0, 1, false or true, got 2") !=
          std::string::npos);
    CHECK(parsed(R"({"ablate": [[0, 1]]})").find("ablate[0] must be [\"call\", head]") != std::string::npos);
    CHECK(parsed(R"({"ablate": [["a", -3]]})").find("ablate[0]: the head must be >= 0, got -3") != std::string::npos);
    CHECK(parsed(R"({"ablate": {"a": 1}})").find("ablate must be a list") != std::string::npos);
    // A request's other keys are its own: parse_interventions leaves them alone.
    const Interventions request =
        parse_interventions(nlohmann::json::parse(R"({"text": "hi", "mask_overrides": {"a": [[1, 2, true]]}})"), "request");
    REQUIRE(request.mask_overrides.at("a").size() == 1);
    CHECK(request.mask_overrides.at("a")[0] == MaskCell{1, 2, true});
    CHECK(parse_interventions(nlohmann::json::object(), "request").empty());
}

TEST_CASE("interventions, CLI: --overrides FILE equals the same cells as flags; run --ablate changes an output") {
    test_helpers::TempDirectory dir;
    const std::string model = "data/reference/ed_post_relu_sin.model.safetensors";
    const std::string inputs = "data/reference/ed_post_relu_sin.inputs.safetensors";
    std::ofstream(dir.file("o.json")) << R"({"mask_overrides": {"decoder.0.self_attn": [[2, 0, 0], [3, 1, 0]],
                                                                  "encoder.0.self_attn": [[1, 1, 0]]},
                                             "ablate": [["decoder.0.cross_attn", 1]]})";
    using test_helpers::run_tinyformer_ok;
    run_tinyformer_ok({"forward", model, "--inputs", inputs, "--output", dir.file("plain.safetensors")});
    run_tinyformer_ok({"forward", model, "--inputs", inputs, "--output", dir.file("file.safetensors"), "--overrides",
                       dir.file("o.json")});
    run_tinyformer_ok({"forward", model, "--inputs", inputs, "--output", dir.file("flags.safetensors"), "--block",
                       "decoder.0.self_attn:2:0,decoder.0.self_attn:3:1,encoder.0.self_attn:1:1", "--ablate",
                       "decoder.0.cross_attn:1"});
    const std::string plain = test_helpers::read_file(dir.file("plain.safetensors"));
    const std::string file = test_helpers::read_file(dir.file("file.safetensors"));
    CHECK(file == test_helpers::read_file(dir.file("flags.safetensors")));
    CHECK(file != plain);

    const std::string plain_run = run_tinyformer_ok({"run", kReverse, "kayak", "abcdef"}).out;
    CHECK(plain_run == "kayak\nfedcba\n");
    const std::string ablated = run_tinyformer_ok({"run", kReverse, "kayak", "abcdef", "--ablate",
                                                   "decoder.1.cross_attn:0,decoder.0.cross_attn:2"}).out;
    CHECK(ablated != plain_run);
}

TEST_CASE("interventions, CLI: run decodes each input alone under mask overrides; a repeated flag is a usage error") {
    using test_helpers::run_tinyformer;
    using test_helpers::run_tinyformer_ok;
    // Query 5 (the second generated token after <bos> a b c =) may not read key 3 ('c') in any layer.
    std::string cells;
    for (int layer = 0; layer < 4; ++layer) {
        if (layer > 0) cells += ',';
        cells.append("layers.").append(std::to_string(layer)).append(".self_attn:5:3");
    }
    const std::string& model = kReverseCausal;
    const std::string alone = run_tinyformer_ok({"run", model, "abc", "--block", cells}).out;
    // Batched with a longer input, "abc" is right-padded and its tokens would sit at other
    // slots; decoded alone, its line is the same.
    const std::string batched = run_tinyformer_ok({"run", model, "abcdefg", "abc", "--block", cells}).out;
    CHECK(batched.substr(batched.find('\n') + 1) == alone);
    CHECK(alone != run_tinyformer_ok({"run", model, "abc"}).out);  // the cell does change this input's output
    const auto repeated = run_tinyformer({"run", kReverse, "hello", "--block", "decoder.0.self_attn:1:0", "--block",
                                          "decoder.0.self_attn:2:0"});
    CHECK(repeated.status == 2);
    CHECK(repeated.err.find("--block is given twice") != std::string::npos);
}
