// Tokenizer — characters to token ids over a checkpoint's vocabulary
// (FORMAT.md metadata "vocab": index = id). Every ordinary token is one
// character; special tokens are written in angle brackets (<pad>, <bos>,
// <eos>, <unk>) and are never produced from text.
//
//   encode("abc")     -> the ids of 'a', 'b', 'c'
//   decode(ids)       -> the tokens' strings joined; special tokens shown as
//                        themselves, e.g. "cba" or "ab<unk>"
// A character outside the vocabulary is an Error naming it and its position,
// or, with map_unknown, becomes <unk> (counted in unknown_count).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tinyformer {

class Tokenizer {
public:
    explicit Tokenizer(std::vector<std::string> vocab);

    std::vector<int64_t> encode(const std::string& text, bool map_unknown = false, int64_t* unknown_count = nullptr) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    const std::string& token(int64_t id) const;
    int64_t id_of(const std::string& token) const;  // Error if absent
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    int64_t size() const { return static_cast<int64_t>(vocab_.size()); }

private:
    std::vector<std::string> vocab_;
    std::map<std::string, int64_t> ids_;
};

}  // namespace tinyformer
