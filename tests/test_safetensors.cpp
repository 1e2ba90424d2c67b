// Tests for engine/io/safetensors.* — the file format under every checkpoint and
// `forward` file (docs/FORMAT.md section 1, first paragraph):
//   [8 bytes: N, little-endian] [N bytes: JSON header] [data section]
// Round trips, F16 / BF16 widening worked out bit by bit, and one SUBCASE per
// reading rule: each bad file is written byte by byte here, and the Error must
// name the file, the tensor (where there is one) and the numbers involved.
#include <doctest/doctest.h>

#include "engine/io/json.h"
#include "engine/io/safetensors.h"
#include "tests/helpers.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using tinyformer::BoolTensor;
using tinyformer::Error;
using tinyformer::IntTensor;
using tinyformer::SafetensorsFile;
using tinyformer::Shape;
using tinyformer::Tensor;
using tinyformer::TensorToWrite;
using test_helpers::TempDirectory;

namespace {

// Writes [length as u64 LE][header][data] to dir/name; `length` is the header
// length field as stored, so that it can lie about the header.
std::string write_raw(const TempDirectory& dir, const std::string& name, uint64_t length, const std::string& header,
                      const std::string& data) {
    const std::string path = dir.file(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xFF));
    out << header << data;
    REQUIRE(out.good());
    return path;
}

// The honest version: the length field is the header's real length.
std::string write_raw(const TempDirectory& dir, const std::string& name, const std::string& header,
                      const std::string& data) {
    return write_raw(dir, name, header.size(), header, data);
}

// Exactly these bytes, no header length added (for files too short to have one).
std::string write_bytes(const TempDirectory& dir, const std::string& name, const std::string& bytes) {
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// 16-bit values as their little-endian bytes.
std::string u16_bytes(const std::vector<uint16_t>& values) {
    std::string bytes;
    for (uint16_t v : values) {
        bytes.push_back(static_cast<char>(v & 0xFF));
        bytes.push_back(static_cast<char>(v >> 8));
    }
    return bytes;
}

uint64_t header_length_of(const std::string& file_bytes) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(file_bytes[static_cast<size_t>(i)]);
    return length;
}

const float inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("F32, I64 and BOOL tensors and the metadata come back from a written file unchanged") {
    TempDirectory dir;
    const std::string path = dir.file("round_trip.safetensors");
    const Tensor weights({2, 3}, {1.5f, -2.25f, 0.0f, 1e-30f, -inf, 3.0e38f});
    const IntTensor ids{{2, 2}, {0, -1, std::numeric_limits<int64_t>::max(), 42}};
    const BoolTensor padding{{2, 3}, {0, 1, 1, 0, 0, 1}};
    const std::map<std::string, std::string> metadata = {{"config", "{\"a\": 1}"}, {"note", "h\xC3\xA9llo \"quoted\""}};
    tinyformer::write_safetensors(path,
                                  {tinyformer::f32_tensor("weights", weights), tinyformer::i64_tensor("ids", ids),
                                   tinyformer::bool_tensor("padding", padding)},
                                  metadata);

    const SafetensorsFile file = SafetensorsFile::read(path);
    CHECK(file.path() == path);
    CHECK(file.metadata() == metadata);
    CHECK(file.tensors().size() == 3);
    CHECK(file.info("weights").dtype == "F32");
    CHECK(file.info("ids").dtype == "I64");
    CHECK(file.info("padding").dtype == "BOOL");

    const Tensor weights_back = file.read_float("weights");
    CHECK(weights_back.shape() == Shape{2, 3});
    CHECK(weights_back.values() == weights.values());  // bit for bit, -inf included
    const IntTensor ids_back = file.read_int("ids");
    CHECK(ids_back.shape == Shape{2, 2});
    CHECK(ids_back.values == ids.values);
    const BoolTensor padding_back = file.read_bool("padding");
    CHECK(padding_back.shape == Shape{2, 3});
    CHECK(padding_back.values == padding.values);

    SUBCASE("a name the file does not hold is refused, naming the file and the name") {
        CHECK_ERROR_CONTAINS(file.read_float("bias"), path.c_str(), "no tensor named 'bias'");
    }
}

TEST_CASE("Written data starts 8-byte aligned whatever the header's length") {
    // The header is padded with spaces so that 8 + N is a multiple of 8; try
    // every remainder by growing a metadata value one character at a time.
    TempDirectory dir;
    for (size_t extra = 0; extra < 8; ++extra) {
        CAPTURE(extra);
        const std::string path = dir.file("aligned.safetensors");
        tinyformer::write_safetensors(path, {tinyformer::f32_tensor("x", Tensor({1}, {7.0f}))},
                                      {{"pad", std::string(extra, 'p')}});
        const std::string bytes = read_all(path);
        const uint64_t length = header_length_of(bytes);
        CHECK((8 + length) % 8 == 0);
        CHECK(bytes.size() == 8 + length + 4);                  // one F32 after the header
        CHECK(SafetensorsFile::read(path).read_float("x").values() == std::vector<float>{7.0f});
    }
}

TEST_CASE("F16 is widened to float exactly, bit pattern by bit pattern") {
    // half: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
    //   normal     (-1)^s * 2^(e-15) * (1 + m/1024)
    //   subnormal  (e = 0)  (-1)^s * m * 2^-24
    //   e = 31     inf (m = 0) or NaN
    struct Case {
        uint16_t bits;
        float expected;
        const char* working;
    };
    const Case cases[] = {
        {0x3C00, 1.0f, "e=15, m=0: 2^0 * 1"},
        {0xC000, -2.0f, "s=1, e=16, m=0: -(2^1 * 1)"},
        {0x3555, 0.333251953125f, "e=13, m=0x155=341: 2^-2 * (1 + 341/1024) = 1365/4096"},
        {0x7BFF, 65504.0f, "e=30, m=1023: 2^15 * (2047/1024), the largest half"},
        {0x0400, 6.103515625e-05f, "e=1, m=0: 2^-14, the smallest normal"},
        {0x03FF, 6.097555160522461e-05f, "e=0, m=1023: 1023 * 2^-24, the largest subnormal"},
        {0x0001, 5.960464477539063e-08f, "e=0, m=1: 2^-24, the smallest subnormal"},
        {0x0000, 0.0f, "zero"},
        {0x7C00, inf, "e=31, m=0: +inf"},
        {0xFC00, -inf, "s=1, e=31, m=0: -inf"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.working);
        CHECK(tinyformer::half_to_float(c.bits) == c.expected);
    }
    SUBCASE("-0 keeps its sign and 0x7E00 is NaN") {
        CHECK(std::signbit(tinyformer::half_to_float(0x8000)));
        CHECK(tinyformer::half_to_float(0x8000) == 0.0f);
        CHECK(std::isnan(tinyformer::half_to_float(0x7E00)));  // e=31, m != 0
    }
    SUBCASE("read_float widens a stored F16 tensor with the same rule") {
        TempDirectory dir;
        std::vector<uint16_t> bits;
        std::vector<float> expected;
        for (const Case& c : cases) {
            bits.push_back(c.bits);
            expected.push_back(c.expected);
        }
        const std::string header = "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,5],\"data_offsets\":[0,20]}}";
        const std::string path = write_raw(dir, "half.safetensors", header, u16_bytes(bits));
        const Tensor widened = SafetensorsFile::read(path).read_float("h");
        CHECK(widened.shape() == Shape{2, 5});
        CHECK(widened.values() == expected);
    }
}

TEST_CASE("BF16 is widened to float exactly: its 16 bits are the float's top 16") {
    // bfloat16 = float32 without the low 16 mantissa bits: float bits = b << 16.
    struct Case {
        uint16_t bits;
        float expected;
        const char* working;
    };
    const Case cases[] = {
        {0x3F80, 1.0f, "0x3F800000: e=127, m=0: 1"},
        {0xC040, -3.0f, "0xC0400000: s=1, e=128, m=0x400000 (0.5): -(2 * 1.5)"},
        {0x3E80, 0.25f, "0x3E800000: e=125: 2^-2"},
        {0x4049, 3.140625f, "0x40490000: e=128, m=0x490000/2^23 = 0.5703125: 2 * 1.5703125"},
        {0x0001, 9.183549615799121e-41f, "0x00010000: float subnormal 2^16 * 2^-149 = 2^-133"},
        {0x7F80, inf, "0x7F800000: +inf"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.working);
        CHECK(tinyformer::bfloat16_to_float(c.bits) == c.expected);
    }
    SUBCASE("read_float widens a stored BF16 tensor with the same rule") {
        TempDirectory dir;
        const std::string header = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]}}";
        const std::string path = write_raw(dir, "bf16.safetensors", header, u16_bytes({0x3F80, 0xC040, 0x3E80}));
        CHECK(SafetensorsFile::read(path).read_float("b").values() == std::vector<float>{1.0f, -3.0f, 0.25f});
    }
}

TEST_CASE("A file that breaks a layout rule is refused, naming the file, the tensor and the numbers") {
    TempDirectory dir;
    const std::string eight_bytes(8, '\0');

    SUBCASE("an empty file") {
        const std::string path = write_bytes(dir, "empty.safetensors", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "file is 0 bytes", "8-byte header length");
    }
    SUBCASE("a file shorter than the 8-byte header length") {
        const std::string path = write_bytes(dir, "short.safetensors", "abcde");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "file is 5 bytes");
    }
    SUBCASE("a header length larger than the file") {
        // 8 + 2 bytes in the file, the length field claims 100
        const std::string path = write_raw(dir, "long_header.safetensors", 100, "{}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "header length 100 bytes",
                             "past the end of the file (10 bytes)");
    }
    SUBCASE("a header length near 2^64 (no wrap-around in 8 + N)") {
        const uint64_t huge = std::numeric_limits<uint64_t>::max() - 3;  // 8 + N would wrap to 4
        const std::string path = write_raw(dir, "huge_header.safetensors", huge, "{}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "header length 18446744073709551612 bytes",
                             "above the limit");
    }
    SUBCASE("a header length above kMaxHeaderBytes, even if the file were that long") {
        const std::string path =
            write_raw(dir, "big_header.safetensors", tinyformer::kMaxHeaderBytes + 1, "{}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "header length 100000001 bytes",
                             "limit of 100000000 bytes");
    }
    SUBCASE("a header that is not JSON") {
        const std::string path = write_raw(dir, "not_json.safetensors", "{\"w\": [", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "not valid JSON");
    }
    SUBCASE("a header that is JSON but not an object") {
        const std::string path = write_raw(dir, "array.safetensors", "[1, 2]", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "the header starts with byte 0x5B ('['), not '{'");
    }
    SUBCASE("a header nested deeper than the format needs (dump() in a message would recurse per level)") {
        // One level too deep is refused by depth; a million levels as well, without a stack overflow.
        const std::string four_deep = "{\"w\": {\"dtype\": \"F32\", \"shape\": [[2]], \"data_offsets\": [0, 8]}}";
        const std::string path = write_raw(dir, "deep.safetensors", four_deep, "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "the header nests arrays/objects 4 deep",
                             "at most 3");
        const std::string million = "{\"w\": {\"dtype\": \"F32\", \"shape\": " + std::string(1000000, '[') +
                                    std::string(1000000, ']') + ", \"data_offsets\": [0, 0]}}";
        const std::string deep_path = write_raw(dir, "deeper.safetensors", million, "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(deep_path), deep_path.c_str(), "nests arrays/objects 1000002 deep");
    }
    SUBCASE("a long bad shape is cut in the message") {
        std::string shape = "[";
        for (int i = 0; i < 1000; ++i) shape += "1, ";
        shape += "-1]";
        const std::string path = write_raw(dir, "long_shape.safetensors",
                                           "{\"w\": {\"dtype\": \"F32\", \"shape\": " + shape +
                                               ", \"data_offsets\": [0, 4]}}",
                                           "abcd");
        const std::string message = test_helpers::error_message([&] { SafetensorsFile::read(path); });
        CHECK(message.find("shape must hold non-negative integers, got [1,1,1,") != std::string::npos);
        CHECK(message.find("...") != std::string::npos);
        CHECK(message.size() < 300);
    }
    SUBCASE("__metadata__ that is not an object") {
        const std::string path = write_raw(dir, "meta_array.safetensors", "{\"__metadata__\": [\"config\"]}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "__metadata__ must be an object of strings");
    }
    SUBCASE("a __metadata__ value that is not a string") {
        const std::string path =
            write_raw(dir, "meta_value.safetensors", "{\"__metadata__\": {\"config\": {\"d_model\": 16}}}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "__metadata__ value 'config'",
                             "must be a string, got object");
    }
    SUBCASE("a tensor entry that is not an object with dtype, shape and data_offsets") {
        const std::string path =
            write_raw(dir, "no_offsets.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [2]}}", "");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "dtype, shape and data_offsets");
    }
    SUBCASE("an unknown dtype") {
        const std::string path = write_raw(
            dir, "dtype.safetensors", "{\"w\": {\"dtype\": \"F31\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "unknown dtype 'F31'");
    }
    SUBCASE("a shape with a negative entry") {
        const std::string path = write_raw(
            dir, "negative.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 8]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "non-negative integers",
                             "[2,-1]");
    }
    SUBCASE("a shape with a non-integer entry") {
        const std::string path = write_raw(
            dir, "fraction.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 8]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "non-negative integers", "[2.5]");
    }
    SUBCASE("a shape whose element count overflows 64 bits") {
        // 2^32 * 2^32 = 2^64 elements: one more than uint64 holds
        const std::string path = write_raw(dir, "overflow.safetensors",
                                           "{\"w\": {\"dtype\": \"U8\", \"shape\": [4294967296, 4294967296], "
                                           "\"data_offsets\": [0, 8]}}",
                                           eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "[4294967296,4294967296]",
                             "too many elements");
    }
    SUBCASE("data_offsets reversed") {
        const std::string path = write_raw(
            dir, "reversed.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "data_offsets [8, 0]",
                             "reversed");
    }
    SUBCASE("data_offsets that are not two non-negative integers") {
        const std::string path = write_raw(
            dir, "offsets.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "data_offsets must be two");
    }
    SUBCASE("data_offsets outside the data section") {
        const std::string path = write_raw(
            dir, "outside.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "data_offsets [0, 16]",
                             "past the data section (8 bytes)");
    }
    SUBCASE("two tensors whose data_offsets overlap") {
        // a: bytes 0..8, b: bytes 4..12 — bytes 4..8 belong to both
        const std::string path = write_raw(dir, "overlap.safetensors",
                                           "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, "
                                           "\"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                                           std::string(12, '\0'));
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'b' overlaps tensor 'a'",
                             "data_offsets [4, 12]");
    }
    SUBCASE("a hole between two tensors") {
        // a: bytes 0..4, b: bytes 8..12 — bytes 4..8 belong to no tensor
        const std::string path = write_raw(dir, "hole.safetensors",
                                           "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
                                           "\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
                                           std::string(12, '\0'));
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "bytes 4..8", "belong to no tensor",
                             "before 'b'");
    }
    SUBCASE("a hole after the last tensor") {
        const std::string path = write_raw(
            dir, "tail.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "data section has 8 bytes",
                             "tensors cover 4");
    }
    SUBCASE("a byte count that does not match dtype x shape") {
        // F32 [3] needs 3 * 4 = 12 bytes; the offsets give 8
        const std::string path = write_raw(
            dir, "count.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}",
            eight_bytes);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'w'", "F32 [3] needs 12 bytes",
                             "span 8");
    }
    SUBCASE("a file truncated inside the data") {
        const std::string path = dir.file("truncated.safetensors");
        tinyformer::write_safetensors(path, {tinyformer::f32_tensor("a", Tensor({2}, {1.0f, 2.0f})),
                                             tinyformer::f32_tensor("b", Tensor({4}, {1.0f, 2.0f, 3.0f, 4.0f}))});
        // 'b' is bytes 8..24 of the data; cut the file 6 bytes short
        std::filesystem::resize_file(path, std::filesystem::file_size(path) - 6);
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "tensor 'b'", "data_offsets [8, 24]",
                             "past the data section (18 bytes)");
    }
}

TEST_CASE("from_bytes reads the bytes of a file exactly as read reads the file, and refuses what read refuses") {
    TempDirectory dir;
    const std::string path = dir.file("pair.safetensors");
    Tensor weights({2, 3});
    for (int64_t i = 0; i < 6; ++i) weights.data()[i] = static_cast<float>(i) - 2.5f;
    tinyformer::write_safetensors(path, {tinyformer::f32_tensor("w", weights),
                                         tinyformer::i64_tensor("ids", IntTensor{{3}, {7, -1, 4}})},
                                  {{"note", "hello"}});
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const SafetensorsFile file = SafetensorsFile::from_bytes("in-memory", bytes);
    CHECK(file.path() == "in-memory");
    CHECK(file.metadata().at("note") == "hello");
    CHECK(test_helpers::max_abs_difference(file.read_float("w"), weights) == 0);
    CHECK(file.read_int("ids").values == std::vector<int64_t>{7, -1, 4});
    // Cut inside the data: the same refusal as a truncated file.
    const std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 5);
    CHECK_ERROR_CONTAINS(SafetensorsFile::from_bytes("cut", cut), "cut: tensor", "run past the data section");
    CHECK_ERROR_CONTAINS(SafetensorsFile::from_bytes("short", std::vector<uint8_t>(5, 0)), "short: file is 5 bytes");
}

TEST_CASE("A reader asked for the wrong kind of tensor refuses, naming the tensor and both dtypes") {
    TempDirectory dir;
    const std::string path = dir.file("kinds.safetensors");
    tinyformer::write_safetensors(path, {tinyformer::i64_tensor("ids", IntTensor{{1, 2}, {3, 4}}),
                                         tinyformer::f32_tensor("x", Tensor({2}, {1.0f, 2.0f}))});
    const SafetensorsFile file = SafetensorsFile::read(path);

    SUBCASE("read_float on an I64 tensor") {
        CHECK_ERROR_CONTAINS(file.read_float("ids"), path.c_str(), "tensor 'ids'", "has dtype I64",
                             "expected F32 (or F16, BF16)");
    }
    SUBCASE("read_int on an F32 tensor") {
        CHECK_ERROR_CONTAINS(file.read_int("x"), path.c_str(), "tensor 'x'", "has dtype F32", "expected I64 or I32");
    }
    SUBCASE("read_bool on an I64 tensor") {
        CHECK_ERROR_CONTAINS(file.read_bool("ids"), path.c_str(), "tensor 'ids'", "has dtype I64",
                             "expected BOOL or U8");
    }
}

TEST_CASE("read_bool refuses a Boolean tensor holding a value other than 0 and 1") {
    TempDirectory dir;
    const std::string header = "{\"mask\": {\"dtype\": \"BOOL\", \"shape\": [1, 3], \"data_offsets\": [0, 3]}}";
    const std::string path = write_raw(dir, "bool2.safetensors", header, std::string("\x00\x02\x01", 3));
    CHECK_ERROR_CONTAINS(SafetensorsFile::read(path).read_bool("mask"), path.c_str(), "tensor 'mask'", "holds 2",
                         "0 or 1");
}

TEST_CASE("A directory and a missing file are refused by path") {
    TempDirectory dir;
    SUBCASE("a directory") {
        const std::string path = dir.path().string();
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "is a directory");
    }
    SUBCASE("a missing file") {
        const std::string path = dir.file("absent.safetensors");
        CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "no such file");
    }
}

TEST_CASE("write_safetensors is atomic: a failed write leaves no file and changes no existing file") {
    TempDirectory dir;
    const std::vector<TensorToWrite> tensors = {tinyformer::f32_tensor("x", Tensor({2}, {1.0f, 2.0f}))};

    SUBCASE("a path inside a directory that does not exist: Error, and nothing is created") {
        const std::string path = dir.file("missing_folder/model.safetensors");
        CHECK_ERROR_CONTAINS(tinyformer::write_safetensors(path, tensors), path.c_str(), "cannot write");
        CHECK_FALSE(std::filesystem::exists(dir.path() / "missing_folder"));
        CHECK(std::filesystem::is_empty(dir.path()));
    }

    const std::string path = dir.file("model.safetensors");
    tinyformer::write_safetensors(path, tensors, {{"version", "1"}});
    const std::string before = read_all(path);

    SUBCASE("the disk fills up mid-write: Error, the existing file keeps every byte, no temporary stays") {
        // A child process whose file size limit (RLIMIT_FSIZE) is 64 bytes
        // fails its write as a full disk would (EFBIG; SIGXFSZ ignored).
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{64, 64};
            ::setrlimit(RLIMIT_FSIZE, &limit);
            const std::string message = test_helpers::error_message([&] {
                tinyformer::write_safetensors(path, {tinyformer::f32_tensor("y", Tensor({64}, std::vector<float>(64, 9.0f)))});
            });
            ::_exit(message.find("cannot write " + path) != std::string::npos && message.find("File too large") != std::string::npos ? 0 : 3);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        CHECK(read_all(path) == before);
        size_t files = 0;
        for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
        CHECK(files == 1);
    }
    SUBCASE("a tensor whose bytes do not match its dtype x shape: refused before any byte is written") {
        TensorToWrite wrong = tinyformer::f32_tensor("y", Tensor({2}, {1.0f, 2.0f}));
        wrong.shape = {3};  // F32 [3] needs 12 bytes, has 8
        CHECK_ERROR_CONTAINS(tinyformer::write_safetensors(path, {wrong}), "tensor 'y'", "F32 [3]", "has 8 bytes");
        CHECK(read_all(path) == before);
    }
    SUBCASE("a name given twice: refused, existing file unchanged") {
        CHECK_ERROR_CONTAINS(tinyformer::write_safetensors(path, {tensors[0], tensors[0]}), "tensor name 'x'",
                             "appears twice");
        CHECK(read_all(path) == before);
    }
    SUBCASE("a successful overwrite replaces the file and leaves no temporary behind") {
        tinyformer::write_safetensors(path, {tinyformer::f32_tensor("y", Tensor({1}, {9.0f}))});
        CHECK(SafetensorsFile::read(path).read_float("y").values() == std::vector<float>{9.0f});
        CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) ==
              1);
    }
}

namespace {

const std::string kHint =
    "tinyformer reads safetensors files (docs/FORMAT.md); a PyTorch model is exported with tools/python/tinyformer_export.py";

// The first bytes of a zip archive whose first entry is `name` (a local file
// header: signature, version 20, no flags, stored, times, CRC and sizes 0,
// the name's length, no extra field), then the name and a few bytes.
std::string zip_start(const std::string& name) {
    std::string bytes = std::string("PK\x03\x04\x14\x00\x00\x00\x00\x00", 10) + std::string(16, '\0');
    bytes.push_back(static_cast<char>(name.size()));
    bytes.push_back('\0');
    bytes += std::string(2, '\0') + name + "\x80\x02}q\x00.";
    return bytes;
}

}  // namespace

TEST_CASE("A file that is not safetensors is named as what it is, with how to get safetensors") {
    TempDirectory dir;
    const auto message = [&](const std::string& name, const std::string& bytes) {
        const std::string path = write_bytes(dir, name, bytes);
        return std::make_pair(path, test_helpers::error_message([&] { SafetensorsFile::read(path); }));
    };
    SUBCASE("an empty file") {
        const auto [path, error] = message("model.pt", "");
        CHECK(error == path + ": file is 0 bytes (empty), not safetensors; a safetensors file starts with an 8-byte "
                              "header length; " + kHint);
    }
    SUBCASE("a torch.save file: a zip archive whose first entry is <name>/data.pkl") {
        const auto [path, error] = message("model.pt", zip_start("archive/data.pkl"));
        CHECK(error == path + ": is a PyTorch torch.save file (a zip archive), not safetensors; " + kHint);
    }
    SUBCASE("another zip archive") {
        const auto [path, error] = message("weights.npz", zip_start("w.npy"));
        CHECK(error == path + ": is a zip archive (as torch.save writes), not safetensors; " + kHint);
    }
    SUBCASE("a zip archive too short to show its first entry's name") {
        const auto [path, error] = message("cut.pt", "PK\x03\x04\x14");
        CHECK(error == path + ": is a zip archive (as torch.save writes), not safetensors; " + kHint);
    }
    SUBCASE("a pickle, protocol 4 (FRAME follows PROTO)") {
        const auto [path, error] = message("model.pkl", std::string("\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00}\x94.", 14));
        CHECK(error == path + ": is a Python pickle (e.g. an old torch.save file), not safetensors; " + kHint);
    }
    SUBCASE("a legacy torch.save file: a protocol 2 pickle starting with torch's magic number") {
        const auto [path, error] = message("old.pt", std::string("\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19.", 16));
        CHECK(error == path + ": is a Python pickle (e.g. an old torch.save file), not safetensors; " + kHint);
    }
    SUBCASE("JSON text: an object, an array after whitespace, and one shorter than 8 bytes") {
        for (const std::string text : {"{\n  \"d_model\": 16,\n  \"nhead\": 4\n}\n", "\n\t [[1, 2], [3, 4]]", "[1]"}) {
            CAPTURE(text);
            const auto [path, error] = message("config.json", text);
            CHECK(error == path + ": is JSON text, not safetensors; " + kHint);
        }
    }
    SUBCASE("a short file that looks like nothing known keeps the length message, with the hint") {
        const auto [path, error] = message("short.bin", "abcde");
        CHECK(error == path + ": file is 5 bytes; a safetensors file starts with an 8-byte header length; " + kHint);
    }
    SUBCASE("bytes in memory (from_bytes) are named the same way") {
        const std::string zip = zip_start("archive/data.pkl");
        CHECK(test_helpers::error_message([&] {
                  SafetensorsFile::from_bytes("in-memory.pt", std::span(reinterpret_cast<const uint8_t*>(zip.data()), zip.size()));
              }) == "in-memory.pt: is a PyTorch torch.save file (a zip archive), not safetensors; " + kHint);
    }
}

TEST_CASE("A safetensors file whose first bytes look like a pickle, a zip or JSON is still read as safetensors") {
    // The first byte is the header length's lowest byte: 128 is a pickle's
    // first byte (0x80), 80 is 'P', 123 '{', 91 '[', 288 = 0x0120 ' '. 1152 =
    // 0x0480 starts like a protocol 4 pickle, and 66688 = 0x010480 has a third
    // byte too. A header that starts with whitespace is refused by the header
    // rules (its first byte must be '{'), with the safetensors message.
    TempDirectory dir;
    const std::string tensor = R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})";
    for (const uint64_t length : {uint64_t{128}, uint64_t{80}, uint64_t{123}, uint64_t{91}, uint64_t{288},
                                  uint64_t{1152}, uint64_t{66688}}) {
        for (const bool leading_space : {false, true}) {
            CAPTURE(length);
            CAPTURE(leading_space);
            std::string header = (leading_space ? "\n" : "") + tensor;
            REQUIRE(header.size() <= length);
            header.append(length - header.size(), ' ');
            const std::string path = write_raw(dir, "w.safetensors", header, std::string("\x01\x00", 2));
            if (leading_space) {
                CHECK_ERROR_CONTAINS(SafetensorsFile::read(path), path.c_str(), "the header starts with byte 0x0A, not '{'");
                continue;
            }
            const SafetensorsFile file = SafetensorsFile::read(path);
            CHECK(file.info("w").shape == std::vector<int64_t>{2});
            CHECK(file.read_bool("w").values == std::vector<uint8_t>{1, 0});
        }
    }
}

TEST_CASE("A broken safetensors file whose first byte looks like another format keeps the safetensors message") {
    TempDirectory dir;
    SUBCASE("header length 123 ('{') past the end of the file: not called JSON") {
        const std::string path = write_raw(dir, "brace.safetensors", 123, "{}", "");
        CHECK(test_helpers::error_message([&] { SafetensorsFile::read(path); }) ==
              path + ": header length 123 bytes runs past the end of the file (10 bytes)");
    }
    SUBCASE("header length 1152 (0x80 0x04, a pickle's PROTO 4) past the end of the file: not called a pickle") {
        const std::string path = write_raw(dir, "proto.safetensors", 1152, "{}", "");
        CHECK(test_helpers::error_message([&] { SafetensorsFile::read(path); }) ==
              path + ": header length 1152 bytes runs past the end of the file (10 bytes)");
    }
}

TEST_CASE("Every header of tests/safetensors_headers.json is read or refused as the table says (as the Python reader does)") {
    // The table is shared with tests/python/test_safetensors_io.py: one rule for both
    // readers (docs/FORMAT.md section 1, "The header"). Each case's file is
    // the header's length (8 bytes, little-endian), its bytes, data_bytes zeros.
    const nlohmann::json cases = nlohmann::json::parse(read_all("tests/safetensors_headers.json"));
    REQUIRE(cases.is_array());
    REQUIRE(cases.size() >= 15);
    int valid = 0, refused = 0;
    for (const auto& c : cases) {
        const std::string name = c.at("name").get<std::string>();
        CAPTURE(name);
        REQUIRE(!c.at("why").get<std::string>().empty());
        const std::string hex = c.at("header_hex").get<std::string>();
        REQUIRE(hex.size() % 2 == 0);
        std::string bytes;
        for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(((hex.size() / 2) >> (8 * i)) & 0xFF));
        for (size_t i = 0; i < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        bytes.append(c.at("data_bytes").get<size_t>(), '\0');
        const auto span = std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        std::string error;
        try {
            SafetensorsFile::from_bytes(name, span);
        } catch (const Error& e) {
            error = e.what();
        }
        INFO("error: ", error);
        if (c.at("valid").get<bool>()) {
            CHECK(error.empty());
            ++valid;
        } else {
            CHECK(error.starts_with(name + ": "));  // refused by the reader's checks, naming the file
            ++refused;
        }
    }
    CHECK(valid >= 3);
    CHECK(refused >= 10);
}

TEST_CASE("A costly header the format refuses anyway is refused from its structure, before its value is built") {
    // Issue 31: a 98 MB header of {"a":[{},{},...]} took 34 s and 3.8 GB to
    // build before parse_header refused entry 'a'. A header whose parsed
    // value would take more than 64 MiB (112 bytes per "{}" here, 48 per
    // array element) is now refused from parse_json's first pass when its
    // structure alone is refused; parsed_json_values() counts the values
    // parse_json built, so "nothing was built" is a count, not a time.
    const auto repeated = [](const std::string& item, size_t count) {
        std::string text;
        for (size_t i = 0; i < count; ++i) text += (i ? "," : "") + item;
        return text;
    };
    const auto refusal = [](const std::string& header, std::string data = "") {
        std::string bytes;
        for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
        bytes += header + data;
        const auto span = std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        return test_helpers::error_message([&] { SafetensorsFile::from_bytes("h", span); });
    };
    struct Case {
        std::string name, item, message;
        std::string (*header)(const std::string& items);
    };
    const std::vector<Case> cases = {
        {"an array of empty objects as an entry", "{}", "h: tensor 'a': needs an object with dtype, shape and data_offsets",
         [](const std::string& items) { return "{\"a\":[" + items + "]}"; }},
        {"an unknown key holding a long array", "0",
         "h: tensor 'a': unknown key 'x'; an entry has exactly dtype, shape and data_offsets",
         [](const std::string& items) {
             return R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[)" + items + "]}}";
         }},
        {"a __metadata__ value that is a long array", "0", "h: __metadata__ value 'k' must be a string, got array",
         [](const std::string& items) { return R"({"__metadata__":{"k":[)" + items + "]}}"; }},
        {"an entry after a refused one holding a long array", "0",
         "h: tensor 'a': needs an object with dtype, shape and data_offsets",
         [](const std::string& items) { return R"({"b":[)" + items + R"(],"a":[]})"; }},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        // Small: the value is built (one value per item, and more), then parse_header refuses it.
        uint64_t before = tinyformer::parsed_json_values();
        CHECK(refusal(c.header(repeated(c.item, 1000)), "x") == c.message);
        CHECK(tinyformer::parsed_json_values() - before > 1000);
        // Costly (700k items of 112 or 1.5M of 48 bytes, over 64 MiB): the same message, nothing built.
        const size_t costly = c.item == "{}" ? 700'000 : 1'500'000;
        before = tinyformer::parsed_json_values();
        CHECK(refusal(c.header(repeated(c.item, costly)), "x") == c.message);
        CHECK(tinyformer::parsed_json_values() == before);
    }
    {  // A costly header the format accepts is built and read: a U8 tensor of 1.5M axes of 1.
        const std::string header =
            R"({"a":{"dtype":"U8","shape":[)" + repeated("1", 1'500'000) + R"(],"data_offsets":[0,1]}})";
        const uint64_t before = tinyformer::parsed_json_values();
        std::string bytes;
        for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
        bytes += header + "x";
        const SafetensorsFile file =
            SafetensorsFile::from_bytes("h", std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
        CHECK(file.info("a").shape.size() == 1'500'000);
        CHECK(tinyformer::parsed_json_values() - before > 1'500'000);
    }
}
