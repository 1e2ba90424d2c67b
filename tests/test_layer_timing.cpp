// Tests for tools/measure/layer_timing.*: `cost --measure` times the layer
// the model runs. A model's pass calls EncoderLayer::forward with no weights
// wanted (models/transformer.cpp), so its self-attention runs the path
// attention_options(padding) resolves to (layers/encoder_layer.h): the timed
// steps must give that layer's output bit for bit, on that path.

#include "engine/attention.h"
#include "engine/random.h"
#include "tests/run_cli.h"
#include "tools/measure/layer_timing.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace tinyformer;

TEST_CASE("the timed encoder layer is EncoderLayer::forward, bit for bit, on the path the model's layer takes") {
    const CostShape shape{2, 8, 2, 16};  // B=2, D=8, H=2, F=16
    Random random(3);
    const measure::RandomLayer layer = measure::make_random_layer(random, shape);
    const Tensor x = random.normal_tensor({2, 5, 8});  // [B, T, D]

    measure::PartTimes times;
    const measure::TimedForward timed = measure::layer_forward_timed(layer, x, times);
    const Tensor expected = layer.layer.forward(x, Mask(), Padding());
    REQUIRE(timed.output.shape() == expected.shape());
    // Exact by construction: layer_forward_timed makes EncoderLayer::forward's calls, in its order,
    // on the same numbers and shapes (tools/measure/layer_timing.cpp).
    CHECK(std::memcmp(timed.output.data(), expected.data(), sizeof(float) * static_cast<size_t>(expected.numel())) == 0);

    // The path the model's layer asks for: its options want no weights, so streaming (DESIGN: the default).
    CHECK(timed.path == resolve_path(attention_options(Padding()), "test"));
    CHECK(timed.path == AttentionPath::Streaming);
    // Every part was timed, the core apart from the pass.
    CHECK(times.self_attention > 0);
    CHECK(times.feed_forward > 0);
    CHECK(times.other > 0);
    CHECK(times.core > 0);
    CHECK(times.total() == times.self_attention + times.feed_forward + times.other);

    const measure::StackCheck check = measure::check_against_forward({layer, layer}, x);
    CHECK(check.largest_difference == 0.0);
    CHECK(check.path == AttentionPath::Streaming);
}

TEST_CASE("cost --measure says it timed EncoderLayer::forward's calls, with no difference, on the streaming path") {
    const test_helpers::CliRun run = test_helpers::run_tinyformer_ok(
        {"cost", "--d-model", "8", "--heads", "2", "--ff", "16", "--layers", "2", "--seq", "4", "--measure"});
    CHECK(run.out.find("(the timed steps are EncoderLayer::forward's calls, as the model runs them: largest "
                       "difference 0.0e+00; self-attention on the streaming path)") != std::string::npos);
    CHECK(run.out.find("= self-attention (all above)") != std::string::npos);
}
