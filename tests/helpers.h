// Test helpers shared by the suites.
#pragma once

#include "engine/error.h"

#include <doctest/doctest.h>

#include <string>

namespace test_helpers {

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

}  // namespace test_helpers

// CHECK that `expr` throws tinyformer::Error whose message contains every
// given piece: CHECK_ERROR_CONTAINS(f(x), "query [2,4]", "key [2,6]").
#define CHECK_ERROR_CONTAINS(expr, ...)                                                      \
    do {                                                                                     \
        const std::string message_ = test_helpers::error_message([&] { (void)(expr); });    \
        for (const char* piece_ : {__VA_ARGS__}) {                                           \
            INFO("error message: ", message_);                                               \
            CHECK_MESSAGE(message_.find(piece_) != std::string::npos, "missing: ", piece_);  \
        }                                                                                    \
    } while (0)
