#include "engine/io/foreign_files.h"

#include "engine/error.h"
#include "engine/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <string_view>
#include <vector>

namespace tinyformer {

namespace {

constexpr const char* kConverter = "/usr/bin/python3 tools/python/tinyformer_export.py";

// Up to `limit` first bytes of the regular file `path` of `size` bytes
// (fewer when the file is shorter, or shrank while it was read).
std::vector<uint8_t> first_bytes(const std::string& path, uint64_t size, uint64_t limit) {
    std::vector<uint8_t> bytes(std::min(size, limit));
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return bytes;
}

int32_t little_endian_i32(const uint8_t* bytes) {
    return static_cast<int32_t>(uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 |
                                uint32_t{bytes[3]} << 24);
}

bool contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != haystack.npos; }

// "<stem>.safetensors": the name the suggested command writes, in the current
// folder. The stem is the file's or folder's own name, "." resolved to the
// folder it is (inside a Hugging Face folder, "." is that folder, and
// "model.safetensors" there is the user's own weights); a name that already
// exists gets "-tinyformer" (and a number), so running the suggestion never
// replaces a file.
std::string output_name(const std::filesystem::path& source) {
    std::error_code error;
    std::filesystem::path full = std::filesystem::absolute(source, error).lexically_normal();
    if (error) full = source;
    if (!full.has_filename()) full = full.parent_path();      // "folder/" normalises to "folder/"
    std::string stem = full.stem().string();
    if (stem.empty() || stem == "." || stem == "..") stem = "model";
    std::string name = stem + ".safetensors";
    for (int n = 1; n < 100 && (std::filesystem::exists(name, error) || std::filesystem::is_symlink(name, error)); ++n) {
        name = stem;
        name += "-tinyformer";
        if (n > 1) name += '-' + std::to_string(n);
        name += ".safetensors";
    }
    return shell_word(name);
}

[[noreturn]] void refuse(const std::string& path, const std::string& what, const std::string& way_out) {
    fail(path, ": this is ", what, ", not a tinyformer checkpoint; ", way_out);
}

std::string convert_with(const std::string& flags_before, const std::string& source, const std::string& flags_after,
                         const std::filesystem::path& named_after) {
    return "convert it with: " + std::string(kConverter) + " --from " + flags_before + " " + shell_word(source) +
           (flags_after.empty() ? "" : " " + flags_after) + " --out " + output_name(named_after);
}

// A Hugging Face model folder: config.json, and its "model_type".
void refuse_model_folder(const std::string& path) {
    const std::filesystem::path config = std::filesystem::path(path) / "config.json";
    std::error_code error;
    if (!std::filesystem::is_regular_file(config, error)) return;
    const uint64_t size = std::filesystem::file_size(config, error);
    if (error) return;
    const std::vector<uint8_t> bytes = first_bytes(config.string(), size, kTorchSniffBytes);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    // "model_type": "gpt2" -- found by its text: a config.json may nest deeper
    // than the project's JSON limits allow, and only this one value is needed.
    std::string model_type;
    const size_t key = text.find("\"model_type\"");
    if (key != text.npos) {
        size_t at = text.find_first_not_of(" \t\r\n", key + 12);
        if (at != text.npos && text[at] == ':') at = text.find_first_not_of(" \t\r\n", at + 1);
        if (at != text.npos && text[at] == '"') {
            const size_t end = text.find('"', at + 1);
            if (end != text.npos && end - at - 1 <= 64) model_type = std::string(text.substr(at + 1, end - at - 1));
        }
    }
    const std::filesystem::path folder = std::filesystem::path(path).lexically_normal();
    const std::filesystem::path named = folder.has_filename() ? folder : folder.parent_path();
    if (model_type == "gpt2")
        refuse(path, "a Hugging Face GPT-2 model folder (config.json and its weights)",
               convert_with("hf-gpt2", path, "", named));
    refuse(path,
           "a Hugging Face model folder" + (model_type.empty() ? std::string() : " (model_type \"" + model_type + "\")"),
           "tools/python/tinyformer_export.py converts Hugging Face GPT-2 folders (--from hf-gpt2 FOLDER); "
           "another layout is exported from its PyTorch modules (docs/YOUR_MODEL.md)");
}

// "--tokenizer T": the tokenizer.bin beside a llama2.c file when there is
// one (llama2.c keeps them together), else the name to fill in.
std::string tokenizer_flag(const std::string& path) {
    const std::filesystem::path beside = std::filesystem::path(path).parent_path() / "tokenizer.bin";
    std::error_code error;
    const bool found = std::filesystem::is_regular_file(beside, error);
    return "--tokenizer " + (found ? shell_word(beside.string()) : std::string("tokenizer.bin"));
}

// llama2.c's export.py writes version 1 (float32) and 2 (int8) after the
// magic "ak42" read as a little-endian uint32; its header is 256 bytes.
void refuse_llama2c_magic(const std::string& path, uint64_t size, const std::vector<uint8_t>& start) {
    if (start.size() < 8 || std::memcmp(start.data(), "24ka", 4) != 0) return;
    const int32_t version = little_endian_i32(start.data() + 4);
    const std::string convert = convert_with("llama2c-bin", path, tokenizer_flag(path), std::filesystem::path(path));
    if (size < 256)
        fail(path, ": not a tinyformer checkpoint; it starts like a llama2.c model.bin (export.py's magic) but is ",
             size, " bytes, shorter than its 256-byte header (truncated or not a model.bin)");
    if (version == 1) refuse(path, "a llama2.c model.bin (export.py version 1, float32)", convert);
    if (version == 2) refuse(path, "a llama2.c model.bin (export.py version 2, int8 Q8_0)", convert);
    fail(path, ": not a tinyformer checkpoint; it starts like a llama2.c model.bin (export.py's magic) of version ",
         version, ", which the converter does not read (it reads versions 0, 1 and 2: export the checkpoint again with "
         "llama2.c's export.py --version 1)");
}

// llama2.c's legacy (v0) model.bin: 7 int32 (dim, hidden_dim, n_layers,
// n_heads, n_kv_heads, vocab_size -- negative for an own classifier --,
// seq_len), then float32 arrays whose sizes those fields give. Believed only
// when every field is a size the format allows and they add up to exactly
// the file's length.
void refuse_llama2c_legacy(const std::string& path, uint64_t size, const std::vector<uint8_t>& start) {
    if (start.size() < 28) return;
    int64_t field[7];
    for (int i = 0; i < 7; ++i) field[i] = little_endian_i32(start.data() + 4 * i);
    const bool shared = field[5] > 0;
    field[5] = field[5] < 0 ? -field[5] : field[5];
    constexpr int64_t kLargest = int64_t{1} << 24;  // the config's limit on every size
    for (const int64_t value : field)
        if (value < 1 || value > kLargest) return;
    const auto [d, hd, n, h, kv, v, t] = std::tuple(field[0], field[1], field[2], field[3], field[4], field[5], field[6]);
    if (d % h || (d / h) % 2 || kv > h || h % kv) return;
    const int64_t kv_dim = kv * (d / h);
    // Each term is at most 2^24 * 2^24 * 2^24 * 4 = 2^74: too much for
    // int64, so the sum is built in steps that stop once past the file.
    const int64_t limit = static_cast<int64_t>(std::min<uint64_t>(size, uint64_t{1} << 62) / 4);
    int64_t floats = 0;
    auto add = [&](int64_t a, int64_t b, int64_t c) {
        if (floats > limit) return;
        if (a > limit / b) { floats = limit + 1; return; }
        const int64_t ab = a * b;
        if (ab > limit / c) { floats = limit + 1; return; }
        floats += ab * c;
    };
    add(n, 2 * d, 1);             // rms_att, rms_ffn
    add(n, 2 * d, d);             // wq, wo
    add(n, 2 * kv_dim, d);        // wk, wv
    add(n, 3 * hd, d);            // w1, w2, w3
    add(v, d, 1);                 // token embedding
    add(d, 1, 1);                 // the final norm
    add(2 * t, (d / h) / 2, 1);   // the legacy RoPE tables
    if (!shared) add(v, d, 1);    // the classifier
    const std::string header = "dim " + std::to_string(d) + ", hidden_dim " + std::to_string(hd) + ", n_layers " +
                               std::to_string(n) + ", n_heads " + std::to_string(h) + ", n_kv_heads " +
                               std::to_string(kv) + ", vocab_size " + std::to_string(field[5]) + ", seq_len " +
                               std::to_string(t);
    if (floats > limit || 28 + 4 * floats != static_cast<int64_t>(size))
        fail(path, ": not a tinyformer checkpoint; it starts like a llama2.c legacy (v0) model.bin (", header,
             ") but is ", size, " bytes, not the ",
             floats > limit ? std::string("more") : std::to_string(28 + 4 * floats),
             " that header needs (truncated or not a model.bin); tinyformer reads .safetensors checkpoints, and "
             "tools/python/tinyformer_export.py --from llama2c-bin converts a whole llama2.c model.bin");
    refuse(path, "a llama2.c model.bin (export.py's legacy version 0: " + header + ")",
           convert_with("llama2c-bin", path, tokenizer_flag(path), std::filesystem::path(path)));
}

// llama2.c's tokenizer.bin: int32 max_token_length (1..65536), then per
// piece a float32 score, an int32 length (0..max_token_length) and the
// piece's bytes. Believed when at least 3 pieces read cleanly, every one
// within the bytes read, and the walk ends exactly at the end of the file
// (or runs on past the first kTorchSniffBytes of a longer file).
void refuse_llama2c_tokenizer(const std::string& path, uint64_t size, const std::vector<uint8_t>& start) {
    if (start.size() < 4) return;
    const int32_t longest = little_endian_i32(start.data());
    if (longest < 1 || longest > (1 << 16)) return;
    const std::vector<uint8_t> bytes = first_bytes(path, size, kTorchSniffBytes);
    size_t at = 4, pieces = 0;
    while (at + 8 <= bytes.size()) {
        const int32_t length = little_endian_i32(bytes.data() + at + 4);
        if (length < 0 || length > longest) return;
        if (at + 8 + static_cast<size_t>(length) > bytes.size()) break;
        at += 8 + static_cast<size_t>(length);
        ++pieces;
    }
    const bool whole = bytes.size() == size;
    if (pieces < 3 || (whole && at != size)) return;
    refuse(path, "a llama2.c tokenizer.bin (a vocabulary, not a model)",
           "give it to the converter with the model: " + std::string(kConverter) +
               " --from llama2c-bin model.bin --tokenizer " + shell_word(path) + " --out model.safetensors");
}

// A torch.save zip or a pickle: which family by the names its pickle holds.
void refuse_torch_file(const std::string& path, uint64_t size, const std::vector<uint8_t>& start) {
    const bool zip = start.size() >= 4 && std::memcmp(start.data(), "PK\x03\x04", 4) == 0;
    const bool pickle = start.size() >= 3 && start[0] == 0x80 && start[1] >= 2 && start[1] <= 5 && start[2] != 0;
    if (!zip && !pickle) return;
    const std::vector<uint8_t> bytes = first_bytes(path, size, kTorchSniffBytes);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::filesystem::path source(path);
    const std::string kind = zip ? "a PyTorch torch.save file" : "a Python pickle (an old torch.save file)";
    if (contains(text, "model_args") && (contains(text, "n_kv_heads") || contains(text, "multiple_of")))
        refuse(path, "llama2.c's train.py checkpoint (" + kind + " with model_args)",
               convert_with("llama2c", path, tokenizer_flag(path), source));
    if (contains(text, "model_args") && contains(text, "n_embd"))
        refuse(path, "nanoGPT's train.py checkpoint (" + kind + " with model_args)",
               convert_with("nanogpt", path, "--meta meta.pkl", source));
    if (contains(text, "stoi") && contains(text, "itos") && !contains(text, ".weight"))
        refuse(path, "nanoGPT's meta.pkl (a character vocabulary, not a model)",
               "give it with the checkpoint: " + std::string(kConverter) + " --from nanogpt ckpt.pt --meta " +
                   shell_word(path) + " --out ckpt.safetensors");
    if (contains(text, "src_embed.0.lut.weight"))
        refuse(path, "an Annotated Transformer state_dict (" + kind + ")",
               convert_with("annotated", path, "--n-head H", source) + " (H: your model's number of heads)");
    if (contains(text, "transformer.wte.weight"))
        refuse(path, "a GPT state_dict (" + kind + ", minGPT's or nanoGPT's names)",
               convert_with("mingpt", path, "--n-head H", source) + " (H: your model's number of heads)");
    if (contains(text, "transformer.h.0.attn.c_attn.weight") || contains(text, "h.0.attn.c_attn.weight"))
        refuse(path, "a Hugging Face GPT-2 pytorch_model.bin (" + kind + ")",
               "convert its folder (with config.json) with: " + std::string(kConverter) + " --from hf-gpt2 " +
                   shell_word(source.parent_path().empty() ? "." : source.parent_path().string()) + " --out " +
                   output_name(source.parent_path().empty() ? std::filesystem::current_path() : source.parent_path()));
    if (zip && !is_torch_zip(bytes)) return;   // another zip (.npz, .docx): the safetensors reader names it
    refuse(path, kind,
           "tools/python/tinyformer_export.py converts it: --from nanogpt / mingpt / annotated / llama2c FILE for "
           "those families' files, --from-state-dict FILE for a state_dict with FORMAT's names (docs/YOUR_MODEL.md)");
}

}  // namespace

std::string shell_word(const std::string& given) {
    // A word starting with '-' would be read as an option: "./-m.bin" is the same file.
    const std::string text = !given.empty() && given[0] == '-' ? "./" + given : given;
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::strchr("_./-+:,@=", c) != nullptr;
    });
    if (plain) return text;
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

void refuse_other_model_files(const std::string& path) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error) return;  // the safetensors reader names a missing file
    if (std::filesystem::is_directory(status)) return refuse_model_folder(path);
    if (!std::filesystem::is_regular_file(status)) return;
    const uint64_t size = std::filesystem::file_size(path, error);
    if (error) return;
    if (size == 0)
        refuse(path, "an empty file (0 bytes)",
               "a checkpoint is a .safetensors file written by tools/python/tinyformer_export.py "
               "(docs/YOUR_MODEL.md)");
    const std::vector<uint8_t> start = first_bytes(path, size, kSniffBytes);
    if (could_be_safetensors(size, start)) return;
    if (start.size() >= 8 && std::memcmp(start.data(), "\x89PNG\r\n\x1a\n", 8) == 0)
        refuse(path, "a PNG picture",
               "a model is a .safetensors file (tinyformer's commands take the model first, then the text; "
               "pictures are what --output writes)");
    refuse_llama2c_magic(path, size, start);
    refuse_llama2c_legacy(path, size, start);
    refuse_torch_file(path, size, start);
    refuse_llama2c_tokenizer(path, size, start);
}

void refuse_safetensors_without_config(const std::string& path, const SafetensorsFile& file) {
    bool gpt2 = false, other_hf = false;
    for (const auto& [name, stored] : file.tensors()) {
        gpt2 = gpt2 || name.starts_with("h.0.attn.c_attn.") || name.starts_with("transformer.h.0.attn.c_attn.");
        other_hf = other_hf || name.starts_with("model.layers.0.") || name.starts_with("model.embed_tokens.");
    }
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    const std::string shown_folder = folder.empty() ? "." : folder.string();
    if (gpt2)
        refuse(path, "a Hugging Face GPT-2 model.safetensors (no tinyformer \"config\" in its __metadata__)",
               "convert its folder (with config.json) with: " + std::string(kConverter) + " --from hf-gpt2 " +
                   shell_word(shown_folder) + " --out " +
                   output_name(folder.empty() ? std::filesystem::current_path() : folder));
    if (other_hf)
        refuse(path, "a Hugging Face model.safetensors (no tinyformer \"config\" in its __metadata__)",
               "tools/python/tinyformer_export.py converts Hugging Face GPT-2 folders (--from hf-gpt2 FOLDER); "
               "another layout is exported from its PyTorch modules (docs/YOUR_MODEL.md)");
    fail(path, ": __metadata__ has no \"config\"; a tinyformer checkpoint stores its config there (docs/FORMAT.md); "
               "a safetensors file from elsewhere is converted with tools/python/tinyformer_export.py "
               "(docs/YOUR_MODEL.md)");
}

}  // namespace tinyformer
