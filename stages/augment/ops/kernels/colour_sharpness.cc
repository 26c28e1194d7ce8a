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
