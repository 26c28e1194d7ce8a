// pillow_avx2.cc: PillowResample's AVX2 passes (pillow_kernels.h). BUILD compiles this
// file alone with -mavx2; PillowResample calls it only where the CPU has AVX2.
// pillow_vnni.cc compiles its horizontal pass again with FLOWLOADER_PILLOW_VNNI (and
// -mavx512vnni -mavx512vl): each pmaddwd + paddd becomes one vpdpwssd, the same wrapping
// int32 sums (the pair products never overflow: weights are 15-bit halves, pixels 8-bit).
//
// Thread-safety: stateless.
#include <immintrin.h>

#include <cstring>

#include "stages/augment/internal/pillow_kernels.h"

#ifndef __AVX2__
#error "pillow_avx2.cc must be compiled with -mavx2 (stages/augment/BUILD)"
#endif

#ifdef FLOWLOADER_PILLOW_VNNI
#define PILLOW_ISA(name) name##Vnni
#else
#define PILLOW_ISA(name) name##Avx2
#endif

namespace flowloader::augment::internal::pillow {
namespace {

// MaddAdd is acc + pmaddwd(a, b), wrapping.
inline __m256i MaddAdd(__m256i acc, __m256i a, __m256i b) {
#ifdef FLOWLOADER_PILLOW_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// Pillow's rounding term, folded into the first lane of each output's lo sum.
constexpr int kHalf = 1 << (kPrecisionBits - 1);

// Group sums one output's taps: the (R, G, B, 0) sums of taps 4g, 4g+1 in lane 0 (plus
// kHalf) and of 4g+2, 4g+3 in lane 1, lo and hi halves recombined (wrapping, as
// Pillow's int32 sum).
inline __m256i Output(const uint8_t* p, const int16_t* w, int groups, __m256i spread) {
  __m256i lo = _mm256_setr_epi32(kHalf, kHalf, kHalf, 0, 0, 0, 0, 0);
  __m256i hi = _mm256_setzero_si256();
  for (int g = 0; g < groups; ++g, p += 3 * kGroupTaps, w += kGroupWeights) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), spread);
    lo = MaddAdd(lo, px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
    hi = MaddAdd(hi, px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16)));
  }
  return _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 15));
}

// Pack4 rounds four outputs' sums (lanes as Output leaves them) to 12 RGB bytes.
inline void Pack4(__m256i a0, __m256i a1, __m256i a2, __m256i a3, uint8_t* out) {
  // [o0 | o1] and [o2 | o3]: each lane the sum of an output's two lanes.
  const __m256i s01 = _mm256_add_epi32(_mm256_permute2x128_si256(a0, a1, 0x20),
                                       _mm256_permute2x128_si256(a0, a1, 0x31));
  const __m256i s23 = _mm256_add_epi32(_mm256_permute2x128_si256(a2, a3, 0x20),
                                       _mm256_permute2x128_si256(a2, a3, 0x31));
  const __m256i v01 = _mm256_srai_epi32(s01, kPrecisionBits);
  const __m256i v23 = _mm256_srai_epi32(s23, kPrecisionBits);
  // Saturating packs clamp to [0, 255] as clip8: lane 0 o0 o2, lane 1 o1 o3.
  const __m256i w = _mm256_packs_epi32(v01, v23);
  const __m256i b = _mm256_packus_epi16(w, w);
  const __m128i rgbx =
      _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  const __m128i rgb =
      _mm_shuffle_epi8(rgbx, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
  const int tail = _mm_extract_epi32(rgb, 2);
  std::memcpy(out + 8, &tail, 4);
}

// Pack8 rounds eight outputs' sums to 24 RGB bytes, with a 32-byte store when `wide` (the
// 8 bytes past them are the next outputs', written later). Pairing o_i with o_i+4 lets
// the in-lane packs leave o0..o3 in lane 0 and o4..o7 in lane 1 in order; perf put ~40%
// of the pass's samples on Pack4's 128-bit tail and two stores per four outputs.
// Pair8 is Pack8's first step for outputs i and i + 4: [o_i | o_i+4], rounded.
inline __m256i Pair8(__m256i ai, __m256i ai4) {
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_permute2x128_si256(ai, ai4, 0x20),
                                            _mm256_permute2x128_si256(ai, ai4, 0x31)),
                           kPrecisionBits);
}

// Store8 is Pack8's second step, from Pair8's four results.
inline void Store8(const __m256i* v, uint8_t* out, bool wide) {
  // Saturating packs clamp to [0, 255] as clip8.
  const __m256i b =
      _mm256_packus_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  const __m256i rgb = _mm256_permutevar8x32_epi32(
      _mm256_shuffle_epi8(b, _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
                                              -1, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1,
                                              -1, -1)),
      _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
  if (wide) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), rgb);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(rgb));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), _mm256_extracti128_si256(rgb, 1));
  }
}

inline void Pack8(const __m256i* a, uint8_t* out, bool wide) {
  __m256i v[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) v[i] = Pair8(a[i], a[i + 4]);
  Store8(v, out, wide);
}

// OutputN is Output for a fixed group count, unrolled (the runtime loop over groups
// serialized each output: pillow_bench 366² -> 224², 2 groups, 226 -> 205 us).
template <int G>
inline __m256i OutputN(const uint8_t* p, const int16_t* w, __m256i spread) {
  __m256i lo = _mm256_setr_epi32(kHalf, kHalf, kHalf, 0, 0, 0, 0, 0);
  __m256i hi = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + g * 3 * kGroupTaps))),
        spread);
    const __m256i* wg = reinterpret_cast<const __m256i*>(w + g * kGroupWeights);
    lo = MaddAdd(lo, px, _mm256_loadu_si256(wg));
    hi = MaddAdd(hi, px, _mm256_loadu_si256(wg + 1));
  }
  return _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 15));
}

template <int G>
void HorizontalRowN(const uint8_t* row, const int* xmin, const int16_t* w, int groups, int out_w,
                    uint8_t* out, __m256i spread) {
  const ptrdiff_t step = static_cast<ptrdiff_t>(groups) * kGroupWeights;
  auto output = [&](int i) {
    return G > 0 ? OutputN<G>(row + 3 * xmin[i], w + i * step, spread)
                 : Output(row + 3 * xmin[i], w + i * step, groups, spread);
  };
  int x = 0;
  for (; x + 8 <= out_w; x += 8, out += 24) {
    __m256i a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = output(x + i);
    Pack8(a, out, x + 11 <= out_w);
  }
  for (; x + 4 <= out_w; x += 4, out += 12) {
    const __m256i a0 = output(x);
    const __m256i a1 = output(x + 1);
    const __m256i a2 = output(x + 2);
    const __m256i a3 = output(x + 3);
    Pack4(a0, a1, a2, a3, out);
  }
  if (x < out_w) {
    __m256i a[4];
    for (int i = 0; i < 4; ++i) a[i] = x + i < out_w ? output(x + i) : _mm256_setzero_si256();
    uint8_t last[12];
    Pack4(a[0], a[1], a[2], a[3], last);
    std::memcpy(out, last, 3 * (out_w - x));
  }
}

// Output2N is OutputN for the same output in two rows, each weight vector loaded once.
template <int G>
inline void Output2N(const uint8_t* p0, const uint8_t* p1, const int16_t* w, __m256i spread,
                     __m256i* a0, __m256i* a1) {
  __m256i lo0 = _mm256_setr_epi32(kHalf, kHalf, kHalf, 0, 0, 0, 0, 0), lo1 = lo0;
  __m256i hi0 = _mm256_setzero_si256(), hi1 = hi0;
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256i* wg = reinterpret_cast<const __m256i*>(w + g * kGroupWeights);
    const __m256i wl = _mm256_loadu_si256(wg), wh = _mm256_loadu_si256(wg + 1);
    const __m256i x0 = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + g * 3 * kGroupTaps))),
        spread);
    const __m256i x1 = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + g * 3 * kGroupTaps))),
        spread);
    lo0 = MaddAdd(lo0, x0, wl);
    hi0 = MaddAdd(hi0, x0, wh);
    lo1 = MaddAdd(lo1, x1, wl);
    hi1 = MaddAdd(hi1, x1, wh);
  }
  *a0 = _mm256_add_epi32(lo0, _mm256_slli_epi32(hi0, 15));
  *a1 = _mm256_add_epi32(lo1, _mm256_slli_epi32(hi1, 15));
}

// HorizontalRows2N: HorizontalRowN over two rows, eight outputs of each per step; the
// rest (under 8) through HorizontalRowN.
template <int G>
void HorizontalRows2N(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                      const int16_t* w, int out_w, uint8_t* out0, uint8_t* out1,
                      __m256i spread) {
  constexpr ptrdiff_t step = static_cast<ptrdiff_t>(G) * kGroupWeights;
  int x = 0;
  for (; x + 8 <= out_w; x += 8) {
    // Outputs i and i + 4 together, reduced at once: 8 registers live, not 16.
    __m256i va[4], vb[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      __m256i a0, b0, a4, b4;
      Output2N<G>(row0 + 3 * xmin[x + i], row1 + 3 * xmin[x + i], w + (x + i) * step, spread,
                  &a0, &b0);
      Output2N<G>(row0 + 3 * xmin[x + i + 4], row1 + 3 * xmin[x + i + 4],
                  w + (x + i + 4) * step, spread, &a4, &b4);
      va[i] = Pair8(a0, a4);
      vb[i] = Pair8(b0, b4);
    }
    Store8(va, out0 + 3 * x, x + 11 <= out_w);
    Store8(vb, out1 + 3 * x, x + 11 <= out_w);
  }
  if (x < out_w) {
    HorizontalRowN<G>(row0, xmin + x, w + x * step, G, out_w - x, out0 + 3 * x, spread);
    HorizontalRowN<G>(row1, xmin + x, w + x * step, G, out_w - x, out1 + 3 * x, spread);
  }
}

#ifndef FLOWLOADER_PILLOW_VNNI
// VerticalBlock writes 8 * B values of VerticalRowAvx2 (B a multiple of 4): B int32
// accumulators of 8 values, each row's bytes widened by vpmovzxbd from memory (one
// 32-byte load split in registers took 7 shuffles per 32 values where these take 4:
// pillow_bench 366² -> 224² 190 -> 181 us). B = 8 (64 values a step) measured no faster;
// nor did madd over pairs of rows with 15-bit weight halves (Zen 4's vpmulld is one uop:
// the unpacks cost what the multiplies saved).
template <int B>
inline void VerticalBlock(const uint8_t* in, size_t stride, const int32_t* k, int count,
                          uint8_t* out) {
  __m256i a[B];
#pragma GCC unroll 8
  for (int i = 0; i < B; ++i) a[i] = _mm256_set1_epi32(kHalf);
  for (int t = 0; t < count; ++t, in += stride) {
    const __m256i wt = _mm256_set1_epi32(k[t]);
#pragma GCC unroll 8
    for (int i = 0; i < B; ++i) {
      const __m256i v =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8 * i)));
      a[i] = _mm256_add_epi32(a[i], _mm256_mullo_epi32(v, wt));
    }
  }
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
#pragma GCC unroll 2
  for (int i = 0; i < B; i += 4) {
    const __m256i w01 = _mm256_packs_epi32(_mm256_srai_epi32(a[i], kPrecisionBits),
                                           _mm256_srai_epi32(a[i + 1], kPrecisionBits));
    const __m256i w23 = _mm256_packs_epi32(_mm256_srai_epi32(a[i + 2], kPrecisionBits),
                                           _mm256_srai_epi32(a[i + 3], kPrecisionBits));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i),
                        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), order));
  }
}

#endif  // FLOWLOADER_PILLOW_VNNI

}  // namespace

void PILLOW_ISA(HorizontalRow)(const uint8_t* row, const int* xmin, const int16_t* w,
                               int groups, int out_w, uint8_t* out) {
  const __m256i spread =
      _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                       6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  switch (groups) {
    case 1: return HorizontalRowN<1>(row, xmin, w, groups, out_w, out, spread);
    case 2: return HorizontalRowN<2>(row, xmin, w, groups, out_w, out, spread);
    case 3: return HorizontalRowN<3>(row, xmin, w, groups, out_w, out, spread);
    case 4: return HorizontalRowN<4>(row, xmin, w, groups, out_w, out, spread);
    default: return HorizontalRowN<0>(row, xmin, w, groups, out_w, out, spread);
  }
}

bool PILLOW_ISA(HorizontalRows2)(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                                 const int16_t* w, int groups, int out_w, uint8_t* out0,
                                 uint8_t* out1) {
  const __m256i spread =
      _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                       6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  switch (groups) {
    case 1: HorizontalRows2N<1>(row0, row1, xmin, w, out_w, out0, out1, spread); return true;
    case 2: HorizontalRows2N<2>(row0, row1, xmin, w, out_w, out0, out1, spread); return true;
    case 3: HorizontalRows2N<3>(row0, row1, xmin, w, out_w, out0, out1, spread); return true;
    default: return false;
  }
}

#ifndef FLOWLOADER_PILLOW_VNNI
void VerticalRowAvx2(const uint8_t* first, size_t stride, const int32_t* k, int count, int n,
                     uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(kHalf);
  int x = 0;
  for (; x + 32 <= n; x += 32) VerticalBlock<4>(first + x, stride, k, count, out + x);
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

#endif  // FLOWLOADER_PILLOW_VNNI

}  // namespace flowloader::augment::internal::pillow
