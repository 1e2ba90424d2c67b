// For the programs' entry points only (tools/cli/main.cpp,
// tools/bench/main.cpp, tests/main.cpp): the first thing main() does.
// engine/cpu/blas.h decides which OpenBLAS core fits; when that means starting
// again (OpenBLAS reads OPENBLAS_CORETYPE only when it loads), this applies
// the environment changes and re-executes /proc/self/exe with the same argv.
// The library never restarts a process on its own.
#pragma once

#include "engine/cpu/blas.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tinyformer {

inline void restart_for_blas_if_needed(char** argv) {
    const BlasPlan plan = plan_blas_startup();
    if (!plan.restart) return;
    for (const EnvChange& change : plan.environment) {
        if (change.value.empty())
            unsetenv(change.name.c_str());
        else
            setenv(change.name.c_str(), change.value.c_str(), 1);
    }
    std::fflush(nullptr);
    execv("/proc/self/exe", argv);
    // Still here: the restart failed. Run on as we are, and say so once.
    const int error = errno;
    std::fprintf(stderr, "tinyformer: note: could not restart to change the OpenBLAS core (%s); running on %s\n",
                 std::strerror(error), plan.chosen_core.c_str());
    for (const EnvChange& change : plan.environment) unsetenv(change.name.c_str());
    setenv("TINYFORMER_BLAS_RESTART", "unavailable", 1);  // never try again in this process tree
}

}  // namespace tinyformer
