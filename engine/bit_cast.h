// bit_cast — a float's bits as an integer and back, as std::bit_cast.
//
// The libc++ of Debian's emscripten 3.1.6 (the WebAssembly engine's
// compiler) has no std::bit_cast; g++ and clang both have the builtin that
// std::bit_cast is made of.
#pragma once

namespace tinyformer {

template <class To, class From>
constexpr To bit_cast(const From& from) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast needs two types of one size");
    return __builtin_bit_cast(To, from);
}

}  // namespace tinyformer
