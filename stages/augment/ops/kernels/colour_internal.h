// colour_internal.h: the pieces colour.cc, colour_hue.cc and
// colour_sharpness.cc share: PIL's Image.blend per value and over a span, and a
// per-channel LUT pass.
//
// Thread-safety: pure functions; RowBuffer is one buffer per thread.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers make their "undefined" vectors as `__m512i __Y = __Y;` (for the
// pass-through operand of an unmasked intrinsic), which -Wall reports, once per inlined
// use, as (maybe-)uninitialized in our kernels. The pragma covers those headers' own
// lines only: warnings in our code keep their usual state.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include "stages/core/image.h"

namespace flowloader::augment::kernels::internal {

// BlendValue is one value of PIL's ImagingBlend (libImaging/Blend.c) of image 1
// (`a`, ImageEnhance's degenerate) and image 2 (`b`, the image): a + alpha * (b
// - a) in float (alpha is a C float there: ImageEnhance's double factor rounds
// once), truncated; for alpha outside [0, 1] clipped to 0..255 first.
inline uint8_t BlendValue(int a, int b, float alpha) {
  const float v = static_cast<float>(a) + alpha * static_cast<float>(b - a);
  if (alpha >= 0 && alpha <= 1) return static_cast<uint8_t>(v);
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

// BlendSpan writes out[i] = BlendValue(a[i], b[i], alpha) for n values (SSE4.1
// where compiled for it: the same float operations, 16 values at a time). `out`
// may be `b`.
void BlendSpan(const uint8_t* a, const uint8_t* b, uint8_t* out, size_t n, float alpha);

// ApplyLuts maps every value of the 3-channel image through its channel's table
// (PIL's Image.point with a 768-entry table, as ImageOps._lut builds it).
void ApplyLuts(Image& img, const uint8_t (&lut)[3][256]);
// ApplyLut maps every value through one table (the same for the three
// channels).
void ApplyLut(Image& img, const uint8_t (&lut)[256]);

// GreyValue is PIL's RGB -> L (libImaging/Convert.c, rgb2l: ITU-R 601-2 luma in
// 16-bit fixed point, rounded).
inline uint8_t GreyValue(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define FLOWLOADER_COLOUR_AVX2 1

// HasAvx2: whether this CPU runs the AVX2 paths (functions with target("avx2"), called
// only where it does; the build's baseline is x86-64-v2), and no test turned them off.
bool HasAvx2();
// HasAvx512: whether this CPU runs the AVX-512 paths (F, BW, VL and DQ; functions with
// that target, called only where it does), and no test turned them off.
bool HasAvx512();
// HasVbmi: whether this CPU has AVX-512 VBMI (and BW), whose byte permutes look a
// 256-entry table up or pick any bytes of 64 at a time, and no test turned it off
// (SetNoVbmiForTesting, SetPortableForTesting).
bool HasVbmi();

// PickBytes8 gathers 8 bytes from lo (16 bytes) and hi (8) by two shuffles, widened.
__attribute__((target("avx2"))) inline __m256i PickBytes8(__m128i lo, __m128i hi, __m128i from_lo,
                                                          __m128i from_hi) {
  return _mm256_cvtepu8_epi32(
      _mm_or_si128(_mm_shuffle_epi8(lo, from_lo), _mm_shuffle_epi8(hi, from_hi)));
}

// LoadRgb8 reads 8 interleaved pixels (24 bytes, no more) as three int32 x 8 vectors.
__attribute__((target("avx2"))) inline void LoadRgb8(const uint8_t* p, __m256i* r, __m256i* g,
                                                     __m256i* b) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
  *r = PickBytes8(lo, hi, _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                  _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1));
  *g =
      PickBytes8(lo, hi, _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                 _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1));
  *b =
      PickBytes8(lo, hi, _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                 _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1));
}

// StoreRgb8 writes three int32 x 8 vectors of values in 0..255 as 8 interleaved pixels
// (24 bytes, no more).
__attribute__((target("avx2"))) inline void StoreRgb8(uint8_t* p, __m256i r, __m256i g, __m256i b) {
  // Each 128-bit lane's four words [r g b 0] to 12 packed bytes.
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0,
                                        1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i rgb = _mm256_shuffle_epi8(
      _mm256_or_si256(r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16))), pack);
  // Pixels 0..3 (12 bytes, then 4 that the next store overwrites), then pixels 4..7.
  const __m128i second = _mm256_extracti128_si256(rgb, 1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(rgb));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 12), second);
  const int last = _mm_extract_epi32(second, 2);
  std::memcpy(p + 20, &last, 4);
}

// Grey8 is GreyValue on 8 pixels.
__attribute__((target("avx2"))) inline __m256i Grey8(__m256i r, __m256i g, __m256i b) {
  const __m256i sum = _mm256_add_epi32(
      _mm256_add_epi32(_mm256_mullo_epi32(r, _mm256_set1_epi32(19595)),
                       _mm256_mullo_epi32(g, _mm256_set1_epi32(38470))),
      _mm256_add_epi32(_mm256_mullo_epi32(b, _mm256_set1_epi32(7471)), _mm256_set1_epi32(0x8000)));
  return _mm256_srli_epi32(sum, 16);
}

// Blend8 is BlendValue on 8 values (a: the degenerate image's).
__attribute__((target("avx2"))) inline __m256i Blend8(__m256i a, __m256i b, __m256 alpha) {
  __m256 v = _mm256_add_ps(_mm256_cvtepi32_ps(a),
                           _mm256_mul_ps(alpha, _mm256_cvtepi32_ps(_mm256_sub_epi32(b, a))));
  v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
  return _mm256_cvttps_epi32(v);
}
#endif

// SetPortableForTesting(true) makes every kernel take its portable path (the one CPUs
// without AVX2 run), so that a test compares both paths on one machine.
void SetPortableForTesting(bool portable);
// PortableForTesting: whether a test turned the vector paths off (SetPortableForTesting).
bool PortableForTesting();
// SetNoVbmiForTesting(true) keeps the kernels off their AVX-512 VBMI table lookups (to
// the AVX2 paths), so that a test compares those with the portable ones too.
void SetNoVbmiForTesting(bool no_vbmi);

// RowBuffer is a per-thread scratch buffer of at least n bytes: it grows to the
// largest row seen and is then reused, so the kernels allocate nothing once
// warm.
uint8_t* RowBuffer(int which, size_t n);

}  // namespace flowloader::augment::kernels::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_
