// Test helpers shared by the suites.
#pragma once

#include "engine/error.h"
#include "engine/tensor.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <algorithm>
#include <cmath>
#include <string>
#include <unistd.h>

namespace test_helpers {

// The largest |a_i - b_i| of two tensors of one shape.
inline double max_abs_difference(const tinyformer::Tensor& a, const tinyformer::Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
        worst = std::max(worst, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
    return worst;
}

// The message of the tinyformer::Error that `run` throws, or a marker that
// none was thrown (any other exception propagates and fails the test).
template <typename Run>
std::string error_message(Run&& run) {
    try {
        run();
    } catch (const tinyformer::Error& error) {
        return error.what();
    }
    return "<no tinyformer::Error was thrown>";
}

// A fresh directory under the system temp folder, removed with everything in
// it when the test ends: `TempDirectory dir; dir.file("x.safetensors")`.
class TempDirectory {
public:
    TempDirectory() {
        static std::atomic<int> counter{0};
        path_ = std::filesystem::temp_directory_path() /
                ("tinyformer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDirectory(const TempDirectory&) = delete;
    TempDirectory& operator=(const TempDirectory&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

}  // namespace test_helpers

// CHECK that `expr` throws tinyformer::Error whose message contains every
// given piece: CHECK_ERROR_CONTAINS(f(x), "query [2,4]", "key [2,6]").
#define CHECK_ERROR_CONTAINS(expr, ...)                                                      \
    do {                                                                                     \
        const std::string message_ = test_helpers::error_message([&] { (void)(expr); });    \
        for (const char* piece_ : {__VA_ARGS__}) {                                           \
            INFO("error message: ", message_);                                               \
            CHECK_MESSAGE(message_.find(piece_) != std::string::npos, "missing: ", std::string(piece_));\
        }                                                                                    \
    } while (0)
