// tinyformer::Error — the one exception type of the library.
//
// Every public function validates what it is given and throws Error with a
// message that names the operation, the argument, what was expected and what
// came, e.g.
//   attention: key has Dk=32 but query has Dk=64 (query [2,4,64], key [2,6,32])
// The CLI prints it as `tinyformer: error: <message>` and exits 1.
// message() is the whole text; what() stops at a NUL byte the text may hold
// (a file's tensor name, a line of input), so the CLI prints message().
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tinyformer {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message)
        : std::runtime_error(message), message_(std::make_shared<const std::string>(message)) {}

    const std::string& message() const noexcept { return *message_; }

private:
    std::shared_ptr<const std::string> message_;  // shared: copying an exception must not throw
};

// "[2,4,64]" — the one way shapes are written in messages, tests and docs.
std::string shape_string(const std::vector<int64_t>& shape);

// Any streamable pieces as one string: text_of("B=", 2, " rows") == "B=2 rows".
template <typename... Parts>
std::string text_of(const Parts&... parts) {
    std::ostringstream text;
    (text << ... << parts);
    return text.str();
}

// Throws an Error built from the pieces: fail("attention: ", x, " ...").
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
    throw Error(text_of(parts...));
}

}  // namespace tinyformer
