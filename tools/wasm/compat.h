// Included before every source of the WebAssembly build (the Makefile's
// -include): what Debian's emscripten 3.1.6 libc++ lacks of C++20 and the
// engine uses. std::bit_cast (engine/attention.cpp, tensor.cpp,
// safetensors.cpp) is clang's __builtin_bit_cast, exactly what a newer
// libc++ defines it as. Nothing here for a native build.
#pragma once

#include <bit>

#if defined(__EMSCRIPTEN__) && !defined(__cpp_lib_bit_cast)
namespace std {
template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
    static_assert(sizeof(To) == sizeof(From), "bit_cast: the two types must have the same size");
    return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif
