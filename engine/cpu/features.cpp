#include "engine/cpu/features.h"

#include <fstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tinyformer {

CpuFeatures cpu_features() {
    CpuFeatures features;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    // These also check that the OS saves the registers (XGETBV), as OpenBLAS does.
    features.avx2 = __builtin_cpu_supports("avx2");
    features.fma = __builtin_cpu_supports("fma");
    features.avx512f = __builtin_cpu_supports("avx512f");
    features.avx512bw = __builtin_cpu_supports("avx512bw");
    features.avx512dq = __builtin_cpu_supports("avx512dq");
    features.avx512vl = __builtin_cpu_supports("avx512vl");
    // AVX512_BF16 is CPUID leaf 7, subleaf 1, EAX bit 5 (read directly: not
    // every compiler's __builtin_cpu_supports knows it).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_max(0, nullptr) >= 7 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
        features.avx512bf16 = features.avx512f && ((eax >> 5) & 1u);
#endif
    return features;
}

std::string cpu_model_name() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, name, family, model;
    auto value = [](const std::string& text) {
        const size_t colon = text.find(':');
        if (colon == std::string::npos) return std::string();
        const size_t start = text.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string() : text.substr(start);
    };
    while (std::getline(cpuinfo, line)) {
        if (name.empty() && line.starts_with("model name")) name = value(line);
        else if (family.empty() && line.starts_with("cpu family")) family = value(line);
        else if (model.empty() && line.starts_with("model") && !line.starts_with("model name")) model = value(line);
        if (!name.empty() && !family.empty() && !model.empty()) break;
    }
    if (name.empty()) name = "unknown CPU";
    if (!family.empty() && !model.empty()) name += " (family " + family + ", model " + model + ")";
    return name;
}

std::string cpu_feature_list(const CpuFeatures& f) {
    std::string text;
    auto add = [&](bool present, const char* name) {
        if (present) text.append(text.empty() ? "" : " ").append(name);
    };
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.avx512f, "avx512f");
    add(f.avx512bw, "avx512bw");
    add(f.avx512dq, "avx512dq");
    add(f.avx512vl, "avx512vl");
    add(f.avx512bf16, "avx512bf16");
    return text.empty() ? "(none of avx2 fma avx512*)" : text;
}

}  // namespace tinyformer
