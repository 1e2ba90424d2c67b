// libFuzzer harness: `tinyformer forward`'s input file (models/study/forward.cpp),
// fed to two small fixed models from data/models/: `reverse`
// (encoder_decoder: src_ids, tgt_ids and their key padding masks) and
// `reverse-prefixlm` (decoder_only: ids, key_padding_mask, prefix_len).
// Each input either is refused with tinyformer::Error or gives logits and
// attention weights that are all finite; NaN or inf in an output, a crash, a
// sanitizer report or another exception type is a finding.
// Seeds in tests/fuzz/corpus/forward/.
//
// Byte-level mutation of a whole file almost always breaks the safetensors
// frame (measured: 98% of inputs), and then the input never reaches the
// model; fuzz_safetensors covers the frame. So LLVMFuzzerCustomMutator below
// keeps a well-framed file well framed: a whole-file mutation that still
// parses (1/4 of the time), one tensor element set to a value near the valid
// range of ids, flags and lengths (1/2), or the data section's bytes mutated
// at their size (1/4), so the header's offsets hold.
#include "engine/matmul.h"
#include "engine/io/safetensors.h"
#include "models/study/forward.h"
#include "tests/fuzz/harnesses.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#ifndef TINYFORMER_DATA_DIR
#define TINYFORMER_DATA_DIR "data"  // the test suite runs from the repository root
#endif

namespace {

const tinyformer::Model& model(int which) {
    static const tinyformer::Model models[2] = {
        tinyformer::Model::load(TINYFORMER_DATA_DIR "/models/reverse.safetensors"),
        tinyformer::Model::load(TINYFORMER_DATA_DIR "/models/reverse-prefixlm.safetensors")};
    return models[which];
}

}  // namespace

FuzzCounts fuzz_forward_counts[2];

#ifndef TINYFORMER_CORPUS_TEST
// Printed at exit, so that a run shows how much of it reached the model and not only the parser.
void print_counts() {
    std::fprintf(stderr, "fuzz_forward: reverse ran %lld, refused %lld; reverse-prefixlm ran %lld, refused %lld\n",
                 fuzz_forward_counts[0].accepted, fuzz_forward_counts[0].refused, fuzz_forward_counts[1].accepted,
                 fuzz_forward_counts[1].refused);
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::atexit(print_counts);
    tinyformer::set_blas_threads(1);
    model(0);  // load both models once, before the first input
    return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);  // libFuzzer's own

namespace {

bool well_framed(const uint8_t* data, size_t size) {
    try {
        tinyformer::SafetensorsFile::from_bytes("mutant", std::span(data, size));
        return true;
    } catch (const tinyformer::Error&) {
        return false;
    }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    using tinyformer::SafetensorsFile;
    SafetensorsFile file;
    try {
        file = SafetensorsFile::from_bytes("mutant", std::span(data, size));
    } catch (const tinyformer::Error&) {
        return LLVMFuzzerMutate(data, size, max_size);
    }
    std::minstd_rand random(seed);
    uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | data[i];
    uint8_t* const section = data + 8 + header_length;
    switch (random() % 4) {
        case 0: {  // a whole-file mutation that keeps the file well framed (another shape, dtype, name)
            const std::vector<uint8_t> original(data, data + size);
            for (int attempt = 0; attempt < 4; ++attempt) {
                const size_t mutated = LLVMFuzzerMutate(data, size, max_size);
                if (well_framed(data, mutated)) return mutated;
                std::copy(original.begin(), original.end(), data);
            }
            break;
        }
        case 1:
        case 2: {  // one element of one tensor set to a value near the valid range (ids, flags, lengths)
            if (file.tensors().empty()) break;
            auto entry = file.tensors().begin();
            std::advance(entry, static_cast<long>(random() % file.tensors().size()));
            const tinyformer::StoredTensor& stored = entry->second;
            const uint64_t width = tinyformer::dtype_size(stored.dtype);
            if (stored.end == stored.begin) break;
            uint8_t* element = section + stored.begin + (random() % ((stored.end - stored.begin) / width)) * width;
            const int64_t value = static_cast<int64_t>(random() % 48) - 3;  // -3..44: around vocabularies and T
            if (stored.dtype == "I64") std::memcpy(element, &value, 8);
            else if (stored.dtype == "I32") { const int32_t v = static_cast<int32_t>(value); std::memcpy(element, &v, 4); }
            else if (width == 1) *element = static_cast<uint8_t>(random() % 8 == 0 ? 2 : random() % 2);
            else break;
            return size;
        }
        default: break;
    }
    // The data section's bytes alone, at their size, so that the offsets hold.
    const size_t length = size - 8 - static_cast<size_t>(header_length);
    if (length == 0) return LLVMFuzzerMutate(data, size, max_size);
    std::vector<uint8_t> copy(section, section + length);
    const size_t mutated = LLVMFuzzerMutate(copy.data(), length, length);
    std::copy(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(std::min(mutated, length)), section);
    return size;
}
#endif  // TINYFORMER_CORPUS_TEST

int fuzz_forward_one_input(const uint8_t* data, size_t size) {
    using namespace tinyformer;
    SafetensorsFile inputs;
    try {
        inputs = SafetensorsFile::from_bytes("fuzz-inputs.safetensors", std::span(data, size));
    } catch (const Error&) {
        return 0;  // not a safetensors file: the other harness's business
    }
    for (int which = 0; which < 2; ++which) {
        try {
            for (const auto& [name, output] : run_forward(model(which), inputs, /*attention=*/true))
                for (int64_t i = 0; i < output.numel(); ++i)
                    if (!std::isfinite(output.data()[i])) {
                        std::fprintf(stderr, "non-finite %s[%lld] = %g\n", name.c_str(), static_cast<long long>(i),
                                     output.data()[i]);
                        std::abort();
                    }
            ++fuzz_forward_counts[which].accepted;
        } catch (const Error&) {
            ++fuzz_forward_counts[which].refused;
            // refused by name: fine
        }
    }
    return 0;
}

#ifndef TINYFORMER_CORPUS_TEST
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz_forward_one_input(data, size); }
#endif
