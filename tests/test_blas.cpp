// Tests for engine/cpu/blas.*: the core decision as a table of inputs and plans,
// the sgemm self-check on the core in use, and `tinyformer version`.
#include "engine/cpu/blas.h"
#include "tests/run_cli.h"

#include <doctest/doctest.h>

#include <cblas.h>

#include <string>

using tinyformer::BlasInputs;
using tinyformer::BlasPlan;
using tinyformer::BlasReason;
using tinyformer::CpuFeatures;

namespace {

CpuFeatures sapphire_like() { return {true, true, true, true, true, true, true}; }
CpuFeatures skylake_like() { return {true, true, true, true, true, true, false}; }
CpuFeatures haswell_like() { return {true, true, false, false, false, false, false}; }
CpuFeatures old_cpu() { return {}; }

std::string env_value(const BlasPlan& plan, const std::string& name) {
    for (const auto& change : plan.environment)
        if (change.name == name) return change.value.empty() ? "(unset)" : change.value;
    return "(untouched)";
}

}  // namespace

TEST_CASE("best_core_for and is_generic_core: the features -> core table") {
    CHECK(tinyformer::best_core_for(sapphire_like()) == "Cooperlake");
    CHECK(tinyformer::best_core_for(skylake_like()) == "SkylakeX");
    CHECK(tinyformer::best_core_for(haswell_like()) == "Haswell");
    CHECK(tinyformer::best_core_for(old_cpu()).empty());
    CpuFeatures avx2_without_fma = haswell_like();
    avx2_without_fma.fma = false;
    CHECK(tinyformer::best_core_for(avx2_without_fma).empty());
    CpuFeatures partial_avx512 = sapphire_like();  // avx512f alone is not SkylakeX's set
    partial_avx512.avx512vl = false;
    CHECK(tinyformer::best_core_for(partial_avx512) == "Haswell");
    for (const char* generic : {"Prescott", "prescott", "Core2", "Nehalem", "Katmai", "Atom", "Penryn", "Dunnington",
                                "Northwood", "Banias", "Coppermine", "Unknown"})
        CHECK_MESSAGE(tinyformer::is_generic_core(generic), generic);
    for (const char* good : {"Haswell", "SkylakeX", "Cooperlake", "Zen", "Sandybridge"})
        CHECK_MESSAGE(!tinyformer::is_generic_core(good), good);
}

TEST_CASE("decide_blas: features + chosen core + environment -> plan") {
    SUBCASE("generic core on an AVX-512 BF16 CPU: restart with Cooperlake, marker records the original") {
        const BlasPlan plan = tinyformer::decide_blas({sapphire_like(), "Prescott", {}, {}, {}, true});
        CHECK(plan.restart);
        CHECK(plan.reason == BlasReason::Switched);
        CHECK(env_value(plan, "OPENBLAS_CORETYPE") == "Cooperlake");
        CHECK(env_value(plan, "TINYFORMER_BLAS_RESTART") == "switched:Prescott");
    }
    SUBCASE("generic core, AVX-512 without BF16 -> SkylakeX; AVX2+FMA -> Haswell") {
        CHECK(env_value(tinyformer::decide_blas({skylake_like(), "Core2", {}, {}, {}, true}), "OPENBLAS_CORETYPE") ==
              "SkylakeX");
        CHECK(env_value(tinyformer::decide_blas({haswell_like(), "Nehalem", {}, {}, {}, true}), "OPENBLAS_CORETYPE") ==
              "Haswell");
    }
    SUBCASE("no better core for an old CPU") {
        const BlasPlan plan = tinyformer::decide_blas({old_cpu(), "Prescott", {}, {}, {}, true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::NoBetterCore);
    }
    SUBCASE("OpenBLAS's own good choice is kept") {
        const BlasPlan plan = tinyformer::decide_blas({sapphire_like(), "SkylakeX", {}, {}, {}, true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::AlreadyGood);
        CHECK(plan.chosen_core == "SkylakeX");
    }
    SUBCASE("TINYFORMER_BLAS=keep disables the switch") {
        const BlasPlan plan = tinyformer::decide_blas({sapphire_like(), "Prescott", {}, "keep", {}, true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::KeptByUser);
    }
    SUBCASE("the user's OPENBLAS_CORETYPE is never overridden") {
        const BlasPlan plan = tinyformer::decide_blas({sapphire_like(), "Haswell", "Haswell", {}, {}, true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::UserCoretype);
        CHECK(tinyformer::decide_blas({sapphire_like(), "Prescott", "Prescott", {}, {}, true}).reason ==
              BlasReason::UserCoretype);
    }
    SUBCASE("restarted, self-check passed: switched, no further restart") {
        const BlasPlan plan =
            tinyformer::decide_blas({sapphire_like(), "Cooperlake", "Cooperlake", {}, "switched:Prescott", true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::Switched);
        CHECK(plan.chosen_core == "Prescott");
    }
    SUBCASE("restarted, self-check failed: back to OpenBLAS's own choice, once") {
        const BlasPlan plan =
            tinyformer::decide_blas({sapphire_like(), "Cooperlake", "Cooperlake", {}, "switched:Prescott", false});
        CHECK(plan.restart);
        CHECK(plan.reason == BlasReason::SelfCheckFailed);
        CHECK(env_value(plan, "OPENBLAS_CORETYPE") == "(unset)");
        CHECK(env_value(plan, "TINYFORMER_BLAS_RESTART") == "failed:Prescott:Cooperlake");
        // ... and in the process after that, nothing more happens, whatever the check says
        for (bool passed : {true, false}) {
            const BlasPlan after =
                tinyformer::decide_blas({sapphire_like(), "Prescott", {}, {}, "failed:Prescott:Cooperlake", passed});
            CHECK_FALSE(after.restart);
            CHECK(after.reason == BlasReason::SelfCheckFailed);
            CHECK(after.chosen_core == "Prescott");
            CHECK(after.rejected_core == "Cooperlake");
        }
    }
    SUBCASE("an unreadable marker never restarts (no loops)") {
        const BlasPlan plan = tinyformer::decide_blas({sapphire_like(), "Prescott", {}, {}, "unavailable", true});
        CHECK_FALSE(plan.restart);
        CHECK(plan.reason == BlasReason::NotRestarted);
    }
}

TEST_CASE("blas_self_check: sgemm agrees with gemm_naive on the core in use") {
    double worst = 1.0;
    CHECK_MESSAGE(tinyformer::blas_self_check(&worst), "core ", openblas_get_corename(), ", worst ", worst);
    CHECK(worst <= 1e-4);
}

TEST_CASE("the core in use is the one the start-up decision settled on") {
    // tests/main.cpp ran the start-up: after it, no further restart is planned.
    const BlasPlan plan = tinyformer::plan_blas_startup();
    CHECK_FALSE(plan.restart);
    const tinyformer::BlasReport report = tinyformer::blas_report();
    CHECK(report.core_in_use == openblas_get_corename());
    CHECK(report.self_check_passed);
    if (plan.reason == BlasReason::Switched) CHECK_FALSE(tinyformer::is_generic_core(report.core_in_use));
}

TEST_CASE("tinyformer version names the OpenBLAS core in use and why") {
    const test_helpers::CliRun run = test_helpers::run_tinyformer({"version"});
    REQUIRE(run.status == 0);
    CHECK(run.out.find("core in use   " + std::string(openblas_get_corename())) != std::string::npos);
    CHECK(run.out.find("core chosen   ") != std::string::npos);
    CHECK(run.out.find("why           ") != std::string::npos);
    CHECK(run.out.find("OpenBLAS") != std::string::npos);
    CHECK(run.out.find("self-check    sgemm vs gemm_naive: agrees") != std::string::npos);
    CHECK(test_helpers::run_tinyformer({"--version"}).out == run.out);
}
