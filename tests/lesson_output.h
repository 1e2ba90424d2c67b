// The output of `tinyformer lesson all`, run once per test program and cut into its lessons,
// for the tests that read what every lesson prints (tests/test_lesson_formulas.cpp,
// tests/test_doc_numbers.cpp). A lesson's part runs from its heading "=== NAME: ..." to the
// next lesson's or section's heading.
#pragma once

#include "engine/memory/float_buffer.h"
#include "tests/run_cli.h"

#include <algorithm>
#include <map>
#include <string>

namespace test_helpers {

// The one run of `tinyformer lesson all` of a test program (tests/test_lesson.cpp checks it
// whole). It takes about 15 s; the sanitizer build (build/sanitize, about ten times slower,
// sharing CI's two cores with test-cores) gets 30 minutes instead of 5.
inline const CliRun& lesson_all_run() {
    static const CliRun run = [] {
        const bool sanitized = tinyformer::float_buffer_pool_state().starts_with("off (sanitizer");
        return run_tinyformer({"lesson", "all"}, 1, sanitized ? 1800 : 300);
    }();
    return run;
}

inline const std::map<std::string, std::string>& lesson_outputs() {
    static const std::map<std::string, std::string> parts = [] {
        const CliRun& run = lesson_all_run();
        INFO("stderr: ", run.err);
        REQUIRE(run.status == 0);
        std::map<std::string, std::string> cut;
        const std::string& out = run.out;
        for (size_t at = out.find("\n=== "); at != std::string::npos;) {
            const size_t name_start = at + 5;
            const size_t colon = out.find(':', name_start);
            const size_t next_lesson = out.find("\n=== ", name_start);
            const size_t next_section = out.find("\n\n== ", name_start);
            const size_t end = std::min(next_lesson, next_section);
            cut[out.substr(name_start, colon - name_start)] = out.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
            at = next_lesson;
        }
        return cut;
    }();
    return parts;
}

// One lesson's part of `lesson all` (REQUIRE: a lesson of that name ran).
inline const std::string& lesson_output(const std::string& name) {
    const auto found = lesson_outputs().find(name);
    REQUIRE_MESSAGE(found != lesson_outputs().end(), "`tinyformer lesson all` printed no lesson named ", name);
    return found->second;
}

}  // namespace test_helpers
