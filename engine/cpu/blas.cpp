#include "engine/cpu/blas.h"

#include "engine/matmul.h"

#ifndef TINYFORMER_OWN_GEMM
#include <cblas.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace tinyformer {

namespace {

constexpr const char* kMarker = "TINYFORMER_BLAS_RESTART";
constexpr const char* kCoretype = "OPENBLAS_CORETYPE";

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

std::optional<std::string> environment(const char* name) {
    const char* value = std::getenv(name);
    if (!value) return std::nullopt;
    return std::string(value);
}

// "switched:<original>" or "failed:<original>:<rejected>".
struct Marker {
    enum Kind { None, Switched, Failed } kind = None;
    std::string original, rejected;
};

Marker parse_marker(const std::optional<std::string>& text) {
    Marker marker;
    if (!text) return marker;
    if (text->starts_with("switched:")) {
        marker.kind = Marker::Switched;
        marker.original = text->substr(9);
    } else if (text->starts_with("failed:")) {
        const std::string rest = text->substr(7);
        const size_t colon = rest.find(':');
        marker.kind = Marker::Failed;
        marker.original = rest.substr(0, colon);
        marker.rejected = colon == std::string::npos ? std::string() : rest.substr(colon + 1);
    }
    return marker;
}

// Fills a matrix with small numbers from a fixed sequence (no Random: the
// check must not depend on anything else of the engine).
void fill(std::vector<float>& values, uint32_t seed) {
    uint32_t state = seed;
    for (float& value : values) {
        state = state * 1664525u + 1013904223u;
        value = static_cast<float>(static_cast<int32_t>(state >> 8) % 2001 - 1000) / 1000.0f;
    }
}

// One sgemm against gemm_naive; returns max |C - C_ref| / max |C_ref|.
double compare_once(int64_t m, int64_t n, int64_t k, Transpose ta, Transpose tb, float alpha, float beta) {
    const int64_t a_rows = ta == Transpose::Yes ? k : m, a_cols = ta == Transpose::Yes ? m : k;
    const int64_t b_rows = tb == Transpose::Yes ? n : k, b_cols = tb == Transpose::Yes ? k : n;
    std::vector<float> a(static_cast<size_t>(a_rows * a_cols)), b(static_cast<size_t>(b_rows * b_cols));
    std::vector<float> c(static_cast<size_t>(m * n)), reference;
    fill(a, 1);
    fill(b, 2);
    fill(c, 3);
    reference = c;
    const ConstMatrixView a_view{a.data(), a_rows, a_cols, a_cols}, b_view{b.data(), b_rows, b_cols, b_cols};
    gemm(a_view, ta, b_view, tb, {c.data(), m, n, n}, alpha, beta);
    gemm_naive(a_view, ta, b_view, tb, {reference.data(), m, n, n}, alpha, beta);
    double largest = 0, difference = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        largest = std::max(largest, static_cast<double>(std::fabs(reference[i])));
        const double d = std::fabs(static_cast<double>(c[i]) - reference[i]);
        difference = std::isnan(d) ? INFINITY : std::max(difference, d);
    }
    return largest > 0 ? difference / largest : difference;
}

// The compute core OpenBLAS runs; a build without OpenBLAS (TINYFORMER_OWN_GEMM) has none.
std::string core_in_use() {
#ifdef TINYFORMER_OWN_GEMM
    return "none (no OpenBLAS in this build)";
#else
    return openblas_get_corename();
#endif
}

}  // namespace

bool is_generic_core(const std::string& core) {
    static const char* const kGeneric[] = {"katmai", "coppermine", "northwood", "prescott", "banias", "atom",
                                           "core2",  "penryn",     "dunnington", "nehalem", "athlon", "opteron",
                                           "opteron_sse3", "barcelona", "nano", "bobcat", "unknown"};
    const std::string name = lower(core);
    return std::any_of(std::begin(kGeneric), std::end(kGeneric), [&](const char* g) { return name == g; });
}

std::string best_core_for(const CpuFeatures& f) {
    const bool avx512 = f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl;
    if (avx512 && f.avx512bf16) return "Cooperlake";
    if (avx512) return "SkylakeX";
    if (f.avx2 && f.fma) return "Haswell";
    return "";
}

const char* blas_reason_name(BlasReason reason) {
    switch (reason) {
        case BlasReason::AlreadyGood: return "already good";
        case BlasReason::NoBetterCore: return "no better core for this CPU";
        case BlasReason::KeptByUser: return "kept by TINYFORMER_BLAS=keep";
        case BlasReason::UserCoretype: return "the user's OPENBLAS_CORETYPE";
        case BlasReason::Switched: return "switched";
        case BlasReason::SelfCheckFailed: return "self-check failed";
        case BlasReason::NotRestarted: return "not switched";
    }
    return "unknown";
}

BlasPlan decide_blas(const BlasInputs& in) {
    BlasPlan plan;
    plan.chosen_core = in.core_in_use;
    const Marker marker = parse_marker(in.marker);
    if (marker.kind == Marker::Switched) {  // we restarted with a better core: does it compute right?
        plan.chosen_core = marker.original;
        if (in.self_check_passed) {
            plan.reason = BlasReason::Switched;
            return plan;
        }
        plan.reason = BlasReason::SelfCheckFailed;
        plan.rejected_core = in.core_in_use;
        plan.restart = true;  // back to OpenBLAS's own choice, once
        plan.environment = {{kCoretype, ""}, {kMarker, "failed:" + marker.original + ":" + in.core_in_use}};
        return plan;
    }
    if (marker.kind == Marker::Failed) {
        plan.chosen_core = marker.original;
        plan.rejected_core = marker.rejected;
        plan.reason = BlasReason::SelfCheckFailed;
        return plan;
    }
    // No marker (or one we cannot read: then never restart, to be safe from loops).
    const bool may_restart = !in.marker.has_value();
    if (in.tinyformer_blas && lower(*in.tinyformer_blas) == "keep") {
        plan.reason = BlasReason::KeptByUser;
        return plan;
    }
    if (in.openblas_coretype) {
        plan.reason = BlasReason::UserCoretype;
        return plan;
    }
    if (!is_generic_core(in.core_in_use)) {
        plan.reason = BlasReason::AlreadyGood;
        return plan;
    }
    const std::string best = best_core_for(in.features);
    if (best.empty()) {
        plan.reason = BlasReason::NoBetterCore;
        return plan;
    }
    plan.reason = may_restart ? BlasReason::Switched : BlasReason::NotRestarted;
    plan.restart = may_restart;
    plan.environment = {{kCoretype, best}, {kMarker, "switched:" + in.core_in_use}};
    return plan;
}

bool blas_self_check(double* worst) {
    double largest = 0;
    largest = std::max(largest, compare_once(67, 45, 33, Transpose::No, Transpose::No, 1.0f, 0.0f));
    largest = std::max(largest, compare_once(67, 45, 33, Transpose::Yes, Transpose::Yes, 1.0f, 0.0f));
    largest = std::max(largest, compare_once(33, 67, 45, Transpose::No, Transpose::Yes, 0.5f, 1.0f));
    largest = std::max(largest, compare_once(129, 65, 257, Transpose::No, Transpose::Yes, 1.0f, 0.0f));
    if (worst) *worst = largest;
    return largest <= 1e-4;
}

BlasInputs read_blas_inputs() {
    BlasInputs in;
    in.features = cpu_features();
    in.core_in_use = core_in_use();
    in.openblas_coretype = environment(kCoretype);
    in.tinyformer_blas = environment("TINYFORMER_BLAS");
    in.marker = environment(kMarker);
    in.self_check_passed = blas_self_check();
    return in;
}

BlasPlan plan_blas_startup() { return decide_blas(read_blas_inputs()); }

BlasReport blas_report() {
    BlasInputs in = read_blas_inputs();
    BlasReport report;
    report.self_check_passed = blas_self_check(&report.self_check_worst);
    in.self_check_passed = report.self_check_passed;
    const BlasPlan plan = decide_blas(in);
    report.config = blas_description();
    report.cpu = cpu_model_name();
    report.features = cpu_feature_list(in.features);
    report.chosen_core = plan.chosen_core;
    if (plan.reason == BlasReason::UserCoretype)  // OpenBLAS never chose: it was told
        report.chosen_core = "not known: OPENBLAS_CORETYPE was set when OpenBLAS loaded";
    report.core_in_use = in.core_in_use;
    report.threads = blas_threads();
    report.reason = plan.reason;
    const std::string best = best_core_for(in.features);
    std::ostringstream why;
    why << blas_reason_name(plan.reason) << ": ";
    switch (plan.reason) {
        case BlasReason::AlreadyGood: why << "OpenBLAS chose " << in.core_in_use << " for this CPU by itself"; break;
        case BlasReason::NoBetterCore:
            why << "OpenBLAS chose the generic " << in.core_in_use
                << " core, and this CPU has none of the features of a better one";
            break;
        case BlasReason::KeptByUser:
            why << "OpenBLAS's own choice";
            if (is_generic_core(in.core_in_use) && !best.empty()) why << " (" << best << " would fit this CPU)";
            break;
        case BlasReason::UserCoretype:
            why << "OPENBLAS_CORETYPE=" << in.openblas_coretype.value_or("") << " was set before tinyformer started";
            break;
        case BlasReason::Switched:
            if (plan.restart)
                why << "not yet: OpenBLAS chose the generic " << in.core_in_use << " core and " << best
                    << " fits this CPU, but this program did not restart (only tinyformer's programs do)";
            else
                why << "OpenBLAS chose the generic " << plan.chosen_core << " core; the program restarted itself "
                    << "with OPENBLAS_CORETYPE=" << in.core_in_use
                    << ", which passed the self-check (TINYFORMER_BLAS=keep keeps OpenBLAS's choice)";
            if (is_generic_core(in.core_in_use)) why << "; but OpenBLAS still runs a generic core";
            break;
        case BlasReason::NotRestarted:
            why << "OpenBLAS chose the generic " << in.core_in_use << " core and " << best
                << " fits this CPU, but the restart to change it did not happen (" << kMarker << "="
                << in.marker.value_or("") << ")";
            break;
        case BlasReason::SelfCheckFailed:
            why << plan.rejected_core << " disagreed with the naive product, so the program restarted on "
                << "OpenBLAS's own choice, " << plan.chosen_core;
            break;
    }
#ifdef TINYFORMER_OWN_GEMM
    why.str("");
    why << "no BLAS: this build's gemm is the engine's own gemm_blocked (TINYFORMER_OWN_GEMM)";
#endif
    report.why = why.str();
    return report;
}

std::string format_blas_report(const BlasReport& r, const std::string& indent) {
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.1e", r.self_check_worst);
    std::ostringstream out;
    out << indent << "BLAS          " << r.config << "\n";
    out << indent << "BLAS threads  " << r.threads << "\n";
    out << indent << "CPU           " << r.cpu << "\n";
    out << indent << "CPU features  " << r.features << "\n";
    out << indent << "core chosen   " << r.chosen_core
        << (r.reason == BlasReason::UserCoretype ? "\n" : " (by OpenBLAS itself)\n");
    out << indent << "core in use   " << r.core_in_use << "\n";
    out << indent << "why           " << r.why << "\n";
    out << indent << "self-check    sgemm vs gemm_naive: " << (r.self_check_passed ? "agrees" : "DISAGREES")
        << " (max relative difference " << worst << ", limit 1e-4)\n";
    return out.str();
}

}  // namespace tinyformer
