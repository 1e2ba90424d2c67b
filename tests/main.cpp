// The test program's entry point: doctest's, after choosing the OpenBLAS core
// as every tinyformer program does (engine/cpu/blas_restart.h). A restart keeps
// argv, so doctest's options (-tc=..., -s) survive it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "engine/cpu/blas_restart.h"

int main(int argc, char** argv) {
    tinyformer::restart_for_blas_if_needed(argv);
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    return context.run();
}
