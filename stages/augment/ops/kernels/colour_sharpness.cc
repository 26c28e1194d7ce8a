// colour_sharpness.cc: F.adjust_sharpness on a PIL image:
// ImageEnhance.Sharpness, which is
// Image.blend(image.filter(ImageFilter.SMOOTH), image, factor) (PIL 9.4).
//
// The SMOOTH image follows Filter.c's ImagingFilter3x3: the first and last rows
// and columns are copied unfiltered, and an image narrower or shorter than 3 is
// copied whole (ImagingFilter). The interior is SmoothValue, PIL's float sum in
// exact integer form. The image is filtered and blended in place a row at a
// time, keeping the two original rows the next row's window still needs in
// per-thread row buffers.
#include "stages/augment/ops/kernels/colour_sharpness.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/kernels/colour_internal.h"

namespace flowloader::augment::kernels {
namespace internal {

uint8_t SmoothLiteral(const uint8_t (&w)[9]) {
  // _filter divides each weight by the scale in float; ImagingFilter3x3 adds
  // 0.5 to the offset "for rounding" and sums KERNEL1x3 of the row below, the
  // row, the row above.
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  const float kernel[9] = {k1, k1, k1, k1, k5, k1, k1, k1, k1};
  auto row = [&](int r, const float* k) {
    return static_cast<float>(w[3 * r]) * k[0] + static_cast<float>(w[3 * r + 1]) * k[1] +
           static_cast<float>(w[3 * r + 2]) * k[2];
  };
  float ss = 0.0f + 0.5f;
  ss += row(2, &kernel[0]);
  ss += row(1, &kernel[3]);
  ss += row(0, &kernel[6]);
  if (ss <= 0.0f) return 0;
  if (ss >= 255.0f) return 255;
  return static_cast<uint8_t>(ss);
}

}  // namespace internal

namespace {

#if defined(FLOWLOADER_COLOUR_AVX2)
// Widen32 loads 32 values as uint16 lanes.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) inline __m512i Widen32(
    const uint8_t* p) {
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// SharpenStep32 writes row's values i .. i + 31 as BlendValue(SmoothValue(window sum), here,
// alpha): the sums in uint16 lanes (SmoothValue's / 13 as the SSE path's multiply-high),
// the blend as BlendSpan's float operations on 16 int32 lanes, the clamp to 0..255 before
// truncating.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) inline void SharpenStep32(
    const uint8_t* above, const uint8_t* here, const uint8_t* below, uint8_t* row, size_t i,
    __m512 a) {
  const __m512i centre = Widen32(here + i);
  __m512i sum = _mm512_add_epi16(
      _mm512_add_epi16(_mm512_add_epi16(Widen32(above + i - 3), Widen32(above + i)),
                       _mm512_add_epi16(Widen32(above + i + 3), Widen32(here + i - 3))),
      _mm512_add_epi16(_mm512_add_epi16(Widen32(here + i + 3), Widen32(below + i - 3)),
                       _mm512_add_epi16(Widen32(below + i), Widen32(below + i + 3))));
  sum = _mm512_add_epi16(_mm512_add_epi16(sum, _mm512_set1_epi16(6)),
                         _mm512_add_epi16(centre, _mm512_slli_epi16(centre, 2)));
  const __m512i smooth = _mm512_mulhi_epu16(sum, _mm512_set1_epi16(5042));
  __m128i out[2];
  for (int half = 0; half < 2; ++half) {
    const __m512i s32 = _mm512_cvtepu16_epi32(
        half == 0 ? _mm512_castsi512_si256(smooth) : _mm512_extracti64x4_epi64(smooth, 1));
    const __m512i h32 = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(here + i + 16 * half)));
    const __m512 d = _mm512_mul_ps(a, _mm512_cvtepi32_ps(_mm512_sub_epi32(h32, s32)));
    // An explicit rounding mode keeps the add apart from the multiply (no FMA).
    __m512 v = _mm512_add_round_ps(_mm512_cvtepi32_ps(s32), d,
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    out[half] = _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + i), _mm256_set_m128i(out[1], out[0]));
}

// SharpenRowAvx512 writes row's values 3 .. n - 4 (SharpenStep32), n >= 38: 32 a step, the
// last step overlapping the one before it (writing the same values again) rather than
// leaving a tail of up to 31 values one at a time (224² AdjustSharpness: 56 -> 43 us,
// colour_bench).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void SharpenRowAvx512(
    const uint8_t* above, const uint8_t* here, const uint8_t* below, uint8_t* row, size_t n,
    float alpha) {
  const __m512 a = _mm512_set1_ps(alpha);
  for (size_t i = 3; i + 35 <= n; i += 32) SharpenStep32(above, here, below, row, i, a);
  SharpenStep32(above, here, below, row, n - 35, a);
}
#endif

// SharpenRowFast runs the AVX-512 row where the CPU has it and the row holds at least 32
// interior values, and says whether it did.
bool SharpenRowFast(const uint8_t* above, const uint8_t* here, const uint8_t* below,
                    uint8_t* row, size_t n, float alpha) {
#if defined(FLOWLOADER_COLOUR_AVX2)
  // Infinite factors keep the SSE path's NaN handling, which the edge columns see too.
  if (n >= 38 && internal::HasAvx512() && std::isfinite(alpha)) {
    SharpenRowAvx512(above, here, below, row, n, alpha);
    return true;
  }
#endif
  return false;
}

}  // namespace

void AdjustSharpness(Image& img, double factor) {
  const float alpha = static_cast<float>(factor);
  // Blend.c copies image 2 at alpha 1; an image under 3 × 3 is its own SMOOTH
  // image, and blending an image with itself gives it back.
  if (alpha == 1.0f || img.width < 3 || img.height < 3) return;
  const size_t n = img.stride();
  uint8_t* above = internal::RowBuffer(0, n);  // Original row y - 1.
  uint8_t* here = internal::RowBuffer(1, n);   // Original row y.
  uint8_t* smooth = internal::RowBuffer(2, n);
  std::memcpy(above, img.Row(0), n);
  for (int y = 1; y + 1 < img.height; ++y) {
    uint8_t* row = img.Row(y);
    const uint8_t* below = img.Row(y + 1);  // Not yet written: still original.
    std::memcpy(here, row, n);
    // AVX-512: SMOOTH and the blend in one pass, 32 values a step (224² AdjustSharpness:
    // 150 -> 43 us, colour_bench); the edge columns blend to themselves, so row keeps them.
    if (SharpenRowFast(above, here, below, row, n, alpha)) {
      std::swap(above, here);
      continue;
    }
    std::memcpy(smooth, here, 3);  // The first and last columns stay unfiltered.
    std::memcpy(smooth + n - 3, here + n - 3, 3);
    size_t i = 3;
#if defined(__SSE4_1__)
    // 16 values at a time in uint16 lanes: sum + 6 <= 3321, and for every such x,
    // x / 13 == (x * 5042) >> 16 (checked for all of them; the high half of a 16-bit
    // multiply).
    for (; i + 19 <= n; i += 16) {
      auto at = [](const uint8_t* row) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
      };
      const __m128i v[9] = {at(above + i - 3), at(above + i), at(above + i + 3),
                            at(here + i - 3),  at(here + i),  at(here + i + 3),
                            at(below + i - 3), at(below + i), at(below + i + 3)};
      const __m128i zero = _mm_setzero_si128();
      __m128i lo = _mm_set1_epi16(6), hi = _mm_set1_epi16(6);
      for (int k = 0; k < 9; ++k) {
        const int weight = k == 4 ? 5 : 1;
        const __m128i l = _mm_mullo_epi16(_mm_cvtepu8_epi16(v[k]), _mm_set1_epi16(weight));
        const __m128i h = _mm_mullo_epi16(_mm_unpackhi_epi8(v[k], zero), _mm_set1_epi16(weight));
        lo = _mm_add_epi16(lo, l);
        hi = _mm_add_epi16(hi, h);
      }
      const __m128i k13 = _mm_set1_epi16(5042);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(smooth + i),
                       _mm_packus_epi16(_mm_mulhi_epu16(lo, k13), _mm_mulhi_epu16(hi, k13)));
    }
#endif
    for (; i + 3 < n; ++i) {
      const unsigned sum = above[i - 3] + above[i] + above[i + 3] + here[i - 3] + 5u * here[i] +
                           here[i + 3] + below[i - 3] + below[i] + below[i + 3];
      smooth[i] = internal::SmoothValue(sum);
    }
    internal::BlendSpan(smooth, here, row, n, alpha);
    std::swap(above, here);
  }
}

}  // namespace flowloader::augment::kernels
