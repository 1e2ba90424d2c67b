// The test program's entry point: doctest's, after choosing the OpenBLAS core
// as every tinyformer program does (engine/cpu/blas_restart.h). A restart keeps
// argv, so doctest's options (-tc=..., -s) survive it. The environment's A/B
// switches apply here too: TINYFORMER_KERNELS picks the kernels the tests run
// by default (a bad value stops before any test), and with TINYFORMER_POOL=off
// (or in a sanitizer build) the pool's own tests are skipped, and said so.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "engine/cpu/blas_restart.h"
#include "engine/cpu/kernels.h"
#include "engine/error.h"
#include "engine/memory/float_buffer.h"

#include <cstdio>

int main(int argc, char** argv) {
    tinyformer::restart_for_blas_if_needed(argv);
    try {
        tinyformer::kernels::active_variant();
    } catch (const tinyformer::Error& error) {
        std::fprintf(stderr, "tinyformer-tests: error: %s\n", error.what());
        return 2;
    }
    if (!tinyformer::float_buffer_pool_enabled())
        std::printf("tinyformer-tests: the buffer pool is %s: the tests that need it are skipped\n",
                    tinyformer::float_buffer_pool_state().c_str());
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    return context.run();
}
