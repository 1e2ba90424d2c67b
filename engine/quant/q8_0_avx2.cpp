// The AVX2 kernel of q8_matvec (engine/quant/q8_0.h): the same formula as
// q8_matvec_reference, with each group's int8 x int8 sum formed 16 products
// at a time. 16 int8 of a weight row and of x are widened to int16
// (_mm256_cvtepi8_epi16) and multiplied pairwise into 8 int32 lanes
// (_mm256_madd_epi16: |q| <= 127, so a pair sums to at most 2 * 127^2, no
// overflow); the lanes are added at the group's end. Integer sums are exact
// in any order, and the groups are scaled and added in the reference's order,
// so the result equals the reference's bit for bit. A group whose size is
// not a multiple of 16 finishes with plain products.
#include "engine/quant/q8_0.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

namespace tinyformer {

__attribute__((target("avx2"))) void q8_matvec_avx2(const Q8View& weight, const int8_t* qx, const float* sx, float* y) {
    const int64_t G = weight.group, groups = weight.groups_per_row(), wide = G - G % 16;
    for (int64_t r = 0; r < weight.rows; ++r) {
        const int8_t* qw = weight.values + r * weight.cols;
        const float* sw = weight.scales + r * groups;
        float sum = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
            const int8_t* w = qw + g * G;
            const int8_t* x = qx + g * G;
            __m256i lanes = _mm256_setzero_si256();
            for (int64_t i = 0; i < wide; i += 16) {
                const __m256i w16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
                const __m256i x16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
                lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(w16, x16));
            }
            const __m128i half = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
            const __m128i pairs = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0x4E));
            int32_t dot = _mm_cvtsi128_si32(_mm_add_epi32(pairs, _mm_shuffle_epi32(pairs, 0xB1)));
            for (int64_t i = wide; i < G; ++i) dot += int32_t{w[i]} * int32_t{x[i]};
            sum += static_cast<float>(dot) * sw[g] * sx[g];
        }
        y[r] = sum;
    }
}

}  // namespace tinyformer

#else

namespace tinyformer {

// No AVX2 on this platform: q8_uses_avx2() is false and this is never called.
void q8_matvec_avx2(const Q8View& weight, const int8_t* qx, const float* sx, float* y) {
    q8_matvec_reference(weight, qx, sx, y);
}

}  // namespace tinyformer

#endif
