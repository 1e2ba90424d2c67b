// Tests for reading a checkpoint in place (engine/io/mapped_file.h,
// engine/io/safetensors.h "Reading in place", FloatBuffer views): an aligned
// F32 tensor of a mapped file reads the file's mapped bytes — its address is
// the one the header gives, inside a mapping of that very file in
// /proc/self/maps —, loading and running a model copies none of them, and the
// numbers are the copying path's bit for bit: every committed model gives the
// same logits read in place as copied (FileReading::Copied, what
// TINYFORMER_MMAP=off uses). FileReading::Read (the WebAssembly build: no mmap)
// reads the data once into memory and its aligned F32 tensors in place there,
// with the same numbers. Unaligned F32 and F16 tensors are converted into
// memory of their own and still load.
#include "engine/io/safetensors.h"
#include "engine/memory/float_buffer.h"
#include "models/decoding.h"
#include "models/study/forward.h"
#include "models/transformer.h"
#include "tests/helpers.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace tinyformer;
using test_helpers::TempDirectory;

namespace {

const std::string kDecoderOnly = "data/reference/do_pre_gelu_learned_pad";

uint64_t header_length_of(const std::string& bytes) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    return length;
}

// True when [data, data + count) lies inside one mapping of `path` listed in
// /proc/self/maps (the kernel's own account, not the engine's).
bool inside_a_mapping_of(const std::string& path, const void* data, size_t count) {
    const std::string wanted = std::filesystem::canonical(path).string();
    const auto address = reinterpret_cast<uintptr_t>(data);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range, permissions, offset, device, inode, name;
        fields >> range >> permissions >> offset >> device >> inode;
        std::getline(fields >> std::ws, name);
        if (name != wanted) continue;
        const size_t dash = range.find('-');
        const uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
        const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (address >= begin && address + count <= end && permissions.find('w') == std::string::npos) return true;
    }
    return false;
}

// A copy of `source` with `spaces` more spaces after its header's JSON
// object (allowed padding): every tensor's offset in the file moves by that much.
std::string with_padded_header(const TempDirectory& dir, const std::string& name, const std::string& source,
                               size_t spaces) {
    const std::string bytes = test_helpers::read_file(source);
    const uint64_t length = header_length_of(bytes);
    const std::string header = bytes.substr(8, length) + std::string(spaces, ' ');
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << out << header << bytes.substr(8 + length);
    return path;
}

Tensor logits(const std::string& model, FileReading reading, const SafetensorsFile& inputs) {
    return run_forward(Model::load(model, reading), inputs, false).at("logits");
}

// Inputs for a committed toy model (data/models/), which has none beside it:
// counting ids below its vocabulary.
std::string toy_inputs(const TempDirectory& dir, const std::string& model) {
    const ModelConfig config = Model::load(model, FileReading::Copied).config;
    auto ids = [](const char* name, int64_t length, int64_t vocabulary) {
        IntTensor tensor{{1, length}, {}};
        for (int64_t i = 0; i < length; ++i) tensor.values.push_back(1 + i % (vocabulary - 1));
        return i64_tensor(name, tensor);
    };
    const std::string path = dir.file(std::filesystem::path(model).stem().string() + ".inputs.safetensors");
    if (config.arch == Architecture::EncoderDecoder)
        write_safetensors(path, {ids("src_ids", 6, config.src_vocab_size), ids("tgt_ids", 5, config.tgt_vocab_size)});
    else if (config.attention == SelfAttentionKind::PrefixLm)
        write_safetensors(path, {ids("ids", 6, config.vocab_size), i64_tensor("prefix_len", IntTensor{{1}, {3}})});
    else
        write_safetensors(path, {ids("ids", 6, config.vocab_size)});
    return path;
}

}  // namespace

TEST_CASE("An aligned F32 tensor of a mapped file is read in place: its address is the header's, in the file's mapping") {
    const std::string path = kDecoderOnly + ".model.safetensors";
    const std::string bytes = test_helpers::read_file(path);
    const uint64_t data_start = 8 + header_length_of(bytes);  // from the raw bytes, not from the reader
    const SafetensorsFile file = SafetensorsFile::read(path, FileReading::Mapped);
    const SafetensorsFile copied = SafetensorsFile::read(path, FileReading::Copied);
    REQUIRE(file.mapped_bytes().size() == bytes.size());
    CHECK(copied.mapped_bytes().empty());
    int in_place = 0;
    for (const auto& [name, stored] : file.tensors()) {
        CAPTURE(name);
        if (stored.dtype != "F32" || stored.end == stored.begin) continue;
        REQUIRE((data_start + stored.begin) % 4 == 0);  // the project's writers pad headers to 8 bytes
        CHECK(file.reads_in_place(name));
        const Tensor tensor = file.read_float(name);
        const size_t byte_count = stored.end - stored.begin;
        CHECK(tensor.is_in_place());
        CHECK(reinterpret_cast<const uint8_t*>(tensor.data()) == file.mapped_bytes().data() + data_start + stored.begin);
        CHECK(inside_a_mapping_of(path, tensor.data(), byte_count));
        CHECK(std::memcmp(tensor.data(), bytes.data() + data_start + stored.begin, byte_count) == 0);
        const Tensor copy = copied.read_float(name);
        CHECK_FALSE(copy.is_in_place());
        CHECK_FALSE(inside_a_mapping_of(path, copy.data(), byte_count));
        CHECK(copy.values() == tensor.values());
        ++in_place;
    }
    CHECK(in_place > 10);
}

TEST_CASE("FileReading::Read (WebAssembly's) reads the data section once and its aligned F32 tensors in place there") {
    const std::string path = kDecoderOnly + ".model.safetensors";
    const std::string bytes = test_helpers::read_file(path);
    const uint64_t data_start = 8 + header_length_of(bytes);
    const SafetensorsFile file = SafetensorsFile::read(path, FileReading::Read);
    CHECK(file.mapped_bytes().empty());  // read, not mapped
    int in_place = 0;
    for (const auto& [name, stored] : file.tensors()) {
        CAPTURE(name);
        if (stored.dtype != "F32" || stored.end == stored.begin) continue;
        REQUIRE(stored.begin % 4 == 0);
        CHECK(file.reads_in_place(name));
        const Tensor tensor = file.read_float(name);
        CHECK(tensor.is_in_place());
        CHECK_FALSE(inside_a_mapping_of(path, tensor.data(), stored.end - stored.begin));
        CHECK(std::memcmp(tensor.data(), bytes.data() + data_start + stored.begin, stored.end - stored.begin) == 0);
        const Tensor again = file.read_float(name);
        CHECK(std::as_const(again).data() == std::as_const(tensor).data());
        ++in_place;
    }
    CHECK(in_place > 10);
    // One buffer: two tensors' views lie as far apart as the header's offsets say.
    const auto& [first_name, first] = *file.tensors().begin();
    const auto& [last_name, last] = *file.tensors().rbegin();
    REQUIRE((first.dtype == "F32" && last.dtype == "F32"));
    const Tensor first_tensor = file.read_float(first_name), last_tensor = file.read_float(last_name);
    CHECK(first_tensor.data() + (static_cast<int64_t>(last.begin) - static_cast<int64_t>(first.begin)) / 4 ==
          last_tensor.data());
}

TEST_CASE("A tensor read in place outlives its file object, and writing a copy of it copies the numbers first") {
    const std::string path = kDecoderOnly + ".model.safetensors";
    const std::string bytes_before = test_helpers::read_file(path);
    Tensor weight;
    {
        const SafetensorsFile file = SafetensorsFile::read(path, FileReading::Mapped);
        weight = file.read_float("embed.weight");
    }  // the SafetensorsFile is gone; the tensor keeps the mapping alive
    REQUIRE(weight.is_in_place());
    CHECK(inside_a_mapping_of(path, std::as_const(weight).data(), static_cast<size_t>(weight.numel()) * 4));
    const std::vector<float> original = weight.values();

    Tensor written = weight;  // shares the mapped numbers
    CHECK(written.is_in_place());
    CHECK(std::as_const(written).data() == std::as_const(weight).data());
    const uint64_t copied_before = float_buffer_views_copied();
    written.data()[0] = original[0] + 1.0f;  // the first non-const access copies
    CHECK(float_buffer_views_copied() == copied_before + 1);
    CHECK_FALSE(written.is_in_place());
    CHECK(written.values()[0] == original[0] + 1.0f);
    CHECK(weight.values() == original);  // the view still reads the file's numbers
    CHECK(weight.is_in_place());
    Tensor matrix_written = weight;
    matrix_written.matrix()(0, 1) = 42.0f;  // a MatrixView may be written through: copied first too
    CHECK_FALSE(matrix_written.is_in_place());
    CHECK(weight.values() == original);
    CHECK(test_helpers::read_file(path) == bytes_before);
}

TEST_CASE("Loading a model and running it copies no weight read in place, and the weights lie in the file's mapping") {
    const std::string path = kDecoderOnly + ".model.safetensors";
    const SafetensorsFile inputs = SafetensorsFile::read(kDecoderOnly + ".inputs.safetensors");
    const uint64_t before = float_buffer_views_copied();
    const Model model = Model::load(path, FileReading::Mapped);
    const Tensor& embedding = model.single_stack->head_parts().weight;  // tied: the token embedding
    CHECK(embedding.is_in_place());
    CHECK(inside_a_mapping_of(path, embedding.data(), static_cast<size_t>(embedding.numel()) * 4));
    const Tensor mapped = run_forward(model, inputs, false).at("logits");
    CHECK(float_buffer_views_copied() == before);
    // Decoding too: the KV cache's steps, greedy and sampled, and beam search read the weights, never write them.
    GenerationOptions options;
    options.max_new_tokens = 6;
    const Generation greedy = greedy_decode(model, {{1, 2, 3}}, options);
    Sampling sampling;
    sampling.seed = 7;
    const Generation sampled = sample_decode(model, {{1, 2, 3}}, sampling, options);
    const Generation beams = beam_search(model, {1, 2, 3}, 3, 1.0, options);
    CHECK(float_buffer_views_copied() == before);

    const Model copied = Model::load(path, FileReading::Copied);
    CHECK_FALSE(copied.single_stack->head_parts().weight.is_in_place());
    CHECK(run_forward(copied, inputs, false).at("logits").values() == mapped.values());
    CHECK(greedy_decode(copied, {{1, 2, 3}}, options).tokens == greedy.tokens);
    CHECK(sample_decode(copied, {{1, 2, 3}}, sampling, options).tokens == sampled.tokens);
    CHECK(beam_search(copied, {1, 2, 3}, 3, 1.0, options).tokens == beams.tokens);

    const uint64_t before_read = float_buffer_views_copied();
    const Model read = Model::load(path, FileReading::Read);
    CHECK(read.single_stack->head_parts().weight.is_in_place());
    CHECK(run_forward(read, inputs, false).at("logits").values() == mapped.values());
    CHECK(greedy_decode(read, {{1, 2, 3}}, options).tokens == greedy.tokens);
    CHECK(float_buffer_views_copied() == before_read);
}

TEST_CASE("Every committed model gives the same logits read in place (mapped or Read) as copied, bit for bit") {
    TempDirectory dir;
    std::vector<std::pair<std::string, std::string>> cases;  // model, inputs
    for (const auto& entry : std::filesystem::directory_iterator("data/reference")) {
        const std::string name = entry.path().string();
        if (!name.ends_with(".model.safetensors")) continue;
        const std::string base = name.substr(0, name.size() - std::string(".model.safetensors").size());
        cases.push_back({name, base + ".inputs.safetensors"});
    }
    cases.push_back({"data/export/seq2seq.safetensors", "data/export/seq2seq.inputs.safetensors"});
    for (const auto& entry : std::filesystem::directory_iterator("data/models"))
        if (entry.path().extension() == ".safetensors")
            cases.push_back({entry.path().string(), toy_inputs(dir, entry.path().string())});
    REQUIRE(cases.size() >= 30);
    std::sort(cases.begin(), cases.end());
    for (const auto& [model, inputs_path] : cases) {
        CAPTURE(model);
        const SafetensorsFile inputs = SafetensorsFile::read(inputs_path);
        const uint64_t before = float_buffer_views_copied();
        const Tensor mapped = logits(model, FileReading::Mapped, inputs);
        CHECK(float_buffer_views_copied() == before);
        const Tensor read = logits(model, FileReading::Read, inputs);
        CHECK(float_buffer_views_copied() == before);
        const Tensor copied = logits(model, FileReading::Copied, inputs);
        CHECK(mapped.shape() == copied.shape());
        CHECK(mapped.values() == copied.values());
        CHECK(read.values() == copied.values());
    }
}

TEST_CASE("Unaligned F32 and F16 tensors are converted into memory of their own and load with the same numbers") {
    TempDirectory dir;
    // Two more spaces of header padding: every tensor starts 2 bytes off a multiple of 4.
    const std::string original = kDecoderOnly + ".model.safetensors";
    const std::string shifted = with_padded_header(dir, "shifted.safetensors", original, 2);
    const SafetensorsFile file = SafetensorsFile::read(shifted, FileReading::Mapped);
    for (const auto& [name, stored] : file.tensors()) {
        CAPTURE(name);
        CHECK_FALSE(file.reads_in_place(name));
        const Tensor tensor = file.read_float(name);
        CHECK_FALSE(tensor.is_in_place());
        CHECK(tensor.values() == SafetensorsFile::read(original).read_float(name).values());
    }
    const SafetensorsFile inputs = SafetensorsFile::read(kDecoderOnly + ".inputs.safetensors");
    CHECK(logits(shifted, FileReading::Mapped, inputs).values() ==
          logits(original, FileReading::Mapped, inputs).values());
    // Four more: aligned again, read in place.
    CHECK(SafetensorsFile::read(with_padded_header(dir, "realigned.safetensors", original, 4), FileReading::Mapped)
              .reads_in_place("embed.weight"));

    // F16: widened into memory of its own, whatever its alignment.
    const std::string header = R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}}  )";  // 8 + 56 bytes
    REQUIRE((8 + header.size()) % 4 == 0);
    std::string bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    bytes += header;
    for (uint16_t half : {uint16_t{0x3C00}, uint16_t{0xC000}, uint16_t{0x3400}}) {  // 1, -2, 0.25
        bytes.push_back(static_cast<char>(half & 0xFF));
        bytes.push_back(static_cast<char>(half >> 8));
    }
    const std::string half_path = dir.file("half.safetensors");
    std::ofstream(half_path, std::ios::binary | std::ios::trunc) << bytes;
    const SafetensorsFile half = SafetensorsFile::read(half_path, FileReading::Mapped);
    CHECK_FALSE(half.reads_in_place("h"));
    const Tensor widened = half.read_float("h");
    CHECK_FALSE(widened.is_in_place());
    CHECK(widened.values() == std::vector<float>{1.0f, -2.0f, 0.25f});
}

TEST_CASE("A checkpoint truncated before loading is refused by name, mapped, before any tensor is read") {
    TempDirectory dir;
    const std::string bytes = test_helpers::read_file(kDecoderOnly + ".model.safetensors");
    const std::string path = dir.file("truncated.safetensors");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 4096);
    CHECK_ERROR_CONTAINS(Model::load(path, FileReading::Mapped), path.c_str(), "is the file truncated?");
}

TEST_CASE("TINYFORMER_MMAP=off (any case) reads checkpoints by copy; unset or another value maps them") {
    const char* before = std::getenv("TINYFORMER_MMAP");
    const std::string saved = before ? before : "";
    ::setenv("TINYFORMER_MMAP", "off", 1);
    CHECK(default_file_reading() == FileReading::Copied);
    CHECK_FALSE(Model::load(kDecoderOnly + ".model.safetensors").single_stack->head_parts().weight.is_in_place());
    ::setenv("TINYFORMER_MMAP", "OFF", 1);
    CHECK(default_file_reading() == FileReading::Copied);
    ::setenv("TINYFORMER_MMAP", "on", 1);
    CHECK(default_file_reading() == FileReading::Mapped);
    ::unsetenv("TINYFORMER_MMAP");
    CHECK(default_file_reading() == FileReading::Mapped);
    CHECK(Model::load(kDecoderOnly + ".model.safetensors").single_stack->head_parts().weight.is_in_place());
    if (before) ::setenv("TINYFORMER_MMAP", saved.c_str(), 1);
}
