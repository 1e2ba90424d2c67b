// Running the built `tinyformer` program from a test, as a user would.
//
// The binary is build/tinyformer, relative to the repository root (where
// `make test` runs the suites); `make test` builds it first. The environment
// variable TINYFORMER_BIN names another one (`make sanitize` points it at the
// sanitizer build). Each run has stdin from /dev/null (or a given file), stdout and stderr
// captured to files, OpenBLAS limited to `threads` threads, and a time limit
// (`timeout`), so that a hang fails the test instead of stopping the suite.
#pragma once

#include "tests/helpers.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace test_helpers {

struct CliRun {
    int status = -1;  // the exit status; -1 when the program did not exit normally
    std::string out, err;
};

inline std::string tinyformer_binary() {
    const char* chosen = std::getenv("TINYFORMER_BIN");
    return chosen && *chosen ? chosen : "build/tinyformer";
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// 'text' for /bin/sh, whatever it holds.
inline std::string shell_quoted(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// Runs `tinyformer args...`; exit status 124 means the time limit was hit.
// Standard input is the file `stdin_path`.
inline CliRun run_tinyformer(const std::vector<std::string>& args, int threads = 1, int time_limit_seconds = 300,
                             const std::string& stdin_path = "/dev/null") {
    const std::string binary = tinyformer_binary();
    REQUIRE_MESSAGE(std::filesystem::is_regular_file(binary), binary,
                    " is missing: run the tests from the repository root with `make test`, which builds it");
    TempDirectory capture;
    // appended piece by piece: g++ 12 -O3 warns (-Wrestrict, wrongly) on "literal" + std::string
    std::string command = "OPENBLAS_NUM_THREADS=";
    command.append(std::to_string(threads)).append(" timeout ").append(std::to_string(time_limit_seconds));
    command.append(" ").append(shell_quoted(binary));
    for (const std::string& arg : args) command.append(" ").append(shell_quoted(arg));
    command.append(" <").append(shell_quoted(stdin_path));
    command.append(" >").append(shell_quoted(capture.file("stdout")));
    command.append(" 2>").append(shell_quoted(capture.file("stderr")));
    const int raw = std::system(command.c_str());
    CliRun run;
    run.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    run.out = read_file(capture.file("stdout"));
    run.err = read_file(capture.file("stderr"));
    return run;
}

// run_tinyformer that must exit 0 (REQUIRE, with stderr shown when it does not).
inline CliRun run_tinyformer_ok(const std::vector<std::string>& args, const std::string& stdin_path = "/dev/null") {
    const CliRun run = run_tinyformer(args, 1, 300, stdin_path);
    INFO("stderr: ", run.err);
    REQUIRE(run.status == 0);
    return run;
}

// The first flag of `args` (a tinyformer command's arguments) that names a file or folder to
// write outside build/, as "--plot docs/x.png", or "" when there is none: the commands the docs
// show and the tests run may write only under build/, never over the source tree. Every output
// flag of the CLI: --output, --out, --html, --json, --plot, --png (also as --flag=value).
inline std::string writes_outside_build(const std::vector<std::string>& args) {
    static const char* const kOutputFlags[] = {"--output", "--out", "--html", "--json", "--plot", "--png"};
    for (size_t i = 0; i < args.size(); ++i)
        for (const char* flag : kOutputFlags) {
            const std::string name = flag, joined = name + "=";
            std::string value;
            if (args[i] == name && i + 1 < args.size()) value = args[i + 1];
            else if (args[i].rfind(joined, 0) == 0) value = args[i].substr(joined.size());
            else continue;
            if (value.rfind("build/", 0) != 0 || value.find("..") != std::string::npos) return name + " " + value;
        }
    return "";
}

}  // namespace test_helpers
