// What this CPU can run: the instruction-set features that decide which
// OpenBLAS core fits (engine/cpu/blas.h) and which row-kernel variant runs
// (engine/cpu/kernels.h), and the CPU's name for reports.
//
//   cpu_features()      from CPUID via the compiler's __builtin_cpu_supports,
//                       which also checks that the OS saves the registers
//                       (XGETBV); all false on a CPU that is not x86
//   cpu_model_name()    /proc/cpuinfo's "model name" (+ family/model)
//   cpu_feature_list()  "avx2 fma avx512f ...", the features present
#pragma once

#include <string>

namespace tinyformer {

struct CpuFeatures {
    bool avx2 = false, fma = false;
    bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
    bool avx512bf16 = false;
};
CpuFeatures cpu_features();
std::string cpu_model_name();
std::string cpu_feature_list(const CpuFeatures& features);

}  // namespace tinyformer
