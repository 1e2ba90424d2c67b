// libFuzzer harness: the safetensors header and tensor table parser
// (engine/io/safetensors.cpp), fed a whole file's bytes. A file is either
// refused with tinyformer::Error or read; when it is read, every tensor is
// read back by each reader that accepts its dtype. Anything else — a crash, a
// sanitizer report, another exception type, a hang — is a finding.
// Run by `make fuzz` (tests/fuzz/run.sh); seeds in tests/fuzz/corpus/safetensors/.
#include "engine/io/safetensors.h"
#include "tests/fuzz/harnesses.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

FuzzCounts fuzz_safetensors_counts;

int fuzz_safetensors_one_input(const uint8_t* data, size_t size) {
    using namespace tinyformer;
    try {
        const SafetensorsFile file = SafetensorsFile::from_bytes("fuzz.safetensors", std::span(data, size));
        for (const auto& [name, stored] : file.tensors()) {
            try {
                if (stored.dtype == "F32" || stored.dtype == "F16" || stored.dtype == "BF16") file.read_float(name);
                if (stored.dtype == "I64" || stored.dtype == "I32") file.read_int(name);
                if (stored.dtype == "BOOL" || stored.dtype == "U8") file.read_bool(name);
            } catch (const Error&) {
                // refused by name (a rank outside 1..4, a Boolean that is not 0 or 1): fine
            }
        }
        ++fuzz_safetensors_counts.accepted;
    } catch (const Error&) {
        ++fuzz_safetensors_counts.refused;  // refused: fine
    }
    return 0;
}

#ifndef TINYFORMER_CORPUS_TEST
// Printed at exit: how many inputs were accepted and how many refused.
void print_counts() {
    std::fprintf(stderr, "fuzz_safetensors: accepted %lld, refused %lld\n", fuzz_safetensors_counts.accepted,
                 fuzz_safetensors_counts.refused);
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::atexit(print_counts);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz_safetensors_one_input(data, size); }
#endif
