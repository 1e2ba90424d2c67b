// Model-level properties that follow from the masks and the positions
// (lesson 10.3, section 9), checked on whole models rather than on one layer:
//   - an encoder-only model without positions is permutation-equivariant:
//     permuting the tokens permutes the outputs the same way;
//   - with positions (sinusoidal, learned) it is not, and neither is a
//     causal model without positions: the mask itself is positional;
//   - a causal model's output at position t ignores every token after t;
//   - a prefix-LM model's outputs inside the prefix do depend on later prefix
//     tokens, and still ignore the tokens after the prefix.
// The models are small random-weight checkpoints written here with
// write_safetensors (FORMAT.md), so that only the property under test differs
// between them, plus PyTorch-made references (data/reference/) and the
// trained toy models (data/models/).

#include "engine/random.h"
#include "engine/io/safetensors.h"
#include "models/transformer.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace tinyformer;
using test_helpers::TempDirectory;

namespace {

struct RandomModel {
    std::string arch = "encoder_only";       // or "decoder_only"
    std::string attention = "bidirectional";  // "causal", "prefix_lm"
    std::string pos_encoding = "none";        // "sinusoidal", "learned"
    bool norm_first = false;
    uint64_t seed = 1;
};

constexpr int64_t kD = 16, kH = 4, kF = 32, kV = 12, kLayers = 2, kMaxLen = 16;

// A random single-stack checkpoint (FORMAT.md section 1). The weights depend
// only on the seed: two models with the same seed differ only in the config.
std::string write_random_model(const TempDirectory& dir, const RandomModel& spec) {
    Random random(spec.seed);
    std::vector<TensorToWrite> tensors;
    auto add = [&](const std::string& name, Shape shape, float stddev, float mean = 0.0f) {
        Tensor t = random.normal_tensor(std::move(shape), stddev);
        for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] += mean;
        tensors.push_back(f32_tensor(name, t));
    };
    add("embed.weight", {kV, kD}, 1.0f);
    const Tensor learned = random.normal_tensor({kMaxLen, kD}, 1.0f);  // drawn always, stored when used
    if (spec.pos_encoding == "learned") tensors.push_back(f32_tensor("pos_embed.weight", learned));
    for (int64_t i = 0; i < kLayers; ++i) {
        const std::string layer = "transformer.layers." + std::to_string(i);
        add(layer + ".self_attn.in_proj_weight", {3 * kD, kD}, 0.3f);
        add(layer + ".self_attn.in_proj_bias", {3 * kD}, 0.1f);
        add(layer + ".self_attn.out_proj.weight", {kD, kD}, 0.3f);
        add(layer + ".self_attn.out_proj.bias", {kD}, 0.1f);
        add(layer + ".linear1.weight", {kF, kD}, 0.3f);
        add(layer + ".linear1.bias", {kF}, 0.1f);
        add(layer + ".linear2.weight", {kD, kF}, 0.3f);
        add(layer + ".linear2.bias", {kD}, 0.1f);
        for (const char* norm : {".norm1", ".norm2"}) {
            add(layer + norm + ".weight", {kD}, 0.1f, 1.0f);
            add(layer + norm + ".bias", {kD}, 0.1f);
        }
    }
    add("transformer.norm.weight", {kD}, 0.1f, 1.0f);
    add("transformer.norm.bias", {kD}, 0.1f);
    add("lm_head.weight", {kV, kD}, 0.3f);
    add("lm_head.bias", {kV}, 0.1f);
    const nlohmann::json config = {
        {"format", "tinyformer/1"}, {"arch", spec.arch},        {"d_model", kD},
        {"nhead", kH},              {"dim_feedforward", kF},    {"num_layers", kLayers},
        {"activation", "gelu"},     {"norm_first", spec.norm_first}, {"layer_norm_eps", 1e-5},
        {"final_norm", true},       {"vocab_size", kV},         {"max_len", kMaxLen},
        {"pos_encoding", spec.pos_encoding}, {"embed_scale", false}, {"attention", spec.attention},
    };
    std::string name = spec.arch;
    name.append("-").append(spec.attention).append("-").append(spec.pos_encoding).append(".safetensors");
    const std::string path = dir.file(name);
    write_safetensors(path, tensors, {{"config", config.dump()}});
    return path;
}

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

// Logits [1, T, V] of a single-stack model on one unpadded row.
Tensor logits_of(const Model& model, const std::vector<int64_t>& ids, std::vector<int64_t> prefix = {}) {
    return model.single_stack->forward(one_row(ids), Padding(), prefix);
}

// max over t, v of |a[perm[t]] - b[t]|: how far b is from a permuted by `perm`.
float distance_from_permuted(const Tensor& a, const Tensor& b, const std::vector<int64_t>& perm) {
    const int64_t V = a.dim(2);
    float worst = 0.0f;
    for (size_t t = 0; t < perm.size(); ++t)
        for (int64_t v = 0; v < V; ++v)
            worst = std::max(worst, std::fabs(a.at({0, perm[t], v}) - b.at({0, static_cast<int64_t>(t), v})));
    return worst;
}

// The largest |a - b| over rows [first, last) of two [1, T, V] logits.
float rows_distance(const Tensor& a, const Tensor& b, int64_t first, int64_t last) {
    float worst = 0.0f;
    for (int64_t t = first; t < last; ++t)
        for (int64_t v = 0; v < a.dim(2); ++v) worst = std::max(worst, std::fabs(a.at({0, t, v}) - b.at({0, t, v})));
    return worst;
}

// ids permuted: out[t] = ids[perm[t]].
std::vector<int64_t> permuted(const std::vector<int64_t>& ids, const std::vector<int64_t>& perm) {
    std::vector<int64_t> out;
    for (int64_t from : perm) out.push_back(ids[static_cast<size_t>(from)]);
    return out;
}

// A few permutations of 0..n-1: a reversal, a rotation and random shuffles.
std::vector<std::vector<int64_t>> permutations(int64_t n, uint64_t seed) {
    std::vector<int64_t> identity(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) identity[static_cast<size_t>(i)] = i;
    std::vector<std::vector<int64_t>> all = {std::vector<int64_t>(identity.rbegin(), identity.rend()), identity};
    std::rotate(all[1].begin(), all[1].begin() + 1, all[1].end());
    Random random(seed);
    for (int k = 0; k < 3; ++k) {
        std::vector<int64_t> shuffle = identity;
        for (int64_t i = n - 1; i > 0; --i)
            std::swap(shuffle[static_cast<size_t>(i)], shuffle[static_cast<size_t>(random.uniform_int(0, i))]);
        all.push_back(shuffle);
    }
    return all;
}

const std::vector<int64_t> kIds = {3, 7, 4, 11, 5, 9, 6, 10, 8};  // distinct: a permutation really moves tokens

}  // namespace

TEST_CASE("An encoder-only model without positions is permutation-equivariant: permuting tokens permutes outputs") {
    TempDirectory dir;
    for (bool norm_first : {false, true}) {
        CAPTURE(norm_first);
        const Model model = Model::load(write_random_model(dir, {"encoder_only", "bidirectional", "none", norm_first, 5}));
        const Tensor base = logits_of(model, kIds);
        for (const std::vector<int64_t>& perm : permutations(static_cast<int64_t>(kIds.size()), 7)) {
            CAPTURE(perm);
            // Only the order of sums over keys changes: equal to float rounding.
            CHECK(distance_from_permuted(base, logits_of(model, permuted(kIds, perm)), perm) <= 1e-5f);
        }
    }
    SUBCASE("also the PyTorch-made reference eo_post_gelu_none_pad (pos_encoding none, max_len 4)") {
        const Model reference = Model::load("data/reference/eo_post_gelu_none_pad.model.safetensors");
        REQUIRE(reference.config.pos_encoding == PositionalEncoding::None);
        const std::vector<int64_t> ids = {4, 9, 2, 6};
        const Tensor base = logits_of(reference, ids);
        for (const std::vector<int64_t>& perm : permutations(4, 8))
            CHECK(distance_from_permuted(base, logits_of(reference, permuted(ids, perm)), perm) <= 1e-5f);
    }
}

TEST_CASE("Positions break permutation equivariance, and so does a causal mask without positions") {
    TempDirectory dir;
    const std::vector<int64_t> reverse = {8, 7, 6, 5, 4, 3, 2, 1, 0};
    // The same weights (seed 5) as the equivariant model above; only the config differs.
    for (const RandomModel& spec : {RandomModel{"encoder_only", "bidirectional", "sinusoidal", false, 5},
                                    RandomModel{"encoder_only", "bidirectional", "learned", false, 5},
                                    RandomModel{"decoder_only", "causal", "none", false, 5}}) {
        CAPTURE(spec.arch);
        CAPTURE(spec.attention);
        CAPTURE(spec.pos_encoding);
        const Model model = Model::load(write_random_model(dir, spec));
        CHECK(distance_from_permuted(logits_of(model, kIds), logits_of(model, permuted(kIds, reverse)), reverse) > 1e-2f);
    }
    SUBCASE("also the PyTorch-made reference eo_pre_gelu_sin_pad (sinusoidal)") {
        const Model reference = Model::load("data/reference/eo_pre_gelu_sin_pad.model.safetensors");
        REQUIRE(reference.config.pos_encoding == PositionalEncoding::Sinusoidal);
        const std::vector<int64_t> ids = {4, 9, 3, 6, 12, 5};
        const std::vector<int64_t> perm = {5, 4, 3, 2, 1, 0};
        CHECK(distance_from_permuted(logits_of(reference, ids), logits_of(reference, permuted(ids, perm)), perm) > 1e-2f);
    }
}

TEST_CASE("A causal model's output at position t does not change when tokens after t change") {
    TempDirectory dir;
    const std::vector<std::string> paths = {
        write_random_model(dir, {"decoder_only", "causal", "sinusoidal", true, 9}),
        "data/reference/do_pre_gelu_learned_pad.model.safetensors",
        "data/models/reverse-causal.safetensors",  // trained: <bos> h e l l o = ...
    };
    for (const std::string& path : paths) {
        CAPTURE(path);
        const Model model = Model::load(path);
        REQUIRE(model.config.attention == SelfAttentionKind::Causal);
        const std::vector<int64_t> ids = {1, 11, 8, 15, 15, 18, 30, 7, 9};
        std::vector<int64_t> ids_mod = ids;
        for (int64_t& id : ids_mod) id %= model.config.vocab_size;
        const Tensor base = logits_of(model, ids_mod);
        for (int64_t t = 0; t + 1 < static_cast<int64_t>(ids.size()); ++t) {
            CAPTURE(t);
            std::vector<int64_t> changed = ids_mod;
            for (size_t after = static_cast<size_t>(t) + 1; after < changed.size(); ++after)
                changed[after] = (changed[after] + 5) % model.config.vocab_size;
            const Tensor other = logits_of(model, changed);
            // Exactly: no path from the future. The same calls in the same shapes; a row of each
            // product reads only its own row's inputs, and the changed tokens reach rows <= t only
            // through attention weights that are exactly 0 (blocked), whose 0 * v adds nothing.
            CHECK(rows_distance(base, other, 0, t + 1) == 0.0f);
            CHECK(rows_distance(base, other, t + 1, t + 2) > 1e-3f);          // the changed positions themselves do move
        }
    }
}

TEST_CASE("A prefix-LM model's outputs inside the prefix change when a later prefix token changes") {
    TempDirectory dir;
    const std::vector<std::string> paths = {
        write_random_model(dir, {"decoder_only", "prefix_lm", "sinusoidal", true, 9}),
        "data/reference/do_prefix_pre_gelu_sin.model.safetensors",
        "data/models/reverse-prefixlm.safetensors",
    };
    for (const std::string& path : paths) {
        CAPTURE(path);
        const Model model = Model::load(path);
        REQUIRE(model.config.attention == SelfAttentionKind::PrefixLm);
        const int64_t V = model.config.vocab_size;
        const std::vector<int64_t> ids = {1, 11 % V, 8 % V, 12 % V, 4 % V, 13 % V, 6 % V, 9 % V};  // prefix: the first 5
        const int64_t prefix = 5;
        const Tensor base = logits_of(model, ids, {prefix});
        // The last prefix token changes: every prefix position sees it.
        std::vector<int64_t> later_prefix = ids;
        later_prefix[prefix - 1] = (later_prefix[prefix - 1] + 3) % V;
        const Tensor moved = logits_of(model, later_prefix, {prefix});
        for (int64_t t = 0; t + 1 < prefix; ++t) {
            CAPTURE(t);
            CHECK(rows_distance(base, moved, t, t + 1) > 1e-4f);
        }
        // Tokens after the prefix change: the prefix positions do not see them.
        std::vector<int64_t> continuation = ids;
        for (size_t t = static_cast<size_t>(prefix); t < continuation.size(); ++t) continuation[t] = (continuation[t] + 3) % V;
        // Exactly, as in the causal test above: blocked keys weigh exactly 0.
        CHECK(rows_distance(base, logits_of(model, continuation, {prefix}), 0, prefix) == 0.0f);
        // With prefix_len 1 (only <bos>) the same model is causal: the change
        // at position prefix-1 reaches no earlier position.
        const Tensor causal = logits_of(model, ids, {1});
        const Tensor causal_moved = logits_of(model, later_prefix, {1});
        CHECK(rows_distance(causal, causal_moved, 0, prefix - 1) == 0.0f);
    }
}
