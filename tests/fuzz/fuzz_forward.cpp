// libFuzzer harness: `tinyformer forward`'s input file (models/forward.cpp),
// fed to two small fixed models from data/models/: `reverse`
// (encoder_decoder: src_ids, tgt_ids and their key padding masks) and
// `reverse-prefixlm` (decoder_only: ids, key_padding_mask, prefix_len).
// Each input either is refused with tinyformer::Error or gives logits and
// attention weights that are all finite; NaN or inf in an output, a crash, a
// sanitizer report or another exception type is a finding.
// Seeds in tests/fuzz/corpus/forward/.
#include "engine/matmul.h"
#include "engine/safetensors.h"
#include "models/forward.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

namespace {

const tinyformer::Model& model(int which) {
    static const tinyformer::Model models[2] = {
        tinyformer::Model::load(TINYFORMER_DATA_DIR "/models/reverse.safetensors"),
        tinyformer::Model::load(TINYFORMER_DATA_DIR "/models/reverse-prefixlm.safetensors")};
    return models[which];
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    tinyformer::set_blas_threads(1);
    model(0);  // load both models once, before the first input
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
        } catch (const Error&) {
            // refused by name: fine
        }
    }
    return 0;
}
