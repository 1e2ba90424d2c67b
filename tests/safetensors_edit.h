// Editable safetensors files for the tests: read a file's tensors and
// metadata into Contents, change them, and write a copy (usually into a
// TempDirectory), so that a test can break one rule of a valid file.
// Kept apart from tests/helpers.h, which every suite includes, because it
// needs the safetensors reader/writer and nlohmann/json.
#pragma once

#include "engine/io/safetensors.h"
#include "engine/quant/q8_0.h"
#include "tests/helpers.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace test_helpers {

// A safetensors file's contents, editable and writable again: floats as F32,
// ids as I64, masks as BOOL (see read_contents).
struct Contents {
    std::vector<tinyformer::TensorToWrite> tensors;
    std::map<std::string, std::string> metadata;

    tinyformer::TensorToWrite& tensor(const std::string& name) {
        for (tinyformer::TensorToWrite& t : tensors)
            if (t.name == name) return t;
        FAIL("test setup: no tensor ", name);
        throw std::logic_error("not reached: FAIL throws");
    }
    void remove(const std::string& name) {
        std::erase_if(tensors, [&](const tinyformer::TensorToWrite& t) { return t.name == name; });
    }
    void replace(tinyformer::TensorToWrite replacement) {
        remove(replacement.name);
        tensors.push_back(std::move(replacement));
    }
    nlohmann::json config() const { return nlohmann::json::parse(metadata.at("config")); }
    void set_config(const nlohmann::json& config) { metadata["config"] = config.dump(); }
};

// Float tensors come back as F32 (F16 and BF16 widened), ids (I64, I32) as
// I64, masks (BOOL, U8) as BOOL.
inline Contents read_contents(const std::string& path) {
    const tinyformer::SafetensorsFile file = tinyformer::SafetensorsFile::read(path);
    Contents contents{{}, file.metadata()};
    for (const auto& [name, stored] : file.tensors()) {
        if (stored.dtype == "I64" || stored.dtype == "I32")
            contents.tensors.push_back(tinyformer::i64_tensor(name, file.read_int(name)));
        else if (stored.dtype == "I8") {  // a Q8_0 weight's values, as their bytes
            const auto* values = reinterpret_cast<const uint8_t*>(file.read_i8(name));
            contents.tensors.push_back({name, "I8", stored.shape, std::vector<uint8_t>(values, values + (stored.end - stored.begin))});
        } else if (stored.dtype == "BOOL" || stored.dtype == "U8")
            contents.tensors.push_back(tinyformer::bool_tensor(name, file.read_bool(name)));
        else
            contents.tensors.push_back(tinyformer::f32_tensor(name, file.read_float(name)));
    }
    return contents;
}

// Writes `contents` to dir/name; gives the path.
inline std::string write_contents(const TempDirectory& dir, const std::string& name, const Contents& contents) {
    const std::string path = dir.file(name);
    tinyformer::write_safetensors(path, contents.tensors, contents.metadata);
    return path;
}

// A copy of `source` in dir/name, changed by `edit` first; gives the path.
inline std::string edited(const TempDirectory& dir, const std::string& name, const std::string& source,
                          const std::function<void(Contents&)>& edit) {
    Contents contents = read_contents(source);
    edit(contents);
    return write_contents(dir, name, contents);
}

// Element `index` of an F32 tensor.
inline void set_float(tinyformer::TensorToWrite& t, size_t index, float value) {
    std::memcpy(t.bytes.data() + 4 * index, &value, 4);
}

// Element `index` of an I64 tensor.
inline void set_id(tinyformer::TensorToWrite& t, size_t index, int64_t value) {
    std::memcpy(t.bytes.data() + 8 * index, &value, 8);
}

// An I64 tensor of token ids (or prefix lengths).
inline tinyformer::TensorToWrite ids(const std::string& name, tinyformer::Shape shape, std::vector<int64_t> values) {
    return tinyformer::i64_tensor(name, tinyformer::IntTensor{std::move(shape), std::move(values)});
}

// A BOOL tensor: a padding mask, 1 = padding.
inline tinyformer::TensorToWrite mask(const std::string& name, tinyformer::Shape shape, std::vector<uint8_t> values) {
    return tinyformer::bool_tensor(name, tinyformer::BoolTensor{std::move(shape), std::move(values)});
}

// Replaces the F32 matrix `name` [N, K] by its Q8_0 form in groups of
// `group` (docs/FORMAT.md): `name` I8 [N, K] and `name`.scale F32 [N, K / group].
inline void quantize_tensor(Contents& contents, const std::string& name, int64_t group) {
    const tinyformer::TensorToWrite& stored = contents.tensor(name);
    REQUIRE(stored.dtype == "F32");
    REQUIRE(stored.shape.size() == 2);
    tinyformer::Tensor weight(stored.shape);
    std::memcpy(weight.data(), stored.bytes.data(), stored.bytes.size());
    const tinyformer::Q8Matrix q8 = tinyformer::quantize_q8_0(weight.matrix(), group);
    const auto* values = reinterpret_cast<const uint8_t*>(q8.view().values);
    const std::vector<float> scales(q8.view().scales, q8.view().scales + q8.rows() * q8.view().groups_per_row());
    const std::vector<int64_t> shape = stored.shape;
    contents.replace({name, "I8", shape, std::vector<uint8_t>(values, values + q8.rows() * q8.cols())});
    contents.replace(tinyformer::f32_tensor(name + ".scale", tinyformer::Tensor({q8.rows(), q8.view().groups_per_row()}, scales)));
}

}  // namespace test_helpers
