#include "engine/io/safetensors.h"

#include "engine/io/output_file.h"

#include "engine/io/json.h"
#include "engine/io/mapped_file.h"
#include "engine/memory/available.h"
#include "engine/io/utf8.h"
#include "engine/bit_cast.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace tinyformer {

namespace {

using json = nlohmann::json;

// Reads exactly `count` bytes at the current position or throws.
void read_exactly(std::ifstream& in, uint8_t* out, uint64_t count, const std::string& path) {
    if (count && !in.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count)))
        fail(path, ": could not read ", count, " bytes (file changed while reading?)");
}

uint64_t little_endian_u64(const uint8_t* bytes) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
    return value;
}

bool is_json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// "0x7B ('{')" for printable ASCII, else "0xEF".
std::string byte_hex(uint8_t byte) {
    char text[16];
    if (byte >= 0x20 && byte < 0x7F)
        std::snprintf(text, sizeof text, "0x%02X ('%c')", byte, static_cast<char>(byte));
    else
        std::snprintf(text, sizeof text, "0x%02X", byte);
    return text;
}


// Refuses a file of `file_size` bytes that is not safetensors at all, naming
// what it looks like when its first bytes (`start`, up to kSniffBytes) tell
// cheaply. A file that could be safetensors — its header length fits the
// file and the limit, and the header starts like a JSON object — is left to
// the safetensors checks whatever its first bytes: a 123-byte header makes the
// first byte '{', a 128-byte one 0x80 (a pickle's first byte), 0x50 'P' too.
void refuse_other_formats(const std::string& path, uint64_t file_size, std::span<const uint8_t> start) {
    if (file_size == 0)
        fail(path, ": file is 0 bytes (empty), not safetensors; a safetensors file starts with an 8-byte header "
                   "length; ", kNotSafetensorsHint);
    if (could_be_safetensors(file_size, start)) return;
    std::string looks;
    if (start.size() >= 4 && start[0] == 'P' && start[1] == 'K' && start[2] == 3 && start[3] == 4) {
        looks = is_torch_zip(start) ? "a PyTorch torch.save file (a zip archive)" : "a zip archive (as torch.save writes)";
    } else if (start.size() >= 3 && start[0] == 0x80 && start[1] >= 2 && start[1] <= 5 && start[2] != 0) {
        looks = "a Python pickle (e.g. an old torch.save file)";  // PROTO 2..5, then an opcode
    } else {
        // Text: no control characters but whitespace (a header length of a
        // real file has zero bytes), and the first other byte opens JSON.
        const auto text_end = start.begin() + static_cast<ptrdiff_t>(std::min<size_t>(start.size(), 8));
        const bool text = std::all_of(start.begin(), text_end, [](uint8_t c) { return c >= 0x20 || is_json_space(c); });
        auto first = std::find_if(start.begin(), start.end(), [](uint8_t c) { return !is_json_space(c); });
        if (text && first != start.end() && (*first == '{' || *first == '[')) looks = "JSON text";
    }
    if (!looks.empty()) fail(path, ": is ", looks, ", not safetensors; ", kNotSafetensorsHint);
}

// The 8-byte little-endian header length at the start of a file of
// `file_size` bytes, checked against the file and kMaxHeaderBytes.
uint64_t checked_header_length(const std::string& path, uint64_t file_size, const uint8_t* length_bytes) {
    if (file_size < 8)
        fail(path, ": file is ", file_size, " bytes; a safetensors file starts with an 8-byte header length; ",
             kNotSafetensorsHint);
    const uint64_t header_length = little_endian_u64(length_bytes);
    if (header_length > kMaxHeaderBytes)
        fail(path, ": header length ", header_length, " bytes is above the limit of ", kMaxHeaderBytes, " bytes");
    if (header_length > file_size - 8)
        fail(path, ": header length ", header_length, " bytes runs past the end of the file (", file_size,
             " bytes)");
    return header_length;
}

// The header's JSON object without the spaces that may pad it, after the
// rules of docs/FORMAT.md section 1 ("The header") that come before JSON
// parsing: at least 2 bytes, no byte order mark, '{' first, no NUL byte,
// valid UTF-8, and after the object's closing '}' only spaces (0x20).
// tools/python/safetensors_io.py applies the same rules; both are tested on
// tests/safetensors_headers.json.
std::string header_object(const std::string& path, const std::string& header) {
    if (header.size() < 2)
        fail(path, ": the header is ", header.size(), " bytes; the smallest header, {}, is 2");
    if (header.starts_with("\xEF\xBB\xBF"))
        fail(path, ": the header starts with a UTF-8 byte order mark (EF BB BF); a header starts with '{'");
    if (header[0] != '{')
        fail(path, ": the header starts with byte ", byte_hex(static_cast<uint8_t>(header[0])),
             ", not '{'; a header is one JSON object");
    const size_t nul = header.find('\0');
    if (nul != std::string::npos)
        fail(path, ": the header holds a NUL byte at offset ", nul, " (of ", header.size(),
             "); only spaces may pad a header");
    const size_t invalid = first_invalid_utf8(header);
    if (invalid != std::string_view::npos)
        fail(path, ": the header is not valid UTF-8 (byte ", byte_hex(static_cast<uint8_t>(header[invalid])),
             " at offset ", invalid, ")");
    // The object ends where its opening '{' closes (strings skipped); when it
    // never closes, the JSON parser names the header as invalid.
    size_t end = 0;
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < header.size() && end == 0; ++i) {
        const char c = header[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            end = i + 1;
        }
    }
    if (end == 0) return header;
    const size_t other = header.find_first_not_of(' ', end);
    if (other != std::string::npos)
        fail(path, ": the header has ", header.size() - end, " bytes after its JSON object (byte ",
             byte_hex(static_cast<uint8_t>(header[other])), " at offset ", other, "); only spaces may pad a header");
    return header.substr(0, end);
}

// A JSON integer >= 0 (nlohmann reads -0 as a signed integer: it is 0).
bool is_count(const json& value) {
    return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() == 0);
}

uint64_t parse_offset(const json& value, const std::string& where) {
    if (!is_count(value)) fail(where, ": data_offsets must be two non-negative integers");
    return value.get<uint64_t>();
}

// A header whose parsed value would take more than this is refused from its
// structure, when that shows parse_header would refuse it, before the value is
// built (HeaderStructure). No real header comes near: a model's is one entry
// of about 100 bytes per tensor, some 2 kB of parsed value each.
constexpr double kCostlyHeaderBytes = 64.0 * 1024 * 1024;

// Watches parse_json's first pass over a header (depth 0 is the header, 1 an
// entry, 2 an entry's member) for what parse_header refuses whatever the
// numbers: a tensor entry that is not an object with dtype, shape and
// data_offsets, an unknown key in one, a dtype that is not a known dtype's
// name, a shape that is not an array, a __metadata__ that is not an object of
// strings. Each such entry gets parse_header's message for it; when the
// parsed value would be costly, before_building refuses the header with the
// message of the first such entry in parse_header's order (by name). That is
// parse_header's own message unless an entry before it fails a check of its
// numbers (shape, data_offsets), which only the built value shows; then a
// costly header names a later entry than a cheap one would.
class HeaderStructure : public JsonWatcher {
public:
    explicit HeaderStructure(const std::string& path) : path_(path) {}

    void value(int depth, std::string_view type, const std::string& text) override {
        if (depth == 1) {
            entry_ = Entry{};
            entry_.type = type;
            member_.clear();
            if (type != "object" && type != "array") finish_entry();
        } else if (depth == 2 && name_ == "__metadata__") {
            if (type != "string" && (entry_.bad_value.empty() || member_ < entry_.bad_value)) {
                entry_.bad_value = member_;
                entry_.bad_type = type;
            }
        } else if (depth == 2) {
            if (member_ == "dtype") {
                entry_.dtype_type = type;
                entry_.dtype = text;
            } else if (member_ == "shape") {
                entry_.shape_type = type;
            }
        }
    }
    void key(int depth, const std::string& key) override {
        if (depth == 0) name_ = key;
        if (depth != 1) return;
        member_ = key;
        if (key == "dtype" || key == "shape" || key == "data_offsets") ++entry_.required;
        else if (entry_.unknown.empty() || key < entry_.unknown) entry_.unknown = key;
    }
    void end(int depth) override {
        if (depth == 1) finish_entry();
    }
    void before_building(const JsonCounts& counts) override {
        if (refused_ && parsed_json_bytes(counts) > kCostlyHeaderBytes) throw Error(message_);
    }

private:
    struct Entry {
        std::string type;                 // the entry's
        int required = 0;                 // how many of dtype, shape and data_offsets it has
        std::string unknown;              // its first other key (in name order), if any
        std::string dtype_type, dtype;    // dtype's type and text
        std::string shape_type;           // shape's type
        std::string bad_value, bad_type;  // __metadata__'s first value (by key) that is not a string
    };
    const std::string& path_;
    std::string name_, member_;  // the entry and the member being read
    Entry entry_;
    bool refused_ = false;
    std::string first_refused_, message_;  // the first refused entry, by name, and its message

    // parse_header's checks of the entry that do not need its numbers, in its order.
    std::string refusal() const {
        if (name_ == "__metadata__") {
            if (entry_.type != "object") return text_of(path_, ": __metadata__ must be an object of strings");
            if (!entry_.bad_value.empty())
                return text_of(path_, ": __metadata__ value '", entry_.bad_value, "' must be a string, got ",
                               entry_.bad_type);
            return "";
        }
        const std::string where = path_ + ": tensor '" + name_ + "'";
        if (entry_.type != "object" || entry_.required != 3)  // no key twice: the first pass checked
            return text_of(where, ": needs an object with dtype, shape and data_offsets");
        if (!entry_.unknown.empty())
            return text_of(where, ": unknown key '", entry_.unknown,
                           "'; an entry has exactly dtype, shape and data_offsets");
        if (entry_.dtype_type != "string") return text_of(where, ": dtype must be a string");
        if (dtype_size(entry_.dtype) == 0) return text_of(where, ": unknown dtype '", entry_.dtype, "'");
        if (entry_.shape_type != "array") return text_of(where, ": shape must be an array");
        return "";
    }
    void finish_entry() {
        if (refused_ && first_refused_ <= name_) return;
        std::string message = refusal();
        if (message.empty()) return;
        refused_ = true;
        first_refused_ = name_;
        message_ = std::move(message);
    }
};

}  // namespace

uint64_t dtype_size(const std::string& dtype) {
    static const std::map<std::string, uint64_t> sizes = {
        {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
        {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    auto found = sizes.find(dtype);
    return found == sizes.end() ? 0 : found->second;
}

float half_to_float(uint16_t half) {
    const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
    const uint32_t exponent = (half >> 10) & 0x1Fu;
    const uint32_t mantissa = half & 0x3FFu;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    uint32_t bits = exponent == 0x1F ? sign | 0x7F800000u | (mantissa << 13)               // inf / NaN
                                     : sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
    return bit_cast<float>(bits);
}

float bfloat16_to_float(uint16_t bits) { return bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

bool is_torch_zip(std::span<const uint8_t> start) {
    // A zip local file header (PK\3\4); its name length is at bytes 26-27 and
    // the name starts at byte 30.
    if (start.size() < 30 || start[0] != 'P' || start[1] != 'K' || start[2] != 3 || start[3] != 4) return false;
    const size_t name_length = start[26] | (size_t{start[27]} << 8);
    const std::string pickle = "data.pkl";
    return name_length >= pickle.size() && 30 + name_length <= start.size() &&
           std::equal(pickle.begin(), pickle.end(), start.begin() + 30 + name_length - pickle.size());
}

bool could_be_safetensors(uint64_t file_size, std::span<const uint8_t> start) {
    if (start.size() < 9) return false;
    const uint64_t header_length = little_endian_u64(start.data());
    return header_length >= 1 && header_length <= kMaxHeaderBytes && header_length <= file_size - 8 &&
           (start[8] == '{' || is_json_space(start[8]));
}

FileReading default_file_reading() {
    const FileReading fallback = kMappingAvailable ? FileReading::Mapped : FileReading::Read;
    const char* value = std::getenv("TINYFORMER_MMAP");
    if (!value) return fallback;
    std::string text = value;
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text == "off" ? FileReading::Copied : fallback;
}

SafetensorsFile SafetensorsFile::read(const std::string& path, FileReading reading) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) fail(path, ": no such file");
    if (std::filesystem::is_directory(status)) fail(path, ": is a directory, expected a .safetensors file");
    if (!std::filesystem::is_regular_file(status)) fail(path, ": not a regular file");
    SafetensorsFile file;
    file.path_ = path;

    if (reading == FileReading::Mapped) {
        // Every check below reads the mapping only below the size the open
        // file had when mapped: parse_header refuses any tensor ending past it
        // before a tensor's byte is read.
        auto mapped = std::make_shared<const MappedFile>(path);
        const std::span<const uint8_t> bytes = mapped->bytes();
        refuse_other_formats(path, bytes.size(), bytes.first(std::min<size_t>(bytes.size(), kSniffBytes)));
        const uint64_t header_length = checked_header_length(path, bytes.size(), bytes.data());
        file.mapped_ = file.views_ = true;
        file.data_offset_ = 8 + header_length;
        file.parse_header(std::string(bytes.begin() + 8, bytes.begin() + static_cast<ptrdiff_t>(file.data_offset_)),
                          bytes.size() - file.data_offset_);
        file.file_bytes_ = bytes;
        file.data_ = bytes.subspan(file.data_offset_);
        file.storage_ = std::move(mapped);
        return file;
    }

    const uint64_t file_size = std::filesystem::file_size(path, error);
    if (error) fail(path, ": cannot read its size: ", error.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, ": cannot open: ", std::strerror(errno));

    std::vector<uint8_t> start(std::min(file_size, kSniffBytes));
    read_exactly(in, start.data(), start.size(), path);
    refuse_other_formats(path, file_size, start);
    const uint64_t header_length = checked_header_length(path, file_size, start.data());
    if (!in.seekg(8)) fail(path, ": cannot read past its header length (file changed while reading?)");
    std::string header_text(header_length, '\0');
    read_exactly(in, reinterpret_cast<uint8_t*>(header_text.data()), header_length, path);

    file.data_offset_ = 8 + header_length;
    file.views_ = reading == FileReading::Read;
    const uint64_t data_size = file_size - 8 - header_length;
    file.parse_header(header_text, data_size);  // checks the memory before the data is allocated
    auto data = std::make_shared<std::vector<uint8_t>>(data_size);
    read_exactly(in, data->data(), data_size, path);
    if (reinterpret_cast<uintptr_t>(data->data()) % alignof(float) != 0) file.views_ = false;  // (operator new aligns it)
    file.data_ = *data;
    file.storage_ = std::move(data);
    return file;
}

SafetensorsFile SafetensorsFile::from_bytes(const std::string& name, std::span<const uint8_t> bytes) {
    refuse_other_formats(name, bytes.size(), bytes.first(std::min<size_t>(bytes.size(), kSniffBytes)));
    const uint64_t header_length = checked_header_length(name, bytes.size(), bytes.data());
    SafetensorsFile file;
    file.path_ = name;
    file.data_offset_ = 8 + header_length;
    file.parse_header(std::string(bytes.begin() + 8, bytes.begin() + 8 + static_cast<ptrdiff_t>(header_length)),
                      bytes.size() - 8 - header_length);
    auto data = std::make_shared<std::vector<uint8_t>>(bytes.begin() + 8 + static_cast<ptrdiff_t>(header_length),
                                                       bytes.end());
    file.data_ = *data;
    file.storage_ = std::move(data);
    return file;
}

// Everything a reader needs from the header, checked before any tensor data
// is allocated: the JSON (within memory and depth limits), the metadata, every
// tensor's dtype / shape / offsets, the tiling of the data section, and the
// memory the data will take.
void SafetensorsFile::parse_header(const std::string& header_text, uint64_t data_size) {
    const std::string& path = path_;
    // {"name": {"shape": [..]}}: arrays and objects nest at most 3 deep (depth 0..2).
    HeaderStructure structure(path);
    const json header = parse_json(header_object(path, header_text), /*max_depth=*/2, path + ": the header", &structure);
    if (!header.is_object()) fail(path, ": the header must be a JSON object, got ", header.type_name());

    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) fail(path, ": __metadata__ must be an object of strings");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    fail(path, ": __metadata__ value '", key, "' must be a string, got ", value.type_name());
                metadata_[key] = value.get<std::string>();
            }
            continue;
        }
        const std::string where = path + ": tensor '" + name + "'";
        if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
            !entry.contains("data_offsets"))
            fail(where, ": needs an object with dtype, shape and data_offsets");
        if (entry.size() != 3) {
            for (const auto& [key, unused] : entry.items())
                if (key != "dtype" && key != "shape" && key != "data_offsets")
                    fail(where, ": unknown key '", key, "'; an entry has exactly dtype, shape and data_offsets");
        }
        StoredTensor stored;
        if (!entry["dtype"].is_string()) fail(where, ": dtype must be a string");
        stored.dtype = entry["dtype"].get<std::string>();
        const uint64_t element_size = dtype_size(stored.dtype);
        if (element_size == 0) fail(where, ": unknown dtype '", stored.dtype, "'");
        if (!entry["shape"].is_array()) fail(where, ": shape must be an array");
        uint64_t count = 1;
        for (const json& size : entry["shape"]) {
            if (!is_count(size))
                fail(where, ": shape must hold non-negative integers, got ", json_excerpt(entry["shape"]));
            const uint64_t axis = size.get<uint64_t>();
            if (axis > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                (axis != 0 && count > std::numeric_limits<uint64_t>::max() / element_size / axis))
                fail(where, ": shape ", json_excerpt(entry["shape"]), " has too many elements");
            count *= axis;
            stored.shape.push_back(static_cast<int64_t>(axis));
        }
        const json& offsets = entry["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2) fail(where, ": data_offsets must be [begin, end]");
        stored.begin = parse_offset(offsets[0], where);
        stored.end = parse_offset(offsets[1], where);
        if (stored.end < stored.begin)
            fail(where, ": data_offsets [", stored.begin, ", ", stored.end, "] are reversed");
        if (stored.end > data_size)
            fail(where, ": data_offsets [", stored.begin, ", ", stored.end, "] run past the data section (",
                 data_size, " bytes); is the file truncated?");
        if (stored.end - stored.begin != count * element_size)
            fail(where, ": ", stored.dtype, " ", shape_string(stored.shape), " needs ", count * element_size,
                 " bytes but data_offsets span ", stored.end - stored.begin);
        tensors_[name] = stored;
    }

    // Offsets must tile the data section exactly: no overlap, no hole.
    std::vector<std::pair<const std::string*, const StoredTensor*>> by_offset;
    for (const auto& [name, stored] : tensors_) by_offset.push_back({&name, &stored});
    std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
        return a.second->begin != b.second->begin ? a.second->begin < b.second->begin
                                                   : a.second->end < b.second->end;
    });
    uint64_t covered = 0;
    const std::string* previous = nullptr;
    for (const auto& [name, stored] : by_offset) {
        if (stored->begin < covered)
            fail(path, ": tensor '", *name, "' overlaps tensor '", *previous, "' (data_offsets [", stored->begin, ", ",
                 stored->end, "])");
        if (stored->begin > covered)
            fail(path, ": bytes ", covered, "..", stored->begin, " of the data section belong to no tensor (before '",
                 *name, "')");
        covered = stored->end;
        previous = name;
    }
    if (covered != data_size)
        fail(path, ": the data section has ", data_size, " bytes but the tensors cover ", covered);

    // What reading will allocate, checked before allocating it: the data
    // section (read, or mapped: its pages become resident as they are read),
    // and every float tensor that becomes a float32 Tensor of its own (not
    // those read in place).
    uint64_t float32_bytes = 0;
    for (const auto& [name, stored] : tensors_)
        if ((stored.dtype == "F32" || stored.dtype == "F16" || stored.dtype == "BF16") && !in_place(stored))
            float32_bytes += (stored.end - stored.begin) / dtype_size(stored.dtype) * 4;
        else if (stored.dtype == "I8")  // a Q8_0 weight: the loader keeps its numbers in float32 beside it
            float32_bytes += (stored.end - stored.begin) * 4;
    const double needed = static_cast<double>(data_size) + static_cast<double>(float32_bytes);
    require_available(needed, text_of(path, ": reading it needs ", data_size + float32_bytes, " bytes of memory (",
                                     data_size, " bytes of data + ", float32_bytes, " bytes of float32 tensors)"));
}

const StoredTensor& SafetensorsFile::info(const std::string& name) const {
    auto found = tensors_.find(name);
    if (found == tensors_.end()) fail(path_, ": no tensor named '", name, "'");
    return found->second;
}

const uint8_t* SafetensorsFile::bytes_of(const std::string& name) const { return data_.data() + info(name).begin; }

// An F32 tensor whose bytes start 4-byte aligned, of a file mapped or Read: a
// mapping starts on a page boundary, so the address is aligned when the offset
// in the file is; the data section Read into memory starts where operator new
// put it (aligned for any float), so when the offset in the data section is.
// An empty tensor has no bytes to read in place.
static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ % alignof(float) == 0);
bool SafetensorsFile::in_place(const StoredTensor& stored) const {
    const uint64_t offset = mapped_ ? data_offset_ + stored.begin : stored.begin;
    return views_ && stored.dtype == "F32" && stored.end > stored.begin && offset % alignof(float) == 0;
}

Tensor SafetensorsFile::read_float(const std::string& name) const {
    const StoredTensor& stored = info(name);
    if (stored.shape.empty() || stored.shape.size() > 4)
        fail(path_, ": tensor '", name, "' has shape ", shape_string(stored.shape), "; expected rank 1..4");
    if (in_place(stored))  // no copy: the tensor reads the file's bytes, and keeps them (storage_) alive
        return Tensor::in_place(stored.shape, reinterpret_cast<const float*>(bytes_of(name)), storage_);
    Tensor tensor(stored.shape);
    const uint8_t* bytes = bytes_of(name);
    const int64_t count = tensor.numel();
    if (stored.dtype == "F32") {
        if (count) std::memcpy(tensor.data(), bytes, static_cast<size_t>(count) * 4);  // memcpy: never a null pointer
    } else if (stored.dtype == "F16" || stored.dtype == "BF16") {
        const bool half = stored.dtype == "F16";
        for (int64_t i = 0; i < count; ++i) {
            uint16_t bits;
            std::memcpy(&bits, bytes + 2 * i, 2);
            tensor.data()[i] = half ? half_to_float(bits) : bfloat16_to_float(bits);
        }
    } else {
        fail(path_, ": tensor '", name, "' has dtype ", stored.dtype, "; expected F32 (or F16, BF16)");
    }
    return tensor;
}

const int8_t* SafetensorsFile::read_i8(const std::string& name) const {
    const StoredTensor& stored = info(name);
    if (stored.dtype != "I8") fail(path_, ": tensor '", name, "' has dtype ", stored.dtype, "; expected I8");
    return reinterpret_cast<const int8_t*>(bytes_of(name));
}

IntTensor SafetensorsFile::read_int(const std::string& name) const {
    const StoredTensor& stored = info(name);
    IntTensor result{stored.shape, {}};
    const uint64_t count = (stored.end - stored.begin) / std::max<uint64_t>(1, dtype_size(stored.dtype));
    const uint8_t* bytes = bytes_of(name);
    result.values.resize(count);
    if (stored.dtype == "I64") {
        if (count) std::memcpy(result.values.data(), bytes, count * 8);
    } else if (stored.dtype == "I32") {
        for (uint64_t i = 0; i < count; ++i) {
            int32_t value;
            std::memcpy(&value, bytes + 4 * i, 4);
            result.values[i] = value;
        }
    } else {
        fail(path_, ": tensor '", name, "' has dtype ", stored.dtype, "; expected I64 or I32");
    }
    return result;
}

BoolTensor SafetensorsFile::read_bool(const std::string& name) const {
    const StoredTensor& stored = info(name);
    if (stored.dtype != "BOOL" && stored.dtype != "U8")
        fail(path_, ": tensor '", name, "' has dtype ", stored.dtype, "; expected BOOL or U8");
    const uint8_t* bytes = bytes_of(name);
    BoolTensor result{stored.shape, std::vector<uint8_t>(bytes, bytes + (stored.end - stored.begin))};
    for (uint8_t value : result.values)
        if (value > 1)
            fail(path_, ": tensor '", name, "' holds ", static_cast<int>(value), "; a Boolean mask holds 0 or 1");
    return result;
}

TensorToWrite f32_tensor(const std::string& name, const Tensor& tensor) {
    TensorToWrite out{name, "F32", tensor.shape(), std::vector<uint8_t>(static_cast<size_t>(tensor.numel()) * 4)};
    if (!out.bytes.empty()) std::memcpy(out.bytes.data(), tensor.data(), out.bytes.size());
    return out;
}

TensorToWrite i64_tensor(const std::string& name, const IntTensor& tensor) {
    TensorToWrite out{name, "I64", tensor.shape, std::vector<uint8_t>(tensor.values.size() * 8)};
    if (!out.bytes.empty()) std::memcpy(out.bytes.data(), tensor.values.data(), out.bytes.size());
    return out;
}

TensorToWrite bool_tensor(const std::string& name, const BoolTensor& tensor) {
    return {name, "BOOL", tensor.shape, tensor.values};
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::vector<const TensorToWrite*> ordered;
    for (const TensorToWrite& t : tensors) ordered.push_back(&t);
    std::sort(ordered.begin(), ordered.end(), [](auto* a, auto* b) { return a->name < b->name; });
    uint64_t offset = 0;
    for (const TensorToWrite* t : ordered) {
        if (header.contains(t->name) || t->name == "__metadata__")
            fail("write_safetensors: tensor name '", t->name, "' appears twice or is reserved");
        uint64_t count = 1;
        for (int64_t size : t->shape) count *= static_cast<uint64_t>(size);
        if (dtype_size(t->dtype) == 0 || count * dtype_size(t->dtype) != t->bytes.size())
            fail("write_safetensors: tensor '", t->name, "' (", t->dtype, " ", shape_string(t->shape), ") has ",
                 t->bytes.size(), " bytes");
        header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, offset + t->bytes.size()}}};
        offset += t->bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned

    OutputFile out(path, "write_safetensors");
    uint8_t length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<uint8_t>(text.size() >> (8 * i));
    out.write(length_bytes, 8);
    out.write(text);
    for (const TensorToWrite* t : ordered) out.write(t->bytes.data(), t->bytes.size());
    out.commit();
}

}  // namespace tinyformer
