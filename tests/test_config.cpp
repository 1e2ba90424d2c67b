// Tests for models/config.* — the "config" object of a checkpoint (docs/FORMAT.md
// section 1, "config keys"). A valid config of each arch parses to the right
// fields; every rule that refuses a config is one SUBCASE, and the Error must
// name the key and show what was expected and what came. A config with
// several problems lists them all in one message.
#include <doctest/doctest.h>

#include "models/config.h"
#include "tests/helpers.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using nlohmann::json;
using tinyformer::Activation;
using tinyformer::Architecture;
using tinyformer::ModelConfig;
using tinyformer::NormKind;
using tinyformer::PositionalEncoding;
using tinyformer::QkvLayout;
using tinyformer::SelfAttentionKind;
using tinyformer::parse_config;

namespace {

// Every key of each arch, with values that are easy to tell apart.
json encoder_decoder_config() {
    return {{"format", "tinyformer/1"}, {"arch", "encoder_decoder"},
            {"d_model", 16},           {"nhead", 4},
            {"dim_feedforward", 32},   {"num_encoder_layers", 2},
            {"num_decoder_layers", 3}, {"activation", "relu"},
            {"norm_first", false},     {"layer_norm_eps", 1e-6},
            {"src_vocab_size", 13},    {"tgt_vocab_size", 11},
            {"max_len", 20},           {"pos_encoding", "sinusoidal"},
            {"embed_scale", true},     {"pad_id", 0},
            {"bos_id", 1},             {"eos_id", 12}};  // 12 < max(13, 11)
}

json decoder_only_config() {
    return {{"format", "tinyformer/1"}, {"arch", "decoder_only"}, {"d_model", 24},
            {"nhead", 6},              {"dim_feedforward", 40},  {"num_layers", 5},
            {"activation", "gelu"},    {"norm_first", true},     {"layer_norm_eps", 1e-5},
            {"final_norm", false},     {"vocab_size", 17},       {"max_len", 9},
            {"pos_encoding", "learned"}, {"embed_scale", false}, {"attention", "prefix_lm"},
            {"pad_id", 3},             {"bos_id", 4},            {"eos_id", 16}};
}

json encoder_only_config() {
    return {{"format", "tinyformer/1"}, {"arch", "encoder_only"}, {"d_model", 8},
            {"nhead", 1},              {"dim_feedforward", 16},  {"num_layers", 1},
            {"activation", "relu"},    {"norm_first", false},    {"final_norm", true},
            {"vocab_size", 9},         {"max_len", 5},           {"pos_encoding", "none"},
            {"embed_scale", true},     {"attention", "bidirectional"}};
}

json with(json config, const std::string& key, const json& value) {
    config[key] = value;
    return config;
}

json without(json config, const std::string& key) {
    config.erase(key);
    return config;
}

ModelConfig parse(const json& config) { return parse_config(config.dump()); }

}  // namespace

TEST_CASE("A valid config of each arch parses to the fields it names") {
    SUBCASE("encoder_decoder") {
        const ModelConfig c = parse(encoder_decoder_config());
        CHECK(c.arch == Architecture::EncoderDecoder);
        CHECK(c.d_model == 16);
        CHECK(c.nhead == 4);
        CHECK(c.dim_feedforward == 32);
        CHECK(c.num_encoder_layers == 2);
        CHECK(c.num_decoder_layers == 3);
        CHECK(c.num_layers == 0);  // single-stack only
        CHECK(c.activation == Activation::Relu);
        CHECK_FALSE(c.norm_first);
        CHECK(c.layer_norm_eps == 1e-6f);
        CHECK(c.final_norm);  // nn.Transformer always has both norms
        CHECK(c.src_vocab_size == 13);
        CHECK(c.tgt_vocab_size == 11);
        CHECK(c.max_len == 20);
        CHECK(c.pos_encoding == PositionalEncoding::Sinusoidal);
        CHECK(c.embed_scale);
        CHECK(c.pad_id == 0);
        CHECK(c.bos_id == 1);
        CHECK(c.eos_id == 12);
    }
    SUBCASE("decoder_only (prefix_lm)") {
        const ModelConfig c = parse(decoder_only_config());
        CHECK(c.arch == Architecture::DecoderOnly);
        CHECK(c.d_model == 24);
        CHECK(c.nhead == 6);
        CHECK(c.dim_feedforward == 40);
        CHECK(c.num_layers == 5);
        CHECK(c.activation == Activation::Gelu);
        CHECK(c.norm_first);
        CHECK(c.layer_norm_eps == 1e-5f);
        CHECK_FALSE(c.final_norm);
        CHECK(c.vocab_size == 17);
        CHECK(c.max_len == 9);
        CHECK(c.pos_encoding == PositionalEncoding::Learned);
        CHECK_FALSE(c.embed_scale);
        CHECK(c.attention == SelfAttentionKind::PrefixLm);
        CHECK(c.pad_id == 3);
        CHECK(c.bos_id == 4);
        CHECK(c.eos_id == 16);
    }
    SUBCASE("decoder_only (causal)") {
        CHECK(parse(with(decoder_only_config(), "attention", "causal")).attention == SelfAttentionKind::Causal);
    }
    SUBCASE("encoder_only, without the optional keys: layer_norm_eps 1e-5, special ids -1") {
        const ModelConfig c = parse(encoder_only_config());
        CHECK(c.arch == Architecture::EncoderOnly);
        CHECK(c.d_model == 8);
        CHECK(c.nhead == 1);
        CHECK(c.num_layers == 1);
        CHECK(c.final_norm);
        CHECK(c.vocab_size == 9);
        CHECK(c.max_len == 5);
        CHECK(c.pos_encoding == PositionalEncoding::None);
        CHECK(c.attention == SelfAttentionKind::Bidirectional);
        CHECK(c.layer_norm_eps == 1e-5f);
        CHECK(c.pad_id == -1);
        CHECK(c.bos_id == -1);
        CHECK(c.eos_id == -1);
    }
}

TEST_CASE("The layer-form keys default to nn.Transformer's and parse to the fields they name") {
    SUBCASE("absent: layer_norm, every bias, untied, fused in_proj, no mask_value (-inf)") {
        for (const json& config : {encoder_decoder_config(), decoder_only_config(), encoder_only_config()}) {
            const ModelConfig c = parse(config);
            CHECK(c.norm == NormKind::LayerNorm);
            CHECK(c.bias);
            CHECK(c.norm_bias);
            CHECK(c.head_bias);
            CHECK_FALSE(c.tie_embeddings);
            CHECK(c.qkv == QkvLayout::Fused);
            CHECK_FALSE(c.mask_value.has_value());
        }
    }
    SUBCASE("given, in every arch") {
        for (json config : {encoder_decoder_config(), decoder_only_config(), encoder_only_config()}) {
            config["activation"] = "gelu_tanh";
            config["norm"] = "layer_norm_std";
            config["bias"] = false;
            config["norm_bias"] = false;
            config["head_bias"] = false;
            config["tie_embeddings"] = true;
            config["qkv"] = "separate";
            config["mask_value"] = -1e9;
            const ModelConfig c = parse(config);
            CHECK(c.activation == Activation::GeluTanh);
            CHECK(c.norm == NormKind::LayerNormStd);
            CHECK_FALSE(c.bias);
            CHECK_FALSE(c.norm_bias);
            CHECK_FALSE(c.head_bias);
            CHECK(c.tie_embeddings);
            CHECK(c.qkv == QkvLayout::Separate);
            REQUIRE(c.mask_value.has_value());
            CHECK(*c.mask_value == -1e9f);
        }
        CHECK(parse(with(decoder_only_config(), "norm", "layer_norm")).norm == NormKind::LayerNorm);
        CHECK(parse(with(decoder_only_config(), "qkv", "fused")).qkv == QkvLayout::Fused);
        CHECK(parse(with(decoder_only_config(), "bias", true)).bias);
        CHECK(*parse(with(decoder_only_config(), "mask_value", -1)).mask_value == -1.0f);  // an integer is a number
    }
}

TEST_CASE("The keys of section 10.4 (rms_norm, silu, swiglu, rotary, alibi, n_kv_heads) parse, with their defaults") {
    const json base = decoder_only_config();  // d_model 24, nhead 6: head size 4
    const ModelConfig plain = parse(base);
    CHECK(plain.n_kv_heads == plain.nhead);  // absent: every query head has its own K/V head
    CHECK(plain.rope_theta == 10000.0f);
    CHECK(plain.rope_pairs == tinyformer::RopePairs::Adjacent);
    json llama = with(with(with(with(base, "norm", "rms_norm"), "activation", "swiglu"), "pos_encoding", "rotary"),
                      "n_kv_heads", 1);
    const ModelConfig c = parse(llama);
    CHECK(c.norm == NormKind::RmsNorm);
    CHECK_FALSE(c.norm_bias);  // RMSNorm has no bias, whatever the default
    CHECK(c.activation == Activation::SwiGlu);
    CHECK(c.pos_encoding == PositionalEncoding::Rotary);
    CHECK(c.n_kv_heads == 1);
    const ModelConfig half = parse(with(with(llama, "rope_pairs", "half"), "rope_theta", 500000));
    CHECK(half.rope_pairs == tinyformer::RopePairs::Half);
    CHECK(half.rope_theta == 500000.0f);
    CHECK(parse(with(base, "activation", "silu")).activation == Activation::Silu);
    CHECK(parse(with(base, "pos_encoding", "alibi")).pos_encoding == PositionalEncoding::Alibi);
    CHECK(std::string(norm_name(NormKind::RmsNorm)) == "rms_norm");
    CHECK(std::string(activation_name(Activation::SwiGlu)) == "swiglu");
    CHECK(std::string(pos_encoding_name(PositionalEncoding::Alibi)) == "alibi");
    CHECK(std::string(tinyformer::rope_pairs_name(tinyformer::RopePairs::Half)) == "half");
}

TEST_CASE("The keys of section 10.4 refuse what they cannot mean, naming the key") {
    const json base = decoder_only_config();  // d_model 24, nhead 6
    CHECK_ERROR_CONTAINS(parse(with(with(base, "norm", "rms_norm"), "norm_bias", true)),
                         "'norm_bias' is true but 'norm' is \"rms_norm\", which has no bias");
    CHECK_ERROR_CONTAINS(parse(with(base, "rope_theta", 10000)), "'rope_theta' belongs to \"pos_encoding\": \"rotary\"");
    CHECK_ERROR_CONTAINS(parse(with(base, "rope_pairs", "half")), "'rope_pairs' belongs to \"pos_encoding\": \"rotary\"");
    const json rotary = with(base, "pos_encoding", "rotary");
    CHECK_ERROR_CONTAINS(parse(with(rotary, "rope_pairs", "interleaved")), "'rope_pairs' is \"interleaved\"",
                         "expected one of \"adjacent\", \"half\"");
    CHECK_ERROR_CONTAINS(parse(with(rotary, "rope_theta", 0.5)), "'rope_theta' must be a number in (1, 1e30]", "got 0.5");
    CHECK_ERROR_CONTAINS(parse(with(rotary, "rope_theta", -10000)), "'rope_theta' must be a number", "got -10000");
    // d_model 6, nhead 2: head size 3, odd, has no pairs to turn
    CHECK_ERROR_CONTAINS(parse(with(with(rotary, "d_model", 6), "nhead", 2)), "needs an even head size", "got 3");
    CHECK_ERROR_CONTAINS(parse(with(base, "n_kv_heads", 4)), "'n_kv_heads' (4) must divide 'nhead' (6)");
    CHECK_ERROR_CONTAINS(parse(with(base, "n_kv_heads", 0)), "'n_kv_heads' must be in 1..");
    json seq2seq = encoder_decoder_config();
    CHECK_ERROR_CONTAINS(parse(with(seq2seq, "pos_encoding", "alibi")),
                         "\"pos_encoding\": \"alibi\" is for decoder_only and encoder_only models, not encoder_decoder");
    CHECK_ERROR_CONTAINS(parse(with(seq2seq, "pos_encoding", "rotary")), "\"rotary\" is for decoder_only");
}

TEST_CASE("The layer-form keys refuse a bad type or value, naming the key, what was expected and what came") {
    const json base = decoder_only_config();
    SUBCASE("activation and norm: an unknown name lists the allowed ones") {
        CHECK_ERROR_CONTAINS(parse(with(base, "activation", "gelu_new")), "'activation' is \"gelu_new\"",
                             "expected one of \"gelu\", \"gelu_tanh\", \"relu\", \"silu\", \"swiglu\"");
        CHECK_ERROR_CONTAINS(parse(with(base, "norm", "rmsnorm")), "'norm' is \"rmsnorm\"",
                             "expected one of \"layer_norm\", \"layer_norm_std\", \"rms_norm\"");
        CHECK_ERROR_CONTAINS(parse(with(base, "norm", true)), "'norm' must be a string", "got true");
    }
    SUBCASE("layer_norm_std with d_model 1: the unbiased std of one number is undefined") {
        json one = with(with(with(base, "d_model", 1), "nhead", 1), "norm", "layer_norm_std");
        CHECK_ERROR_CONTAINS(parse(one), "'norm' \"layer_norm_std\" needs 'd_model' >= 2", "got 1");
        CHECK(parse(with(one, "norm", "layer_norm")).d_model == 1);  // nn.LayerNorm(1) is defined
    }
    SUBCASE("the bias flags and tie_embeddings must be bools") {
        for (const char* key : {"bias", "norm_bias", "head_bias", "tie_embeddings"}) {
            CAPTURE(key);
            const std::string expected = tinyformer::text_of("'", key, "' must be true or false");
            CHECK_ERROR_CONTAINS(parse(with(base, key, 0)), expected.c_str(), "got 0");
            CHECK_ERROR_CONTAINS(parse(with(base, key, "false")), expected.c_str(), "got \"false\"");
        }
    }
    SUBCASE("qkv: fused or separate") {
        CHECK_ERROR_CONTAINS(parse(with(base, "qkv", "split")), "'qkv' is \"split\"",
                             "expected one of \"fused\", \"separate\"");
        CHECK_ERROR_CONTAINS(parse(with(base, "qkv", 3)), "'qkv' must be a string", "got 3");
    }
    SUBCASE("mask_value: a finite negative number in float32") {
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", "-1e9")), "'mask_value' must be a number", "got \"-1e9\"");
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", 0)), "'mask_value' must be a finite negative number",
                             "got 0");
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", 5.5)), "'mask_value' must be a finite negative number",
                             "got 5.5");
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", -1e39)), "'mask_value' must be a finite negative number",
                             "got -1e+39");  // beyond float32: -inf
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", -1e-50)), "'mask_value' must be a finite negative number",
                             "got -1e-50");  // rounds to -0 in float32
        CHECK_ERROR_CONTAINS(parse(with(base, "mask_value", nullptr)), "'mask_value' must be a number", "got null");
    }
    SUBCASE("several at once are listed together") {
        json bad = with(with(base, "bias", "no"), "qkv", "both");
        CHECK_ERROR_CONTAINS(parse(bad), "config: 2 problems:", "'bias' must be true or false", "'qkv' is \"both\"");
    }
}

TEST_CASE("A missing required key is refused by name and type, for every required key of every arch") {
    const std::vector<std::pair<std::string, std::string>> common = {
        {"format", "string, \"tinyformer/1\""},
        {"arch", "string, one of \"decoder_only\", \"encoder_decoder\", \"encoder_only\""},
        {"d_model", "int"},
        {"nhead", "int"},
        {"dim_feedforward", "int"},
        {"activation", "string, one of \"gelu\", \"gelu_tanh\", \"relu\", \"silu\", \"swiglu\""},
        {"norm_first", "bool"},
        {"max_len", "int"},
        {"pos_encoding", "string, one of \"alibi\", \"learned\", \"none\", \"relative_bias\", \"rotary\", \"sinusoidal\""},
        {"embed_scale", "bool"},
    };
    const struct {
        const char* arch;
        json config;
        std::vector<std::pair<std::string, std::string>> required;  // key, type as the message gives it
    } arches[] = {
        {"encoder_decoder", encoder_decoder_config(),
         {{"num_encoder_layers", "int"}, {"num_decoder_layers", "int"}, {"src_vocab_size", "int"},
          {"tgt_vocab_size", "int"}}},
        {"decoder_only", decoder_only_config(),
         {{"num_layers", "int"}, {"final_norm", "bool"}, {"vocab_size", "int"},
          {"attention", "string, one of \"bidirectional\", \"causal\", \"prefix_lm\""}}},
    };
    for (const auto& arch : arches) {
        auto required = arch.required;
        required.insert(required.end(), common.begin(), common.end());
        for (const auto& [key, type] : required) {
            CAPTURE(arch.arch);
            CAPTURE(key);
            // The only problem, so the whole message.
            const std::string expected = "config: missing key '" + key + "' (" + type + ")";
            CHECK(test_helpers::error_message([&] { parse(without(arch.config, key)); }) == expected);
        }
    }
}

TEST_CASE("A config with several problems lists all of them in one line") {
    SUBCASE("three problems: a missing key, a bad value, an unknown key") {
        json config = without(decoder_only_config(), "dim_feedforward");
        config["activation"] = "swish";
        config["dropout"] = 0.1;
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 3 problems: missing key 'dim_feedforward' (int); 'activation' is \"swish\"; expected one of "
              "\"gelu\", \"gelu_tanh\", \"relu\", \"silu\", \"swiglu\"; unknown key 'dropout' (see docs/FORMAT.md for the keys of each arch)");
    }
    SUBCASE("the constructor arguments of nn.Transformer, as a user might start: every problem at once") {
        const json config = {{"d_model", 512},         {"nhead", 8},           {"num_encoder_layers", 6},
                             {"num_decoder_layers", 6}, {"dim_feedforward", 2048}, {"dropout", 0.1},
                             {"activation", "relu"},    {"batch_first", true},  {"norm_first", false}};
        // Without an arch, the keys of every arch are checked where present and
        // none is required; unknown keys come last, in the object's (sorted) order.
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 7 problems: missing key 'format' (string, \"tinyformer/1\"); missing key 'arch' (string, one "
              "of \"decoder_only\", \"encoder_decoder\", \"encoder_only\"); missing key 'max_len' (int); missing key "
              "'pos_encoding' (string, one of \"alibi\", \"learned\", \"none\", \"relative_bias\", \"rotary\", \"sinusoidal\"); missing key 'embed_scale' "
              "(bool); unknown key 'batch_first'; unknown key 'dropout' (see docs/FORMAT.md for the keys of each "
              "arch)");
    }
    SUBCASE("wrong types and bad values; a check that needs a bad key is skipped, not reported twice") {
        json config = decoder_only_config();
        config["d_model"] = "24";       // so d_model % nhead cannot be checked
        config["nhead"] = 0;
        config["norm_first"] = 1;
        config["layer_norm_eps"] = 0.0;
        config["pad_id"] = 17;          // vocab_size 17: ids 0..16
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 5 problems: 'd_model' must be an integer, got \"24\"; 'nhead' must be in 1..16777216, got 0; "
              "'norm_first' must be true or false, got 1; 'layer_norm_eps' must be in [1.17549e-38, 1) (a positive "
              "normal float32), got 0; 'pad_id' = 17 is outside the vocabulary 0..16");
    }
    SUBCASE("the rules between keys, all at once: divisibility, the sinusoidal table, attention vs arch") {
        json config = with(encoder_only_config(), "nhead", 3);
        config["d_model"] = 16;
        config["attention"] = "causal";
        config["pos_encoding"] = "sinusoidal";
        config["max_len"] = 1 << 24;
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 3 problems: 'd_model' (16) must be divisible by 'nhead' (3); a sinusoidal table of 'max_len' x "
              "'d_model' = 16777216 x 16 is above the limit of 2^27 numbers; 'attention' is \"causal\" but arch is "
              "\"encoder_only\"; encoder_only is bidirectional, decoder_only causal or prefix_lm");
    }
    SUBCASE("a bad arch: the other keys are still checked, those of every arch where present") {
        json config = with(decoder_only_config(), "arch", "gpt");
        config["num_layers"] = 0;
        config["attention"] = "sliding";
        config["num_decoder_layers"] = -1;
        config["eos_id"] = true;
        config["dropout"] = 0.1;
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 6 problems: 'arch' is \"gpt\"; expected one of \"decoder_only\", \"encoder_decoder\", "
              "\"encoder_only\"; 'num_decoder_layers' must be in 1..16777216, got -1; 'num_layers' must be in "
              "1..16777216, got 0; 'attention' is \"sliding\"; expected one of \"bidirectional\", \"causal\", "
              "\"prefix_lm\"; 'eos_id' must be an integer, got true; unknown key 'dropout' (see docs/FORMAT.md for "
              "the keys of each arch)");
    }
    SUBCASE("keys of another arch are named as such, and required keys of this arch missing") {
        json config = without(without(decoder_only_config(), "num_layers"), "vocab_size");
        config["num_encoder_layers"] = 2;
        config["num_decoder_layers"] = 2;
        config["tgt_vocab_size"] = 17;
        CHECK(test_helpers::error_message([&] { parse(config); }) ==
              "config: 5 problems: missing key 'num_layers' (int); missing key 'vocab_size' (int); unknown key "
              "'num_decoder_layers' for arch \"decoder_only\" (it belongs to encoder_decoder); unknown key "
              "'num_encoder_layers' for arch \"decoder_only\" (it belongs to encoder_decoder); unknown key "
              "'tgt_vocab_size' for arch \"decoder_only\" (it belongs to encoder_decoder) (see docs/FORMAT.md for "
              "the keys of each arch)");
    }
    SUBCASE("a config of many problems lists the first 20 and counts the rest") {
        json config = encoder_only_config();
        for (int i = 0; i < 25; ++i) config["extra_" + std::to_string(100 + i)] = i;
        const std::string message = test_helpers::error_message([&] { parse(config); });
        CHECK(message.starts_with("config: 25 problems: unknown key 'extra_100'; unknown key 'extra_101'; "));
        CHECK(message.find("unknown key 'extra_119'; and 5 more") != std::string::npos);
        CHECK(message.find("extra_120") == std::string::npos);
        CHECK(message.ends_with("; and 5 more (see docs/FORMAT.md for the keys of each arch)"));
        CHECK(message.find('\n') == std::string::npos);
    }
}

TEST_CASE("Each config rule refuses a bad value, naming the key, what was expected and what came") {
    const json base = decoder_only_config();

    SUBCASE("a wrong type: a string where an integer belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "d_model", "24")), "'d_model' must be an integer", "got \"24\"");
    }
    SUBCASE("a wrong type: a fraction where an integer belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "nhead", 6.5)), "'nhead' must be an integer", "got 6.5");
    }
    SUBCASE("a wrong type: a number where a bool belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "norm_first", 1)), "'norm_first' must be true or false", "got 1");
    }
    SUBCASE("a wrong type: a string where a number belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "layer_norm_eps", "1e-5")), "'layer_norm_eps' must be a number",
                             "got \"1e-5\"");
    }
    SUBCASE("a wrong type: a number where a string belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "activation", 1)), "'activation' must be a string", "got 1");
    }
    SUBCASE("a wrong type: a bool where a special id belongs") {
        CHECK_ERROR_CONTAINS(parse(with(base, "pad_id", true)), "'pad_id' must be an integer", "got true");
    }
    SUBCASE("an integer beyond int64 is not wrapped to a negative number") {
        const uint64_t too_big = std::numeric_limits<uint64_t>::max();  // 2^64 - 1, read back as -1 if wrapped
        CHECK_ERROR_CONTAINS(parse(with(base, "d_model", too_big)), "'d_model' must fit in int64",
                             "got 18446744073709551615");
    }
    SUBCASE("an unknown key") {
        CHECK(test_helpers::error_message([&] { parse(with(base, "dropout", 0.1)); }) ==
              "config: unknown key 'dropout' (see docs/FORMAT.md for the keys of each arch)");
    }
    SUBCASE("a key of another arch: num_encoder_layers in a decoder_only config") {
        CHECK_ERROR_CONTAINS(parse(with(base, "num_encoder_layers", 2)),
                             "config: unknown key 'num_encoder_layers' for arch \"decoder_only\" (it belongs to "
                             "encoder_decoder)");
    }
    SUBCASE("a key of another arch: num_layers and attention in an encoder_decoder config") {
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "num_layers", 2)),
                             "config: unknown key 'num_layers' for arch \"encoder_decoder\" (it belongs to "
                             "decoder_only / encoder_only)");
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "attention", "causal")),
                             "config: unknown key 'attention' for arch \"encoder_decoder\"");
    }
    SUBCASE("an unknown arch lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "arch", "gpt")), "'arch' is \"gpt\"",
                             "expected one of \"decoder_only\", \"encoder_decoder\", \"encoder_only\"");
    }
    SUBCASE("an unknown activation lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "activation", "swish")), "'activation' is \"swish\"",
                             "expected one of \"gelu\", \"gelu_tanh\", \"relu\", \"silu\", \"swiglu\"");
    }
    SUBCASE("an unknown pos_encoding lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "pos_encoding", "rope")), "'pos_encoding' is \"rope\"",
                             "\"alibi\"", "\"learned\"", "\"none\"", "\"rotary\"", "\"sinusoidal\"");
    }
    SUBCASE("an unknown attention lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "attention", "sliding")), "'attention' is \"sliding\"",
                             "\"bidirectional\"", "\"causal\"", "\"prefix_lm\"");
    }
    SUBCASE("d_model not divisible by nhead") {
        CHECK_ERROR_CONTAINS(parse(with(base, "nhead", 5)), "'d_model' (24) must be divisible by 'nhead' (5)");
    }
    SUBCASE("max_len 0") {
        CHECK_ERROR_CONTAINS(parse(with(base, "max_len", 0)), "'max_len' must be in 1..", "got 0");
    }
    SUBCASE("layer_norm_eps 0, negative, 1, or too small for a normal float32") {
        // FLT_MIN = 2^-126 = 1.17549e-38, printed with 6 significant digits.
        const char* range = "'layer_norm_eps' must be in [1.17549e-38, 1) (a positive normal float32)";
        CHECK_ERROR_CONTAINS(parse(with(base, "layer_norm_eps", 0.0)), range, "got 0");
        CHECK_ERROR_CONTAINS(parse(with(base, "layer_norm_eps", -1e-5)), range, "got -1e-05");
        CHECK_ERROR_CONTAINS(parse(with(base, "layer_norm_eps", 1.0)), range, "got 1");
        // Found by fuzz_config: 1e-85 is > 0 as a double but 0 as the float32 LayerNorm adds.
        CHECK_ERROR_CONTAINS(parse(with(base, "layer_norm_eps", 1e-85)), range, "got 1e-85");
        CHECK(parse(with(base, "layer_norm_eps", 1.2e-38)).layer_norm_eps == 1.2e-38f);
    }
    SUBCASE("attention that does not fit the arch: encoder_only with causal") {
        CHECK_ERROR_CONTAINS(parse(with(encoder_only_config(), "attention", "causal")),
                             "'attention' is \"causal\" but arch is \"encoder_only\"");
    }
    SUBCASE("attention that does not fit the arch: decoder_only with bidirectional") {
        CHECK_ERROR_CONTAINS(parse(with(base, "attention", "bidirectional")),
                             "'attention' is \"bidirectional\" but arch is \"decoder_only\"");
    }
    SUBCASE("final_norm false for encoder_decoder") {
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "final_norm", false)),
                             "'final_norm' must be true for encoder_decoder");
    }
    SUBCASE("a special id outside the vocabulary") {
        // vocab_size 17: ids 0..16
        CHECK_ERROR_CONTAINS(parse(with(base, "pad_id", 17)), "'pad_id' = 17", "outside the vocabulary 0..16");
        CHECK_ERROR_CONTAINS(parse(with(base, "bos_id", -1)), "'bos_id' = -1", "outside the vocabulary 0..16");
        // encoder_decoder: the larger of src (13) and tgt (11) vocabularies
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "eos_id", 13)), "'eos_id' = 13",
                             "outside the vocabulary 0..12");
    }
    SUBCASE("format other than \"tinyformer/1\"") {
        CHECK_ERROR_CONTAINS(parse(with(base, "format", "tinyformer/2")), "'format' is \"tinyformer/2\"",
                             "expected \"tinyformer/1\"");
    }
    SUBCASE("a value nested inside the flat config object") {
        CHECK_ERROR_CONTAINS(parse_config("{\"format\": \"tinyformer/1\", \"d_model\": [[16]]}"),
                             "config nests arrays/objects 3 deep; at most 2");
        CHECK_ERROR_CONTAINS(parse_config(std::string(200000, '[') + std::string(200000, ']')),
                             "config nests arrays/objects 200000 deep");
    }
    SUBCASE("text that is not JSON") {
        CHECK_ERROR_CONTAINS(parse_config("{\"format\": \"tinyformer/1\","), "config is not valid JSON");
    }
    SUBCASE("JSON that is not an object") {
        CHECK_ERROR_CONTAINS(parse_config("[\"tinyformer/1\"]"), "config: must be a JSON object, got array");
    }
}

TEST_CASE("Every size key refuses zero and negative values, naming the key and the value") {
    const struct {
        json config;
        std::vector<std::string> sizes;
    } arches[] = {
        {encoder_decoder_config(),
         {"d_model", "nhead", "dim_feedforward", "num_encoder_layers", "num_decoder_layers", "src_vocab_size",
          "tgt_vocab_size", "max_len"}},
        {decoder_only_config(), {"d_model", "nhead", "dim_feedforward", "num_layers", "vocab_size", "max_len"}},
    };
    for (const auto& arch : arches)
        for (const std::string& key : arch.sizes)
            for (int value : {0, -3}) {
                CAPTURE(key);
                CAPTURE(value);
                const std::string expected_key = "'" + key + "' must be in 1..";
                const std::string expected_value = "got " + std::to_string(value);
                CHECK_ERROR_CONTAINS(parse(with(arch.config, key, value)), expected_key.c_str(),
                                     expected_value.c_str());
            }
}

TEST_CASE("A config that holds a key twice is refused, naming the key: no reader may pick one of the two values") {
    // nlohmann keeps one of the two silently, Python's json the last: both would read some d_model.
    std::string text = encoder_decoder_config().dump();
    text.insert(1, "\"d_model\":32,");
    CHECK_ERROR_CONTAINS(parse_config(text), "config has the key \"d_model\" twice at the top level");
}
