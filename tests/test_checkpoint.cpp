// Tests for models/checkpoint.*, Model::load and run_forward's input rules
// (FORMAT.md sections 1 and 2). Each test starts from a valid checkpoint in
// data/reference/ (made by tools/python/make_reference.py from stock PyTorch
// modules), rewrites a copy with one rule broken into a temporary folder, and
// checks that the Error names the file and the tensor, input or config key,
// with the expected and actual values where there are some.
#include <doctest/doctest.h>

#include "models/study/forward.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"
#include "tests/safetensors_edit.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using tinyformer::Model;
using tinyformer::SafetensorsFile;
using tinyformer::Shape;
using tinyformer::Tensor;
using tinyformer::TensorToWrite;
using test_helpers::Contents;
using test_helpers::TempDirectory;
using test_helpers::ids;
using test_helpers::mask;
using test_helpers::read_contents;
using test_helpers::set_float;
using test_helpers::write_contents;

namespace {

// ed_post_relu_sin: encoder_decoder, d_model 16, 2+2 layers, src vocab 13,
// tgt vocab 11, max_len 16, sinusoidal; its inputs are B=2, S=7, T=5.
const std::string kEncoderDecoder = "data/reference/ed_post_relu_sin";
// do_prefix_pre_gelu_sin: decoder_only prefix_lm, d_model 16, vocab 14,
// max_len 8, sinusoidal; its inputs are B=3, T=6, prefix_len [0, 3, 6].
const std::string kPrefixLm = "data/reference/do_prefix_pre_gelu_sin";
// do_prefix_post_relu_learned_pad: learned positions, no final norm.
const std::string kLearned = "data/reference/do_prefix_post_relu_learned_pad";
// do_post_relu_sin_h1: decoder_only causal with a "vocab" list of 20 tokens.
const std::string kWithVocab = "data/reference/do_post_relu_sin_h1";

std::vector<float> floats_of(const TensorToWrite& t) {
    std::vector<float> values(t.bytes.size() / 4);
    std::memcpy(values.data(), t.bytes.data(), t.bytes.size());
    return values;
}

// Float to IEEE half, rounding to nearest even (the finite weights of a model;
// no NaN). Normal halves: a = 1.m * 2^E, m rounded to 10 bits; below 2^-14
// the subnormal grid is 2^-24, so the bits are a * 2^24 rounded.
uint16_t float_to_half(float value) {
    const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(value));
    if (a >= 65520.0) return sign | 0x7C00;  // rounds past 65504: inf
    if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
    int exponent = 0;
    std::frexp(a, &exponent);  // a = f * 2^exponent, f in [0.5, 1): E = exponent - 1
    const double mantissa = std::nearbyint((std::ldexp(a, 1 - exponent) - 1.0) * 1024.0);  // 0..1024
    // mantissa 1024 carries into the exponent, as the bit layout intends
    return sign | static_cast<uint16_t>(((exponent - 1 + 15) << 10) + static_cast<int>(mantissa));
}

// Float to bfloat16, rounding to nearest even: keep the top 16 bits.
uint16_t float_to_bfloat16(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// What F16 / BF16 storage makes of a float, computed with arithmetic instead
// of bits (so that it checks the bit encoders above and the engine's widening):
// keep 11 (F16) or 8 (BF16) significant bits, rounding to nearest even; F16
// below 2^-14 keeps multiples of 2^-24.
float rounded_to(float value, const std::string& dtype) {
    const double a = std::fabs(static_cast<double>(value));
    if (a == 0) return value;
    int exponent = 0;
    std::frexp(a, &exponent);  // a = f * 2^exponent, f in [0.5, 1)
    const int bits = dtype == "F16" ? 11 : 8;
    const int step = dtype == "F16" ? std::max(exponent - bits, -24) : exponent - bits;  // a's last kept bit
    return static_cast<float>(std::copysign(std::ldexp(std::nearbyint(std::ldexp(a, -step)), step), value));
}

// The same tensor stored as F16 or BF16.
TensorToWrite narrowed(const TensorToWrite& t, const std::string& dtype) {
    TensorToWrite out{t.name, dtype, t.shape, {}};
    for (float v : floats_of(t)) {
        const uint16_t bits = dtype == "F16" ? float_to_half(v) : float_to_bfloat16(v);
        out.bytes.push_back(static_cast<uint8_t>(bits & 0xFF));
        out.bytes.push_back(static_cast<uint8_t>(bits >> 8));
    }
    return out;
}

Tensor logits_of(const std::string& model_path, const std::string& inputs_path) {
    const Model model = Model::load(model_path);
    return tinyformer::run_forward(model, SafetensorsFile::read(inputs_path), false).at("logits");
}

// B rows of T valid ids 1, 2, 3, ... (kept below `vocabulary`).
std::vector<int64_t> counting_ids(int64_t batch, int64_t length, int64_t vocabulary) {
    std::vector<int64_t> values;
    for (int64_t i = 0; i < batch * length; ++i) values.push_back(1 + i % (vocabulary - 1));
    return values;
}

}  // namespace

TEST_CASE("A reference checkpoint loads with its config and vocabulary") {
    const Model model = Model::load(kWithVocab + ".model.safetensors");
    CHECK(model.single_stack);
    CHECK_FALSE(model.encoder_decoder);
    CHECK(model.config.vocab_size == 20);
    REQUIRE(model.text.vocab.size() == 20);
    CHECK(model.text.vocab[0] == "<pad>");
    CHECK(model.text.vocab[3] == "a");
}

TEST_CASE("Checkpoint metadata rules: config required and valid, vocab an array of strings") {
    TempDirectory dir;
    Contents contents = read_contents(kEncoderDecoder + ".model.safetensors");

    SUBCASE("no \"config\" in __metadata__") {
        contents.metadata.erase("config");
        const std::string path = write_contents(dir, "no_config.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "__metadata__ has no \"config\"");
    }
    SUBCASE("a \"config\" that is not JSON") {
        contents.metadata["config"] = "{\"format\": \"tinyformer/1\"";
        const std::string path = write_contents(dir, "config_not_json.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "config is not valid JSON");
    }
    SUBCASE("a config rule broken inside the file: the message names the file and the key") {
        nlohmann::json config = contents.config();
        config["nhead"] = 5;
        contents.set_config(config);
        const std::string path = write_contents(dir, "config_nhead.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "'d_model' (16) must be divisible by 'nhead' (5)");
    }
    SUBCASE("a \"vocab\" that is a JSON object, not an array") {
        contents.metadata["vocab"] = "{\"a\": 1}";
        const std::string path = write_contents(dir, "vocab_object.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "\"vocab\" must be a JSON array of strings");
    }
    SUBCASE("a \"vocab\" that is not JSON") {
        contents.metadata["vocab"] = "a b c";
        const std::string path = write_contents(dir, "vocab_text.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "__metadata__ \"vocab\" is not valid JSON");
    }
    SUBCASE("a \"vocab\" array holding a non-string") {
        contents.metadata["vocab"] = "[\"<pad>\", 3]";
        const std::string path = write_contents(dir, "vocab_number.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "\"vocab\" entry 1 is not a string: 3");
    }
}

TEST_CASE("Every tensor of a model is required: removing any one is refused with its name and shape") {
    TempDirectory dir;
    for (const std::string& base : {kEncoderDecoder, kLearned}) {
        const Contents full = read_contents(base + ".model.safetensors");
        for (const TensorToWrite& removed : full.tensors) {
            CAPTURE(removed.name);
            Contents contents = full;
            contents.remove(removed.name);
            const std::string path = write_contents(dir, "missing.safetensors", contents);
            const std::string expected =
                "missing tensor '" + removed.name + "' (expected F32 " + tinyformer::shape_string(removed.shape) + ")";
            CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), expected.c_str());
        }
    }
}

TEST_CASE("Tensor rules: unknown extra tensors, wrong shapes and dtypes, non-finite weights are refused by name") {
    TempDirectory dir;
    Contents contents = read_contents(kEncoderDecoder + ".model.safetensors");

    SUBCASE("an unknown extra tensor: a third decoder layer's norm") {
        contents.tensors.push_back(tinyformer::f32_tensor("transformer.decoder.layers.2.norm1.weight", Tensor({16})));
        const std::string path = write_contents(dir, "extra.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "unknown tensor 'transformer.decoder.layers.2.norm1.weight' [16]",
                             "not used by the encoder_decoder model that this config describes");
    }
    SUBCASE("an unknown extra tensor: a learned position table in a sinusoidal model") {
        contents.tensors.push_back(tinyformer::f32_tensor("pos_embed.weight", Tensor({16, 16})));
        const std::string path = write_contents(dir, "pos_embed.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'pos_embed.weight' [16,16]");
    }
    SUBCASE("tensors of more layers than the config says are unknown") {
        nlohmann::json config = contents.config();
        config["num_decoder_layers"] = 1;
        contents.set_config(config);
        const std::string path = write_contents(dir, "fewer_layers.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.decoder.layers.1.");
    }
    SUBCASE("a wrong shape names the tensor, the actual and the expected shape") {
        contents.replace(tinyformer::f32_tensor("generator.weight", Tensor({11, 15})));
        const std::string path = write_contents(dir, "shape.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "tensor 'generator.weight' has shape [11,15]",
                             "expected [11,16]");
    }
    SUBCASE("a wrong dtype: an I64 weight") {
        contents.replace(ids("tgt_embed.weight", {11, 16}, std::vector<int64_t>(11 * 16, 1)));
        const std::string path = write_contents(dir, "dtype.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "tensor 'tgt_embed.weight' has dtype I64",
                             "expected F32");
    }
    SUBCASE("a NaN in a weight") {
        set_float(contents.tensor("transformer.encoder.layers.0.self_attn.in_proj_weight"), 5,
                  std::numeric_limits<float>::quiet_NaN());
        const std::string path = write_contents(dir, "nan.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "tensor 'transformer.encoder.layers.0.self_attn.in_proj_weight' holds a non-finite value",
                             "(NaN) at flat index 5");
    }
    SUBCASE("an inf and a -inf in a bias") {
        set_float(contents.tensor("generator.bias"), 2, std::numeric_limits<float>::infinity());
        std::string path = write_contents(dir, "inf.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "tensor 'generator.bias' holds a non-finite value (inf)",
                             "at flat index 2");
        set_float(contents.tensor("generator.bias"), 2, -std::numeric_limits<float>::infinity());
        path = write_contents(dir, "minus_inf.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "(-inf) at flat index 2");
    }
}

TEST_CASE("F16 and BF16 copies of a model load, widen exactly, and give logits close to F32") {
    // Widening is exact, so a copy stored as F16 must give bit for bit the
    // logits of an F32 file holding the same weights rounded to F16 (rounded
    // by arithmetic, not by the engine). Against the original F32 weights the
    // difference is F16 rounding (relative 2^-11 per weight; BF16: 2^-8)
    // carried through 2+2 layers: measured 0.0023 (F16) and 0.013 (BF16).
    TempDirectory dir;
    const Contents original = read_contents(kEncoderDecoder + ".model.safetensors");
    const std::string inputs = kEncoderDecoder + ".inputs.safetensors";
    const Tensor reference = logits_of(kEncoderDecoder + ".model.safetensors", inputs);

    const struct {
        const char* dtype;
        double tolerance;  // |a - b| <= tolerance * (1 + |b|)
    } storages[] = {{"F16", 5e-3}, {"BF16", 4e-2}};
    for (const auto& storage : storages) {
        CAPTURE(storage.dtype);
        Contents narrow = original, rounded = original;
        for (size_t i = 0; i < original.tensors.size(); ++i) {
            narrow.tensors[i] = narrowed(original.tensors[i], storage.dtype);
            std::vector<float> values = floats_of(original.tensors[i]);
            for (float& v : values) v = rounded_to(v, storage.dtype);
            rounded.tensors[i] =
                tinyformer::f32_tensor(original.tensors[i].name, Tensor(original.tensors[i].shape, values));
        }
        const std::string narrow_path = write_contents(dir, "narrow.safetensors", narrow);
        CHECK(SafetensorsFile::read(narrow_path).info("generator.weight").dtype == storage.dtype);
        const Tensor narrow_logits = logits_of(narrow_path, inputs);
        const Tensor rounded_logits = logits_of(write_contents(dir, "rounded.safetensors", rounded), inputs);
        // Exact by construction: the two files hold the same float weights, so the same calls
        // run on the same numbers in the same shapes.
        CHECK(narrow_logits.values() == rounded_logits.values());

        REQUIRE(narrow_logits.shape() == reference.shape());
        double worst = 0;
        for (int64_t i = 0; i < reference.numel(); ++i) {
            const double a = narrow_logits.data()[i], b = reference.data()[i];
            worst = std::max(worst, std::fabs(a - b) / (1 + std::fabs(b)));
        }
        MESSAGE(std::string(storage.dtype), ": worst |a - b| / (1 + |b|) = ", worst);
        CHECK(worst > 0);  // the weights did change
        CHECK(worst <= storage.tolerance);
    }
}

TEST_CASE("run_forward refuses inputs that break FORMAT.md section 2, naming the file and the input") {
    TempDirectory dir;
    const Model prefix_model = Model::load(kPrefixLm + ".model.safetensors");  // vocab 14, max_len 8
    const Model seq2seq_model = Model::load(kEncoderDecoder + ".model.safetensors");  // vocab 13 / 11
    const std::string path = dir.file("inputs.safetensors");
    auto run = [&](const Model& model, const std::vector<TensorToWrite>& inputs) {
        tinyformer::write_safetensors(path, inputs);
        return tinyformer::run_forward(model, SafetensorsFile::read(path), false);
    };
    const TensorToWrite good_ids = ids("ids", {3, 6}, counting_ids(3, 6, 14));
    const TensorToWrite good_prefix = ids("prefix_len", {3}, {0, 3, 6});
    const TensorToWrite good_src = ids("src_ids", {2, 7}, counting_ids(2, 7, 13));
    const TensorToWrite good_tgt = ids("tgt_ids", {2, 5}, counting_ids(2, 5, 11));

    SUBCASE("valid inputs run, with ids as I32 and the mask as U8 too") {
        CHECK(run(prefix_model, {good_ids, good_prefix}).at("logits").shape() == Shape{3, 6, 14});
        TensorToWrite ids_i32{"ids", "I32", {3, 6}, {}};
        for (int64_t id : counting_ids(3, 6, 14))
            for (int i = 0; i < 4; ++i) ids_i32.bytes.push_back(static_cast<uint8_t>(id >> (8 * i)));
        TensorToWrite mask_u8{"key_padding_mask", "U8", {3, 6}, std::vector<uint8_t>(18, 0)};
        mask_u8.bytes[17] = 1;  // the last position of row 2 is padding
        const Tensor logits = run(prefix_model, {ids_i32, mask_u8, good_prefix}).at("logits");
        CHECK(logits.at({2, 5, 0}) == 0.0f);  // padded position: exactly 0
        CHECK(run(seq2seq_model, {good_src, good_tgt}).at("logits").shape() == Shape{2, 5, 11});
    }
    SUBCASE("missing ids") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {good_prefix}), path.c_str(), "missing input 'ids'");
    }
    SUBCASE("missing src_ids") {
        CHECK_ERROR_CONTAINS(run(seq2seq_model, {good_tgt}), path.c_str(), "missing input 'src_ids'");
    }
    SUBCASE("ids of the wrong rank") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {ids("ids", {18}, counting_ids(1, 18, 14)), good_prefix}),
                             path.c_str(), "input 'ids' must be [B,T], got [18]");
    }
    SUBCASE("ids of dtype F32") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {tinyformer::f32_tensor("ids", Tensor({3, 6})), good_prefix}),
                             path.c_str(), "tensor 'ids' has dtype F32", "expected I64 or I32");
    }
    SUBCASE("a negative id") {
        std::vector<int64_t> values = counting_ids(3, 6, 14);
        values[1 * 6 + 2] = -1;
        CHECK_ERROR_CONTAINS(run(prefix_model, {ids("ids", {3, 6}, values), good_prefix}), path.c_str(),
                             "input 'ids' holds token id -1 at [1,2]", "outside the vocabulary 0..13");
    }
    SUBCASE("an id equal to the vocabulary size") {
        std::vector<int64_t> values = counting_ids(3, 6, 14);
        values[2 * 6 + 5] = 14;
        CHECK_ERROR_CONTAINS(run(prefix_model, {ids("ids", {3, 6}, values), good_prefix}), path.c_str(),
                             "input 'ids' holds token id 14 at [2,5]", "outside the vocabulary 0..13");
    }
    SUBCASE("a target id valid for the source vocabulary (13) but not the target one (11)") {
        std::vector<int64_t> values = counting_ids(2, 5, 11);
        values[0] = 11;
        CHECK_ERROR_CONTAINS(run(seq2seq_model, {good_src, ids("tgt_ids", {2, 5}, values)}), path.c_str(),
                             "input 'tgt_ids' holds token id 11 at [0,0]", "outside the vocabulary 0..10");
    }
    SUBCASE("a batch size that differs between ids and mask") {
        CHECK_ERROR_CONTAINS(
            run(prefix_model, {good_ids, mask("key_padding_mask", {2, 6}, std::vector<uint8_t>(12, 0)), good_prefix}),
            path.c_str(), "input 'key_padding_mask' is [2,6] but its ids are [3,6]");
    }
    SUBCASE("a batch size that differs between src_ids and tgt_ids") {
        CHECK_ERROR_CONTAINS(run(seq2seq_model, {good_src, ids("tgt_ids", {1, 5}, counting_ids(1, 5, 11))}),
                             path.c_str(), "src_ids has B=2 but tgt_ids has B=1");
    }
    SUBCASE("a mask of dtype F32") {
        CHECK_ERROR_CONTAINS(
            run(prefix_model, {good_ids, tinyformer::f32_tensor("key_padding_mask", Tensor({3, 6})), good_prefix}),
            path.c_str(), "tensor 'key_padding_mask' has dtype F32", "expected BOOL or U8");
    }
    SUBCASE("a sequence longer than max_len") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {ids("ids", {3, 9}, counting_ids(3, 9, 14)), good_prefix}),
                             path.c_str(), "input 'ids' [3,9] has length 9", "max_len is 8");
    }
    SUBCASE("a zero-length sequence") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {ids("ids", {3, 0}, {}), ids("prefix_len", {3}, {0, 0, 0})}),
                             path.c_str(), "input 'ids' is empty [3,0]");
    }
    SUBCASE("prefix_len negative") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {good_ids, ids("prefix_len", {3}, {0, -1, 6})}), path.c_str(),
                             "input 'prefix_len' holds -1 at [1]", "outside 0..T = 0..6");
    }
    SUBCASE("prefix_len longer than T") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {good_ids, ids("prefix_len", {3}, {0, 3, 7})}), path.c_str(),
                             "input 'prefix_len' holds 7 at [2]", "outside 0..T = 0..6");
    }
    SUBCASE("prefix_len missing for a prefix_lm model") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {good_ids}), path.c_str(), "missing input 'prefix_len'");
    }
    SUBCASE("prefix_len of the wrong shape") {
        CHECK_ERROR_CONTAINS(run(prefix_model, {good_ids, ids("prefix_len", {2}, {1, 2})}), path.c_str(),
                             "input 'prefix_len' must be [3], got [2]");
    }
    SUBCASE("an unknown input name") {
        CHECK_ERROR_CONTAINS(
            run(prefix_model, {good_ids, good_prefix, mask("attention_mask", {3, 6}, std::vector<uint8_t>(18, 0))}),
            path.c_str(), "unknown input 'attention_mask'", "key_padding_mask");
    }
    SUBCASE("prefix_len given to an encoder_decoder model is an unknown input") {
        CHECK_ERROR_CONTAINS(run(seq2seq_model, {good_src, good_tgt, ids("prefix_len", {2}, {1, 1})}), path.c_str(),
                             "unknown input 'prefix_len'");
    }
    SUBCASE("a source row that is all padding leaves a cross-attention query with no key") {
        // batch 1: all 7 source positions are padding, no target padding
        std::vector<uint8_t> source_padding(14, 0);
        std::fill(source_padding.begin() + 7, source_padding.end(), 1);
        const TensorToWrite src_mask = mask("src_key_padding_mask", {2, 7}, source_padding);
        CHECK_ERROR_CONTAINS(run(seq2seq_model, {good_src, good_tgt, src_mask}), path.c_str(),
                             "'src_key_padding_mask'", "batch 1", "query 0");

        SUBCASE("unless that row's target is all padding too: then its logits are exactly 0") {
            std::vector<uint8_t> target_padding(10, 0);
            std::fill(target_padding.begin() + 5, target_padding.end(), 1);
            const Tensor logits =
                run(seq2seq_model, {good_src, good_tgt, src_mask, mask("tgt_key_padding_mask", {2, 5}, target_padding)})
                    .at("logits");
            for (int64_t t = 0; t < 5; ++t)
                for (int64_t v = 0; v < 11; ++v) {
                    CHECK(std::isfinite(logits.at({0, t, v})));
                    CHECK(logits.at({1, t, v}) == 0.0f);
                }
        }
    }
}

TEST_CASE("info shows the vocabulary's tokens beside its size: the first 40, then how many more") {
    // dates: a char vocabulary of 41 tokens, <pad> <bos> <eos> <unk> first.
    const std::vector<std::string> vocab =
        nlohmann::json::parse(SafetensorsFile::read("data/models/dates.safetensors").metadata().at("vocab"));
    REQUIRE(vocab.size() == 41);
    std::string expected = "  tokens:";
    for (size_t id = 0; id < 40; ++id) expected += " \"" + vocab[id] + "\"";
    expected += " ... (1 more)\n";
    const test_helpers::CliRun run = test_helpers::run_tinyformer_ok({"info", "data/models/dates.safetensors"});
    CHECK(run.out.find("vocabulary of 41 tokens") != std::string::npos);
    CHECK(run.out.find(expected) != std::string::npos);
    CHECK(run.out.find("\"" + vocab[40] + "\"") == std::string::npos);
    // Two vocabularies: each side listed, whole when short.
    const test_helpers::CliRun two = test_helpers::run_tinyformer_ok({"info", "data/export/seq2seq.safetensors"});
    CHECK(two.out.find("  source tokens: \"<unk>\" \"<pad>\" \"<bos>\" \"<eos>\" \"ein\"") != std::string::npos);
    CHECK(two.out.find("  target tokens: \"<unk>\" \"<pad>\" \"<bos>\" \"<eos>\" \"a\" \"the\"") != std::string::npos);
    CHECK(two.out.find("more)") == std::string::npos);
}

namespace {

// This process's resident memory now (VmRSS of /proc/self/status), in bytes.
double resident_bytes() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmRSS:")) return std::stod(line.substr(6)) * 1024.0;  // "VmRSS:   123 kB"
    FAIL("no VmRSS line in /proc/self/status");
    return 0;
}

}  // namespace

TEST_CASE("A sinusoidal config of 2^27 numbers loads without a [max_len, D] table and gives the same logits") {
    // ed_post_relu_sin with max_len 2^23 (x D 16 = 2^27, the config limit): a
    // table would be 512 MiB. Positions are computed as the pass reads them, so
    // loading grows the process by far less, and its logits on the reference
    // inputs (T <= 16) are exactly those of the max_len 16 file.
    TempDirectory dir;
    const std::string path = test_helpers::edited(dir, "long.safetensors", kEncoderDecoder + ".model.safetensors", [](Contents& c) {
        nlohmann::json config = c.config();
        config["max_len"] = int64_t{1} << 23;
        c.set_config(config);
    });
    const double before = resident_bytes();
    const Model model = Model::load(path);
    const double grown = resident_bytes() - before;
    MESSAGE("loading grew the process by ", grown / (1 << 20), " MiB");
    CHECK(grown < 32.0 * (1 << 20));
    CHECK(model.config.max_len == 8388608);
    const SafetensorsFile inputs = SafetensorsFile::read(kEncoderDecoder + ".inputs.safetensors");
    const Tensor logits = tinyformer::run_forward(model, inputs, false).at("logits");
    const Tensor expected = logits_of(kEncoderDecoder + ".model.safetensors", kEncoderDecoder + ".inputs.safetensors");
    REQUIRE(logits.shape() == expected.shape());
    // Exact by construction: both files compute each position's sinusoid by the same formula
    // as the pass reads it, and every other call is the same on the same numbers and shapes.
    CHECK(logits.values() == expected.values());
}

// ---- The layer-form keys (docs/FORMAT.md section 1): bias, norm_bias, head_bias,
// tie_embeddings, qkv, norm, activation "gelu_tanh", mask_value. Each file without
// a tensor is checked against the old-style file that holds the equivalent one
// (zero biases, a copy of the embedding, the fused concatenation): the two are
// different loading and forward paths, and their logits must be the same numbers.

namespace {

bool is_stack_bias(const std::string& name) {
    for (const char* end : {".in_proj_bias", ".out_proj.bias", ".linear1.bias", ".linear2.bias"})
        if (name.ends_with(end)) return true;
    return false;
}
bool is_norm_bias(const std::string& name) { return name.ends_with(".bias") && name.find(".norm") != std::string::npos; }
bool is_head_bias(const std::string& name) { return name == "lm_head.bias" || name == "generator.bias"; }

void zero_out(TensorToWrite& t) { std::fill(t.bytes.begin(), t.bytes.end(), uint8_t{0}); }

// Every tensor for which `pick` is true: set to 0 (old style) or removed (new style).
Contents zeroed(Contents contents, bool (*pick)(const std::string&)) {
    for (TensorToWrite& t : contents.tensors)
        if (pick(t.name)) zero_out(t);
    return contents;
}
Contents dropped(Contents contents, bool (*pick)(const std::string&), const char* key) {
    std::erase_if(contents.tensors, [&](const TensorToWrite& t) { return pick(t.name); });
    nlohmann::json config = contents.config();
    config[key] = false;
    contents.set_config(config);
    return contents;
}

// Rows [first, first+count) of a 2-D (or 1-D) F32 tensor, as a tensor named `name`.
TensorToWrite row_block(const TensorToWrite& t, const std::string& name, int64_t first, int64_t count) {
    const int64_t width = t.shape.size() == 2 ? t.shape[1] : 1;
    TensorToWrite part{name, "F32", t.shape, {}};
    part.shape[0] = count;
    part.bytes.assign(t.bytes.begin() + first * width * 4, t.bytes.begin() + (first + count) * width * 4);
    return part;
}

// in_proj_weight [3D, D] / in_proj_bias [3D] of every attention split into
// q_proj / k_proj / v_proj .weight [D, D] / .bias [D], and "qkv": "separate".
Contents separated(Contents contents, int64_t D) {
    std::vector<TensorToWrite> kept;
    for (const TensorToWrite& t : contents.tensors) {
        for (const char* fused : {".in_proj_weight", ".in_proj_bias"}) {
            if (!t.name.ends_with(fused)) continue;
            const std::string prefix = t.name.substr(0, t.name.size() - std::strlen(fused));
            const char* suffix = std::string(fused) == ".in_proj_weight" ? ".weight" : ".bias";
            int64_t part = 0;
            for (const char* projection : {".q_proj", ".k_proj", ".v_proj"})
                kept.push_back(row_block(t, prefix + projection + suffix, D * part++, D));
        }
        if (!t.name.ends_with(".in_proj_weight") && !t.name.ends_with(".in_proj_bias")) kept.push_back(t);
    }
    contents.tensors = kept;
    nlohmann::json config = contents.config();
    config["qkv"] = "separate";
    contents.set_config(config);
    return contents;
}

int64_t count_named(const Contents& contents, bool (*pick)(const std::string&)) {
    return std::count_if(contents.tensors.begin(), contents.tensors.end(),
                         [&](const TensorToWrite& t) { return pick(t.name); });
}

}  // namespace

TEST_CASE("bias, norm_bias, head_bias false: a file without those biases gives the logits of the file with them zeroed") {
    TempDirectory dir;
    for (const std::string& base : {kEncoderDecoder, kPrefixLm}) {
        CAPTURE(base);
        const Contents full = read_contents(base + ".model.safetensors");
        const std::string inputs = base + ".inputs.safetensors";
        const Tensor original = logits_of(base + ".model.safetensors", inputs);
        struct Kind {
            bool (*pick)(const std::string&);
            const char* key;
        };
        for (const Kind& kind : {Kind{is_stack_bias, "bias"}, Kind{is_norm_bias, "norm_bias"}, Kind{is_head_bias, "head_bias"}}) {
            CAPTURE(kind.key);
            REQUIRE(count_named(full, kind.pick) > 0);
            const Contents without = dropped(full, kind.pick, kind.key);
            CHECK(count_named(without, kind.pick) == 0);
            const Tensor old_style = logits_of(write_contents(dir, "zeroed.safetensors", zeroed(full, kind.pick)), inputs);
            const Tensor new_style = logits_of(write_contents(dir, "dropped.safetensors", without), inputs);
            // Exact by construction: the same products in the same shapes; a zero bias enters as
            // beta = 1 on a C that starts at 0 (linear) or as + 0 (norms, head) where no bias
            // skips it, and adding an exact 0 changes no float.
            CHECK(new_style.values() == old_style.values());
            CHECK(new_style.values() != original.values());  // the biases mattered: the test can fail
        }
        // All three at once, and the info line says so.
        Contents none = dropped(dropped(dropped(full, is_stack_bias, "bias"), is_norm_bias, "norm_bias"), is_head_bias,
                                "head_bias");
        const Contents all_zero = zeroed(zeroed(zeroed(full, is_stack_bias), is_norm_bias), is_head_bias);
        const std::string none_path = write_contents(dir, "none.safetensors", none);
        CHECK(logits_of(none_path, inputs).values() ==
              logits_of(write_contents(dir, "all_zero.safetensors", all_zero), inputs).values());
        const auto info = test_helpers::run_tinyformer({"info", none_path});
        CHECK(info.status == 0);
        CHECK(info.out.find("bias no, norm_bias no, head_bias no, tie_embeddings no, qkv fused") != std::string::npos);
    }
}

TEST_CASE("A file holding a tensor its config says is absent is refused, naming the tensor; a missing one too") {
    TempDirectory dir;
    const Contents full = read_contents(kPrefixLm + ".model.safetensors");
    SUBCASE("bias false, but the biases are still there") {
        Contents contents = full;
        nlohmann::json config = contents.config();
        config["bias"] = false;
        contents.set_config(config);
        const std::string path = write_contents(dir, "extra_bias.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.layers.",
                             "; the config's 'bias' is false)");
    }
    SUBCASE("norm_bias false, but transformer.norm.bias is still there") {
        Contents contents = dropped(full, [](const std::string& n) { return is_norm_bias(n) && n != "transformer.norm.bias"; },
                                    "norm_bias");
        const std::string path = write_contents(dir, "extra_norm_bias.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.norm.bias' [16]",
                             "; the config's 'norm_bias' is false)");
    }
    SUBCASE("head_bias false, but lm_head.bias is there; tie_embeddings, but lm_head.weight is there") {
        Contents contents = full;
        nlohmann::json config = contents.config();
        config["head_bias"] = false;
        contents.set_config(config);
        std::string path = write_contents(dir, "extra_head_bias.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'lm_head.bias' [14]",
                             "; the config's 'head_bias' is false)");
        config["head_bias"] = true;
        config["tie_embeddings"] = true;
        contents.set_config(config);
        path = write_contents(dir, "extra_head.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'lm_head.weight' [14,16]",
                             "'tie_embeddings' is true: the head is the token embedding)");
    }
    SUBCASE("bias true (the default) and one stack bias missing") {
        Contents contents = full;
        contents.remove("transformer.layers.1.linear2.bias");
        const std::string path = write_contents(dir, "missing_bias.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "missing tensor 'transformer.layers.1.linear2.bias' (expected F32 [16])");
    }
    SUBCASE("qkv separate: a missing or misshapen projection, and a leftover in_proj_weight") {
        Contents contents = separated(full, 16);
        contents.remove("transformer.layers.0.self_attn.k_proj.weight");
        std::string path = write_contents(dir, "missing_k.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "missing tensor 'transformer.layers.0.self_attn.k_proj.weight' (expected F32 [16,16])");
        contents = separated(full, 16);
        contents.replace(tinyformer::f32_tensor("transformer.layers.1.self_attn.v_proj.bias", Tensor({17})));
        path = write_contents(dir, "bad_v.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "tensor 'transformer.layers.1.self_attn.v_proj.bias' has shape [17]",
                             "expected [16]");
        contents = separated(full, 16);
        for (const TensorToWrite& t : full.tensors)
            if (t.name == "transformer.layers.0.self_attn.in_proj_weight") contents.tensors.push_back(t);
        path = write_contents(dir, "leftover.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "unknown tensor 'transformer.layers.0.self_attn.in_proj_weight' [48,16]",
                             "the config's 'qkv' is \"separate\" (q_proj, k_proj, v_proj))");
    }
}

TEST_CASE("tie_embeddings: the head is the token embedding; the logits of a file holding a copy of it as the head") {
    TempDirectory dir;
    struct Case {
        std::string base, embedding, head;
    };
    for (const Case& c : {Case{kEncoderDecoder, "tgt_embed.weight", "generator.weight"},
                          Case{kPrefixLm, "embed.weight", "lm_head.weight"}}) {
        CAPTURE(c.base);
        const Contents full = read_contents(c.base + ".model.safetensors");
        const std::string inputs = c.base + ".inputs.safetensors";
        Contents copied = full;  // old style: the head holds a copy of the embedding
        TensorToWrite head = copied.tensor(c.embedding);
        head.name = c.head;
        copied.replace(head);
        Contents tied = full;  // new style: no head weight at all
        tied.remove(c.head);
        nlohmann::json config = tied.config();
        config["tie_embeddings"] = true;
        tied.set_config(config);
        const std::string tied_path = write_contents(dir, "tied.safetensors", tied);
        const Tensor old_style = logits_of(write_contents(dir, "copied.safetensors", copied), inputs);
        // Exact by construction: the head's product reads the embedding itself or a copy of it,
        // the same call on the same numbers.
        CHECK(logits_of(tied_path, inputs).values() == old_style.values());
        CHECK(old_style.values() != logits_of(c.base + ".model.safetensors", inputs).values());
        const auto info = test_helpers::run_tinyformer({"info", tied_path});
        CHECK(info.status == 0);
        CHECK(info.out.find("tie_embeddings yes") != std::string::npos);
    }
}

TEST_CASE("qkv separate: q_proj, k_proj, v_proj give the logits of their fused concatenation, in every attention") {
    TempDirectory dir;
    for (const std::string& base : {kEncoderDecoder, kPrefixLm}) {
        CAPTURE(base);
        const Contents full = read_contents(base + ".model.safetensors");
        const std::string inputs = base + ".inputs.safetensors";
        const Contents separate = separated(full, 16);
        CHECK(std::none_of(separate.tensors.begin(), separate.tensors.end(),
                           [](const TensorToWrite& t) { return t.name.find("in_proj") != std::string::npos; }));
        const std::string path = write_contents(dir, "separate.safetensors", separate);
        // Exact by construction: the loader stacks q/k/v into the fused [3D, D] matrix
        // (models/transformer.cpp), so the same fused product runs on the same numbers.
        CHECK(logits_of(path, inputs).values() == logits_of(base + ".model.safetensors", inputs).values());
        // Without biases too: the separate file without .bias, against the fused one with zero biases.
        const Contents fused_zero = zeroed(full, is_stack_bias);
        const Contents separate_none = separated(dropped(full, is_stack_bias, "bias"), 16);
        CHECK(logits_of(write_contents(dir, "separate_none.safetensors", separate_none), inputs).values() ==
              logits_of(write_contents(dir, "fused_zero.safetensors", fused_zero), inputs).values());
        // Swapping q and k changes the numbers: the rows are put back in their order.
        Contents swapped = separate;
        for (TensorToWrite& t : swapped.tensors) {
            if (t.name.ends_with(".q_proj.weight")) t.name.replace(t.name.size() - 13, 6, "k_proj");
            else if (t.name.ends_with(".k_proj.weight")) t.name.replace(t.name.size() - 13, 6, "q_proj");
        }
        CHECK(logits_of(write_contents(dir, "swapped.safetensors", swapped), inputs).values() !=
              logits_of(path, inputs).values());
    }
}

namespace {

// A decoder_only model whose pass can be worked by hand: D = F = V = 4, one
// pre-LN layer, no positions, no biases anywhere (bias, norm_bias, head_bias
// false). The attention's W_O is 0, so x + attention(norm1(x)) = x; linear1,
// linear2 and lm_head are the identity, norms' weights 1. So
//   logits = x + act(norm2(x))     for each position's embedding x
Contents hand_model(const std::string& norm, const std::string& activation) {
    const nlohmann::json config = {
        {"format", "tinyformer/1"}, {"arch", "decoder_only"}, {"d_model", 4},        {"nhead", 1},
        {"dim_feedforward", 4},     {"num_layers", 1},        {"activation", activation},
        {"norm_first", true},       {"layer_norm_eps", 1e-6}, {"final_norm", false}, {"vocab_size", 4},
        {"max_len", 4},             {"pos_encoding", "none"}, {"embed_scale", false}, {"attention", "causal"},
        {"norm", norm},             {"bias", false},          {"norm_bias", false},  {"head_bias", false}};
    const Tensor identity({4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    Contents contents;
    contents.set_config(config);
    const std::string layer = "transformer.layers.0.";
    contents.tensors = {
        tinyformer::f32_tensor("embed.weight", Tensor({4, 4}, {1, 2, 3, 4, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0})),
        tinyformer::f32_tensor(layer + "self_attn.in_proj_weight", Tensor::filled({12, 4}, 0.25f)),
        tinyformer::f32_tensor(layer + "self_attn.out_proj.weight", Tensor({4, 4})),
        tinyformer::f32_tensor(layer + "linear1.weight", identity),
        tinyformer::f32_tensor(layer + "linear2.weight", identity),
        tinyformer::f32_tensor(layer + "norm1.weight", Tensor::filled({4}, 1.0f)),
        tinyformer::f32_tensor(layer + "norm2.weight", Tensor::filled({4}, 1.0f)),
        tinyformer::f32_tensor("lm_head.weight", identity)};
    return contents;
}

}  // namespace

TEST_CASE("norm layer_norm_std and activation gelu_tanh: a model worked by hand") {
    TempDirectory dir;
    const std::string inputs = dir.file("inputs.safetensors");
    tinyformer::write_safetensors(inputs, {ids("ids", {1, 2}, {0, 1})});  // embeddings [1,2,3,4] and [0,0,1,-1]
    auto logits = [&](const std::string& norm, const std::string& activation) {
        return logits_of(write_contents(dir, "hand.safetensors", hand_model(norm, activation)), inputs);
    };
    auto near = [](double expected) { return doctest::Approx(expected).epsilon(2e-6).scale(1.0); };
    // Worked with python3's math module. Position 0, x = [1,2,3,4]: mean 2.5, x - mean = [-1.5,-0.5,0.5,1.5],
    // sum of squares 5.
    //   layer_norm_std: std = sqrt(5 / 3) = 1.2909944; n = (x - mean) / (1.2909944 + 1e-6)
    //                   = [-1.1618941, -0.3872980, 0.3872980, 1.1618941]
    //   gelu_tanh(n) = 0.5 n (1 + tanh(0.7978846 (n + 0.044715 n^3))) = [-0.1426980, -0.1352774, 0.2520206, 1.0191961]
    //   logits = x + gelu_tanh(n) = [0.8573020, 1.8647226, 3.2520206, 5.0191961]
    // Position 1, x = [0,0,1,-1]: mean 0, sum of squares 2, std = sqrt(2/3) = 0.8164966,
    //   n = [0, 0, 1.2247434, -1.2247434]; logits = [0, 0, 2.0893912, -1.1353522]
    SUBCASE("layer_norm_std + gelu_tanh") {
        const Tensor y = logits("layer_norm_std", "gelu_tanh");
        REQUIRE(y.shape() == Shape{1, 2, 4});
        const double expected[8] = {0.857302, 1.8647226, 3.2520206, 5.0191961, 0, 0, 2.0893912, -1.1353522};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    // nn.LayerNorm instead: var = 5 / 4 (biased), n = (x - mean) / sqrt(1.25 + 1e-6)
    //   = [-1.3416402, -0.4472134, 0.4472134, 1.3416402]; logits = [0.8792119, 1.8535886, 3.300802, 5.2208521]
    //   position 1: var = 2 / 4, n = [0, 0, 1.4142122, -1.4142122]; logits = [0, 0, 2.3027531, -1.1114591]
    SUBCASE("layer_norm + gelu_tanh: the biased variance gives other numbers") {
        const Tensor y = logits("layer_norm", "gelu_tanh");
        const double expected[8] = {0.8792119, 1.8535886, 3.300802, 5.2208521, 0, 0, 2.3027531, -1.1114591};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    // The exact GELU instead: 0.5 n (1 + erf(n / sqrt 2)); logits = [0.8575062, 1.8647293, 3.2520273, 5.0194003]
    //   position 1: [0, 0, 2.0896101, -1.1351332]
    SUBCASE("layer_norm_std + gelu (erf): the tanh form differs in the 4th digit") {
        const Tensor y = logits("layer_norm_std", "gelu");
        const double expected[8] = {0.8575062, 1.8647293, 3.2520273, 5.0194003, 0, 0, 2.0896101, -1.1351332};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    SUBCASE("the same model with q/k/v separate gives the same numbers; a norm bias it says is absent is refused") {
        Contents contents = hand_model("layer_norm_std", "gelu_tanh");
        contents.tensors.push_back(tinyformer::f32_tensor("transformer.layers.0.norm2.bias", Tensor({4})));
        const std::string path = write_contents(dir, "extra.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.layers.0.norm2.bias' [4]");
        Contents separate = separated(hand_model("layer_norm_std", "gelu_tanh"), 4);
        CHECK(logits_of(write_contents(dir, "separate.safetensors", separate), inputs).values() ==
              logits("layer_norm_std", "gelu_tanh").values());
    }
}

TEST_CASE("norm rms_norm with activation silu and swiglu: the hand-worked model; linear3 required by name, refused unknown") {
    TempDirectory dir;
    const std::string inputs = dir.file("inputs.safetensors");
    tinyformer::write_safetensors(inputs, {ids("ids", {1, 2}, {0, 1})});  // embeddings [1,2,3,4] and [0,0,1,-1]
    const std::string layer = "transformer.layers.0.";
    const Tensor two_identity({4, 4}, {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2});
    auto swiglu_model = [&]() {
        Contents contents = hand_model("rms_norm", "swiglu");
        contents.tensors.push_back(tinyformer::f32_tensor(layer + "linear3.weight", two_identity));
        return contents;
    };
    auto near = [](double expected) { return doctest::Approx(expected).epsilon(2e-6).scale(1.0); };
    // The hand model: attention's out_proj is 0, so logits = x + FFN(rms_norm(x)), with linear1 =
    // linear2 = I (and linear3 = 2I for swiglu), norm2 weight 1, eps 1e-6. Worked with python3's math module.
    // Position 0, x = [1,2,3,4]: mean(x^2) = 30 / 4 = 7.5, n = x / sqrt(7.500001)
    //   = [0.3651483, 0.7302967, 1.0954450, 1.4605934] (no mean subtracted: every n > 0)
    //   silu(n) = n / (1 + exp(-n)) = [0.2155420, 0.4928556, 0.8209327, 1.1854518]
    // Position 1, x = [0,0,1,-1]: mean(x^2) = 0.5, n = [0, 0, 1.4142121, -1.4142121]
    //   silu(n) = [0, 0, 1.1376339, -0.2765782]
    SUBCASE("rms_norm + silu: logits = x + silu(n)") {
        const Tensor y = logits_of(write_contents(dir, "silu.safetensors", hand_model("rms_norm", "silu")), inputs);
        REQUIRE(y.shape() == Shape{1, 2, 4});
        // [1 + 0.2155420, 2 + 0.4928556, 3 + 0.8209327, 4 + 1.1854518], [0, 0, 1 + 1.1376339, -1 - 0.2765782]
        const double expected[8] = {1.2155420, 2.4928556, 3.8209327, 5.1854518, 0, 0, 2.1376339, -1.2765782};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    SUBCASE("rms_norm + swiglu: logits = x + silu(n) * 2n") {
        const Tensor y = logits_of(write_contents(dir, "swiglu.safetensors", swiglu_model()), inputs);
        REQUIRE(y.shape() == Shape{1, 2, 4});
        // position 0: 1 + 0.2155420 * 0.7302967 = 1.1574096, 2 + 0.4928556 * 1.4605934 = 2.7198616,
        //             3 + 0.8209327 * 2.1908901 = 4.7985734, 4 + 1.1854518 * 2.9211868 = 7.4629261
        // position 1: 0, 0, 1 + 1.1376339 * 2.8284243 = 4.2177114, -1 + -0.2765782 * -2.8284243 = -0.2177194
        const double expected[8] = {1.1574096, 2.7198616, 4.7985734, 7.4629261, 0, 0, 4.2177114, -0.2177194};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    SUBCASE("swiglu with bias: linear3.bias is read (and required); linear3 + 0.5 gives silu(n) * (2n + 0.5)") {
        Contents contents = swiglu_model();
        nlohmann::json config = contents.config();
        config["bias"] = true;
        contents.set_config(config);
        for (const auto& [name, size] : {std::pair{"self_attn.in_proj_bias", 12}, std::pair{"self_attn.out_proj.bias", 4},
                                         std::pair{"linear1.bias", 4}, std::pair{"linear2.bias", 4}})
            contents.tensors.push_back(tinyformer::f32_tensor(layer + name, Tensor({size})));
        std::string path = write_contents(dir, "swiglu_no_bias3.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "missing tensor 'transformer.layers.0.linear3.bias' (expected F32 [4])");
        contents.tensors.push_back(tinyformer::f32_tensor(layer + "linear3.bias", Tensor::filled({4}, 0.5f)));
        path = write_contents(dir, "swiglu_bias.safetensors", contents);
        const Tensor y = logits_of(path, inputs);
        // position 0: 1 + 0.2155420 * 1.2302967 = 1.2651806, ...; position 1: 1 + 1.1376339 * 3.3284243 = 4.7865284
        const double expected[8] = {1.2651806, 2.9662894, 5.2090397, 8.0556520, 0, 0, 4.7865284, -0.3560085};
        for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == near(expected[i]));
    }
    SUBCASE("a swiglu file without linear3 is refused, naming the tensor") {
        const std::string path = write_contents(dir, "no_linear3.safetensors", hand_model("rms_norm", "swiglu"));
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(),
                             "missing tensor 'transformer.layers.0.linear3.weight' (expected F32 [4,4])");
    }
    SUBCASE("a layer_norm (or silu) model with an extra linear3 is refused as unknown") {
        for (const auto& [norm, activation] : {std::pair{"layer_norm", "gelu"}, std::pair{"rms_norm", "silu"}}) {
            CAPTURE(activation);
            Contents contents = hand_model(norm, activation);
            contents.tensors.push_back(tinyformer::f32_tensor(layer + "linear3.weight", two_identity));
            const std::string path = write_contents(dir, "extra_linear3.safetensors", contents);
            const std::string why = std::string("the config's 'activation' is \"") + activation + "\", not \"swiglu\": no linear3)";
            CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.layers.0.linear3.weight' [4,4]",
                                 why.c_str());
        }
    }
    SUBCASE("rms_norm has no bias: a norm bias in the file is refused as unknown") {
        Contents contents = hand_model("rms_norm", "silu");
        contents.tensors.push_back(tinyformer::f32_tensor(layer + "norm2.bias", Tensor({4})));
        const std::string path = write_contents(dir, "rms_bias.safetensors", contents);
        CHECK_ERROR_CONTAINS(Model::load(path), path.c_str(), "unknown tensor 'transformer.layers.0.norm2.bias' [4]",
                             "the config's 'norm_bias' is false)");
    }
}

TEST_CASE("mask_value: a target query over an all-padding source weighs every source key alike; other rows as with -inf") {
    TempDirectory dir;
    // ed_post_relu_sin: B = 2, S = 7, T = 5. Batch row 1's source is all padding.
    const std::string inputs = dir.file("inputs.safetensors");
    std::vector<uint8_t> source_padding(14, 0);
    std::fill(source_padding.begin() + 7, source_padding.end(), uint8_t{1});
    tinyformer::write_safetensors(inputs, {ids("src_ids", {2, 7}, counting_ids(2, 7, 13)),
                                           ids("tgt_ids", {2, 5}, counting_ids(2, 5, 11)),
                                           mask("src_key_padding_mask", {2, 7}, source_padding)});
    const Contents full = read_contents(kEncoderDecoder + ".model.safetensors");
    const std::string plain = kEncoderDecoder + ".model.safetensors";
    // Without mask_value: refused by name (the query would attend no key).
    CHECK_ERROR_CONTAINS(logits_of(plain, inputs), "marks every source position of batch 1 as padding",
                         "cross-attention query 0 of batch 1 may attend no key");
    Contents filled = full;
    nlohmann::json config = filled.config();
    config["mask_value"] = -1e9;
    filled.set_config(config);
    const std::string path = write_contents(dir, "mask_value.safetensors", filled);
    const Model model = Model::load(path);
    const auto outputs = tinyformer::run_forward(model, SafetensorsFile::read(inputs), true);
    // Every cross-attention weight of batch row 1 is 1/S = 1/7: all 7 scores are -1e9.
    for (const char* name : {"decoder.0.cross_attn.weights", "decoder.1.cross_attn.weights"}) {
        CAPTURE(name);
        const Tensor& weights = outputs.at(name);  // [B, H, T, S]
        REQUIRE(weights.shape() == Shape{2, 4, 5, 7});
        for (int64_t h = 0; h < 4; ++h)
            for (int64_t t = 0; t < 5; ++t)
                for (int64_t s = 0; s < 7; ++s) CHECK(weights.at({1, h, t, s}) == doctest::Approx(1.0 / 7.0).epsilon(1e-6));
    }
    const Tensor& logits = outputs.at("logits");
    CHECK(logits.all_finite());
    // The streaming path (no weights asked) gives the same logits.
    const Tensor streamed = tinyformer::run_forward(model, SafetensorsFile::read(inputs), false).at("logits");
    for (int64_t i = 0; i < logits.numel(); ++i)
        CHECK(streamed.data()[i] == doctest::Approx(logits.data()[i]).epsilon(1e-5).scale(1.0));
    // Batch row 0 attends real keys everywhere: the numbers of the model without mask_value.
    const std::string unpadded = dir.file("unpadded.safetensors");
    tinyformer::write_safetensors(unpadded, {ids("src_ids", {2, 7}, counting_ids(2, 7, 13)),
                                             ids("tgt_ids", {2, 5}, counting_ids(2, 5, 11))});
    const Tensor minus_inf = logits_of(plain, unpadded);
    for (int64_t i = 0; i < 5 * 11; ++i)
        CHECK(logits.data()[i] == doctest::Approx(minus_inf.data()[i]).epsilon(1e-6).scale(1.0));
    // On the reference inputs (partly padded rows), -1e9 gives the -inf logits: every blocked
    // key's weight is exactly 0 either way, but not the same floats. The streaming path (no
    // weights asked) tiles only the keys a -inf mask allows and every key with a mask_value,
    // so the products P V_tile have other shapes (summation orders); each logit is a chain
    // of sums of D = 16 to S terms of magnitude ~1, rounded at 2^-24 each: 1e-5 (1 + |b|)
    // leaves a factor ~10 over that, and a wrong mask moves a logit by ~0.1.
    const std::string reference_inputs = kEncoderDecoder + ".inputs.safetensors";
    const Tensor with_value = logits_of(path, reference_inputs), with_minus_inf = logits_of(plain, reference_inputs);
    REQUIRE(with_value.shape() == with_minus_inf.shape());
    for (int64_t i = 0; i < with_value.numel(); ++i)
        CHECK(std::fabs(with_value.data()[i] - with_minus_inf.data()[i]) <= 1e-5 * (1 + std::fabs(with_minus_inf.data()[i])));
    const auto info = test_helpers::run_tinyformer({"info", path});
    CHECK(info.out.find("mask_value -1e+09") != std::string::npos);
}
