// Tests for models/config.* — the "config" object of a checkpoint (FORMAT.md
// section 1, "config keys"). A valid config of each arch parses to the right
// fields; every rule that refuses a config is one SUBCASE, and the Error must
// name the key and show what was expected and what came.
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
using tinyformer::PositionalEncoding;
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

TEST_CASE("A missing required key is refused by name, for every required key of every arch") {
    const struct {
        const char* arch;
        json config;
        std::vector<std::string> required;
    } arches[] = {
        {"encoder_decoder", encoder_decoder_config(),
         {"format", "arch", "d_model", "nhead", "dim_feedforward", "num_encoder_layers", "num_decoder_layers",
          "activation", "norm_first", "src_vocab_size", "tgt_vocab_size", "max_len", "pos_encoding", "embed_scale"}},
        {"decoder_only", decoder_only_config(),
         {"format", "arch", "d_model", "nhead", "dim_feedforward", "num_layers", "activation", "norm_first",
          "final_norm", "vocab_size", "max_len", "pos_encoding", "embed_scale", "attention"}},
    };
    for (const auto& arch : arches)
        for (const std::string& key : arch.required) {
            CAPTURE(arch.arch);
            CAPTURE(key);
            const std::string expected = "config: missing key '" + key + "'";
            CHECK_ERROR_CONTAINS(parse(without(arch.config, key)), expected.c_str());
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
        CHECK_ERROR_CONTAINS(parse(with(base, "dropout", 0.1)), "unknown key 'dropout'");
    }
    SUBCASE("a key of another arch: num_encoder_layers in a decoder_only config") {
        CHECK_ERROR_CONTAINS(parse(with(base, "num_encoder_layers", 2)), "unknown key 'num_encoder_layers'");
    }
    SUBCASE("a key of another arch: num_layers and attention in an encoder_decoder config") {
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "num_layers", 2)), "unknown key 'num_layers'");
        CHECK_ERROR_CONTAINS(parse(with(encoder_decoder_config(), "attention", "causal")), "unknown key 'attention'");
    }
    SUBCASE("an unknown arch lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "arch", "gpt")), "'arch' is \"gpt\"",
                             "expected one of \"decoder_only\", \"encoder_decoder\", \"encoder_only\"");
    }
    SUBCASE("an unknown activation lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "activation", "swish")), "'activation' is \"swish\"",
                             "expected one of \"gelu\", \"relu\"");
    }
    SUBCASE("an unknown pos_encoding lists the allowed values") {
        CHECK_ERROR_CONTAINS(parse(with(base, "pos_encoding", "rotary")), "'pos_encoding' is \"rotary\"",
                             "\"learned\"", "\"none\"", "\"sinusoidal\"");
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
