// A model written by tools/python/tinyformer_export.py, checked without PyTorch:
// data/export/ holds a tiny seq2seq model (stock nn.Transformer with
// batch_first=False, pre-LN, GELU, sinusoidal positions, word vocabularies,
// generator tied to the target embedding), a padded batch and PyTorch's
// outputs computed from the modules themselves (tools/python/make_export_fixture.py,
// data/export/README.md). tinyformer must match them as FORMAT.md defines
// (tests/compare_outputs.h), and the file must carry the metadata the
// exporter was given.

#include "tests/compare_outputs.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace tinyformer;

namespace {

const std::string kDir = "data/export/";
const std::string kModel = kDir + "seq2seq.safetensors";

// As tools/python/make_export_fixture.py defines them.
const std::vector<std::string> kSourceVocab = {"<unk>", "<pad>", "<bos>", "<eos>", "ein",   "eine",  "der",  "die",
                                               "das",   "hund",  "katze", "haus",  "sieht", "klein", "gross", "rot"};
const std::vector<std::string> kTargetVocab = {"<unk>", "<pad>", "<bos>", "<eos>", "a",     "the", "dog",
                                               "cat",   "house", "sees",  "small", "big",   "red"};

}  // namespace

TEST_CASE("A model exported by tools/python/tinyformer_export.py matches PyTorch's modules within 1e-4 + 1e-4|b|") {
    const Model model = Model::load(kModel);
    const SafetensorsFile inputs = SafetensorsFile::read(kDir + "seq2seq.inputs.safetensors");
    const SafetensorsFile expected = SafetensorsFile::read(kDir + "seq2seq.expected.safetensors");
    REQUIRE(expected.tensors().size() == 7);  // logits + 2 encoder + 2 x (self, cross)
    const test_helpers::Comparison c = test_helpers::compare_forward_with(model, inputs, expected);
    MESSAGE(kModel, ": ", c.compared, " numbers compared, worst |a-b| / tol = ", c.worst_ratio, "; ", c.padded,
            " padded numbers exactly 0");
    CHECK(c.compared > 0);
    CHECK(c.padded > 0);  // the batch has right and left padding
}

TEST_CASE("tinyformer forward on the exported model writes what PyTorch computed") {
    test_helpers::TempDirectory dir;
    const test_helpers::CliRun run =
        test_helpers::run_tinyformer({"forward", kModel, "--inputs", kDir + "seq2seq.inputs.safetensors", "--output",
                                      dir.file("out.safetensors"), "--attention"});
    REQUIRE_MESSAGE(run.status == 0, run.err);
    const SafetensorsFile ours = SafetensorsFile::read(dir.file("out.safetensors"));
    const SafetensorsFile inputs = SafetensorsFile::read(kDir + "seq2seq.inputs.safetensors");
    const SafetensorsFile expected = SafetensorsFile::read(kDir + "seq2seq.expected.safetensors");
    const BoolTensor target_padding = inputs.read_bool("tgt_key_padding_mask");
    const test_helpers::Comparison c = test_helpers::compare_output(
        "logits", ours.read_float("logits"), expected.read_float("logits"), &target_padding);
    CHECK(c.compared == (18 - 5) * static_cast<int64_t>(kTargetVocab.size()));  // 3 x 6 positions, 5 padded
}

TEST_CASE("The exported model carries the config read from the modules and the metadata given") {
    const Model model = Model::load(kModel);
    const ModelConfig& c = model.config;
    CHECK(c.arch == Architecture::EncoderDecoder);
    CHECK(c.d_model == 16);
    CHECK(c.nhead == 4);
    CHECK(c.dim_feedforward == 32);
    CHECK(c.num_encoder_layers == 2);
    CHECK(c.num_decoder_layers == 2);
    CHECK(c.activation == Activation::Gelu);
    CHECK(c.norm_first);
    CHECK(c.src_vocab_size == 16);
    CHECK(c.tgt_vocab_size == 13);
    CHECK(c.max_len == 12);
    CHECK(c.pos_encoding == PositionalEncoding::Sinusoidal);
    CHECK(c.embed_scale);
    CHECK(c.pad_id == 1);
    CHECK(c.bos_id == 2);
    CHECK(c.eos_id == 3);
    CHECK(model.text.vocab == kTargetVocab);
    CHECK(model.text.src_vocab == kSourceVocab);
    CHECK(model.text.tokenizer == TokenizerKind::Whitespace);
    CHECK(model.text.train_max_len == 10);

    const SafetensorsFile file = SafetensorsFile::read(kModel);
    const auto& metadata = file.metadata();
    REQUIRE(metadata.count("src_vocab"));
    CHECK(nlohmann::json::parse(metadata.at("src_vocab")).get<std::vector<std::string>>() == kSourceVocab);
    CHECK(metadata.at("tokenizer") == "whitespace");
    CHECK(metadata.at("train_max_len") == "10");
    // generator.weight was tied to tgt_embed.weight: FORMAT has no aliases, so two equal copies
    const Tensor generator = file.read_float("generator.weight"), target = file.read_float("tgt_embed.weight");
    CHECK(test_helpers::max_abs_difference(generator, target) == 0.0);
    CHECK(file.info("generator.weight").begin != file.info("tgt_embed.weight").begin);
}
