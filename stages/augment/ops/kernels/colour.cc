// colour.cc: the colour kernels of colour.h that are a table or a blend per
// value (PIL 9.4's ImageEnhance and ImageOps, restated on interleaved uint8
// RGB, same bytes). AdjustHue is in colour_hue.cc, AdjustSharpness in
// colour_sharpness.cc.
//
// Speed: a table per call (256 entries, or 3 × 256 from per-channel histograms)
// and one pass over the pixels, or for saturation one float blend per value
// over a row; nothing allocates once a thread's row buffer is warm.
#include "stages/augment/ops/kernels/colour.h"

#include <cstdint>
#include <cstring>

#include "stages/augment/ops/kernels/colour_internal.h"

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

namespace flowloader::augment::kernels {
namespace internal {

void BlendSpan(const uint8_t* a, const uint8_t* b, uint8_t* out, size_t n, float alpha) {
  size_t i = 0;
#if defined(__SSE4_1__)
  // The float operations of BlendValue, four lanes at a time. Clipping to [0,
  // 255] before truncating gives Blend.c's extrapolation branch (<= 0 -> 0, >=
  // 255 -> 255) and changes nothing inside [0, 1], where the result already
  // lies in 0..255.
  const __m128 va = _mm_set1_ps(alpha);
  const __m128 lo = _mm_setzero_ps();
  const __m128 hi = _mm_set1_ps(255.0f);
  for (; i + 16 <= n; i += 16) {
    const __m128i a8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i b8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    // The four groups of four values, widened to int32 (the shift is an immediate).
    const __m128i a32[4] = {_mm_cvtepu8_epi32(a8), _mm_cvtepu8_epi32(_mm_srli_si128(a8, 4)),
                            _mm_cvtepu8_epi32(_mm_srli_si128(a8, 8)),
                            _mm_cvtepu8_epi32(_mm_srli_si128(a8, 12))};
    const __m128i b32[4] = {_mm_cvtepu8_epi32(b8), _mm_cvtepu8_epi32(_mm_srli_si128(b8, 4)),
                            _mm_cvtepu8_epi32(_mm_srli_si128(b8, 8)),
                            _mm_cvtepu8_epi32(_mm_srli_si128(b8, 12))};
    __m128i q[4];
    for (int k = 0; k < 4; ++k) {
      __m128 v = _mm_add_ps(_mm_cvtepi32_ps(a32[k]),
                            _mm_mul_ps(va, _mm_cvtepi32_ps(_mm_sub_epi32(b32[k], a32[k]))));
      v = _mm_min_ps(_mm_max_ps(v, lo), hi);
      q[k] = _mm_cvttps_epi32(v);
    }
    const __m128i packed =
        _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
#endif
  for (; i < n; ++i) out[i] = BlendValue(a[i], b[i], alpha);
}

void ApplyLuts(Image& img, const uint8_t (&lut)[3][256]) {
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t i = 0; i < n; ++i, p += 3) {
    p[0] = lut[0][p[0]];
    p[1] = lut[1][p[1]];
    p[2] = lut[2][p[2]];
  }
}

void ApplyLut(Image& img, const uint8_t (&lut)[256]) {
  uint8_t* p = img.pixels.data();
  const size_t n = img.pixels.size();
  for (size_t i = 0; i < n; ++i) p[i] = lut[p[i]];
}

uint8_t* RowBuffer(int which, size_t n) {
  thread_local std::vector<uint8_t> buffers[3];
  std::vector<uint8_t>& b = buffers[which];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace internal

namespace {

using internal::BlendValue;

// BlendLut is ImageEnhance's blend of a constant degenerate value with the
// image, as a table: out[v] = Blend(constant, v, factor).
void BlendLut(int constant, double factor, uint8_t (&lut)[256]) {
  const float alpha = static_cast<float>(factor);
  for (int v = 0; v < 256; ++v) lut[v] = BlendValue(constant, v, alpha);
}

// Histograms counts each channel's values (Image.histogram on an RGB image).
void Histograms(const Image& img, uint32_t (&h)[3][256]) {
  std::memset(h, 0, sizeof(h));
  const uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t i = 0; i < n; ++i, p += 3) {
    ++h[0][p[0]];
    ++h[1][p[1]];
    ++h[2][p[2]];
  }
}

}  // namespace

// ImageEnhance.Brightness: Image.blend(black, image, factor): out = 0 + factor
// * v.
void AdjustBrightness(Image& img, double factor) {
  if (static_cast<float>(factor) == 1.0f) return;  // Blend.c's copy shortcut.
  uint8_t lut[256];
  BlendLut(0, factor, lut);
  internal::ApplyLut(img, lut);
}

// ImageEnhance.Contrast: the degenerate image is the constant int(mean(L) +
// 0.5), the mean as ImageStat computes it (sum of L values / count, in double).
void AdjustContrast(Image& img, double factor) {
  const size_t n = static_cast<size_t>(img.width) * img.height;
  if (n == 0 || static_cast<float>(factor) == 1.0f) return;
  uint64_t sum = 0;
  const uint8_t* p = img.pixels.data();
  for (size_t i = 0; i < n; ++i, p += 3) sum += internal::GreyValue(p);
  const double mean = static_cast<double>(sum) / static_cast<double>(n);
  const int degenerate = static_cast<int>(mean + 0.5);
  uint8_t lut[256];
  BlendLut(degenerate, factor, lut);
  internal::ApplyLut(img, lut);
}

// ImageEnhance.Color: the degenerate image is
// image.convert("L").convert("RGB"), each pixel's grey value in all three
// channels, blended per value.
void AdjustSaturation(Image& img, double factor) {
  const float alpha = static_cast<float>(factor);
  if (alpha == 1.0f) return;
  if (alpha == 0.0f) {  // Blend.c's shortcut: the degenerate image itself.
    Grayscale(img);
    return;
  }
  const size_t row_bytes = img.stride();
  uint8_t* grey = internal::RowBuffer(0, row_bytes);
  for (int y = 0; y < img.height; ++y) {
    uint8_t* row = img.Row(y);
    for (int x = 0; x < img.width; ++x) {
      const uint8_t l = internal::GreyValue(row + 3 * x);
      grey[3 * x] = grey[3 * x + 1] = grey[3 * x + 2] = l;
    }
    internal::BlendSpan(grey, row, row, row_bytes, alpha);
  }
}

// F.rgb_to_grayscale(img, 3) on PIL: img.convert("L"), stacked three times.
void Grayscale(Image& img) {
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t i = 0; i < n; ++i, p += 3) p[0] = p[1] = p[2] = internal::GreyValue(p);
}

// ImageOps.posterize: i & ~(2 ** (8 - bits) - 1), for bits in 0..8.
void Posterize(Image& img, int bits) {
  if (bits >= 8) return;
  const int mask = bits <= 0 ? 0 : ~((1 << (8 - bits)) - 1);
  uint8_t lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v & mask);
  internal::ApplyLut(img, lut);
}

// ImageOps.solarize: i if i < threshold else 255 - i.
void Solarize(Image& img, double threshold) {
  uint8_t lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v < threshold ? v : 255 - v);
  internal::ApplyLut(img, lut);
}

// ImageOps.invert: 255 - i.
void Invert(Image& img) {
  uint8_t lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(255 - v);
  internal::ApplyLut(img, lut);
}

// ImageOps.autocontrast(cutoff=0, ignore=None): per channel, lo and hi are the
// lowest and highest values present; where hi > lo, lut[i] = int(i * scale +
// offset) clipped to 0..255 with scale = 255 / (hi - lo), offset = -lo * scale
// (Python doubles); else the identity.
void Autocontrast(Image& img) {
  uint32_t h[3][256];
  Histograms(img, h);
  uint8_t lut[3][256];
  for (int c = 0; c < 3; ++c) {
    int lo = 0, hi = 255;
    while (lo < 255 && h[c][lo] == 0) ++lo;
    while (hi > 0 && h[c][hi] == 0) --hi;
    if (hi <= lo) {
      for (int i = 0; i < 256; ++i) lut[c][i] = static_cast<uint8_t>(i);
      continue;
    }
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int i = 0; i < 256; ++i) {
      const int v = static_cast<int>(i * scale + offset);  // int(): toward zero.
      lut[c][i] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
  internal::ApplyLuts(img, lut);
}

// ImageOps.equalize: per channel, with the non-zero bins' counts `histo`, step
// = (sum(histo) - histo[-1]) // 255; where there is more than one bin and step
// > 0, lut[i] = (step // 2 + sum(h[:i])) // step, which Image.point clips to
// 255 (CLIP8); else the identity.
void Equalize(Image& img) {
  uint32_t h[3][256];
  Histograms(img, h);
  uint8_t lut[3][256];
  for (int c = 0; c < 3; ++c) {
    int64_t total = 0, last = 0, bins = 0;
    for (int i = 0; i < 256; ++i) {
      if (h[c][i] == 0) continue;
      total += h[c][i];
      last = h[c][i];
      ++bins;
    }
    const int64_t step = bins <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      for (int i = 0; i < 256; ++i) lut[c][i] = static_cast<uint8_t>(i);
      continue;
    }
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      const int64_t v = n / step;
      lut[c][i] = static_cast<uint8_t>(v > 255 ? 255 : v);
      n += h[c][i];
    }
  }
  internal::ApplyLuts(img, lut);
}

}  // namespace flowloader::augment::kernels
