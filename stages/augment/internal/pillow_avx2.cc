// pillow_avx2.cc: PillowResample's AVX2 passes (pillow_kernels.h). BUILD compiles this
// file alone with -mavx2; PillowResample calls it only where the CPU has AVX2.
//
// Thread-safety: stateless.
#include <immintrin.h>

#include <cstring>

#include "stages/augment/internal/pillow_kernels.h"

#ifndef __AVX2__
#error "pillow_avx2.cc must be compiled with -mavx2 (stages/augment/BUILD)"
#endif

namespace flowloader::augment::internal::pillow {
namespace {

// Group sums one output's taps: the (R, G, B, 0) sums of taps 4g, 4g+1 in lane 0 and of
// 4g+2, 4g+3 in lane 1, lo and hi halves recombined (wrapping, as Pillow's int32 sum).
inline __m256i Output(const uint8_t* p, const int16_t* w, int groups, __m256i spread) {
  __m256i lo = _mm256_setzero_si256();
  __m256i hi = _mm256_setzero_si256();
  for (int g = 0; g < groups; ++g, p += 3 * kGroupTaps, w += kGroupWeights) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), spread);
    lo = _mm256_add_epi32(
        lo, _mm256_madd_epi16(px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
    hi = _mm256_add_epi32(
        hi, _mm256_madd_epi16(px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
  }
  return _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 15));
}

// Pack4 rounds four outputs' sums (lanes as Output leaves them) to 12 RGB bytes.
inline void Pack4(__m256i a0, __m256i a1, __m256i a2, __m256i a3, uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  // [o0 | o1] and [o2 | o3]: each lane the sum of an output's two lanes.
  const __m256i s01 = _mm256_add_epi32(_mm256_permute2x128_si256(a0, a1, 0x20),
                                       _mm256_permute2x128_si256(a0, a1, 0x31));
  const __m256i s23 = _mm256_add_epi32(_mm256_permute2x128_si256(a2, a3, 0x20),
                                       _mm256_permute2x128_si256(a2, a3, 0x31));
  const __m256i v01 = _mm256_srai_epi32(_mm256_add_epi32(s01, half), kPrecisionBits);
  const __m256i v23 = _mm256_srai_epi32(_mm256_add_epi32(s23, half), kPrecisionBits);
  // Saturating packs clamp to [0, 255] as clip8: lane 0 o0 o2, lane 1 o1 o3.
  const __m256i w = _mm256_packs_epi32(v01, v23);
  const __m256i b = _mm256_packus_epi16(w, w);
  const __m128i rgbx = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  const __m128i rgb =
      _mm_shuffle_epi8(rgbx, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
  const int tail = _mm_extract_epi32(rgb, 2);
  std::memcpy(out + 8, &tail, 4);
}

}  // namespace

void HorizontalRowAvx2(const uint8_t* row, const int* xmin, const int16_t* w, int groups,
                       int out_w, uint8_t* out) {
  const __m256i spread = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                                          6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  const ptrdiff_t step = static_cast<ptrdiff_t>(groups) * kGroupWeights;
  int x = 0;
  for (; x + 4 <= out_w; x += 4, out += 12) {
    const __m256i a0 = Output(row + 3 * xmin[x], w + x * step, groups, spread);
    const __m256i a1 = Output(row + 3 * xmin[x + 1], w + (x + 1) * step, groups, spread);
    const __m256i a2 = Output(row + 3 * xmin[x + 2], w + (x + 2) * step, groups, spread);
    const __m256i a3 = Output(row + 3 * xmin[x + 3], w + (x + 3) * step, groups, spread);
    Pack4(a0, a1, a2, a3, out);
  }
  if (x < out_w) {
    __m256i a[4];
    for (int i = 0; i < 4; ++i) {
      a[i] = x + i < out_w ? Output(row + 3 * xmin[x + i], w + (x + i) * step, groups, spread)
                           : _mm256_setzero_si256();
    }
    uint8_t last[12];
    Pack4(a[0], a[1], a[2], a[3], last);
    std::memcpy(out, last, 3 * (out_w - x));
  }
}

void VerticalRowAvx2(const uint8_t* first, size_t stride, const int32_t* k, int count, int n,
                     uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int x = 0;
  for (; x + 32 <= n; x += 32) {
    __m256i a0 = half, a1 = half, a2 = half, a3 = half;
    const uint8_t* in = first + x;
    for (int t = 0; t < count; ++t, in += stride) {
      const __m256i wt = _mm256_set1_epi32(k[t]);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
      const __m128i l = _mm256_castsi256_si128(v), h = _mm256_extracti128_si256(v, 1);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(l), wt));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(l, 8)), wt));
      a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(h), wt));
      a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(h, 8)), wt));
    }
    const __m256i w01 = _mm256_packs_epi32(_mm256_srai_epi32(a0, kPrecisionBits),
                                           _mm256_srai_epi32(a1, kPrecisionBits));
    const __m256i w23 = _mm256_packs_epi32(_mm256_srai_epi32(a2, kPrecisionBits),
                                           _mm256_srai_epi32(a3, kPrecisionBits));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x),
                        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), order));
  }
  for (; x + 8 <= n; x += 8) {
    __m256i a = half;
    const uint8_t* in = first + x;
    for (int t = 0; t < count; ++t, in += stride) {
      a = _mm256_add_epi32(
          a, _mm256_mullo_epi32(
                 _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in))),
                 _mm256_set1_epi32(k[t])));
    }
    const __m256i w = _mm256_packs_epi32(_mm256_srai_epi32(a, kPrecisionBits), a);
    const __m256i b = _mm256_packus_epi16(w, w);
    // Lane 0 holds values 0..3, lane 1 values 4..7 (each in its low 4 bytes).
    const __m128i v = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + x), v);
  }
  for (; x < n; ++x) {
    int32_t s = 1 << (kPrecisionBits - 1);
    for (int t = 0; t < count; ++t) s += first[t * stride + x] * k[t];
    s >>= kPrecisionBits;
    out[x] = static_cast<uint8_t>(s < 0 ? 0 : (s > 255 ? 255 : s));
  }
}

}  // namespace flowloader::augment::internal::pillow
