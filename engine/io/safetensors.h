// safetensors files — checkpoints, `forward` inputs and outputs.
//
// Layout (github.com/huggingface/safetensors):
//   8 bytes    N, the header length, unsigned little-endian
//   N bytes    a JSON object: {"__metadata__": {"key": "string", ...},
//              "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   the rest   tensor bytes, little-endian, row-major; offsets count from the
//              end of the header.
//
// Reading checks every rule before any tensor is used, and throws Error
// naming the file (and the tensor). A file that is not safetensors at all is
// named as what it looks like when its first bytes tell cheaply — empty, a
// zip archive (torch.save), a Python pickle (an old torch.save), JSON text —
// unless it could be safetensors: a header length that fits the file and a
// header that starts like a JSON object are never called anything else.
// Then: a header length past the file or above
// kMaxHeaderBytes; header bytes that break docs/FORMAT.md's header rules (at
// least 2 bytes, '{' first — so a UTF-8 byte order mark is refused by name —,
// no NUL, valid UTF-8, exactly one JSON object followed only by spaces, no
// key twice in any object: the same rules as tools/python/safetensors_io.py, both
// tested on tests/safetensors_headers.json); __metadata__ that is not an
// object of strings, an unknown dtype, a negative or overflowing shape, offsets
// reversed, outside the data, overlapping, or leaving holes (the safetensors
// rule: the data must be indexed entirely), and a byte count that does not
// match dtype x shape. The file is read once.
//
// Reading in place: a file is mapped read-only (engine/io/mapped_file.h), not
// copied, and read_float returns an F32 tensor whose bytes lie 4-byte aligned
// in the file (its offset in the file, 8 + header length + begin, a multiple
// of 4; tools/python/safetensors_io.py pads the header to 8 bytes and stores
// the widest dtypes first, so all its F32 tensors are) as a Tensor that reads the mapped bytes where they are
// (Tensor::in_place; the mapping lives as long as any such tensor). F16 and
// BF16 tensors, and unaligned F32 ones, are converted into memory of their
// own, as before. The sizes are checked against the file's size (taken once,
// from the open file) before any tensor's byte is touched. FileReading::Read
// reads the data section into memory once and reads its F32 tensors in place
// there the same way (aligned: the offset in the data section a multiple of
// 4): the WebAssembly build, which has no mmap, so that the page's memory
// holds the weights once. FileReading::Copied reads the whole file into memory
// and copies every tensor: TINYFORMER_MMAP=off (an A/B switch, as
// TINYFORMER_POOL=off), and the tests that compare the ways.
//
// Memory: before allocating anything for the data, reading adds up what the
// file will take — its data section (mapped or read), plus every F32 / F16 /
// BF16 tensor that read_float converts into a float32 Tensor of its own, which
// for F16 / BF16 includes the widening (a tensor read in place takes no more),
// and for every I8 tensor the float32 numbers a loader makes of it (a Q8_0
// weight's dequantized copy, models/checkpoint.h)
// — and refuses, naming both numbers, when that is more than
// available_memory_bytes(). So reading a file never allocates more than its
// size plus the model's declared weights,
// plus the parsed JSON header, which parse_json (engine/io/json.h) bounds by
// kParsedJsonBytesPerByte per header byte and checks before parsing; and
// arrays and objects in the header nest at most 3 deep, as the format needs.
// A header whose parsed value would take more than 64 MiB is not built at
// all when its structure alone is one the format refuses (an entry that is
// not an object with dtype, shape and data_offsets, an unknown key, a dtype
// that is no dtype's name, a shape that is not an array, __metadata__ that
// is not an object of strings): it is refused after one pass over its text.
//
// Writing goes through engine/io/output_file.h (a temporary file in the same
// folder, renamed into place; a FIFO or character device as a stream), so an
// interrupted or failed write leaves no half-written file.
#pragma once

#include "engine/mask.h"
#include "engine/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tinyformer {

constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;  // 100 MB, as in the reference safetensors library

// The end of the message refusing a file that is not safetensors at all (an
// empty or short file, a torch.save zip, a pickle, JSON text). Checkpoints and
// `forward` inputs are both read here, so it names the format and the way a
// PyTorch model becomes a checkpoint.
constexpr const char* kNotSafetensorsHint =
    "tinyformer reads safetensors files (docs/FORMAT.md); a PyTorch model is exported with "
    "tools/python/tinyformer_export.py";

// How many first bytes of a file are enough to tell what it is (the checks
// below, and engine/io/foreign_files.h naming other model files).
constexpr uint64_t kSniffBytes = 256;

// True when a file of `file_size` bytes whose first bytes are `start` (up to
// kSniffBytes) could be safetensors: its header length is 1..kMaxHeaderBytes,
// fits the file, and the header starts like a JSON object ('{' or a space).
// Such a file is read as safetensors whatever else its first bytes resemble.
bool could_be_safetensors(uint64_t file_size, std::span<const uint8_t> start);

// True when `start` (a file's first bytes) is a zip whose first member is
// "<name>/data.pkl", as torch.save writes it: any other zip (.npz, .docx) is not.
bool is_torch_zip(std::span<const uint8_t> start);

// A stored tensor's description, as the header gives it.
struct StoredTensor {
    std::string dtype;        // "F32", "F16", "BF16", "I64", "I32", "BOOL", "U8", ...
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

// Integer tensors (token ids, lengths), widened to int64.
struct IntTensor {
    Shape shape;
    std::vector<int64_t> values;
};

// How SafetensorsFile::read holds a file: mapped, its F32 tensors read in
// place where aligned; read into memory once, its F32 tensors read in place
// there where aligned; or read into memory, every tensor copied again.
enum class FileReading { Mapped, Read, Copied };
// Mapped; Read where the platform has no mmap (WebAssembly); Copied when the
// process was started with TINYFORMER_MMAP=off (any case).
FileReading default_file_reading();

class SafetensorsFile {
public:
    static SafetensorsFile read(const std::string& path, FileReading reading = default_file_reading());
    // The same checks on a file's bytes already in memory; `name` stands for
    // the path in messages. (The fuzz harnesses feed the parser this way.)
    static SafetensorsFile from_bytes(const std::string& name, std::span<const uint8_t> bytes);

    const std::string& path() const { return path_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
    bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
    const StoredTensor& info(const std::string& name) const;

    // F32, or F16 / BF16 widened to F32. Rank 1..4. An aligned F32 tensor of
    // a file mapped or Read is read in place (reads_in_place); any other is copied.
    Tensor read_float(const std::string& name) const;
    bool reads_in_place(const std::string& name) const { return in_place(info(name)); }
    // The whole file's mapped bytes; empty when the file is not mapped.
    std::span<const uint8_t> mapped_bytes() const { return mapped_ ? file_bytes_ : std::span<const uint8_t>(); }
    // I8 (a Q8_0 weight's values, docs/FORMAT.md): the bytes where they lie
    // (int8 needs no alignment), valid while storage() lives.
    const int8_t* read_i8(const std::string& name) const;
    std::shared_ptr<const void> storage() const { return storage_; }
    // I64 or I32.
    IntTensor read_int(const std::string& name) const;
    // BOOL or U8 holding only 0 and 1.
    BoolTensor read_bool(const std::string& name) const;

private:
    void parse_header(const std::string& header_text, uint64_t data_size);
    const uint8_t* bytes_of(const std::string& name) const;
    bool in_place(const StoredTensor& stored) const;

    std::string path_;
    std::map<std::string, std::string> metadata_;
    std::map<std::string, StoredTensor> tensors_;
    std::shared_ptr<const void> storage_;   // owns the bytes: a MappedFile, or a std::vector<uint8_t>
    std::span<const uint8_t> file_bytes_;   // the whole file, in storage_
    std::span<const uint8_t> data_;         // its data section, after the header
    uint64_t data_offset_ = 0;              // where the data section starts in the file: 8 + header length
    bool mapped_ = false;
    bool views_ = false;                    // F32 tensors may be read in place (Mapped, Read)
};

// One tensor to write: dtype, shape and its raw little-endian bytes.
struct TensorToWrite {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};
TensorToWrite f32_tensor(const std::string& name, const Tensor& tensor);
TensorToWrite i64_tensor(const std::string& name, const IntTensor& tensor);
TensorToWrite bool_tensor(const std::string& name, const BoolTensor& tensor);

// Writes atomically (temporary file + rename). Names must be unique.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Bytes per element of a dtype name; 0 for an unknown name.
uint64_t dtype_size(const std::string& dtype);

// IEEE half and bfloat16 to float (exact).
float half_to_float(uint16_t half);
float bfloat16_to_float(uint16_t bits);

}  // namespace tinyformer
