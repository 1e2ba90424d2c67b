// The bad-input catalogue: the built `tinyformer` program (tests/run_cli.h)
// on files and command lines that break a rule, one table row each. Every
// row must end with
//   - exit status 1 (bad input) or 2 (bad usage), within the time limit;
//   - one line on stderr, `tinyformer: error: <message>`, whose message names
//     the problem: the file, the tensor / key / input / argument, and the
//     expected and actual values where there are some; the line is valid
//     UTF-8 with no control character before its newline (no ESC, C1 or
//     bidi control: the terminal text rule, tools/cli/terminal_text.h);
//   - nothing on stdout, and no "nan" anywhere (a NaN leaking into a message);
//   - the case's folder exactly as before: no output file created, an existing
//     one unchanged, no temporary file left behind.
// The bad files are copies of data/reference/*.safetensors and
// data/models/*.safetensors with one rule broken, written into a temporary
// folder per row (with write_safetensors, or byte by byte).
#include <doctest/doctest.h>

#include "tests/helpers.h"

#include "engine/io/safetensors.h"
#include "engine/memory/available.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"
#include "tests/terminal_checks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

using tinyformer::SafetensorsFile;
using tinyformer::Tensor;
using tinyformer::TensorToWrite;
using test_helpers::CliRun;
using test_helpers::Contents;
using test_helpers::TempDirectory;
using test_helpers::edited;
using test_helpers::ids;
using test_helpers::mask;
using test_helpers::set_float;
using test_helpers::set_id;
using json = nlohmann::json;

namespace {

// ed_post_relu_sin: encoder_decoder, d_model 16, nhead 4, 2+2 layers, src
// vocab 13, tgt vocab 11, max_len 16, sinusoidal; inputs src_ids [2,7], tgt_ids [2,5].
const std::string kModel = "data/reference/ed_post_relu_sin.model.safetensors";
const std::string kInputs = "data/reference/ed_post_relu_sin.inputs.safetensors";
// do_prefix_pre_gelu_sin: decoder_only prefix_lm, vocab 14, max_len 8;
// inputs ids [3,6], prefix_len [3].
const std::string kPrefixModel = "data/reference/do_prefix_pre_gelu_sin.model.safetensors";
const std::string kPrefixInputs = "data/reference/do_prefix_pre_gelu_sin.inputs.safetensors";
// The trained reverse model: lowercase letters in its vocabulary.
const std::string kReverse = "data/models/reverse.safetensors";
// do_pre_relu_none_leftpad: decoder_only causal, no positions, vocab 12.
const std::string kNoPositionModel = "data/reference/do_pre_relu_none_leftpad.model.safetensors";
const std::string kNoPositionInputs = "data/reference/do_pre_relu_none_leftpad.inputs.safetensors";
// do_relbias_pre_gelu_h4_pad: decoder_only causal, T5 relative bias, 8 buckets, 4 heads.
const std::string kRelativeModel = "data/reference/do_relbias_pre_gelu_h4_pad.model.safetensors";
const std::string kRelativeInputs = "data/reference/do_relbias_pre_gelu_h4_pad.inputs.safetensors";
const std::string kRelativeTable = "transformer.layers.0.self_attn.relative_attention_bias.weight";

// A copy of the model whose config has `key` set to `value` (removed if null).
std::string config_with(const TempDirectory& dir, const std::string& name, const std::string& source,
                        const std::string& key, const json& value) {
    return edited(dir, name, source, [&](Contents& c) {
        json config = json::parse(c.metadata.at("config"));
        if (value.is_null())
            config.erase(key);
        else
            config[key] = value;
        c.metadata["config"] = config.dump();
    });
}

// Exactly these bytes: [length as u64 little-endian][header][data].
std::string raw_file(const TempDirectory& dir, const std::string& name, uint64_t length, const std::string& header,
                     const std::string& data = "") {
    std::string bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xFF));
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes << header << data;
    return path;
}

// A copy of `source` whose JSON header is changed by `edit`; the data section is kept.
std::string header_edited(const TempDirectory& dir, const std::string& name, const std::string& source,
                          const std::function<void(json&)>& edit) {
    const std::string bytes = test_helpers::read_file(source);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    json header = json::parse(bytes.substr(8, length));
    edit(header);
    const std::string text = header.dump();
    return raw_file(dir, name, text.size(), text, bytes.substr(8 + length));
}

// `forward MODEL --inputs INPUTS --output dir/out.safetensors`; with `existing`,
// an out.safetensors is there before the run (it must stay as it was).
std::vector<std::string> forward(const TempDirectory& dir, const std::string& model, const std::string& inputs,
                                 bool existing = false) {
    const std::string output = dir.file("out.safetensors");
    if (existing) std::ofstream(output, std::ios::binary) << "an earlier output, to be kept";
    return {"forward", model, "--inputs", inputs, "--output", output};
}

// The model's inputs, changed by `edit`, run through the model (the output already exists).
std::vector<std::string> forward_inputs(const TempDirectory& dir, const std::string& name, const std::string& model,
                                        const std::string& inputs, const std::function<void(Contents&)>& edit) {
    return forward(dir, model, edited(dir, name, inputs, edit), /*existing=*/true);
}

// A bad checkpoint, run on its good inputs (no output file before).
std::vector<std::string> forward_model(const TempDirectory& dir, const std::string& model_path) {
    return forward(dir, model_path, kInputs);
}

struct BadInput {
    const char* name;
    std::function<std::vector<std::string>(const TempDirectory&)> setup;  // writes files, gives the command line
    int status;                                                            // 1 bad input, 2 bad usage
    std::vector<std::string> message;  // pieces the error message must contain
    const char* stdin_file = nullptr;  // a file of the case's folder (written by setup) as standard input
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const char* kInProj = "transformer.encoder.layers.0.self_attn.in_proj_weight";

// clang-format off
// ---- checkpoint: the safetensors frame ----
const std::vector<BadInput> kSafetensorsFrame = {
    {"empty file", [](const TempDirectory& d) {
         std::ofstream(d.file("empty.safetensors")).flush();
         return forward_model(d, d.file("empty.safetensors")); },
     1, {"empty.safetensors: this is an empty file (0 bytes), not a tinyformer checkpoint"}},
    {"empty forward inputs (read as safetensors, not as a checkpoint)", [](const TempDirectory& d) {
         std::ofstream(d.file("empty-inputs.safetensors")).flush();
         return forward(d, kModel, d.file("empty-inputs.safetensors")); },
     1, {"empty-inputs.safetensors", "file is 0 bytes", "8-byte header length"}},
    {"shorter than 8 bytes", [](const TempDirectory& d) {
         std::ofstream(d.file("short.safetensors"), std::ios::binary) << std::string("\x05\x00\x00", 3);
         return forward_model(d, d.file("short.safetensors")); },
     1, {"short.safetensors", "file is 3 bytes"}},
    {"header length larger than the file", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "long-header.safetensors", 1000, "{}")); },
     1, {"long-header.safetensors", "header length 1000 bytes runs past the end of the file (10 bytes)"}},
    {"header length near 2^64", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "huge-header.safetensors", std::numeric_limits<uint64_t>::max() - 7, "{}")); },
     1, {"huge-header.safetensors", "header length 18446744073709551608 bytes is above the limit of 100000000 bytes"}},
    {"header length just above kMaxHeaderBytes", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "big-header.safetensors", tinyformer::kMaxHeaderBytes + 1, "{}")); },
     1, {"big-header.safetensors", "header length 100000001 bytes is above the limit of 100000000 bytes"}},
    {"header length 2^64 - 1 (8 + length wraps around to 7)", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "max-header.safetensors", std::numeric_limits<uint64_t>::max(), "{}")); },
     1, {"max-header.safetensors", "header length 18446744073709551615 bytes is above the limit of 100000000 bytes"}},
    {"header length 2^63", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "half-header.safetensors", uint64_t{1} << 63, "{}")); },
     1, {"half-header.safetensors", "header length 9223372036854775808 bytes is above the limit of 100000000 bytes"}},
    {"file truncated inside the header", [](const TempDirectory& d) {
         const std::string path = d.file("cut-header.safetensors");
         std::filesystem::copy_file(kModel, path);
         std::filesystem::resize_file(path, 108);
         return forward_model(d, path); },
     1, {"cut-header.safetensors", "bytes runs past the end of the file (108 bytes)"}},
    {"header not JSON", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "not-json.safetensors", 9, "{\"a\": [1,")); },
     1, {"not-json.safetensors", "the header is not valid JSON"}},
    // Found by reasoning while writing the fuzzers: before the nesting limit,
    // a shape a million arrays deep crashed (stack overflow in json::dump()
    // building the "shape must hold non-negative integers" message).
    {"header nesting a shape a million arrays deep", [](const TempDirectory& d) {
         const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":" + std::string(1000000, '[') +
                                    std::string(1000000, ']') + ",\"data_offsets\":[0,0]}}";
         return forward_model(d, raw_file(d, "deep-shape.safetensors", header.size(), header)); },
     1, {"deep-shape.safetensors", "the header nests arrays/objects 1000002 deep; at most 3 are allowed here"}},
    {"config nesting arrays", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "deep-config.safetensors", kModel, [](Contents& c) {
             c.metadata["config"] = std::string(100000, '[') + std::string(100000, ']'); })); },
     1, {"deep-config.safetensors", "config nests arrays/objects 100000 deep; at most 2 are allowed here"}},
    {"header JSON but not an object", [](const TempDirectory& d) {
         return forward_model(d, raw_file(d, "array.safetensors", 7, "[1,2,3]")); },
     1, {"array.safetensors", "the header starts with byte 0x5B ('['), not '{'; a header is one JSON object"}},
    {"tensor entry without dtype", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "no-dtype.safetensors", kModel,
                                               [](json& h) { h["generator.bias"].erase("dtype"); })); },
     1, {"no-dtype.safetensors", "tensor 'generator.bias'", "needs an object with dtype, shape and data_offsets"}},
    {"unknown dtype name", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "f24.safetensors", kModel,
                                               [](json& h) { h["generator.bias"]["dtype"] = "F24"; })); },
     1, {"f24.safetensors", "tensor 'generator.bias'", "unknown dtype 'F24'"}},

};

// ---- checkpoint: metadata and config ----
const std::vector<BadInput> kMetadataAndConfig = {
    {"__metadata__ missing", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "no-metadata.safetensors", kModel,
                                               [](json& h) { h.erase("__metadata__"); })); },
     1, {"no-metadata.safetensors", "__metadata__ has no \"config\""}},
    {"__metadata__ not an object", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "metadata-array.safetensors", kModel,
                                               [](json& h) { h["__metadata__"] = json::array({1, 2}); })); },
     1, {"metadata-array.safetensors", "__metadata__ must be an object of strings"}},
    {"__metadata__ value not a string", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "config-object.safetensors", kModel, [](json& h) {
             h["__metadata__"]["config"] = json::parse(h["__metadata__"]["config"].get<std::string>()); })); },
     1, {"config-object.safetensors", "__metadata__ value 'config' must be a string, got object"}},
    {"__metadata__ null", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "metadata-null.safetensors", kModel,
                                               [](json& h) { h["__metadata__"] = nullptr; })); },
     1, {"metadata-null.safetensors", "__metadata__ must be an object of strings"}},
    {"__metadata__ value a number", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "metadata-number.safetensors", kModel,
                                               [](json& h) { h["__metadata__"]["author"] = 42; })); },
     1, {"metadata-number.safetensors", "__metadata__ value 'author' must be a string, got number"}},
    {"__metadata__ vocab as a JSON array, not a string", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "metadata-array-value.safetensors", kModel,
                                               [](json& h) { h["__metadata__"]["vocab"] = json::array({"a", "b"}); })); },
     1, {"metadata-array-value.safetensors", "__metadata__ value 'vocab' must be a string, got array"}},
    {"__metadata__ config null", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "config-null.safetensors", kModel,
                                               [](json& h) { h["__metadata__"]["config"] = nullptr; })); },
     1, {"config-null.safetensors", "__metadata__ value 'config' must be a string, got null"}},
    {"vocab not a JSON array of strings", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "vocab-number.safetensors", kModel,
                                        [](Contents& c) { c.metadata["vocab"] = "[\"<pad>\", 3]"; })); },
     1, {"vocab-number.safetensors", "__metadata__ \"vocab\" entry 1 is not a string: 3"}},
    {"config missing", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "no-config.safetensors", kModel, [](Contents& c) { c.metadata.erase("config"); })); },
     1, {"no-config.safetensors", "__metadata__ has no \"config\""}},
    {"config not JSON", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "config-text.safetensors", kModel,
                                        [](Contents& c) { c.metadata["config"] = "d_model=16"; })); },
     1, {"config-text.safetensors", "config is not valid JSON"}},
    {"config JSON but not an object", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "config-array.safetensors", kModel,
                                        [](Contents& c) { c.metadata["config"] = "[16, 2]"; })); },
     1, {"config-array.safetensors", "config: must be a JSON object, got array"}},
    {"config without a required key", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "no-d-model.safetensors", kModel, "d_model", nullptr)); },
     1, {"no-d-model.safetensors", "config: missing key 'd_model' (int)"}},
    {"config with an unknown key", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "dropout.safetensors", kModel, "dropout", 0.1)); },
     1, {"dropout.safetensors", "config: unknown key 'dropout' (see docs/FORMAT.md for the keys of each arch)"}},
    {"config format not tinyformer/1", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "format.safetensors", kModel, "format", "tinyformer/2")); },
     1, {"format.safetensors", "'format' is \"tinyformer/2\"", "expected \"tinyformer/1\""}},
    {"unknown arch", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "arch.safetensors", kModel, "arch", "gpt")); },
     1, {"arch.safetensors", "config: 'arch' is \"gpt\"", "\"encoder_decoder\""}},
    {"unknown activation", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "activation.safetensors", kModel, "activation", "swish")); },
     1, {"activation.safetensors", "config: 'activation' is \"swish\"", "\"gelu\", \"gelu_tanh\", \"relu\""}},
    {"unknown norm", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "norm.safetensors", kModel, "norm", "rms")); },
     1, {"norm.safetensors", "config: 'norm' is \"rms\"", "\"layer_norm\", \"layer_norm_std\""}},
    {"layer_norm_std with d_model 1", [](const TempDirectory& d) {
         const std::string model = edited(d, "norm-std-d1.safetensors", kModel, [](Contents& c) {
             json config = json::parse(c.metadata.at("config"));
             config["d_model"] = 1;
             config["nhead"] = 1;
             config["norm"] = "layer_norm_std";
             c.metadata["config"] = config.dump(); });
         return forward_model(d, model); },
     1, {"norm-std-d1.safetensors", "'norm' \"layer_norm_std\" needs 'd_model' >= 2", "got 1"}},
    {"bias not a bool", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "bias.safetensors", kModel, "bias", "no")); },
     1, {"bias.safetensors", "config: 'bias' must be true or false, got \"no\""}},
    {"unknown qkv layout", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "qkv.safetensors", kModel, "qkv", "split")); },
     1, {"qkv.safetensors", "config: 'qkv' is \"split\"", "\"fused\", \"separate\""}},
    {"mask_value not negative", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "mask-value.safetensors", kModel, "mask_value", 1e9)); },
     1, {"mask-value.safetensors", "'mask_value' must be a finite negative number in float32", "got 1000000000"}},
    {"relative bias table of the wrong shape", [](const TempDirectory& d) {
         return forward(d, edited(d, "table.safetensors", kRelativeModel, [](Contents& c) {
             c.replace(tinyformer::f32_tensor(kRelativeTable, Tensor({4, 8}))); }), kRelativeInputs); },
     1, {"table.safetensors", "tensor '" + kRelativeTable + "' has shape [4,8]; expected [8,4]"}},
    {"relative_max_distance below relative_buckets", [](const TempDirectory& d) {
         return forward(d, config_with(d, "distance.safetensors", kRelativeModel, "relative_max_distance", 4),
                        kRelativeInputs); },
     1, {"distance.safetensors", "config: 'relative_max_distance' (4) must be >= 'relative_buckets' (8)"}},
    {"sliding_window 0", [](const TempDirectory& d) {
         return forward(d, config_with(d, "window.safetensors", kRelativeModel, "sliding_window", 0), kRelativeInputs); },
     1, {"window.safetensors", "config: 'sliding_window' must be in 1..16777216, got 0"}},
    {"bias false but the biases are in the file", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "extra-bias.safetensors", kModel, "bias", false)); },
     1, {"extra-bias.safetensors", "unknown tensor 'transformer.", "bias'"}},
    {"tie_embeddings but generator.weight is in the file", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "tied.safetensors", kModel, "tie_embeddings", true)); },
     1, {"tied.safetensors", "unknown tensor 'generator.weight' [11,16]"}},
    {"qkv separate but the file has in_proj_weight", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "separate.safetensors", kModel, "qkv", "separate")); },
     1, {"separate.safetensors", "missing tensor 'transformer.encoder.layers.0.self_attn.q_proj.weight'",
         "(expected F32 [16,16])"}},
    {"unknown pos_encoding", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "pos.safetensors", kModel, "pos_encoding", "rope")); },
     1, {"pos.safetensors", "config: 'pos_encoding' is \"rope\"", "\"sinusoidal\""}},
    {"unknown attention", [](const TempDirectory& d) {
         return forward(d, config_with(d, "attention.safetensors", kPrefixModel, "attention", "sliding"), kPrefixInputs); },
     1, {"attention.safetensors", "config: 'attention' is \"sliding\"", "\"prefix_lm\""}},
    {"attention that does not fit the arch", [](const TempDirectory& d) {
         return forward(d, config_with(d, "bidirectional.safetensors", kPrefixModel, "attention", "bidirectional"), kPrefixInputs); },
     1, {"bidirectional.safetensors", "'attention' is \"bidirectional\" but arch is \"decoder_only\""}},
    {"d_model not divisible by nhead", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nhead.safetensors", kModel, "nhead", 3)); },
     1, {"nhead.safetensors", "'d_model' (16) must be divisible by 'nhead' (3)"}},
    {"zero d_model", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "d-model-0.safetensors", kModel, "d_model", 0)); },
     1, {"d-model-0.safetensors", "config: 'd_model' must be in 1..16777216, got 0"}},
    {"negative dim_feedforward", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "ffn-negative.safetensors", kModel, "dim_feedforward", -32)); },
     1, {"ffn-negative.safetensors", "config: 'dim_feedforward' must be in 1..16777216, got -32"}},
    {"zero layers", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "layers-0.safetensors", kModel, "num_decoder_layers", 0)); },
     1, {"layers-0.safetensors", "config: 'num_decoder_layers' must be in 1..16777216, got 0"}},
    {"negative vocabulary size", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "vocab-negative.safetensors", kModel, "src_vocab_size", -13)); },
     1, {"vocab-negative.safetensors", "config: 'src_vocab_size' must be in 1..16777216, got -13"}},
    {"max_len 0", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "max-len-0.safetensors", kModel, "max_len", 0)); },
     1, {"max-len-0.safetensors", "config: 'max_len' must be in 1..16777216, got 0"}},
    {"size of the wrong type", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nhead-text.safetensors", kModel, "nhead", "2")); },
     1, {"nhead-text.safetensors", "config: 'nhead' must be an integer, got \"2\""}},
    {"layer_norm_eps out of range", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "eps.safetensors", kModel, "layer_norm_eps", -1e-5)); },
     1, {"eps.safetensors", "config: 'layer_norm_eps' must be in [1.17549e-38, 1)", "got -1e-05"}},
    // Found by fuzz_config (build/fuzz/findings/config/crash-e55ac0f5...): accepted
    // before, though it is 0 as a float32 and LayerNorm could divide 0 by 0.
    {"layer_norm_eps that is 0 as a float32", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "eps-underflow.safetensors", kModel, "layer_norm_eps", 1e-85)); },
     1, {"eps-underflow.safetensors", "config: 'layer_norm_eps' must be in [1.17549e-38, 1)", "got 1e-85"}},
    {"special id outside the vocabulary", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "eos.safetensors", kModel, "eos_id", 99)); },
     1, {"eos.safetensors", "config: 'eos_id' = 99 is outside the vocabulary 0..12"}},
    {"zero nhead (no division by zero)", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nhead-0.safetensors", kModel, "nhead", 0)); },
     1, {"nhead-0.safetensors", "config: 'nhead' must be in 1..16777216, got 0"}},
    {"negative nhead", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nhead-negative.safetensors", kModel, "nhead", -4)); },
     1, {"nhead-negative.safetensors", "config: 'nhead' must be in 1..16777216, got -4"}},
    {"negative d_model", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "d-model-negative.safetensors", kModel, "d_model", -16)); },
     1, {"d-model-negative.safetensors", "config: 'd_model' must be in 1..16777216, got -16"}},
    {"zero dim_feedforward", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "ffn-0.safetensors", kModel, "dim_feedforward", 0)); },
     1, {"ffn-0.safetensors", "config: 'dim_feedforward' must be in 1..16777216, got 0"}},
    {"negative encoder layers", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "enc-layers-negative.safetensors", kModel, "num_encoder_layers", -2)); },
     1, {"enc-layers-negative.safetensors", "config: 'num_encoder_layers' must be in 1..16777216, got -2"}},
    {"zero target vocabulary", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "tgt-vocab-0.safetensors", kModel, "tgt_vocab_size", 0)); },
     1, {"tgt-vocab-0.safetensors", "config: 'tgt_vocab_size' must be in 1..16777216, got 0"}},
    {"negative max_len", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "max-len-negative.safetensors", kModel, "max_len", -1)); },
     1, {"max-len-negative.safetensors", "config: 'max_len' must be in 1..16777216, got -1"}},
    {"decoder_only: zero vocab_size", [](const TempDirectory& d) {
         return forward(d, config_with(d, "vocab-0.safetensors", kPrefixModel, "vocab_size", 0), kPrefixInputs); },
     1, {"vocab-0.safetensors", "config: 'vocab_size' must be in 1..16777216, got 0"}},
    {"decoder_only: negative num_layers", [](const TempDirectory& d) {
         return forward(d, config_with(d, "num-layers-negative.safetensors", kPrefixModel, "num_layers", -1), kPrefixInputs); },
     1, {"num-layers-negative.safetensors", "config: 'num_layers' must be in 1..16777216, got -1"}},
    {"size above the limit of 2^24", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "ffn-huge.safetensors", kModel, "dim_feedforward", (1 << 24) + 1)); },
     1, {"ffn-huge.safetensors", "config: 'dim_feedforward' must be in 1..16777216, got 16777217"}},
    {"size above INT64_MAX", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "d-model-u64.safetensors", kModel, "d_model",
                                             std::numeric_limits<uint64_t>::max())); },
     1, {"d-model-u64.safetensors", "config: 'd_model' must fit in int64, got 18446744073709551615"}},
    {"size not an integer", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nhead-float.safetensors", kModel, "nhead", 2.5)); },
     1, {"nhead-float.safetensors", "config: 'nhead' must be an integer, got 2.5"}},
    {"sinusoidal table max_len x d_model above 2^27", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "table.safetensors", kModel, "max_len", 1 << 24)); },
     1, {"table.safetensors", "'max_len' x 'd_model' = 16777216 x 16 is above the limit of 2^27 numbers"}},
    {"arch not a string", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "arch-number.safetensors", kModel, "arch", 3)); },
     1, {"arch-number.safetensors", "config: 'arch' must be a string, got 3"}},
    {"norm_first not a Boolean", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "norm-first.safetensors", kModel, "norm_first", "yes")); },
     1, {"norm-first.safetensors", "config: 'norm_first' must be true or false, got \"yes\""}},
    {"final_norm false for an encoder_decoder model", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "final-norm.safetensors", kModel, "final_norm", false)); },
     1, {"final-norm.safetensors", "config: 'final_norm' must be true for encoder_decoder"}},
    {"special id negative", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "pad-negative.safetensors", kModel, "pad_id", -1)); },
     1, {"pad-negative.safetensors", "config: 'pad_id' = -1 is outside the vocabulary 0..12"}},

};

// ---- checkpoint: tensors ----
const std::vector<BadInput> kTensors = {
    {"missing tensor", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "missing.safetensors", kModel, [](Contents& c) { c.remove("generator.bias"); })); },
     1, {"missing.safetensors", "missing tensor 'generator.bias' (expected F32 [11])"}},
    {"unknown extra tensor", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "extra.safetensors", kModel, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor("transformer.encoder.layers.2.norm1.weight", Tensor({16}))); })); },
     1, {"extra.safetensors", "unknown tensor 'transformer.encoder.layers.2.norm1.weight' [16]",
         "not used by the encoder_decoder model that this config describes"}},
    {"tensor name with a C1 control (U+009B, CSI) and 100 kB long: escaped, the line cut", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "long-name.safetensors", kModel, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor("csi\xc2\x9b" + std::string(100000, 'x'), Tensor({1}))); })); },
     1, {"long-name.safetensors", "unknown tensor 'csi\\u{009b}xxx", "xxx... (", " more bytes)"}},
    // From the review: finite weights near 3e38 overflowed to inf and NaN,
    // and forward wrote those logits with exit 0.
    {"finite weights so large that the logits overflow float32", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "huge-weights.safetensors", kModel, [](Contents& c) {
             tinyformer::TensorToWrite& weight = c.tensor("generator.weight");
             for (size_t i = 0; i < weight.bytes.size() / 4; ++i) set_float(weight, i, i % 2 ? 3e38f : -3e38f); })); },
     1, {"model: the logits hold", "the weights are finite, but on this input the activations overflow float32"}},
    {"tensor name with a newline and a terminal escape: still one line, no control characters", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "control.safetensors", kModel, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor("evil\nname\x1b[31m", Tensor({1}))); })); },
     1, {"control.safetensors", "unknown tensor 'evil\\x0aname\\x1b[31m' [1]"}},
    {"wrong shape", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "shape.safetensors", kModel, [](Contents& c) {
             c.replace(tinyformer::f32_tensor("generator.bias", Tensor({12}))); })); },
     1, {"shape.safetensors", "tensor 'generator.bias' has shape [12]; expected [11]"}},
    {"wrong dtype", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "dtype.safetensors", kModel, [](Contents& c) {
             c.replace(ids("generator.bias", {11}, std::vector<int64_t>(11, 1))); })); },
     1, {"dtype.safetensors", "tensor 'generator.bias' has dtype I64; expected F32 (or F16, BF16)"}},
    // Q8_0 weights (docs/FORMAT.md): an I8 weight with its F32 scales [N, K / G].
    {"Q8_0 weight without its scales", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-no-scale.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "generator.weight", 8);
             c.remove("generator.weight.scale"); })); },
     1, {"q8-no-scale.safetensors", "tensor 'generator.weight' is I8 (Q8_0) but its scales 'generator.weight.scale'",
         "are missing"}},
    {"Q8_0 scales for a weight that is not I8", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-stray-scale.safetensors", kModel, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor("generator.weight.scale", Tensor({11, 2}))); })); },
     1, {"q8-stray-scale.safetensors", "tensor 'generator.weight.scale' scales a Q8_0 weight, but 'generator.weight' is F32, not I8"}},
    {"Q8_0 scales of the wrong number of rows", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-scale-rows.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "generator.weight", 8);
             c.replace(tinyformer::f32_tensor("generator.weight.scale", Tensor::filled({10, 2}, 0.1f))); })); },
     1, {"q8-scale-rows.safetensors", "tensor 'generator.weight.scale' has shape [10,2]; expected [11, groups] with groups dividing 16"}},
    {"Q8_0 group size that does not divide K (3 groups of 16 columns)", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-group.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "transformer.decoder.layers.0.linear1.weight", 8);
             c.replace(tinyformer::f32_tensor("transformer.decoder.layers.0.linear1.weight.scale",
                                              Tensor::filled({32, 3}, 0.1f))); })); },
     1, {"q8-group.safetensors", "tensor 'transformer.decoder.layers.0.linear1.weight.scale' has shape [32,3]",
         "groups dividing 16 (the group size G = 16 / groups"}},
    {"Q8_0 scale NaN", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-scale-undefined.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "transformer.encoder.layers.1.self_attn.out_proj.weight", 4);
             set_float(c.tensor("transformer.encoder.layers.1.self_attn.out_proj.weight.scale"), 5,
                       std::numeric_limits<float>::quiet_NaN()); })); },
     1, {"q8-scale-undefined.safetensors", "tensor 'transformer.encoder.layers.1.self_attn.out_proj.weight': Q8_0 scale 5 (row 1, group 1) is NaN"}},
    {"Q8_0 scale negative", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-negative.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "transformer.encoder.layers.0.self_attn.in_proj_weight", 16);
             set_float(c.tensor("transformer.encoder.layers.0.self_attn.in_proj_weight.scale"), 47, -0.5f); })); },
     1, {"q8-negative.safetensors", "in_proj_weight': Q8_0 scale 47 (row 47, group 0) is -0.5; a scale is a number >= 0 whose 127 times is finite"}},
    {"Q8_0 scales stored as I64", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "q8-scale-dtype.safetensors", kModel, [](Contents& c) {
             test_helpers::quantize_tensor(c, "generator.weight", 16);
             c.replace(ids("generator.weight.scale", {11, 1}, std::vector<int64_t>(11, 1))); })); },
     1, {"q8-scale-dtype.safetensors", "tensor 'generator.weight.scale' has dtype I64; expected F32"}},
    {"offsets reversed", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "reversed.safetensors", kModel, [](json& h) {
             json& offsets = h["generator.bias"]["data_offsets"];
             offsets = json::array({offsets[1], offsets[0]}); })); },
     1, {"reversed.safetensors", "tensor 'generator.bias'", "are reversed"}},
    {"offsets overlapping", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "overlap.safetensors", kModel, [](json& h) {
             h["generator.bias2"] = h["generator.bias"]; })); },  // the same 44 bytes, twice
     1, {"overlap.safetensors", "overlaps tensor 'generator.bias", "data_offsets [0, 44]"}},
    {"offsets outside the data", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "outside.safetensors", kModel, [](json& h) {
             h["generator.bias"]["data_offsets"] = json::array({1u << 30, (1u << 30) + 44}); })); },
     1, {"outside.safetensors", "tensor 'generator.bias'", "data_offsets [1073741824, 1073741868] run past the data section"}},
    {"offsets that leave a hole", [](const TempDirectory& d) {
         const std::string header = R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})";
         return forward_model(d, raw_file(d, "hole.safetensors", header.size(), header, "\x01\x02\x03\x04")); },
     1, {"hole.safetensors", "bytes 0..2 of the data section belong to no tensor (before 'a')"}},
    {"shape whose element count overflows 64 bits", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "overflow.safetensors", kModel, [](json& h) {
             h["generator.bias"]["shape"] = json::array({1ull << 32, 1ull << 32, 16}); })); },
     1, {"overflow.safetensors", "tensor 'generator.bias'", "shape [4294967296,4294967296,16] has too many elements"}},
    {"negative shape", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "negative-shape.safetensors", kModel, [](json& h) {
             h["generator.bias"]["shape"] = json::array({-11}); })); },
     1, {"negative-shape.safetensors", "tensor 'generator.bias'", "shape must hold non-negative integers, got [-11]"}},
    {"NaN in a weight", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "weight-not-finite.safetensors", kModel,
                                        [](Contents& c) { set_float(c.tensor(kInProj), 5, kNaN); })); },
     1, {"weight-not-finite.safetensors", "tensor 'transformer.encoder.layers.0.self_attn.in_proj_weight'",
         "holds a non-finite value (NaN) at flat index 5"}},
    {"inf in a weight", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "weight-inf.safetensors", kModel,
                                        [](Contents& c) { set_float(c.tensor("generator.bias"), 2, -kInf); })); },
     1, {"weight-inf.safetensors", "tensor 'generator.bias' holds a non-finite value (-inf) at flat index 2"}},
    {"file truncated inside the data", [](const TempDirectory& d) {
         const std::string path = d.file("truncated.safetensors");
         std::filesystem::copy_file(kModel, path);
         std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1000);
         return forward_model(d, path); },
     1, {"truncated.safetensors", "run past the data section", "is the file truncated?"}},
    {"wrong shape: a transposed matrix", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "transposed.safetensors", kModel, [](Contents& c) {
             c.replace(tinyformer::f32_tensor("generator.weight", Tensor({16, 11}))); })); },
     1, {"transposed.safetensors", "tensor 'generator.weight' has shape [16,11]; expected [11,16]"}},
    {"offsets whose span disagrees with the shape", [](const TempDirectory& d) {
         return forward_model(d, header_edited(d, "span.safetensors", kModel, [](json& h) {
             h["generator.bias"]["data_offsets"] = json::array({0, 40}); })); },
     1, {"span.safetensors", "tensor 'generator.bias'", "F32 [11] needs 44 bytes but data_offsets span 40"}},
    {"data section longer than its tensors", [](const TempDirectory& d) {
         const std::string header = R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})";
         return forward_model(d, raw_file(d, "trailing.safetensors", header.size(), header, "\x01\x02\x03\x04")); },
     1, {"trailing.safetensors", "the data section has 4 bytes but the tensors cover 2"}},
    {"NaN in an F16 weight", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "f16-not-finite.safetensors", kModel, [](Contents& c) {
             TensorToWrite half{"generator.bias", "F16", {11}, std::vector<uint8_t>(22, 0)};
             half.bytes[6] = 0x00, half.bytes[7] = 0x7E;  // element 3: F16 quiet NaN 0x7E00
             c.replace(half); })); },
     1, {"f16-not-finite.safetensors", "tensor 'generator.bias' holds a non-finite value (NaN) at flat index 3"}},
    {"inf in a BF16 weight", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "bf16-inf.safetensors", kModel, [](Contents& c) {
             TensorToWrite half{"generator.bias", "BF16", {11}, std::vector<uint8_t>(22, 0)};
             half.bytes[20] = 0x80, half.bytes[21] = 0x7F;  // element 10: BF16 +inf 0x7F80
             c.replace(half); })); },
     1, {"bf16-inf.safetensors", "tensor 'generator.bias' holds a non-finite value (inf) at flat index 10"}},
    {"NaN in a weight, with an earlier output file that must stay", [](const TempDirectory& d) {
         return forward(d, edited(d, "weight-bad-existing.safetensors", kModel,
                                  [](Contents& c) { set_float(c.tensor("generator.weight"), 0, kNaN); }),
                        kInputs, /*existing=*/true); },
     1, {"weight-bad-existing.safetensors", "tensor 'generator.weight' holds a non-finite value (NaN) at flat index 0"}},
    {"checkpoint given where the inputs go, and inputs where the model goes", [](const TempDirectory& d) {
         return forward(d, kInputs, kModel); },
     1, {"ed_post_relu_sin.inputs.safetensors", "__metadata__ has no \"config\""}},

};

// ---- `forward` inputs ----
const std::vector<BadInput> kForwardInputs = {
    {"token id negative", [](const TempDirectory& d) {
         return forward_inputs(d, "negative-id.safetensors", kModel, kInputs,
                               [](Contents& c) { set_id(c.tensor("src_ids"), 3, -1); }); },
     1, {"negative-id.safetensors", "input 'src_ids' holds token id -1 at [0,3], outside the vocabulary 0..12"}},
    {"token id equal to the vocabulary size", [](const TempDirectory& d) {
         return forward_inputs(d, "id-too-big.safetensors", kModel, kInputs,
                               [](Contents& c) { set_id(c.tensor("tgt_ids"), 6, 11); }); },
     1, {"id-too-big.safetensors", "input 'tgt_ids' holds token id 11 at [1,1], outside the vocabulary 0..10"}},
    {"ids of the wrong rank", [](const TempDirectory& d) {
         return forward_inputs(d, "rank.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(ids("src_ids", {14}, std::vector<int64_t>(14, 4))); }); },
     1, {"rank.safetensors", "input 'src_ids' must be [B,T], got [14]"}},
    {"ids of a float dtype", [](const TempDirectory& d) {
         return forward_inputs(d, "float-ids.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(tinyformer::f32_tensor("tgt_ids", Tensor({2, 5}))); }); },
     1, {"float-ids.safetensors", "tensor 'tgt_ids' has dtype F32; expected I64 or I32"}},
    {"batch sizes that disagree between source and target", [](const TempDirectory& d) {
         return forward_inputs(d, "batch.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(ids("tgt_ids", {3, 5}, std::vector<int64_t>(15, 4))); }); },
     1, {"batch.safetensors", "src_ids has B=2 but tgt_ids has B=3"}},
    {"batch sizes that disagree between ids and mask", [](const TempDirectory& d) {
         return forward_inputs(d, "mask-batch.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(mask("src_key_padding_mask", {3, 7}, std::vector<uint8_t>(21, 0))); }); },
     1, {"mask-batch.safetensors", "input 'src_key_padding_mask' is [3,7] but its ids are [2,7]"}},
    {"sequence longer than max_len", [](const TempDirectory& d) {
         return forward_inputs(d, "too-long.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(ids("src_ids", {2, 17}, std::vector<int64_t>(34, 4))); }); },
     1, {"too-long.safetensors", "input 'src_ids' [2,17] has length 17 but the model's max_len is 16"}},
    {"zero-length sequence", [](const TempDirectory& d) {
         return forward_inputs(d, "zero-length.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(ids("tgt_ids", {2, 0}, {})); }); },
     1, {"zero-length.safetensors", "input 'tgt_ids' is empty [2,0]; need B >= 1 and T >= 1"}},
    {"prefix_len negative", [](const TempDirectory& d) {
         return forward_inputs(d, "prefix-negative.safetensors", kPrefixModel, kPrefixInputs,
                               [](Contents& c) { set_id(c.tensor("prefix_len"), 1, -2); }); },
     1, {"prefix-negative.safetensors", "input 'prefix_len' holds -2 at [1], outside 0..T = 0..6"}},
    {"prefix_len longer than T", [](const TempDirectory& d) {
         return forward_inputs(d, "prefix-long.safetensors", kPrefixModel, kPrefixInputs,
                               [](Contents& c) { set_id(c.tensor("prefix_len"), 2, 7); }); },
     1, {"prefix-long.safetensors", "input 'prefix_len' holds 7 at [2], outside 0..T = 0..6"}},
    {"prefix_len missing for a prefix_lm model", [](const TempDirectory& d) {
         return forward_inputs(d, "no-prefix.safetensors", kPrefixModel, kPrefixInputs,
                               [](Contents& c) { c.remove("prefix_len"); }); },
     1, {"no-prefix.safetensors", "missing input 'prefix_len' (I64 [B]) for a prefix_lm model"}},
    {"source row all padding with a real target row", [](const TempDirectory& d) {
         return forward_inputs(d, "all-padding.safetensors", kModel, kInputs, [](Contents& c) {
             std::vector<uint8_t> flags(14, 0);
             std::fill(flags.begin() + 7, flags.end(), 1);  // batch 1: every source position is padding
             c.tensors.push_back(mask("src_key_padding_mask", {2, 7}, flags)); }); },
     1, {"all-padding.safetensors", "'src_key_padding_mask' marks every source position of batch 1 as padding",
         "cross-attention query 0 of batch 1 may attend no key"}},
    {"mask of the wrong dtype", [](const TempDirectory& d) {
         return forward_inputs(d, "mask-float.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor("tgt_key_padding_mask", Tensor({2, 5}))); }); },
     1, {"mask-float.safetensors", "tensor 'tgt_key_padding_mask' has dtype F32; expected BOOL or U8"}},
    {"mask holding a value other than 0 and 1", [](const TempDirectory& d) {
         return forward_inputs(d, "mask-two.safetensors", kModel, kInputs, [](Contents& c) {
             TensorToWrite flags = mask("tgt_key_padding_mask", {2, 5}, std::vector<uint8_t>(10, 0));
             flags.dtype = "U8";
             flags.bytes[4] = 2;
             c.tensors.push_back(flags); }); },
     1, {"mask-two.safetensors", "tensor 'tgt_key_padding_mask' holds 2; a Boolean mask holds 0 or 1"}},
    {"missing input", [](const TempDirectory& d) {
         return forward_inputs(d, "no-tgt.safetensors", kModel, kInputs, [](Contents& c) { c.remove("tgt_ids"); }); },
     1, {"no-tgt.safetensors", "missing input 'tgt_ids'"}},
    {"unknown input", [](const TempDirectory& d) {
         return forward_inputs(d, "unknown-input.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(mask("memory_mask", {2, 7}, std::vector<uint8_t>(14, 0))); }); },
     1, {"unknown-input.safetensors", "unknown input 'memory_mask'", "src_ids, src_key_padding_mask"}},
    {"token id INT64_MAX", [](const TempDirectory& d) {
         return forward_inputs(d, "id-max.safetensors", kModel, kInputs, [](Contents& c) {
             set_id(c.tensor("src_ids"), 13, std::numeric_limits<int64_t>::max()); }); },
     1, {"id-max.safetensors", "input 'src_ids' holds token id 9223372036854775807 at [1,6], outside the vocabulary 0..12"}},
    {"decoder_only: token id equal to the vocabulary size", [](const TempDirectory& d) {
         return forward_inputs(d, "do-id.safetensors", kPrefixModel, kPrefixInputs,
                               [](Contents& c) { set_id(c.tensor("ids"), 8, 14); }); },
     1, {"do-id.safetensors", "input 'ids' holds token id 14 at [1,2], outside the vocabulary 0..13"}},
    {"ids of rank 3", [](const TempDirectory& d) {
         return forward_inputs(d, "rank3.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             c.replace(ids("ids", {3, 6, 1}, std::vector<int64_t>(18, 4))); }); },
     1, {"rank3.safetensors", "input 'ids' must be [B,T], got [3,6,1]"}},
    {"batch sizes that disagree between ids and key_padding_mask (decoder_only)", [](const TempDirectory& d) {
         return forward_inputs(d, "do-mask-batch.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             c.tensors.push_back(mask("key_padding_mask", {2, 6}, std::vector<uint8_t>(12, 0))); }); },
     1, {"do-mask-batch.safetensors", "input 'key_padding_mask' is [2,6] but its ids are [3,6]"}},
    {"batch sizes that disagree between tgt_ids and tgt_key_padding_mask", [](const TempDirectory& d) {
         return forward_inputs(d, "tgt-mask-batch.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(mask("tgt_key_padding_mask", {1, 5}, std::vector<uint8_t>(5, 0))); }); },
     1, {"tgt-mask-batch.safetensors", "input 'tgt_key_padding_mask' is [1,5] but its ids are [2,5]"}},
    {"mask length that disagrees with its ids", [](const TempDirectory& d) {
         return forward_inputs(d, "mask-length.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(mask("src_key_padding_mask", {2, 6}, std::vector<uint8_t>(12, 0))); }); },
     1, {"mask-length.safetensors", "input 'src_key_padding_mask' is [2,6] but its ids are [2,7]"}},
    {"decoder_only: sequence longer than max_len", [](const TempDirectory& d) {
         return forward_inputs(d, "do-too-long.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             c.replace(ids("ids", {3, 9}, std::vector<int64_t>(27, 4))); }); },
     1, {"do-too-long.safetensors", "input 'ids' [3,9] has length 9 but the model's max_len is 8"}},
    // From the review: with no positional encoding, max_len bounds nothing, so
    // a file of a million ids (8 MB) asked for a [T,T] causal mask of 1 TB.
    {"decoder_only without positions: a million tokens, a terabyte of mask", [](const TempDirectory& d) {
         return forward_inputs(d, "do-million.safetensors", kNoPositionModel, kNoPositionInputs, [](Contents& c) {
             c.tensors.clear();
             c.tensors.push_back(ids("ids", {1, 1000000}, std::vector<int64_t>(1000000, 3))); }); },
     1, {"forward: B=1 sequences of 1000000 tokens attending 1000000 keys need about",
         "bytes of memory are available; refused before allocating"}},
    {"zero batch", [](const TempDirectory& d) {
         return forward_inputs(d, "zero-batch.safetensors", kModel, kInputs, [](Contents& c) {
             c.replace(ids("src_ids", {0, 7}, {})); }); },
     1, {"zero-batch.safetensors", "input 'src_ids' is empty [0,7]; need B >= 1 and T >= 1"}},
    {"prefix_len INT64_MIN", [](const TempDirectory& d) {
         return forward_inputs(d, "prefix-min.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             set_id(c.tensor("prefix_len"), 0, std::numeric_limits<int64_t>::min()); }); },
     1, {"prefix-min.safetensors", "input 'prefix_len' holds -9223372036854775808 at [0], outside 0..T = 0..6"}},
    {"prefix_len of the wrong shape", [](const TempDirectory& d) {
         return forward_inputs(d, "prefix-shape.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             c.replace(ids("prefix_len", {2}, {1, 2})); }); },
     1, {"prefix-shape.safetensors", "input 'prefix_len' must be [3], got [2]"}},
    {"prefix_len of a float dtype", [](const TempDirectory& d) {
         return forward_inputs(d, "prefix-float.safetensors", kPrefixModel, kPrefixInputs, [](Contents& c) {
             c.replace(tinyformer::f32_tensor("prefix_len", Tensor({3}))); }); },
     1, {"prefix-float.safetensors", "tensor 'prefix_len' has dtype F32; expected I64 or I32"}},
    {"source row all padding, its target row padded except the last position", [](const TempDirectory& d) {
         return forward_inputs(d, "all-padding-partial.safetensors", kModel, kInputs, [](Contents& c) {
             std::vector<uint8_t> source(14, 0), target(10, 0);
             std::fill(source.begin(), source.begin() + 7, 1);  // batch 0: every source position is padding
             std::fill(target.begin(), target.begin() + 4, 1);  // batch 0: target 0..3 padding, 4 real
             c.tensors.push_back(mask("src_key_padding_mask", {2, 7}, source));
             c.tensors.push_back(mask("tgt_key_padding_mask", {2, 5}, target)); }); },
     1, {"all-padding-partial.safetensors", "'src_key_padding_mask' marks every source position of batch 0 as padding",
         "cross-attention query 4 of batch 0 may attend no key"}},
    {"mask of dtype I64", [](const TempDirectory& d) {
         return forward_inputs(d, "mask-i64.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(ids("src_key_padding_mask", {2, 7}, std::vector<int64_t>(14, 0))); }); },
     1, {"mask-i64.safetensors", "tensor 'src_key_padding_mask' has dtype I64; expected BOOL or U8"}},
    {"prefix_len given to an encoder_decoder model", [](const TempDirectory& d) {
         return forward_inputs(d, "ed-prefix.safetensors", kModel, kInputs, [](Contents& c) {
             c.tensors.push_back(ids("prefix_len", {2}, {1, 1})); }); },
     1, {"ed-prefix.safetensors", "unknown input 'prefix_len'"}},

};

// ---- the command line ----
const std::vector<BadInput> kCommandLine = {
    {"unknown subcommand", [](const TempDirectory&) { return std::vector<std::string>{"frobnicate"}; },
     2, {"unknown command 'frobnicate'", "tinyformer --help"}},
    {"unknown flag", [](const TempDirectory& d) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", d.file("o.safetensors"), "--fast"}; },
     2, {"forward: unknown option '--fast'"}},
    {"missing argument value", [](const TempDirectory&) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output"}; },
     2, {"forward: --output needs a value"}},
    {"required flag missing", [](const TempDirectory&) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs}; },
     2, {"forward: --output is required"}},
    {"two models given", [](const TempDirectory& d) {
         return std::vector<std::string>{"forward", kModel, kModel, "--inputs", kInputs, "--output", d.file("o.safetensors")}; },
     2, {"forward: expected one MODEL file, got 2"}},
    {"missing model file", [](const TempDirectory& d) { return forward(d, d.file("absent.safetensors"), kInputs); },
     1, {"absent.safetensors: no such file"}},
    {"missing inputs file", [](const TempDirectory& d) { return forward(d, kModel, d.file("absent-inputs.safetensors")); },
     1, {"absent-inputs.safetensors: no such file"}},
    {"a directory where the model file is expected", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("model-dir"));
         return std::vector<std::string>{"info", d.file("model-dir")}; },
     1, {"model-dir: is a directory, expected a .safetensors file"}},
    {"output in a folder that does not exist", [](const TempDirectory& d) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", d.file("no/such/out.safetensors")}; },
     1, {"forward: cannot write ", "no/such/out.safetensors: its folder ", "No such file or directory"}},
    {"output path that is a directory", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("out-dir"));
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", d.file("out-dir")}; },
     1, {"forward: the output ", "out-dir is a directory"}},
    {"run --beam 0", [](const TempDirectory&) { return std::vector<std::string>{"run", kReverse, "--beam", "0", "abc"}; },
     2, {"run: --beam must be in 1..64, got 0"}},
    {"run --beam not a number", [](const TempDirectory&) { return std::vector<std::string>{"run", kReverse, "--beam", "two", "abc"}; },
     2, {"run: --beam needs an integer, got 'two'"}},
    {"run on text with characters outside the vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "Hello"}; },
     1, {"character 'H' at position 0 of \"Hello\" is not in the model's vocabulary"}},
    {"run on a text longer than the model's max_len", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", std::string(40, 'x')}; },
     1, {"input \"xxxxxxxxxx", "an input of 40 tokens is longer than the model's max_len of 32"}},
    {"run --no-truncate on a prompt longer than a decoder-only model's max_len", [](const TempDirectory&) {
         return std::vector<std::string>{"run", "data/models/reverse-prefixlm.safetensors", std::string(50, 'x') + "=",
                                         "--no-truncate"}; },
     1, {"input \"xxxxxxxxxx", "an input of 52 tokens (with <bos> and the prompt suffix) is longer than the model's max_len of 40"}},
    {"run --no-truncate --max-new-tokens on a model without positions: the window does not cut the prompt", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kNoPositionModel, "--ids", "3,3,3,3,3,3,3,3,3,3", "--no-truncate",
                                         "--max-new-tokens", "3"}; },
     1, {"run: the input (11 tokens) is longer than the model's max_len of 8 positions, and --no-truncate keeps it whole"}},
    {"run on a model without a vocabulary", [](const TempDirectory&) { return std::vector<std::string>{"run", kModel, "abc"}; },
     1, {"has no vocabulary", "cannot read text; give token ids (--ids)"}},
    {"eval with an unknown task", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", kReverse, "--task", "translate"}; },
     2, {"eval: --task must be reverse, sort, dates or lm, got 'translate'"}},
    {"eval --task lm on an encoder-decoder model", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", kReverse, "--task", "lm", "--data", "data/models/lm-heldout.txt",
                                         "--positions", "2-31"}; },
     1, {"lm loss: needs a decoder_only model with causal attention"}},
    {"eval --task lm with --lengths", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "--task", "lm", "--data",
                                         "data/models/lm-heldout.txt", "--positions", "2-31", "--lengths", "3"}; },
     2, {"eval: --lengths is for the reverse, sort and dates tasks, not lm"}},
    {"eval --task lm on data the model cannot read", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "--task", "lm", "--data",
                                         "README.md", "--positions", "2-31"}; },
     1, {"lm sequences: line ", "which is not in the model's vocabulary"}},
    // The picture's problems are known before any model runs: refused then, nothing printed.
    {"eval --task lm --plot of a single position", [](const TempDirectory& d) {
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "--task", "lm", "--data",
                                         "data/models/lm-heldout.txt", "--positions", "0", "--plot", d.file("p.png")}; },
     2, {"eval: --plot draws the loss across positions, and --positions 0 is a single position; give at least two"}},
    {"eval --task lm --plot of 13 models", [](const TempDirectory& d) {
         std::vector<std::string> command{"eval"};
         for (int i = 0; i < 13; ++i) command.push_back("data/models/lm-none.safetensors");
         for (const char* word : {"--task", "lm", "--data", "data/models/lm-heldout.txt", "--positions", "0-5", "--plot"})
             command.push_back(word);
         command.push_back(d.file("p.png"));
         return command; },
     2, {"eval: --plot draws at most 12 models (one line each), got 13"}},
    {"eval --task lm --plot into a missing folder", [](const TempDirectory& d) {
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "--task", "lm", "--data",
                                         "data/models/lm-heldout.txt", "--positions", "0-5", "--plot", d.file("no/p.png")}; },
     1, {"eval: cannot write ", "no/p.png: its folder ", "No such file or directory"}},
    {"eval --task lm on a line longer than max_len + 1", [](const TempDirectory& d) {
         std::ofstream(d.file("long.txt"), std::ios::binary) << "abc\n" << std::string(1000, 'a') << "\n";
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "--task", "lm", "--data",
                                         d.file("long.txt"), "--positions", "0-1"}; },
     1, {"lm sequences: line 2 has 1000 tokens, more than max_len + 1 = 129"}},
    {"eval --task lm on models of different vocabularies", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", "data/models/lm-none.safetensors", "data/models/reverse-prefixlm.safetensors",
                                         "--task", "lm", "--data", "data/models/lm-heldout.txt", "--positions", "0-1", "--n", "2"}; },
     1, {"eval: data/models/reverse-prefixlm.safetensors's vocabulary differs from data/models/lm-none.safetensors's"}},
    {"attention --head past the model's heads", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abc", "--head", "4", "--out", d.file("maps")}; },
     2, {"attention: --head 4 but the model has 4"}},
    {"mask of an unknown kind", [](const TempDirectory&) { return std::vector<std::string>{"mask", "diagonal"}; },
     2, {"mask: unknown KIND 'diagonal'"}},
    {"unknown option before any command", [](const TempDirectory&) { return std::vector<std::string>{"--frobnicate"}; },
     2, {"unknown command '--frobnicate'"}},
    {"unknown flag of run", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--beams", "2", "abc"}; },
     2, {"run: unknown option '--beams'"}},
    {"unknown flag, with an earlier output file that must stay", [](const TempDirectory& d) {
         std::vector<std::string> args = forward(d, kModel, kInputs, /*existing=*/true);
         args.push_back("--fast");
         return args; },
     2, {"forward: unknown option '--fast'"}},
    {"missing value of --beam", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--beam"}; },
     2, {"run: --beam needs a value"}},
    {"missing value of --inputs", [](const TempDirectory&) {
         return std::vector<std::string>{"forward", kModel, "--inputs"}; },
     2, {"forward: --inputs needs a value"}},
    // Found in the catalogue review: the flag after a value flag was taken as
    // its value, so this wrote a file named "--attention" and exited 0.
    {"a flag where --output's value should be", [](const TempDirectory&) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", "--attention"}; },
     2, {"forward: --output needs a value"}},
    {"a flag where --inputs' value should be", [](const TempDirectory& d) {
         return std::vector<std::string>{"forward", kModel, "--inputs", "--output", d.file("out.safetensors")}; },
     2, {"forward: --inputs needs a value"}},
    {"missing model file for info", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", d.file("absent.safetensors")}; },
     1, {"absent.safetensors: no such file"}},
    {"missing model file, with an earlier output file that must stay", [](const TempDirectory& d) {
         return forward(d, d.file("absent.safetensors"), kInputs, /*existing=*/true); },
     1, {"absent.safetensors: no such file"}},
    {"a directory where the inputs file is expected", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("inputs-dir"));
         return forward(d, kModel, d.file("inputs-dir"), /*existing=*/true); },
     1, {"inputs-dir: is a directory, expected a .safetensors file"}},
    {"a character device where the model file is expected", [](const TempDirectory&) {
         return std::vector<std::string>{"info", "/dev/null"}; },
     1, {"/dev/null: not a regular file"}},
    {"output path below a regular file (unwritable)", [](const TempDirectory& d) {
         std::ofstream(d.file("plain-file")) << "not a folder";
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", d.file("plain-file/out.safetensors")}; },
     1, {"forward: cannot write ", "plain-file/out.safetensors: ", "plain-file is not a folder"}},
    {"output file name too long (unwritable)", [](const TempDirectory& d) {
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output",
                                         d.file(std::string(300, 'o') + ".safetensors")}; },
     1, {"forward: cannot write ", "ooooo.safetensors: File name too long (", "bytes; a file name holds at most 255)"}},
    {"attention --out below a regular file (unwritable)", [](const TempDirectory& d) {
         std::ofstream(d.file("plain-file")) << "not a folder";
         return std::vector<std::string>{"attention", kReverse, "abc", "--out", d.file("plain-file/maps")}; },
     1, {"plain-file/maps: cannot create the output folder: Not a directory"}},
    {"probe --png below a regular file (unwritable)", [](const TempDirectory& d) {
         std::ofstream(d.file("plain-file")) << "not a folder";
         return std::vector<std::string>{"probe", "data/models/sort.safetensors", "31415926", "--png", d.file("plain-file/p.png")}; },
     1, {"probe: cannot write ", "plain-file/p.png: ", "plain-file is not a folder"}},
    {"attention on text outside the vocabulary, with an earlier output folder that must stay", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("maps"));
         std::ofstream(d.file("maps/index.md")) << "an earlier picture index, to be kept";
         return std::vector<std::string>{"attention", kReverse, "Hello", "--out", d.file("maps")}; },
     1, {"character 'H' at position 0 of \"Hello\" is not in the model's vocabulary"}},
    // Found in the catalogue review: the mask was printed before the PNG write failed.
    {"mask --png below a regular file (unwritable): nothing printed", [](const TempDirectory& d) {
         std::ofstream(d.file("plain-file")) << "not a folder";
         return std::vector<std::string>{"mask", "causal", "--len", "4", "--png", d.file("plain-file/m.png")}; },
     1, {"mask: cannot write ", "plain-file/m.png: ", "plain-file is not a folder"}},
};

// ---- one output flag, pictures named .png ----
const std::vector<BadInput> kOutputFlag = {
    {"mask --output out.jpg: a picture that is not named .png, with an earlier file that must stay", [](const TempDirectory& d) {
         std::ofstream(d.file("out.jpg"), std::ios::binary) << "an earlier photo, to be kept";
         return std::vector<std::string>{"mask", "causal", "--output", d.file("out.jpg")}; },
     2, {"mask: the picture path '", "out.jpg' does not end in .png"}},
    {"mask --png out.jpg (the old flag name)", [](const TempDirectory& d) {
         return std::vector<std::string>{"mask", "causal", "--png", d.file("out.jpg")}; },
     2, {"mask: the picture path '", "out.jpg' does not end in .png"}},
    {"probe --output p.PNG.txt", [](const TempDirectory& d) {
         return std::vector<std::string>{"probe", "data/models/sort.safetensors", "31415926", "--output", d.file("p.png.txt")}; },
     2, {"probe: the picture path '", "p.png.txt' does not end in .png"}},
    {"probe --output .png (no name)", [](const TempDirectory& d) {
         return std::vector<std::string>{"probe", "data/models/sort.safetensors", "31415926", "--output", d.file(".png")}; },
     2, {"probe: the picture path '", "/.png' does not end in .png"}},
    {"mask with both --output and --png", [](const TempDirectory& d) {
         return std::vector<std::string>{"mask", "causal", "--output", d.file("a.png"), "--png", d.file("b.png")}; },
     2, {"mask: give --output once (--png is another name for it)"}},
    {"attention with both --output and --out", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abc", "--output", d.file("a"), "--out", d.file("b")}; },
     2, {"attention: give --output once (--out is another name for it)"}},
    {"attention without --output", [](const TempDirectory&) {
         return std::vector<std::string>{"attention", kReverse, "abc"}; },
     2, {"attention: --output DIR is required"}},
    {"attention --scale 0", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abc", "--scale", "0", "--output", d.file("maps")}; },
     2, {"attention: --scale must be in 1..8, got 0"}},
    {"mask --scale 9", [](const TempDirectory& d) {
         return std::vector<std::string>{"mask", "causal", "--scale", "9", "--output", d.file("m.png")}; },
     2, {"mask: --scale must be in 1..8, got 9"}},
    {"eval --task dates on the reverse model (no digits in its vocabulary)", [](const TempDirectory&) {
         return std::vector<std::string>{"eval", kReverse, "--task", "dates", "--n", "5"}; },
     1, {"evaluate: the model's vocabulary has no ' ', so it was not trained on the dates task"}},
    {"align on a decoder-only model (no cross-attention)", [](const TempDirectory&) {
         return std::vector<std::string>{"align", "data/models/reverse-causal.safetensors", "abc"}; },
     1, {"align: data/models/reverse-causal.safetensors is not an encoder-decoder model; it has no cross-attention"}},
    {"align --layer past the decoder's layers", [](const TempDirectory&) {
         return std::vector<std::string>{"align", kReverse, "abc", "--layer", "2"}; },
     2, {"align: --layer 2 but the decoder has 2 layers (0..1)"}},
    {"cost --measure of a layer larger than the memory", [](const TempDirectory&) {
         return std::vector<std::string>{"cost", "--seq", "1048576", "--d-model", "65536", "--measure"}; },
     1, {"cost --measure: needs about", "(weights 65.0 GiB for 1 layer(s)", "refused before allocating"}},
    {"no command at all", [](const TempDirectory&) { return std::vector<std::string>{}; },
     2, {"tinyformer: error: no command given"}},
    {"mask --len 0, with an earlier PNG that must stay", [](const TempDirectory& d) {
         std::ofstream(d.file("mask.png"), std::ios::binary) << "an earlier picture, to be kept";
         return std::vector<std::string>{"mask", "causal", "--len", "0", "--png", d.file("mask.png")}; },
     2, {"mask: --len must be in 1..1024, got 0"}},
    {"run --beam 65", [](const TempDirectory&) { return std::vector<std::string>{"run", kReverse, "--beam", "65", "abc"}; },
     2, {"run: --beam must be in 1..64, got 65"}},
    {"run --beam -1", [](const TempDirectory&) { return std::vector<std::string>{"run", kReverse, "--beam", "-1", "abc"}; },
     2, {"run: --beam must be in 1..64, got -1"}},
    {"run on text with a non-ASCII character", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "h\xC3\xA9llo"}; },
     1, {"character '\xC3\xA9' (bytes C3 A9) at position 1 of \"h\xC3\xA9llo\" is not in the model's vocabulary"}},
    {"run on empty text", [](const TempDirectory&) { return std::vector<std::string>{"run", kReverse, ""}; },
     1, {"the input is empty; the encoder needs at least one token"}},

};

// ---- any vocabulary, token ids, text metadata ----
const std::vector<BadInput> kVocabularyAndIds = {
    {"run: a blank line on standard input fails the batch, naming the line", [](const TempDirectory& d) {
         std::ofstream(d.file("lines.txt")) << "hello\nworld\n\nagain\n";
         return std::vector<std::string>{"run", kReverse}; },
     1, {"standard input line 3 is blank; give one input per line, no blank lines"}, "lines.txt"},
    {"run: a line of standard input outside the vocabulary names its line", [](const TempDirectory& d) {
         std::ofstream(d.file("lines.txt")) << "hello\nWorld\n";
         return std::vector<std::string>{"run", kReverse}; },
     1, {"standard input line 2: tokenizer: character 'W' at position 0 of \"World\""}, "lines.txt"},
    {"run: empty standard input", [](const TempDirectory& d) {
         std::ofstream(d.file("lines.txt")).flush();
         return std::vector<std::string>{"run", kReverse}; },
     1, {"standard input has no lines"}, "lines.txt"},
    {"run --ids with an id outside the vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--ids", "5,30"}; },
     1, {"input token id 30 at position 1 is outside the vocabulary 0..29"}},
    {"run --ids with a negative id", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--ids=-4,5"}; },
     1, {"input token id -4 at position 0 is outside the vocabulary 0..29"}},
    {"run --ids that are not numbers", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--ids", "five,six"}; },
     2, {"run: --ids: 'five' (item 0 of \"five,six\") is not a token id"}},
    {"run --ids with an empty item", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--ids", "5,,6"}; },
     2, {"run: --ids: '' (item 1 of \"5,,6\") is not a token id"}},
    {"run with both TEXT and --ids", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--ids", "5"}; },
     2, {"run: give the input as TEXT or as --ids, not both"}},
    {"attention with neither TEXT nor --ids", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "--out", d.file("maps")}; },
     2, {"attention: give the input as TEXT or as --ids, one of them"}},
    {"attention --target-ids outside the target vocabulary", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kModel, "--ids", "3,4", "--target-ids", "11", "--out", d.file("maps")}; },
     1, {"target token id 11 at position 0 is outside the vocabulary 0..10"}},
    {"attention with --target and --target-ids", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abc", "--target", "cba", "--target-ids", "5", "--out", d.file("maps")}; },
     2, {"attention: give the target as --target or as --target-ids, not both"}},
    {"attention on an encoder-decoder model without bos_id and no target", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", config_with(d, "no-bos.safetensors", kModel, "bos_id", nullptr),
                                         "--ids", "3,4", "--out", d.file("maps")}; },
     1, {"the model's config has no bos_id, so it cannot generate a target", "--target or --target-ids"}},
    {"attention --target on an encoder-only model", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", "data/reference/eo_post_relu_learned_h1.model.safetensors", "--ids", "3,4",
                                         "--target-ids", "1", "--out", d.file("maps")}; },
     1, {"an encoder_only model has no target"}},
    {"probe --with-id outside the vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"probe", kReverse, "abc", "--with-id", "30"}; },
     1, {"input token id 30 at position 0 is outside the vocabulary 0..29"}},
    {"run on an encoder-only model", [](const TempDirectory&) {
         return std::vector<std::string>{"run", "data/reference/eo_post_relu_learned_h1.model.safetensors", "--ids", "3"}; },
     1, {"eo_post_relu_learned_h1.model.safetensors: an encoder_only model generates no text"}},
    {"run on a word-level model: an unknown word and no <unk>", [](const TempDirectory& d) {
         return std::vector<std::string>{"run", edited(d, "words.safetensors", kPrefixModel, [](Contents& c) {
             c.metadata["vocab"] = json({"<pad>", "<bos>", "<eos>", "the", "cat", "sat", "on", "mat", "a", "dog",
                                         "ran", "to", "big", "red"}).dump();
             c.metadata["tokenizer"] = std::string("whitespace"); }), "the cat sat on the zebra"}; },
     1, {"word 'zebra' (word 5, at character 19 of \"the cat sat on the zebra\") is not in the model's vocabulary, which has no <unk>"}},
    {"metadata: an unknown tokenizer", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "bpe.safetensors", kReverse, [](Contents& c) {
             c.metadata["tokenizer"] = std::string("bpe"); })}; },
     1, {"bpe.safetensors: __metadata__ \"tokenizer\"", "\"bpe\" is not a tokenizer; expected one of \"char\", \"whitespace\""}},
    {"metadata: train_max_len not a whole number", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "train-len.safetensors", kReverse, [](Contents& c) {
             c.metadata["train_max_len"] = std::string("16 tokens"); })}; },
     1, {"train-len.safetensors: __metadata__ \"train_max_len\" must be a whole number in 1..16777216", "got \"16 tokens\""}},
    {"metadata: train_max_len 0", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "train-len0.safetensors", kReverse, [](Contents& c) {
             c.metadata["train_max_len"] = std::string("0"); })}; },
     1, {"\"train_max_len\" must be a whole number in 1..16777216", "got \"0\""}},
    {"metadata: a prompt suffix on an encoder-decoder model", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "suffix.safetensors", kReverse, [](Contents& c) {
             c.metadata["prompt_suffix"] = std::string("="); })}; },
     1, {"suffix.safetensors: __metadata__ \"prompt_suffix\" is for decoder_only models; this one is encoder_decoder"}},
    {"metadata: a prompt suffix outside the vocabulary", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "suffix-unknown.safetensors", "data/models/reverse-causal.safetensors",
                                                        [](Contents& c) { c.metadata["prompt_suffix"] = std::string("=>"); })}; },
     1, {"__metadata__ \"prompt_suffix\" \"=>\": tokenizer: character '>' at position 1"}},
    {"metadata: src_vocab on a decoder-only model", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "src-vocab.safetensors", "data/models/reverse-causal.safetensors",
                                                        [](Contents& c) { c.metadata["src_vocab"] = c.metadata["vocab"]; })}; },
     1, {"__metadata__ \"src_vocab\" is for encoder_decoder models; this one is decoder_only"}},
    {"metadata: a vocabulary shorter than the config's vocabulary size", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "short-vocab.safetensors", kReverse, [](Contents& c) {
             json vocab = json::parse(c.metadata["vocab"]);
             vocab.erase(vocab.size() - 1);
             c.metadata["vocab"] = vocab.dump(); })}; },
     1, {"short-vocab.safetensors: __metadata__ \"vocab\" has 29 tokens but the config's 'tgt_vocab_size' is 30"}},
    {"metadata: one vocabulary for source and target of different sizes", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", edited(d, "one-vocab.safetensors", kModel, [](Contents& c) {
             c.metadata["vocab"] = json({"<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "f", "g", "h"}).dump(); })}; },
     1, {"has a \"vocab\" of 11 tokens for both sides, but 'src_vocab_size' is 13; give the source vocabulary as \"src_vocab\""}},

};

// ---- not safetensors, several config problems ----
const std::vector<BadInput> kNotSafetensors = {
    {"config with three problems at once: all three in the one line", [](const TempDirectory& d) {
         const std::string model = edited(d, "three.safetensors", kModel, [](Contents& c) {
             json config = json::parse(c.metadata.at("config"));
             config.erase("dim_feedforward");
             config["activation"] = "swish";
             config["dropout"] = 0.1;
             c.metadata["config"] = config.dump(); });
         return std::vector<std::string>{"info", model}; },
     1, {"three.safetensors: config: 3 problems: ", "missing key 'dim_feedforward' (int)",
         "'activation' is \"swish\"; expected one of \"gelu\", \"gelu_tanh\", \"relu\", \"silu\", \"swiglu\"",
         "unknown key 'dropout' (see docs/FORMAT.md for the keys of each arch)"}},
    {"config with three problems at once, through forward", [](const TempDirectory& d) {
         const std::string model = edited(d, "three-forward.safetensors", kModel, [](Contents& c) {
             json config = json::parse(c.metadata.at("config"));
             config["nhead"] = 0;
             config["pos_encoding"] = "rope";
             config["num_layers"] = 2;
             c.metadata["config"] = config.dump(); });
         return forward_model(d, model); },
     1, {"three-forward.safetensors: config: 3 problems: ", "'nhead' must be in 1..16777216, got 0",
         "'pos_encoding' is \"rope\"; expected one of \"alibi\", \"learned\", \"none\", \"relative_bias\", \"rotary\", \"sinusoidal\"",
         "unknown key 'num_layers' for arch \"encoder_decoder\" (it belongs to decoder_only / encoder_only)"}},
    {"a torch.save file (a zip archive) as the model, through info", [](const TempDirectory& d) {
         // The start of a zip local file header, its first entry archive/data.pkl, as torch.save writes.
         std::ofstream(d.file("model.pt"), std::ios::binary)
             << std::string("PK\x03\x04\x14\x00\x00\x00\x00\x00", 10) << std::string(16, '\0')
             << std::string("\x10\x00\x00\x00", 4) << "archive/data.pkl" << std::string("\x80\x02}q\x00.", 6);
         return std::vector<std::string>{"info", d.file("model.pt")}; },
     1, {"model.pt: this is a PyTorch torch.save file, not a tinyformer checkpoint; "
         "tools/python/tinyformer_export.py converts it: --from nanogpt / mingpt / annotated / llama2c FILE"}},
    {"a torch.save file as the forward inputs", [](const TempDirectory& d) {
         std::ofstream(d.file("inputs.pt"), std::ios::binary)
             << std::string("PK\x03\x04\x14\x00\x00\x00\x00\x00", 10) << std::string(16, '\0')
             << std::string("\x0f\x00\x00\x00", 4) << "inputs/data.pkl" << std::string("\x80\x02]q\x00.", 6);
         return forward(d, kModel, d.file("inputs.pt"), /*existing=*/true); },
     1, {"inputs.pt: is a PyTorch torch.save file (a zip archive), not safetensors",
         "tinyformer reads safetensors files (docs/FORMAT.md)"}},
    {"a pickle (an old torch.save file) as the model, through forward", [](const TempDirectory& d) {
         std::ofstream(d.file("old.pt"), std::ios::binary)
             << std::string("\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01w\x94K\x01u.", 22);
         return forward_model(d, d.file("old.pt")); },
     1, {"old.pt: this is a Python pickle (an old torch.save file), not a tinyformer checkpoint",
         "tools/python/tinyformer_export.py converts it"}},
    {"an empty model.pt, through info", [](const TempDirectory& d) {
         std::ofstream(d.file("model.pt")).flush();
         return std::vector<std::string>{"info", d.file("model.pt")}; },
     1, {"model.pt: this is an empty file (0 bytes), not a tinyformer checkpoint; a checkpoint is a .safetensors "
         "file written by tools/python/tinyformer_export.py"}},
    {"a JSON file as the model, through info", [](const TempDirectory& d) {
         std::ofstream(d.file("config.json")) << "{\n  \"d_model\": 16,\n  \"nhead\": 4\n}\n";
         return std::vector<std::string>{"info", d.file("config.json")}; },
     1, {"config.json: is JSON text, not safetensors; tinyformer reads safetensors files (docs/FORMAT.md)"}},
    {"a JSON file as the forward inputs", [](const TempDirectory& d) {
         std::ofstream(d.file("inputs.json")) << "[[1, 2, 3], [4, 5, 6]]";
         return forward(d, kModel, d.file("inputs.json")); },
     1, {"inputs.json: is JSON text, not safetensors", "docs/FORMAT.md"}},
};
// clang-format on

// Every file under `folder` with its contents (large files by size and time).
// Outputs that would replace an input or are not files (docs/FORMAT.md,
// "Writing files"): refused before any work, the folder left as it was.
std::string copy_of(const TempDirectory& d, const std::string& source, const std::string& name) {
    std::filesystem::copy_file(source, d.file(name));
    return d.file(name);
}

const std::vector<BadInput> kWritingFiles = {
    {"forward --output MODEL (the output would replace the model)", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kModel, "m.safetensors");
         return std::vector<std::string>{"forward", model, "--inputs", kInputs, "--output", model}; },
     1, {"forward: the output ", "m.safetensors is the input ", "(the same file)", "give another output path"}},
    {"forward --output DIR/./MODEL (the model spelled another way)", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kModel, "m.safetensors");
         return std::vector<std::string>{"forward", model, "--inputs", kInputs, "--output", d.path().string() + "/./m.safetensors"}; },
     1, {"forward: the output ", "/./m.safetensors is the input ", "(the same file)"}},
    {"forward --output HARDLINK (a hard link of the model)", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kModel, "m.safetensors");
         std::filesystem::create_hard_link(model, d.file("hard.safetensors"));
         return std::vector<std::string>{"forward", model, "--inputs", kInputs, "--output", d.file("hard.safetensors")}; },
     1, {"forward: the output ", "hard.safetensors is the input ", "m.safetensors (the same file)"}},
    {"forward --output SYMLINK (a symlink to the model)", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kModel, "m.safetensors");
         std::filesystem::create_symlink(model, d.file("link.safetensors"));
         return std::vector<std::string>{"forward", model, "--inputs", kInputs, "--output", d.file("link.safetensors")}; },
     1, {"forward: the output ", "link.safetensors is the input "}},
    {"forward --output INPUTS (the output would replace the inputs)", [](const TempDirectory& d) {
         const std::string inputs = copy_of(d, kInputs, "in.safetensors");
         return std::vector<std::string>{"forward", kModel, "--inputs", inputs, "--output", inputs}; },
     1, {"forward: the output ", "in.safetensors is the input ", "(the same file)"}},
    {"forward --output DIR (a folder)", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("folder"));
         return std::vector<std::string>{"forward", kModel, "--inputs", kInputs, "--output", d.file("folder")}; },
     1, {"forward: the output ", "folder is a directory"}},
    {"trace --output MODEL", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kReverse, "m.safetensors");
         return std::vector<std::string>{"trace", model, "abc", "--output", model}; },
     1, {"trace: the output ", "m.safetensors is the input "}},
    {"trace --inputs IN --output IN", [](const TempDirectory& d) {
         const std::string inputs = copy_of(d, kInputs, "in.safetensors");
         return std::vector<std::string>{"trace", kModel, "--inputs", inputs, "--output", inputs}; },
     1, {"trace: the output ", "in.safetensors is the input "}},
    {"explore --json MODEL", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kReverse, "m.safetensors");
         return std::vector<std::string>{"explore", model, "abc", "--html", d.file("page.html"), "--json", model}; },
     1, {"explore: the output ", "m.safetensors is the input "}},
    {"explore --json X --html X (two outputs, one file)", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", kReverse, "abc", "--html", d.file("x.html"), "--json", d.file("x.html")}; },
     1, {"explore: the outputs ", "x.html are the same file"}},
    {"explore --html MODEL.html where the model is named .html", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kReverse, "m.html");
         return std::vector<std::string>{"explore", model, "abc", "--html", model}; },
     1, {"explore: the output ", "m.html is the input "}},
    {"probe --output MODEL.png where the model is named .png", [](const TempDirectory& d) {
         const std::string model = copy_of(d, "data/models/sort.safetensors", "m.png");
         return std::vector<std::string>{"probe", model, "31415926", "--output", model}; },
     1, {"probe: the output ", "m.png is the input "}},
    {"mask --output DIR.png (a folder)", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("m.png"));
         return std::vector<std::string>{"mask", "causal", "--output", d.file("m.png")}; },
     1, {"mask: the output ", "m.png is a directory"}},
    {"attention --output FILE (not a folder)", [](const TempDirectory& d) {
         std::ofstream(d.file("notes.txt")) << "mine";
         return std::vector<std::string>{"attention", kReverse, "abc", "--output", d.file("notes.txt")}; },
     1, {"attention: --output ", "notes.txt is not a folder"}},
    {"attention --output DIR whose overview.png is a hard link of the model", [](const TempDirectory& d) {
         const std::string model = copy_of(d, kReverse, "m.safetensors");
         std::filesystem::create_directory(d.file("maps"));
         std::filesystem::create_hard_link(model, d.file("maps/overview.png"));
         return std::vector<std::string>{"attention", model, "abc", "--output", d.file("maps")}; },
     1, {"attention: the output ", "overview.png is the input "}},
};

std::map<std::string, std::string> snapshot(const std::filesystem::path& folder) {
    std::map<std::string, std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
        const std::string name = entry.path().string();
        if (entry.is_directory())
            files[name] = "<folder>";
        else if (entry.file_size() <= (16u << 20))
            files[name] = test_helpers::read_file(name);
        else
            files[name] = std::to_string(entry.file_size()) + " bytes, written at " +
                          std::to_string(entry.last_write_time().time_since_epoch().count());
    }
    return files;
}

// True when `text` holds "nan" as a word of its own ("nan", "-nan", "(nan)"): a
// NaN printed into a message. "nanoGPT" and "--from nanogpt" are names, not NaN.
bool holds_nan(const std::string& text) {
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    for (size_t at = text.find("nan"); at != std::string::npos; at = text.find("nan", at + 1))
        if ((at == 0 || !letter(text[at - 1])) && (at + 3 == text.size() || !letter(text[at + 3]))) return true;
    return false;
}

// The catalogue's checks on one run (see the top of this file).
void check_refused(const CliRun& run, int status, const std::vector<std::string>& message) {
    INFO("stderr: ", run.err);
    INFO("stdout: ", run.out);
    CHECK_MESSAGE(run.status == status, "exit status ", run.status, ", expected ", status,
                  run.status == 124 ? " (timed out)" : "");
    const std::string prefix = "tinyformer: error: ";
    CHECK(run.err.starts_with(prefix));
    CHECK_MESSAGE(run.err.find('\n') == run.err.size() - 1, "stderr must be exactly one line");
    CHECK_MESSAGE(std::none_of(run.err.begin(), run.err.end() - 1,
                               [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }),
                  "stderr must hold no control characters (escape sequences) before its newline");
    const std::string problem = test_helpers::terminal_problem(run.err.substr(0, run.err.size() - 1), false);
    CHECK_MESSAGE(problem.empty(), "stderr must be valid UTF-8 with no terminal control: ", problem);
    for (const std::string& piece : message)
        CHECK_MESSAGE(run.err.find(piece) != std::string::npos, "missing from the message: ", piece);
    CHECK(run.out.empty());
    CHECK_MESSAGE(!holds_nan(run.out), "a NaN in: ", run.out);
    CHECK_MESSAGE(!holds_nan(run.err), "a NaN in: ", run.err);
}

// Every row of one section: refused with exit 1 or 2, one clear error line, no
// output, and no file created or changed in the row's folder.
void check_section(const std::vector<BadInput>& rows) {
    REQUIRE(!rows.empty());
    for (const BadInput& row : rows) {
        const std::string name = row.name;
        CAPTURE(name);
        TempDirectory dir;
        const std::vector<std::string> args = row.setup(dir);
        const auto before = snapshot(dir.path());
        const CliRun run = test_helpers::run_tinyformer(args, 1, 300, row.stdin_file ? dir.file(row.stdin_file) : "/dev/null");
        check_refused(run, row.status, row.message);
        CHECK_MESSAGE(snapshot(dir.path()) == before, "the run created or changed a file in its folder");
    }
}

// ---- vocabulary rules and header rules: `run` and `info` refuse the same files ----
// (docs/FORMAT.md "Vocabulary rules" and "The header"). Each bad file makes two
// rows: `run FILE TEXT` and `info FILE`, with the same message pieces.
struct BadFile {
    const char* name;
    std::function<std::string(const TempDirectory&)> write;  // writes the bad file, gives its path
    const char* text;                                         // run's input
    std::vector<std::string> message;
};

std::vector<BadInput> run_and_info(const std::vector<BadFile>& files) {
    std::vector<BadInput> rows;
    for (const BadFile& file : files) {
        rows.push_back({file.name, [file](const TempDirectory& d) {
                            return std::vector<std::string>{"run", file.write(d), file.text}; },
                        1, file.message});
        rows.push_back({file.name, [file](const TempDirectory& d) {
                            return std::vector<std::string>{"info", file.write(d)}; },
                        1, file.message});
    }
    return rows;
}

// clang-format off
// ---- files that are not a checkpoint: named, with the command that converts them ----
// (engine/io/foreign_files.h). Each file is built here, and goes through run,
// info and explore: the one loader (Checkpoint::open) names it for all.

// llama2.c's legacy (v0) model.bin: 7 int32 (dim 8, hidden_dim 16, 1 layer,
// 2 heads, 2 kv heads, `vocab` (negative: an own classifier), seq_len 4), then
// the float32 arrays those sizes add up to, `missing` bytes fewer.
std::string llama2c_v0(const TempDirectory& d, const std::string& name, int32_t vocab, size_t missing = 0) {
    const int32_t header[7] = {8, 16, 1, 2, 2, vocab, 4};
    // Per layer: 2 norms of 8, wq and wo 8x8, wk and wv 8x8, w1 w2 w3 16x8; then
    // the embedding 5x8, the final norm 8, RoPE tables 2 x 4 x 2, the classifier 5x8.
    const size_t floats = (2 * 8 + 2 * 64 + 2 * 64 + 3 * 128) + 40 + 8 + 16 + (vocab < 0 ? 40 : 0);
    std::ofstream out(d.file(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out << std::string(4 * floats - missing, '\0');
    return d.file(name);
}

// export.py's versioned header: "24ka" (0x616B3432), the version, zeros to 256 bytes and past.
std::string llama2c_versioned(const TempDirectory& d, const std::string& name, char version) {
    std::ofstream(d.file(name), std::ios::binary) << "24ka" << std::string(1, version) << std::string(3, '\0')
                                                   << std::string(400, '\0');
    return d.file(name);
}

// The start of a torch.save zip whose first member, archive/data.pkl, holds `pickle`.
std::string torch_zip(const TempDirectory& d, const std::string& name, const std::string& pickle) {
    std::ofstream(d.file(name), std::ios::binary)
        << std::string("PK\x03\x04\x14\x00\x00\x00\x00\x00", 10) << std::string(16, '\0')
        << std::string("\x10\x00\x00\x00", 4) << "archive/data.pkl" << pickle;
    return d.file(name);
}

// A pickled dict's text as a torch.save of train.py's checkpoint holds it: the names are what tell.
std::string pickle_with(const std::vector<std::string>& names) {
    std::string pickle("\x80\x02}q\x00(", 6);
    for (const std::string& key : names) {
        pickle.push_back('X');  // BINUNICODE: a 4-byte little-endian length, then the text
        pickle.push_back(static_cast<char>(key.size()));
        pickle.append(3, '\0');
        pickle.append(key);
    }
    return pickle + "u.";
}

std::string hf_folder(const TempDirectory& d, const std::string& name, const std::string& model_type) {
    std::filesystem::create_directory(d.file(name));
    std::ofstream(d.file(name + "/config.json")) << "{\"architectures\": [\"X\"], \"model_type\": \"" << model_type
                                                 << "\", \"task_specific_params\": {\"a\": {\"b\": {\"c\": 1}}}}";
    return d.file(name);
}

// run, info and explore on the same file, the same message pieces.
std::vector<BadInput> run_info_explore(const std::vector<BadFile>& files) {
    std::vector<BadInput> rows = run_and_info(files);
    for (const BadFile& file : files)
        rows.push_back({file.name, [file](const TempDirectory& d) {
                            return std::vector<std::string>{"explore", file.write(d), file.text, "--html", d.file("page.html")}; },
                        1, file.message});
    return rows;
}

const std::string kConvert = "convert it with: /usr/bin/python3 tools/python/tinyformer_export.py --from ";

const std::vector<BadInput> kNotACheckpoint = run_info_explore({
    {"a llama2.c legacy (v0) model.bin, shared classifier",
     [](const TempDirectory& d) { return llama2c_v0(d, "model.bin", 5); }, "hi",
     {"model.bin: this is a llama2.c model.bin (export.py's legacy version 0: dim 8, hidden_dim 16, n_layers 1, "
      "n_heads 2, n_kv_heads 2, vocab_size 5, seq_len 4), not a tinyformer checkpoint; " + kConvert + "llama2c-bin ",
      "model.bin --tokenizer tokenizer.bin --out model.safetensors"}},
    {"a llama2.c legacy (v0) model.bin, its own classifier (negative vocab_size), tokenizer.bin beside it",
     [](const TempDirectory& d) {
         std::ofstream(d.file("tokenizer.bin")) << "pieces";
         return llama2c_v0(d, "stories.bin", -5); }, "hi",
     {"stories.bin: this is a llama2.c model.bin (export.py's legacy version 0: ", "vocab_size 5, seq_len 4)",
      kConvert + "llama2c-bin ", "stories.bin --tokenizer ", "/tokenizer.bin --out stories.safetensors"}},
    {"a llama2.c legacy (v0) model.bin 4 bytes short: named as one, its size not believed",
     [](const TempDirectory& d) { return llama2c_v0(d, "cut.bin", 5, 4); }, "hi",
     {"cut.bin: not a tinyformer checkpoint; it starts like a llama2.c legacy (v0) model.bin (dim 8, ",
      ") but is 2904 bytes, not the 2908 that header needs (truncated or not a model.bin)"}},
    {"a llama2.c model.bin, export.py version 1",
     [](const TempDirectory& d) { return llama2c_versioned(d, "v1.bin", 1); }, "hi",
     {"v1.bin: this is a llama2.c model.bin (export.py version 1, float32), not a tinyformer checkpoint; " + kConvert +
      "llama2c-bin ", "v1.bin --tokenizer tokenizer.bin --out v1.safetensors"}},
    {"a llama2.c model.bin, export.py version 2 (int8)",
     [](const TempDirectory& d) { return llama2c_versioned(d, "q8.bin", 2); }, "hi",
     {"q8.bin: this is a llama2.c model.bin (export.py version 2, int8 Q8_0), not a tinyformer checkpoint; " + kConvert +
      "llama2c-bin ", "q8.bin --tokenizer tokenizer.bin --out q8.safetensors"}},
    {"a llama2.c model.bin cut short of its 256-byte header",
     [](const TempDirectory& d) {
         std::ofstream(d.file("short.bin"), std::ios::binary) << "24ka" << std::string("\x01\x00\x00\x00", 4)
                                                                << std::string(100, '\0');
         return d.file("short.bin"); }, "hi",
     {"short.bin: not a tinyformer checkpoint; it starts like a llama2.c model.bin (export.py's magic) but is 108 "
      "bytes, shorter than its 256-byte header (truncated or not a model.bin)"}},
    {"a llama2.c model.bin of a version the converter does not read",
     [](const TempDirectory& d) { return llama2c_versioned(d, "v3.bin", 3); }, "hi",
     {"v3.bin: not a tinyformer checkpoint; it starts like a llama2.c model.bin (export.py's magic) of version 3, "
      "which the converter does not read"}},
    {"a llama2.c model.bin whose name starts with '-': the suggested --out is not read as an option",
     [](const TempDirectory& d) { return llama2c_versioned(d, "-v1.bin", 1); }, "hi",
     {"-v1.bin: this is a llama2.c model.bin (export.py version 1, float32)", "--out ./-v1.safetensors"}},
    {"a zip whose first member is not data.pkl (a .npz): a zip archive, not called a torch.save file",
     [](const TempDirectory& d) {
         std::ofstream(d.file("arrays.npz"), std::ios::binary)
             << std::string("PK\x03\x04\x14\x00\x00\x00\x00\x00", 10) << std::string(16, '\0')
             << std::string("\x09\x00\x00\x00", 4) << "arr_0.npy" << std::string(64, 'x');
         return d.file("arrays.npz"); }, "hi",
     {"arrays.npz: is a zip archive (as torch.save writes), not safetensors"}},
    {"a Hugging Face GPT-2 folder",
     [](const TempDirectory& d) { return hf_folder(d, "gpt2-small", "gpt2"); }, "hi",
     {"gpt2-small: this is a Hugging Face GPT-2 model folder (config.json and its weights), not a tinyformer "
      "checkpoint; " + kConvert + "hf-gpt2 ", "gpt2-small --out gpt2-small.safetensors"}},
    {"a Hugging Face folder of another model type",
     [](const TempDirectory& d) { return hf_folder(d, "llama-7b", "llama"); }, "hi",
     {"llama-7b: this is a Hugging Face model folder (model_type \"llama\"), not a tinyformer checkpoint; "
      "tools/python/tinyformer_export.py converts Hugging Face GPT-2 folders (--from hf-gpt2 FOLDER)"}},
    {"a bare Hugging Face GPT-2 model.safetensors (no tinyformer config)",
     [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("gpt2"));
         tinyformer::write_safetensors(d.file("gpt2/model.safetensors"),
                                       {{"h.0.attn.c_attn.weight", "F32", {2, 6}, std::vector<uint8_t>(48, 0)},
                                        {"wte.weight", "F32", {3, 2}, std::vector<uint8_t>(24, 0)}}, {});
         return d.file("gpt2/model.safetensors"); }, "hi",
     {"model.safetensors: this is a Hugging Face GPT-2 model.safetensors (no tinyformer \"config\" in its "
      "__metadata__), not a tinyformer checkpoint; convert its folder (with config.json) with: /usr/bin/python3 "
      "tools/python/tinyformer_export.py --from hf-gpt2 ", "gpt2 --out gpt2.safetensors"}},
    {"llama2.c's train.py ckpt.pt (model_args with n_kv_heads)",
     [](const TempDirectory& d) {
         return torch_zip(d, "ckpt.pt", pickle_with({"model", "tok_embeddings.weight", "model_args", "dim", "n_kv_heads"})); }, "hi",
     {"ckpt.pt: this is llama2.c's train.py checkpoint (a PyTorch torch.save file with model_args), not a "
      "tinyformer checkpoint; " + kConvert + "llama2c ", "ckpt.pt --tokenizer tokenizer.bin --out ckpt.safetensors"}},
    {"nanoGPT's train.py ckpt.pt (model_args with n_embd)",
     [](const TempDirectory& d) {
         return torch_zip(d, "ckpt.pt", pickle_with({"model", "transformer.wte.weight", "model_args", "n_embd"})); }, "hi",
     {"ckpt.pt: this is nanoGPT's train.py checkpoint (a PyTorch torch.save file with model_args), not a tinyformer "
      "checkpoint; " + kConvert + "nanogpt ", "ckpt.pt --meta meta.pkl --out ckpt.safetensors"}},
    {"an Annotated Transformer state_dict",
     [](const TempDirectory& d) { return torch_zip(d, "model.pt", pickle_with({"src_embed.0.lut.weight"})); }, "hi",
     {"model.pt: this is an Annotated Transformer state_dict (a PyTorch torch.save file), not a tinyformer checkpoint; " +
      kConvert + "annotated ", "model.pt --n-head H --out model.safetensors (H: your model's number of heads)"}},
    {"a minGPT state_dict, saved with the legacy torch.save (a pickle)",
     [](const TempDirectory& d) {
         std::ofstream(d.file("sort.pt"), std::ios::binary) << pickle_with({"transformer.wte.weight"});
         return d.file("sort.pt"); }, "hi",
     {"sort.pt: this is a GPT state_dict (a Python pickle (an old torch.save file), minGPT's or nanoGPT's names), "
      "not a tinyformer checkpoint; " + kConvert + "mingpt ", "sort.pt --n-head H --out sort.safetensors"}},
    {"nanoGPT's meta.pkl (a vocabulary)",
     [](const TempDirectory& d) {
         std::ofstream(d.file("meta.pkl"), std::ios::binary) << pickle_with({"vocab_size", "itos", "stoi"});
         return d.file("meta.pkl"); }, "hi",
     {"meta.pkl: this is nanoGPT's meta.pkl (a character vocabulary, not a model), not a tinyformer checkpoint; "
      "give it with the checkpoint: /usr/bin/python3 tools/python/tinyformer_export.py --from nanogpt ckpt.pt --meta "}},
    {"llama2.c's tokenizer.bin (a vocabulary)",
     [](const TempDirectory& d) {
         std::string pieces;
         for (const std::string piece : {"<unk>", "<s>", "</s>", "ab"}) {
             pieces.append(4, '\0');  // the score, 0.0f
             pieces.push_back(static_cast<char>(piece.size()));
             pieces.append(3, '\0');
             pieces.append(piece);
         }
         std::ofstream(d.file("tokenizer.bin"), std::ios::binary) << std::string("\x05\0\0\0", 4) << pieces;
         return d.file("tokenizer.bin"); }, "hi",
     {"tokenizer.bin: this is a llama2.c tokenizer.bin (a vocabulary, not a model), not a tinyformer checkpoint; "
      "give it to the converter with the model: /usr/bin/python3 tools/python/tinyformer_export.py --from llama2c-bin "
      "model.bin --tokenizer "}},
    {"a PNG picture",
     [](const TempDirectory& d) {
         std::ofstream(d.file("attention.png"), std::ios::binary) << std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
         return d.file("attention.png"); }, "hi",
     {"attention.png: this is a PNG picture, not a tinyformer checkpoint; a model is a .safetensors file"}},
    {"an empty file",
     [](const TempDirectory& d) { std::ofstream(d.file("model.safetensors")).flush(); return d.file("model.safetensors"); }, "hi",
     {"model.safetensors: this is an empty file (0 bytes), not a tinyformer checkpoint; a checkpoint is a .safetensors "
      "file written by tools/python/tinyformer_export.py"}},
    {"a llama2.c model.bin whose name needs quoting for the shell",
     [](const TempDirectory& d) { return llama2c_v0(d, "my model's.bin", 5); }, "hi",
     {"--from llama2c-bin '", "/my model'\\''s.bin' --tokenizer tokenizer.bin --out 'my model'\\''s.safetensors'"}},
});

// The families' own files as they are committed in data/families/: the real
// bytes of each upstream's output (read only).
const std::vector<BadInput> kFamilyFiles = run_info_explore({
    {"data/families/llama2c-tiny/model.bin (export.py version 1)",
     [](const TempDirectory&) { return std::string("data/families/llama2c-tiny/model.bin"); }, "hi",
     {"this is a llama2.c model.bin (export.py version 1, float32)", kConvert + "llama2c-bin data/families/llama2c-tiny/"
      "model.bin --tokenizer data/families/llama2c-tiny/tokenizer.bin --out model.safetensors"}},
    {"data/families/llama2c-tiny/tokenizer.bin",
     [](const TempDirectory&) { return std::string("data/families/llama2c-tiny/tokenizer.bin"); }, "hi",
     {"this is a llama2.c tokenizer.bin", "--tokenizer data/families/llama2c-tiny/tokenizer.bin --out model.safetensors"}},
    {"data/families/llama2c-tiny/ckpt.pt",
     [](const TempDirectory&) { return std::string("data/families/llama2c-tiny/ckpt.pt"); }, "hi",
     {"this is llama2.c's train.py checkpoint", kConvert + "llama2c data/families/llama2c-tiny/ckpt.pt --tokenizer "
      "data/families/llama2c-tiny/tokenizer.bin --out ckpt.safetensors"}},
    {"data/families/nanogpt-char/ckpt.pt",
     [](const TempDirectory&) { return std::string("data/families/nanogpt-char/ckpt.pt"); }, "hi",
     {"this is nanoGPT's train.py checkpoint", kConvert + "nanogpt data/families/nanogpt-char/ckpt.pt --meta meta.pkl"}},
    {"data/families/annotated-copy.pt",
     [](const TempDirectory&) { return std::string("data/families/annotated-copy.pt"); }, "hi",
     {"this is an Annotated Transformer state_dict", kConvert + "annotated data/families/annotated-copy.pt --n-head H"}},
    {"data/families/mingpt-sort.pt",
     [](const TempDirectory&) { return std::string("data/families/mingpt-sort.pt"); }, "hi",
     {"this is a GPT state_dict", kConvert + "mingpt data/families/mingpt-sort.pt --n-head H"}},
    {"data/families/gpt2-tiny (the folder)",
     [](const TempDirectory&) { return std::string("data/families/gpt2-tiny"); }, "hi",
     {"this is a Hugging Face GPT-2 model folder", kConvert + "hf-gpt2 data/families/gpt2-tiny --out gpt2-tiny.safetensors"}},
    {"data/families/gpt2-tiny/model.safetensors",
     [](const TempDirectory&) { return std::string("data/families/gpt2-tiny/model.safetensors"); }, "hi",
     {"this is a Hugging Face GPT-2 model.safetensors", "--from hf-gpt2 data/families/gpt2-tiny --out gpt2-tiny.safetensors"}},
});
// clang-format on

// A copy of `source` with vocabulary entry `index` set to `token` (and the tokenizer when given).
std::string vocab_entry(const TempDirectory& d, const std::string& name, const std::string& source, size_t index,
                        const std::string& token, const char* key = "vocab") {
    return edited(d, name, source, [&](Contents& c) {
        json vocab = json::parse(c.metadata.at(c.metadata.count(key) ? key : "vocab"));
        vocab[index] = token;
        c.metadata[key] = vocab.dump();
    });
}

// kPrefixModel (decoder_only, 14 tokens) as a word-level model with these words.
std::string word_model(const TempDirectory& d, const std::string& name, const json& words,
                       const std::string& suffix = "") {
    return edited(d, name, kPrefixModel, [&](Contents& c) {
        c.metadata["vocab"] = words.dump();
        c.metadata["tokenizer"] = std::string("whitespace");
        if (!suffix.empty()) c.metadata["prompt_suffix"] = suffix;
    });
}

// A copy of kReverse whose header bytes are changed by `edit` (the length field follows them).
std::string header_bytes(const TempDirectory& d, const std::string& name,
                         const std::function<std::string(std::string)>& edit) {
    const std::string bytes = test_helpers::read_file(kReverse);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    const std::string header = edit(bytes.substr(8, length));
    return raw_file(d, name, header.size(), header, bytes.substr(8 + length));
}

// The header's object without its padding spaces.
std::string unpadded(std::string header) { return header.erase(header.find_last_not_of(' ') + 1); }

const std::vector<BadInput> kVocabularyAndHeaderRules = run_and_info({
    {"vocab: an entry twice", [](const TempDirectory& d) { return vocab_entry(d, "twice.safetensors", kReverse, 5, "a"); },
     "abc", {"twice.safetensors: __metadata__ \"vocab\" entry 5 \"a\" is the same token as entry 4"}},
    {"vocab: an empty entry", [](const TempDirectory& d) { return vocab_entry(d, "empty.safetensors", kReverse, 7, ""); },
     "abc", {"empty.safetensors: __metadata__ \"vocab\" entry 7 \"\" is an empty string"}},
    {"vocab: a char token of two characters", [](const TempDirectory& d) {
         return vocab_entry(d, "two-chars.safetensors", kReverse, 7, "xy"); },
     "abc", {"two-chars.safetensors: __metadata__ \"vocab\" entry 7 \"xy\" is 2 characters", "one character each"}},
    {"vocab: a char token that looks special but is not (<Eos>)", [](const TempDirectory& d) {
         return vocab_entry(d, "not-special.safetensors", kReverse, 2, "<Eos>"); },
     "abc", {"__metadata__ \"vocab\" entry 2 \"<Eos>\" is 5 characters"}},
    {"vocab: an escape sequence as a char token", [](const TempDirectory& d) {
         return vocab_entry(d, "escape.safetensors", kReverse, 7, "\x1b]0;TITLE\x07\x1b[2J"); },
     "abc", {"escape.safetensors: __metadata__ \"vocab\" entry 7 holds the control character U+001B at byte 0 of 14"}},
    {"vocab: a C1 control (U+009B, CSI)", [](const TempDirectory& d) {
         return vocab_entry(d, "c1.safetensors", kReverse, 7, "\xc2\x9b"); },
     "abc", {"__metadata__ \"vocab\" entry 7 holds the control character U+009B"}},
    {"src_vocab: an entry twice", [](const TempDirectory& d) {
         return edited(d, "src-twice.safetensors", kModel, [](Contents& c) {
             c.metadata["vocab"] = json({"<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "f", "g", "h"}).dump();
             c.metadata["src_vocab"] = json({"<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e", "f", "g", "h", "i", "a"}).dump(); }); },
     "abc", {"src-twice.safetensors: __metadata__ \"src_vocab\" entry 12 \"a\" is the same token as entry 3"}},
    {"vocab: a word holding a space", [](const TempDirectory& d) {
         return word_model(d, "space-word.safetensors", {"<pad>", "<bos>", "<eos>", "the", "cat", "sat", "on", "mat",
                                                         "a", "dog", "ran", "to", "big red", "hat"}); },
     "the cat", {"space-word.safetensors: __metadata__ \"vocab\" entry 12 \"big red\" holds whitespace at byte 3"}},
    {"prompt_suffix: a special token (<sep>), even with <unk> to map it to", [](const TempDirectory& d) {
         return word_model(d, "sep.safetensors", {"<pad>", "<bos>", "<eos>", "<unk>", "<sep>", "the", "cat", "sat",
                                                  "on", "mat", "a", "dog", "ran", "to"}, "<sep>"); },
     "the cat", {"sep.safetensors: __metadata__ \"prompt_suffix\" \"<sep>\"", "word '<sep>'", "is not an ordinary token"}},
    {"header: a UTF-8 byte order mark", [](const TempDirectory& d) {
         return header_bytes(d, "bom.safetensors", [](std::string h) { return "\xEF\xBB\xBF" + h; }); },
     "abc", {"bom.safetensors: the header starts with a UTF-8 byte order mark (EF BB BF)"}},
    {"header: NUL padding", [](const TempDirectory& d) {
         return header_bytes(d, "nul.safetensors", [](std::string h) { return unpadded(h) + std::string(6, '\0'); }); },
     "abc", {"nul.safetensors: the header holds a NUL byte at offset", "only spaces may pad a header"}},
    {"header: bytes hidden after a NUL", [](const TempDirectory& d) {
         return header_bytes(d, "after-nul.safetensors",
                             [](std::string h) { return unpadded(h) + std::string("\0{\"x\":1}", 8); }); },
     "abc", {"after-nul.safetensors: the header holds a NUL byte at offset"}},
    {"header: a newline after the object", [](const TempDirectory& d) {
         return header_bytes(d, "newline.safetensors", [](std::string h) { return unpadded(h) + "\n"; }); },
     "abc", {"newline.safetensors: the header has 1 bytes after its JSON object (byte 0x0A at offset"}},
    {"header: a tensor name twice at the top level", [](const TempDirectory& d) {
         return header_bytes(d, "twice-tensor.safetensors", [](std::string h) {
             h = unpadded(h);
             const size_t begin = h.find("\"generator.bias\":");
             const std::string entry = h.substr(begin, h.find('}', begin) + 1 - begin);
             return h.insert(h.size() - 1, "," + entry); }); },
     "abc", {"twice-tensor.safetensors: the header has the key \"generator.bias\" twice at the top level"}},
    {"header: a __metadata__ key twice", [](const TempDirectory& d) {
         return header_bytes(d, "twice-meta.safetensors", [](std::string h) {
             const std::string opening = "\"__metadata__\":{";
             return h.insert(h.find(opening) + opening.size(), "\"vocab\":\"[]\","); }); },
     "abc", {"twice-meta.safetensors: the header has the key \"vocab\" twice in \"__metadata__\""}},
    {"header: invalid UTF-8 in a metadata string", [](const TempDirectory& d) {
         return header_bytes(d, "utf8.safetensors", [](std::string h) {
             const std::string opening = "\"__metadata__\":{";
             return h.insert(h.find(opening) + opening.size(), "\"note\":\"\xff\","); }); },
     "abc", {"utf8.safetensors: the header is not valid UTF-8 (byte 0xFF at offset"}},
    {"header: a __metadata__ value that is a number", [](const TempDirectory& d) {
         return header_bytes(d, "meta-number.safetensors", [](std::string h) {
             const std::string opening = "\"__metadata__\":{";
             return h.insert(h.find(opening) + opening.size(), "\"note\":1,"); }); },
     "abc", {"meta-number.safetensors: __metadata__ value 'note' must be a string, got number"}},
});

}  // namespace

namespace {
// clang-format off
// ---- picture sizes: every picture laid out before anything is written ----
const std::vector<BadInput> kPictureSize = {
    {"attention --scale 8 on 16 characters: the all-heads picture's matrices alone are over the limit, known before the pass", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abcdefghijklmnop", "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: encoder.0.self_attn.heads.png would be more than the limit of 64 megapixels: 4 matrices of 16 queries x "
         "16 keys and their margins alone take ", " pixels at --scale 8 (known before the pass: the input has 16 tokens); "
         "nothing was run or written: choose a smaller --scale, --head H, --layer L or --kind, or a shorter input or --target"}},
    {"attention --scale 8 on 10 characters: over the limit only with its labels and key, found after the pass, before any file", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abcdefghij", "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: encoder.0.self_attn.heads.png would be 8232x8240 pixels, more than the limit of 64 megapixels "
         "(4 panels of 10 queries x 10 keys at --scale 8; the input has 10 tokens, the greedy output has 10 tokens); "
         "nothing was written: choose a smaller --scale, --head H, --layer L or --kind, or a shorter input or --target"}},
    {"attention --scale 8 into a folder that holds an earlier run and a user's file: both stay as they were", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("maps"));
         std::ofstream(d.file("maps/notes.txt")) << "mine";
         std::ofstream(d.file("maps/encoder.0.self_attn.head0.png"), std::ios::binary) << "an earlier picture";
         return std::vector<std::string>{"attention", kReverse, "abcdefghij", "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: encoder.0.self_attn.heads.png would be ", "nothing was written"}},
    {"attention --scale 8 --kind cross --layer 1: the greedy output's length is known after the pass; its picture is named", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abcdefghijklmnop", "--kind", "cross", "--layer", "1",
                                         "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: decoder.1.cross_attn.heads.png would be ", "(4 panels of 17 queries x 16 keys at --scale 8; "
         "the input has 16 tokens, the greedy output has 16 tokens); nothing was written"}},
    {"attention --scale 8 --target on a decoder-only model: prompt and target known before the pass", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", "data/models/reverse-causal.safetensors", "abcdefghijklmno=",
                                         "--target", "onmlkjihgfedcba", "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: layers.0.self_attn.heads.png would be more than the limit of 64 megapixels: 4 matrices of 32 queries x "
         "32 keys", "(known before the pass: the input has 16 tokens, the target 15); nothing was run or written"}},
    {"mask causal --len 1024 --scale 8: a picture over the limit, with an earlier PNG that must stay", [](const TempDirectory& d) {
         std::ofstream(d.file("mask.png"), std::ios::binary) << "an earlier picture, to be kept";
         return std::vector<std::string>{"mask", "causal", "--len", "1024", "--scale", "8", "--output", d.file("mask.png")}; },
     1, {"mask: the picture would be ", " pixels, more than the limit of 64 megapixels (--len 1024 at --scale 8); "
         "nothing was written: choose a smaller --scale or --len"}},
    {"mask seq2seq --len 1024 --src-len 1024 --scale 4: two panels over the limit", [](const TempDirectory& d) {
         return std::vector<std::string>{"mask", "seq2seq", "--len", "1024", "--src-len", "1024", "--scale", "4",
                                         "--output", d.file("seq2seq.png")}; },
     1, {"mask: the picture would be ", "(--len 1024, --src-len 1024 at --scale 4)"}},
    {"attention --unk on an input whose pictures are then refused: the one error line, no --unk warning before it", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "abcdefghijklmnoA", "--unk", "--scale", "8", "--output", d.file("maps")}; },
     1, {"attention: encoder.0.self_attn.heads.png would be more than the limit of 64 megapixels"}},
};
// clang-format on
}  // namespace

namespace {

// The words model of the "any vocabulary" rows with "café" as a word, no <unk>:
// its 11 ordinary words in byte order are a big café cat dog mat on ran sat the to.
std::string words_with_cafe(const TempDirectory& d) {
    return edited(d, "cafe.safetensors", kPrefixModel, [](Contents& c) {
        c.metadata["vocab"] = json({"<pad>", "<bos>", "<eos>", "the", "cat", "sat", "on", "mat", "a", "dog", "ran",
                                    "to", "big", "caf\xc3\xa9"}).dump();
        c.metadata["tokenizer"] = std::string("whitespace");
    });
}

// clang-format off
// ---- terminal text: what the user typed or a file holds comes back escaped, on one line ----
const std::vector<BadInput> kTerminalText = {
    {"run on text with an OSC escape: the character, its position and the vocabulary's characters", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "ab\x1b]0;TITLE\x07" "c"}; },
     1, {"input \"ab\\x1b]0;TITLE\\x07c\": tokenizer: character '\\x1b' (bytes 1B) at position 2 of \"ab\\x1b]0;TITLE\\x07c\" "
         "is not in the model's vocabulary; it reads the 26 characters \"abcdefghijklmnopqrstuvwxyz\""}},
    {"run on text with a broken UTF-8 sequence in the middle: the broken byte alone, the valid 'c' after it not swallowed", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "ab\xe2\x82" "cd"}; },
     1, {"tokenizer: character '\\xe2' (bytes E2) at position 2 of \"ab\\xe2\\x82cd\" is not in the model's vocabulary"}},
    {"run on text with a C1 control U+009B (CSI)", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "a\xc2\x9b" "31m"}; },
     1, {"character '\\u{009b}' (bytes C2 9B) at position 1 of \"a\\u{009b}31m\""}},
    {"run on text with a right-to-left override U+202E", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "ab\xe2\x80\xae" "cd"}; },
     1, {"character '\\u{202e}' (bytes E2 80 AE) at position 2 of \"ab\\u{202e}cd\""}},
    {"run on text with a left-to-right isolate U+2066", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "\xe2\x81\xa6" "ab"}; },
     1, {"character '\\u{2066}' (bytes E2 81 A6) at position 0 of \"\\u{2066}ab\""}},
    {"run on text with an invalid byte 0xFF", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "a\xff" "b"}; },
     1, {"character '\\xff' (bytes FF) at position 1 of \"a\\xffb\""}},
    {"run on text ending in a truncated 3-byte sequence", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "ab\xe2\x82"}; },
     1, {"character '\\xe2' (bytes E2) at position 2 of \"ab\\xe2\\x82\""}},
    {"run: a NUL in a line of standard input is shown, and the message goes on after it", [](const TempDirectory& d) {
         std::ofstream(d.file("lines.txt"), std::ios::binary) << std::string("ab\0cd\n", 6);
         return std::vector<std::string>{"run", kReverse}; },
     1, {"standard input line 1: tokenizer: character '\\x00' (bytes 00) at position 2 of \"ab\\x00cd\" is not in the "
         "model's vocabulary; it reads the 26 characters"}, "lines.txt"},
    {"run --unk on an input that is then too long: the error line alone, no warning", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--unk", "\x1b" + std::string(40, 'a')}; },
     1, {"input \"\\x1b" + std::string(40, 'a') + "\": an input of 41 tokens is longer than the model's max_len of 32"}},
    {"attention --unk on an input that is then too long: the error line alone, no warning", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", kReverse, "--unk", "\x1b" + std::string(40, 'a'), "--out", d.file("maps")}; },
     1, {"an input of 41 tokens is longer than the model's max_len of 32"}},
    {"a word with an escape, after a word with a 2-byte character: its character position, the nearest words", [](const TempDirectory& d) {
         return std::vector<std::string>{"run", words_with_cafe(d), "caf\xc3\xa9 c\x1b[0m"}; },
     1, {"word 'c\\x1b[0m' (word 1, at character 5 of \"caf\xc3\xa9 c\\x1b[0m\") is not in the model's vocabulary, which "
         "has no <unk>; the nearest of its 11 ordinary tokens in sorted order: 'a' 'big' 'caf\xc3\xa9' 'cat' 'dog' 'mat'"}},
    {"a word after the last one in sorted order: the 8 words before it", [](const TempDirectory& d) {
         return std::vector<std::string>{"run", words_with_cafe(d), "zebra"}; },
     1, {"word 'zebra' (word 0, at character 0 of \"zebra\")",
         "in sorted order: 'cat' 'dog' 'mat' 'on' 'ran' 'sat' 'the' 'to'"}},
    {"an integer flag given an escape sequence", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--beam", "\x1b[31m", "abc"}; },
     2, {"run: --beam needs an integer, got '\\x1b[31m'"}},
    {"--ids holding an escape sequence", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--ids", "5,\x1b[2J"}; },
     2, {"run: --ids: '\\x1b[2J' (item 1 of \"5,\\x1b[2J\") is not a token id"}},
    {"a flag value with a bidi control", [](const TempDirectory&) {
         return std::vector<std::string>{"attention", kReverse, "abc", "--kind", "se\xe2\x80\xae" "lf"}; },
     2, {"attention: --kind must be self, cross or all, got 'se\\u{202e}lf'"}},
    {"explore --html naming a file with an escape, not ending in .html", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", kReverse, "abc", "--html", d.file("page\x1b[2J.htm")}; },
     2, {"explore: --html must name a .html file, got '", "page\\x1b[2J.htm'"}},
    {"an unknown flag made of an escape sequence", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "--\x1b[2J", "abc"}; },
     2, {"run: unknown option '--\\x1b[2J'"}},
    {"an unknown command that is a raw C1 byte and invalid UTF-8", [](const TempDirectory&) {
         return std::vector<std::string>{"\x9b" "31m"}; },
     2, {"unknown command '\\x9b31m'"}},
    {"a missing model whose name holds an OSC escape", [](const TempDirectory& d) {
         return std::vector<std::string>{"info", d.file("evil\x1b]0;x\x07.safetensors")}; },
     1, {"evil\\x1b]0;x\\x07.safetensors: no such file"}},
    {"a missing inputs file whose name holds a bidi control and an invalid byte", [](const TempDirectory& d) {
         return forward(d, kModel, d.file("in\xe2\x80\xae\xff.safetensors")); },
     1, {"in\\u{202e}\\xff.safetensors: no such file"}},
    {"a model file whose name holds an escape and a C1 control, refused by name", [](const TempDirectory& d) {
         const std::string path = d.file("eo\x1b[2J\xc2\x85.safetensors");
         std::filesystem::copy_file("data/reference/eo_post_relu_learned_h1.model.safetensors", path);
         return std::vector<std::string>{"run", path, "--ids", "3"}; },
     1, {"eo\\x1b[2J\\u{0085}.safetensors: an encoder_only model generates no text"}},
    {"a tensor name holding a NUL: the message goes on after it", [](const TempDirectory& d) {
         return forward_model(d, edited(d, "nul-name.safetensors", kModel, [](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor(std::string("evil\0name", 9), Tensor({1}))); })); },
     1, {"nul-name.safetensors", "unknown tensor 'evil\\x00name' [1]"}},
    {"a config value holding a NUL: the message goes on after it", [](const TempDirectory& d) {
         return forward_model(d, config_with(d, "nul-config.safetensors", kModel, "activation", std::string("re\0lu", 5))); },
     1, {"nul-config.safetensors: config: 'activation' is \"re\\x00lu\"; expected one of"}},
    {"a 100 kB tensor name of 2-byte characters: the line is cut between characters", [](const TempDirectory& d) {
         std::string name = "x";  // "x" here, "xx" below: in one of the two a cut at byte 2000 falls inside a character
         for (int i = 0; i < 50000; ++i) name += "\xc3\xa9";
         return forward_model(d, edited(d, "long-utf8.safetensors", kModel, [&](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor(name, Tensor({1}))); })); },
     1, {"long-utf8.safetensors", "unknown tensor 'x\xc3\xa9\xc3\xa9", "\xc3\xa9... (", " more bytes)"}},
    {"a 100 kB tensor name of 2-byte characters after 2 bytes: the line is cut between characters", [](const TempDirectory& d) {
         std::string name = "xx";
         for (int i = 0; i < 50000; ++i) name += "\xc3\xa9";
         return forward_model(d, edited(d, "long-utf8-2.safetensors", kModel, [&](Contents& c) {
             c.tensors.push_back(tinyformer::f32_tensor(name, Tensor({1}))); })); },
     1, {"long-utf8-2.safetensors", "unknown tensor 'xx\xc3\xa9\xc3\xa9", "\xc3\xa9... (", " more bytes)"}},
};
// clang-format on

}  // namespace

namespace {

// ---- refused before the work: limits that the arguments and the config already show ----
// Each row has its own time limit: the refusal must come before the work,
// which took minutes and gigabytes before (numbers in each row's comment).
struct TimedBadInput {
    BadInput row;
    int seconds;  // the time limit of the run
};

// N token ids "3,3,...,3" (3 is in every vocabulary used here).
std::string many_ids(size_t n) {
    std::string list;
    for (size_t i = 0; i < n; ++i) list.append(i ? ",3" : "3");
    return list;
}

// kNoPositionModel (decoder_only, no positions) with max_len 2^20: an input
// of 60 000 tokens passes every length rule; its recorded pass needs 177 GB.
std::string long_unpositioned_model(const TempDirectory& d) {
    return config_with(d, "long-none.safetensors", kNoPositionModel, "max_len", 1 << 20);
}
const std::vector<std::string> kTooLongForTheRecordedPass = {
    "the input of 60001 tokens is too long for the recorded teacher-forced pass",
    "forward: B=1 sequences of 60001 tokens attending 60001 keys need about",
    "bytes of memory are available; refused before allocating"};

// The reverse model with max_len 2000 and eos_id 0 (<pad>, which it never
// predicts): greedy decoding runs 1024 steps, and its page was 178 MB (42.6 s).
std::string never_ending_reverse(const TempDirectory& d, int64_t max_len) {
    return edited(d, "never-ending.safetensors", kReverse, [max_len](Contents& c) {
        json config = c.config();
        config["max_len"] = max_len;
        config["eos_id"] = 0;
        c.set_config(config);
    });
}

// clang-format off
const std::vector<TimedBadInput> kBeforeTheWork = {
    // Before: the 20 000-token prompt's pass ran (3 min 49 s on a busy 2-core machine) before this refusal.
    {{"trace on 60 000 --ids of a model without positions whose max_len is 8: refused before decoding", [](const TempDirectory& d) {
         return std::vector<std::string>{"trace", kNoPositionModel, "--ids", many_ids(60000), "--output", d.file("t.safetensors")}; },
      1, {"decode: the input (60001 tokens) already fills max_len = 8 positions; nothing is left to generate"}}, 10},
    {{"run --no-truncate on a prompt that fills the decoder-only model's max_len, named by its text", [](const TempDirectory&) {
         return std::vector<std::string>{"run", "data/models/reverse-prefixlm.safetensors", std::string(38, 'a'),
                                         "--no-truncate"}; },
      1, {"input \"aaaaaaaaaa", "decode: the input (40 tokens) already fills max_len = 40 positions"}}, 10},
    {{"run --beam 2 --no-truncate on a prompt that fills max_len, on standard input line 2", [](const TempDirectory& d) {
         std::ofstream(d.file("lines.txt")) << "abc\n" << std::string(38, 'a') << "\n";
         return std::vector<std::string>{"run", "data/models/reverse-causal.safetensors", "--beam", "2", "--no-truncate"}; },
      1, {"standard input line 2: decode: the input (40 tokens) already fills max_len = 40 positions"}, "lines.txt"}, 10},
    // Before: 135 s and 7.05 GB decoding a continuation, then this refusal at the recorded pass.
    {{"attention on 60 000 --ids: its pictures alone would be too large, refused before decoding", [](const TempDirectory& d) {
         return std::vector<std::string>{"attention", long_unpositioned_model(d), "--ids", many_ids(60000), "--output", d.file("maps")}; },
      1, {"attention: layers.0.self_attn.head0.png would be more than the limit of 64 megapixels",
          "(known before the pass: the input has 60000 tokens); nothing was run or written"}}, 10},
    {{"probe --output on 500 --ids at --scale 8: the picture's lower bound is too large, refused before the probe (5.5 s before)", [](const TempDirectory& d) {
         return std::vector<std::string>{"probe", long_unpositioned_model(d), "--ids", many_ids(500), "--with-id", "3",
                                         "--scale", "8", "--output", d.file("p.png")}; },
      1, {"probe: the picture would be at least ", "(8 heads, 500 input tokens at --scale 8; known before the probe); nothing was run or written"}}, 10},
    // Before: the 8 heads x 500 positions patched passes ran first (19.4 s here with --output p.json).
    {{"patch --what head --scale 8 on 500 --ids: the picture is too large, refused before the patched passes", [](const TempDirectory& d) {
         std::string corrupted = many_ids(499) + ",5";
         return std::vector<std::string>{"patch", long_unpositioned_model(d), "--ids", many_ids(500), "--corrupted-ids", corrupted,
                                         "--what", "head", "--scale", "8", "--output", d.file("p.png")}; },
      1, {"patch: the picture would be 18136x4016 pixels, more than the limit of 64 megapixels; nothing was written"}}, 10},
    {{"probe --output on 2000 --ids: more rows than a picture holds, refused before the probe", [](const TempDirectory& d) {
         return std::vector<std::string>{"probe", long_unpositioned_model(d), "--ids", many_ids(2000), "--with-id", "3", "--output", d.file("p.png")}; },
      1, {"probe: the picture shows one row per input token and per head, at most 1024; this input has 2000 tokens"}}, 10},
    {{"trace on 60 000 --ids whose recorded pass cannot fit: refused before decoding", [](const TempDirectory& d) {
         return std::vector<std::string>{"trace", long_unpositioned_model(d), "--ids", many_ids(60000), "--output", d.file("t.safetensors")}; },
      1, kTooLongForTheRecordedPass}, 10},
    {{"probe on 60 000 --ids whose recorded pass cannot fit: refused before decoding", [](const TempDirectory& d) {
         return std::vector<std::string>{"probe", long_unpositioned_model(d), "--ids", many_ids(60000), "--with-id", "3"}; },
      1, kTooLongForTheRecordedPass}, 10},
    {{"explore on 60 000 --ids: the page alone is above 8 MiB, refused before decoding", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", long_unpositioned_model(d), "--ids", many_ids(60000), "--html", d.file("e.html")}; },
      1, {"explore: the page for the input --ids (60000 tokens) would be at least", "MiB, above the limit of 8 MiB",
          "nothing was written; give --max-page-mb"}}, 10},
    // Before: 191 s and 7.05 GB of beam search, then the refusal at the recorded pass.
    {{"explore --beam 2 on 60 000 --ids with the page limit raised: the recorded pass cannot fit, refused before the beam search", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", long_unpositioned_model(d), "--ids", many_ids(60000), "--beam", "2",
                                         "--max-page-mb", "1048576", "--html", d.file("e.html")}; },
      1, kTooLongForTheRecordedPass}, 10},
    {{"explore: a model that never emits <eos> decodes 1024 tokens; the page is refused before the pass, with --json too", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", never_ending_reverse(d, 2000), "attention", "--html", d.file("e.html"),
                                         "--json", d.file("e.json")}; },
      1, {"explore: the page for the input \"attention\" (9 tokens) and its target of 1024 tokens would be at least",
          "MiB, above the limit of 8 MiB; nothing was written; give --max-page-mb"}}, 20},
    {{"explore: a page the lengths do not show is measured before it is written (--max-page-mb 2)", [](const TempDirectory& d) {
         // --recorded: the page's data alone (an engine and checkpoint would pass 2 MiB before the pass)
         return std::vector<std::string>{"explore", never_ending_reverse(d, 200), "attention", "--max-page-mb", "2",
                                         "--recorded", "--html", d.file("e.html"), "--json", d.file("e.json")}; },
      1, {"explore: the page for the input \"attention\" (9 tokens) and its target of 199 tokens would be ",
          "MiB, above the limit of 2 MiB; nothing was written; give --max-page-mb"}}, 60},
    {{"explore --max-page-mb 0", [](const TempDirectory& d) {
         return std::vector<std::string>{"explore", kReverse, "abc", "--max-page-mb", "0", "--html", d.file("e.html")}; },
      2, {"explore: --max-page-mb must be in 1..1048576, got 0"}}, 10},
    // The overflow's message names the attention module (its tensors' prefix) and the tensor.
    {{"values that overflow float32 in decoder layer 1's self-attention: the layer is named", [](const TempDirectory& d) {
         const std::string model = edited(d, "huge-values.safetensors", kReverse, [](Contents& c) {
             tinyformer::TensorToWrite& weight = c.tensor("transformer.decoder.layers.1.self_attn.in_proj_weight");
             for (size_t i = 2 * 64 * 64; i < 3 * 64 * 64; ++i) set_float(weight, i, 3e38f); });  // W_V rows 2D..3D-1
         return std::vector<std::string>{"run", model, "hello"}; },
      1, {"transformer.decoder.layers.1.self_attn: attention: value holds a non-finite number"}}, 10},
};
// clang-format on

// check_section, each row within its own time limit.
void check_timed_section(const std::vector<TimedBadInput>& rows) {
    REQUIRE(!rows.empty());
    for (const TimedBadInput& timed : rows) {
        const BadInput& row = timed.row;
        const std::string name = row.name;
        CAPTURE(name);
        TempDirectory dir;
        const std::vector<std::string> args = row.setup(dir);
        const auto before = snapshot(dir.path());
        const CliRun run = test_helpers::run_tinyformer(args, 1, timed.seconds,
                                                        row.stdin_file ? dir.file(row.stdin_file) : "/dev/null");
        check_refused(run, row.status, row.message);
        CHECK_MESSAGE(snapshot(dir.path()) == before, "the run created or changed a file in its folder");
    }
}

}  // namespace

// One test case per section of the catalogue, so that a failure names its section.
// ---- interventions: --overrides, --block, --allow, --ablate (docs/FORMAT.md section 4b) ----
std::vector<std::string> forward_with(const TempDirectory& d, std::vector<std::string> flags) {
    std::vector<std::string> args = {"forward", kModel, "--inputs", kInputs, "--output", d.file("o.safetensors")};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
}
std::vector<std::string> with_overrides_file(const TempDirectory& d, const std::string& text) {
    std::ofstream(d.file("o.json"), std::ios::binary) << text;
    return forward_with(d, {"--overrides", d.file("o.json")});
}
// clang-format off
const std::vector<BadInput> kInterventions = {
    {"--block without a key", [](const TempDirectory& d) { return forward_with(d, {"--block", "decoder.0.self_attn:2"}); },
     2, {"forward: --block 'decoder.0.self_attn:2': expected CALL:Q:K"}},
    {"--allow with a negative key", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--allow", "decoder.0.self_attn:2:-1"}; },
     2, {"run: --allow 'decoder.0.self_attn:2:-1': expected whole numbers >= 0 after CALL, got '-1'"}},
    {"--ablate with an empty item", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--ablate", "decoder.0.self_attn:1,"}; },
     2, {"run: --ablate has an empty item"}},
    {"--ablate with a head that is not a number", [](const TempDirectory& d) {
         return std::vector<std::string>{"trace", kReverse, "abc", "--output", d.file("t.safetensors"), "--ablate", "encoder.0.self_attn:x"}; },
     2, {"trace: --ablate 'encoder.0.self_attn:x'", "got 'x'"}},
    {"--ablate of an unknown call", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--ablate", "decoder.9.self_attn:0"}; },
     1, {"no attention call named \"decoder.9.self_attn\"", "this model's are encoder.0.self_attn, encoder.1.self_attn, decoder.0.self_attn"}},
    {"--ablate of a head the call does not have", [](const TempDirectory&) {
         return std::vector<std::string>{"run", kReverse, "abc", "--ablate", "decoder.1.cross_attn:4"}; },
     1, {"decoder.1.cross_attn has heads 0..3; cannot ablate head 4"}},
    {"--block of a cell outside the pass", [](const TempDirectory& d) { return forward_with(d, {"--block", "encoder.0.self_attn:0:99"}); },
     1, {"transformer.encoder.layers.0.self_attn: the mask override [0, 99] is outside this call's [L,S] = ["}},
    {"--overrides of a missing file", [](const TempDirectory& d) { return forward_with(d, {"--overrides", d.file("absent.json")}); },
     1, {"--overrides ", "absent.json: no such file"}},
    {"--overrides of a directory", [](const TempDirectory& d) {
         std::filesystem::create_directory(d.file("o-dir"));
         return forward_with(d, {"--overrides", d.file("o-dir")}); },
     1, {"o-dir: is a directory, expected a .json file"}},
    {"--overrides of a device", [](const TempDirectory& d) { return forward_with(d, {"--overrides", "/dev/zero"}); },
     1, {"--overrides /dev/zero: not a regular file"}},
    {"--overrides above 1 MiB", [](const TempDirectory& d) { return with_overrides_file(d, std::string(1048577, ' ')); },
     1, {"o.json: 1048577 bytes, more than the limit of 1048576 bytes for an overrides file"}},
    {"--overrides that is not JSON", [](const TempDirectory& d) { return with_overrides_file(d, "{\"ablate\": ["); },
     1, {"o.json is not valid JSON"}},
    {"--overrides nested too deep", [](const TempDirectory& d) { return with_overrides_file(d, "{\"ablate\": [[[[0]]]]}"); },
     1, {"o.json nests arrays/objects 5 deep"}},
    {"--overrides with an unknown key", [](const TempDirectory& d) { return with_overrides_file(d, "{\"ablate\": [], \"mask\": {}}"); },
     1, {"o.json: unknown key \"mask\"; the keys are mask_overrides and ablate"}},
    {"--overrides with a cell of the wrong type", [](const TempDirectory& d) {
         return with_overrides_file(d, "{\"mask_overrides\": {\"decoder.0.self_attn\": [[1, \"2\", 0]]}}"); },
     1, {"mask_overrides[\"decoder.0.self_attn\"][0]: the key must be a whole number >= 0, got \"2\""}},
    {"--overrides with allowed 2", [](const TempDirectory& d) {
         return with_overrides_file(d, "{\"mask_overrides\": {\"decoder.0.self_attn\": [[1, 2, 2]]}}"); },
     1, {"allowed must be 0, 1, false or true, got 2"}},
    {"--overrides with a negative head", [](const TempDirectory& d) { return with_overrides_file(d, "{\"ablate\": [[\"decoder.0.self_attn\", -1]]}"); },
     1, {"ablate[0]: the head must be >= 0, got -1"}},
};

// `patch` and `lens` (models/study/patching.h, lens.h; docs/BAD_INPUT.md "The study commands").
const std::string kSort = "data/models/sort.safetensors";
const std::string kEncoderOnly = "data/reference/eo_post_relu_learned_h1.model.safetensors";
const std::vector<BadInput> kStudyCommands = {
    {"patch with CLEAN and CORRUPTED of different lengths", [](const TempDirectory& d) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abcd", "--output", d.file("p.json")}; },
     1, {"patch: CLEAN has 3 tokens and CORRUPTED has 4", "both need the same length"}},
    {"patch with inputs of one length that the prompt suffix makes two", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", "data/models/reverse-causal.safetensors", "abcd", "abc="}; },
     1, {"patch: as the model reads them (<bos> and the prompt suffix added where missing), CLEAN has 6 tokens and "
         "CORRUPTED has 5; give both with the prompt suffix or both without"}},
    {"patch with a corruption that changes nothing", [](const TempDirectory& d) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abc", "--output", d.file("p.png")}; },
     1, {"patch: the clean and the corrupted input give the same answer at every predicted position", "nothing to restore"}},
    {"patch --what of no kind", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abd", "--what", "mlp"}; },
     2, {"patch: --what must be resid, attn_out, mlp_out or head, got 'mlp'"}},
    {"patch on an encoder-only model", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kEncoderOnly, "--ids", "3,4", "--corrupted-ids", "4,3"}; },
     1, {"patch: an encoder_only model predicts no next token to patch an answer into"}},
    {"patch with CLEAN only", [](const TempDirectory&) { return std::vector<std::string>{"patch", kReverse, "abc"}; },
     2, {"patch: expected MODEL CLEAN CORRUPTED, or MODEL --ids ... --corrupted-ids ..."}},
    {"patch --ids without --corrupted-ids", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kReverse, "--ids", "3,4"}; },
     2, {"patch: expected MODEL CLEAN CORRUPTED, or MODEL --ids ... --corrupted-ids ..."}},
    {"patch --corrupted-ids outside the vocabulary, named as that input", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kReverse, "--ids", "3,4", "--corrupted-ids", "3,40"}; },
     1, {"patch: --corrupted-ids: input token id 40 at position 1 is outside the vocabulary 0..29"}},
    {"patch CORRUPTED with a character outside the vocabulary, named as that input", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kReverse, "abc", "aBc"}; },
     1, {"patch: CORRUPTED: tokenizer: character 'B' at position 1 of \"aBc\" is not in the model's vocabulary"}},
    {"patch --target outside the vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abd", "--target", "cb!"}; },
     1, {"character '!' at position 2 of \"cb!\" is not in the model's vocabulary"}},
    {"patch --output FILE.txt", [](const TempDirectory& d) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abd", "--output", d.file("p.txt")}; },
     2, {"patch: --output must end in .png or .json, got '"}},
    {"patch --scale 9", [](const TempDirectory& d) {
         return std::vector<std::string>{"patch", kReverse, "abc", "abd", "--scale", "9", "--output", d.file("p.png")}; },
     2, {"patch: --scale must be in 1..8, got 9"}},
    {"patch --output that is the model", [](const TempDirectory& d) {
         std::filesystem::copy_file(kReverse, d.file("m.json"));
         return std::vector<std::string>{"patch", d.file("m.json"), "abc", "abd", "--output", d.file("m.json")}; },
     1, {"patch: the output ", "m.json is the input ", "writing it would destroy the input"}},
    {"lens --top 0", [](const TempDirectory&) { return std::vector<std::string>{"lens", kReverse, "abc", "--top", "0"}; },
     2, {"lens: --top must be in 1..100, got 0"}},
    {"lens --attribute of two tokens", [](const TempDirectory&) {
         return std::vector<std::string>{"lens", kReverse, "abc", "--attribute", "xy"}; },
     1, {"lens: --attribute takes one token of the output vocabulary; 'xy' is 2 tokens"}},
    {"lens --attribute of a character outside the vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"lens", kReverse, "abc", "--attribute", "!"}; },
     1, {"lens: --attribute !: tokenizer: character '!' at position 0"}},
    {"lens --attribute on a post-LN model", [](const TempDirectory& d) {
         return std::vector<std::string>{"lens", kSort, "123", "--attribute", "1", "--output", d.file("l.json")}; },
     1, {"lens: direct logit attribution (--attribute) needs a pre-LN model (norm_first); this one is post-LN"}},
    {"lens --attribute-id outside the output vocabulary", [](const TempDirectory&) {
         return std::vector<std::string>{"lens", kReverse, "abc", "--attribute-id", "30"}; },
     1, {"lens: --attribute-id 30 is outside the output vocabulary 0..29"}},
    {"lens --attribute and --attribute-id", [](const TempDirectory&) {
         return std::vector<std::string>{"lens", kReverse, "abc", "--attribute", "c", "--attribute-id", "5"}; },
     2, {"lens: give the token to attribute as --attribute or as --attribute-id, not both"}},
    {"lens --output FILE.txt", [](const TempDirectory& d) {
         return std::vector<std::string>{"lens", kReverse, "abc", "--output", d.file("l.txt")}; },
     2, {"lens: --output must end in .png or .json, got '"}},
    {"lens without TEXT or --ids", [](const TempDirectory&) { return std::vector<std::string>{"lens", kReverse}; },
     2, {"lens: give the input as TEXT or as --ids, one of them"}},
};
// clang-format on

TEST_CASE("Bad inputs, checkpoint: the safetensors frame") { check_section(kSafetensorsFrame); }
TEST_CASE("Bad inputs, checkpoint: metadata and config") { check_section(kMetadataAndConfig); }
TEST_CASE("Bad inputs, checkpoint: tensors") { check_section(kTensors); }
TEST_CASE("Bad inputs, forward's input files") { check_section(kForwardInputs); }
TEST_CASE("Bad inputs, the command line") { check_section(kCommandLine); }
TEST_CASE("Bad inputs, interventions: --overrides, --block, --allow, --ablate") { check_section(kInterventions); }
TEST_CASE("Bad inputs, the study commands: patch and lens") { check_section(kStudyCommands); }
TEST_CASE("Bad inputs, one output flag and pictures named .png") { check_section(kOutputFlag); }
TEST_CASE("Bad inputs, any vocabulary, token ids and text metadata") { check_section(kVocabularyAndIds); }
TEST_CASE("Bad inputs, files that are not safetensors and configs with several problems") {
    check_section(kNotSafetensors);
}

TEST_CASE("A model whose weights would not fit in memory is refused before allocating, with both numbers") {
    // A sparse file (no disk used) whose header honestly describes 4 TiB of
    // F32 data: far above any CI machine's memory, so reading must refuse it
    // before allocating, naming what it needs and what is available.
    TempDirectory dir;
    const uint64_t bytes = uint64_t{1} << 42;
    const std::string header =
        R"({"w": {"dtype": "F32", "shape": [)" + std::to_string(bytes / 4) + R"(], "data_offsets": [0, )" +
        std::to_string(bytes) + "]}}";
    const std::string path = raw_file(dir, "four-tib.safetensors", header.size(), header);
    std::filesystem::resize_file(path, 8 + header.size() + bytes);
    const uint64_t available = tinyformer::available_memory_bytes();
    REQUIRE(available < bytes);

    const auto before = snapshot(dir.path());
    const CliRun run = test_helpers::run_tinyformer({"forward", path, "--inputs", kInputs, "--output", dir.file("out.safetensors")});
    check_refused(run, 1, {"four-tib.safetensors", "needs " + std::to_string(2 * bytes) + " bytes",
                           "4398046511104 bytes of data + 4398046511104 bytes of float32 tensors",
                           " bytes of memory are available"});
    CHECK(snapshot(dir.path()) == before);

    // In-process too: the Error, not std::bad_alloc or the OOM killer.
    CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "refused before allocating");
}

TEST_CASE("F16 and BF16 tensors count as float32 in the memory check: the widening is part of the need") {
    // Half the available memory in F16 fits as bytes but not once widened to
    // F32 (x2 more): data + widened = 3/2 of what is available.
    TempDirectory dir;
    for (const std::string dtype : {"F16", "BF16"}) {
        INFO("dtype: ", dtype);
        const uint64_t count = tinyformer::available_memory_bytes() / 4;  // count * 2 bytes = available / 2
        const std::string header = R"({"w": {"dtype": ")" + dtype + R"(", "shape": [)" + std::to_string(count) +
                                   R"(], "data_offsets": [0, )" + std::to_string(2 * count) + "]}}";
        const std::string path = raw_file(dir, "half-memory-" + dtype + ".safetensors", header.size(), header);
        std::filesystem::resize_file(path, 8 + header.size() + 2 * count);  // sparse: no disk blocks written
        const std::string data = std::to_string(2 * count) + " bytes of data + ";
        const std::string widened = std::to_string(4 * count) + " bytes of float32 tensors";
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), data.c_str(), widened.c_str(),
                             "refused before allocating");
    }
}

TEST_CASE("Bad inputs, files that are not a checkpoint: named, with the command that converts them") {
    check_section(kNotACheckpoint);
}
TEST_CASE("Bad inputs, the families' committed files given as checkpoints: named, with their converter") {
    check_section(kFamilyFiles);
}
TEST_CASE("Bad inputs, outputs that are an input or not a file") { check_section(kWritingFiles); }
TEST_CASE("Bad inputs, picture sizes: refused before any file is written") { check_section(kPictureSize); }
TEST_CASE("Bad inputs, vocabulary and header rules: run and info refuse the same files") {
    check_section(kVocabularyAndHeaderRules);
}
TEST_CASE("Bad inputs, terminal text: control characters, bidi controls and invalid bytes come back escaped") {
    check_section(kTerminalText);
}
TEST_CASE("Bad inputs, refused before the work: decoding length, the recorded pass, the explorer page, overflow") {
    check_timed_section(kBeforeTheWork);
}

// Issue 31: `run` on a long input of a model whose max_len does not stop it
// went straight into the prompt's pass: 100 000 tokens asked for 19.5 GB
// (the mask of [L, S] twice, while it is combined with the padding, where the
// estimate counted it once) and the process was killed. The estimate now
// counts what the prefill holds (the mask twice, the KV cache); the test
// sets the memory it may use (TINYFORMER_MEMORY_LIMIT, 100 MB) instead of
// depending on this machine's.
TEST_CASE("Bad inputs, run refuses a prompt whose prefill would not fit in the available memory, before the pass") {
    TempDirectory d;
    const std::string model = long_unpositioned_model(d);
    ::setenv("TINYFORMER_MEMORY_LIMIT", "100000000", 1);
    const CliRun refused = test_helpers::run_tinyformer({"run", model, "--ids", many_ids(20000)}, 1, 60);
    const CliRun beam = test_helpers::run_tinyformer({"run", model, "--beam", "2", "--ids", many_ids(20000)}, 1, 60);
    const CliRun short_input = test_helpers::run_tinyformer({"run", model, "--ids", many_ids(100)}, 1, 60);
    ::setenv("TINYFORMER_MEMORY_LIMIT", "lots", 1);
    const CliRun not_a_number = test_helpers::run_tinyformer({"run", model, "--ids", many_ids(20000)}, 1, 60);
    ::unsetenv("TINYFORMER_MEMORY_LIMIT");
    for (const CliRun* run : {&refused, &beam}) {
        CHECK(run->status == 1);
        CHECK(run->out.empty());
        INFO(run->err);
        CHECK(run->err.starts_with("tinyformer: error: prefill: B=1 sequences of 20001 tokens attending 20001 keys "
                                   "need about "));
        // 2 * 20001^2 = 800080002 bytes of mask, more than the 100 MB allowed.
        CHECK(run->err.find("(mask 8.0008e+08, ") != std::string::npos);
        CHECK(run->err.find(", KV cache ") != std::string::npos);
        CHECK(run->err.find("bytes of memory are available; refused before allocating\n") != std::string::npos);
        CHECK(std::count(run->err.begin(), run->err.end(), '\n') == 1);
    }
    CHECK(short_input.status == 0);
    CHECK(not_a_number.status == 1);
    CHECK(not_a_number.err.find("TINYFORMER_MEMORY_LIMIT must be a whole number of bytes (at most 19 digits), got 'lots'") !=
          std::string::npos);
}
