// Determinism of the built `tinyformer forward` (tests/run_cli.h): the same
// model and inputs give bit-identical output files run after run, at a fixed
// OpenBLAS thread count (1, and 2). Whether 1 and 2 threads agree bit for bit
// is up to OpenBLAS's kernels and is not claimed.
#include <doctest/doctest.h>

#include "tests/run_cli.h"

using test_helpers::CliRun;
using test_helpers::TempDirectory;

TEST_CASE("forward writes bit-identical logits and attention run after run at the same thread count") {
    // The largest reference case (decoder-only, D=256, T=100, F16 weights,
    // padding) and an encoder-decoder case with padding and learned positions.
    for (const std::string base : {"data/reference/do_d256_f16", "data/reference/ed_pre_gelu_learned_pad"}) {
        for (const int threads : {1, 2}) {
            CAPTURE(base);
            CAPTURE(threads);
            TempDirectory dir;
            std::string first;
            for (int run = 0; run < 3; ++run) {
                const std::string output = dir.file("out" + std::to_string(run) + ".safetensors");
                const CliRun result =
                    test_helpers::run_tinyformer({"forward", base + ".model.safetensors", "--inputs",
                                                  base + ".inputs.safetensors", "--output", output, "--attention"},
                                                 threads);
                INFO("stderr: ", result.err);
                REQUIRE(result.status == 0);
                const std::string bytes = test_helpers::read_file(output);
                REQUIRE(bytes.size() > 1000);
                if (run == 0)
                    first = bytes;
                else
                    CHECK_MESSAGE(bytes == first, "run ", run, " differs from run 0");
            }
        }
    }
}
