// resample_ycc_avx512.cc: HorizontalPlaneAvx512 (plane_kernels.h) and ColourFloatAvx512
// (colour_kernels.h), compiled with AVX-512 flags (BUILD); nothing here runs before the
// caller has checked the CPU.
#include <immintrin.h>

#include "stages/augment/internal/colour_kernels.h"
#include "stages/augment/internal/plane_kernels.h"

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized (GCC bug 105593; see
// resample_kernels.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace flowloader::augment::internal {

namespace {

// Mul and Add are vmulps and vaddps in the _round_ forms with the current rounding mode,
// which the compiler cannot contract into an FMA (that would round differently from the
// scalar loop).
inline __m512 Mul(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION);
}
inline __m512 Add(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_CUR_DIRECTION);
}

// Group32 filters one group whose inputs lie in r[0, 32).
inline __m512 Group32(const float* r, __m512i index, const float* w, int taps) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512 t0 = _mm512_loadu_ps(r);
  const __m512 t1 = _mm512_loadu_ps(r + 16);
  __m512 acc = Mul(_mm512_permutex2var_ps(t0, index, t1), _mm512_loadu_ps(w));
  for (int k = 1; k < taps; ++k) {
    index = _mm512_add_epi32(index, one);
    acc = Add(acc, Mul(_mm512_permutex2var_ps(t0, index, t1),
                       _mm512_loadu_ps(w + k * kPlaneGroup)));
  }
  return acc;
}

// Group64 filters one group whose inputs lie in r[0, 64): bit 5 of a lane's index picks
// the upper pair of registers.
inline __m512 Group64(const float* r, __m512i index, const float* w, int taps) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i upper = _mm512_set1_epi32(32);
  const __m512 t0 = _mm512_loadu_ps(r);
  const __m512 t1 = _mm512_loadu_ps(r + 16);
  const __m512 t2 = _mm512_loadu_ps(r + 32);
  const __m512 t3 = _mm512_loadu_ps(r + 48);
  __m512 acc = _mm512_setzero_ps();
  for (int k = 0; k < taps; ++k) {
    const __mmask16 high = _mm512_test_epi32_mask(index, upper);
    const __m512 v = _mm512_mask_blend_ps(high, _mm512_permutex2var_ps(t0, index, t1),
                                          _mm512_permutex2var_ps(t2, index, t3));
    const __m512 term = Mul(v, _mm512_loadu_ps(w + k * kPlaneGroup));
    acc = k == 0 ? term : Add(acc, term);
    index = _mm512_add_epi32(index, one);
  }
  return acc;
}

// Group32Pair is Group32 on two rows with the same taps (Cb and Cr): each weight and
// index is loaded once, and the two accumulation chains interleave.
inline void Group32Pair(const float* ra, const float* rb, __m512i index, const float* w,
                        int taps, __m512* acc_a, __m512* acc_b) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512 a0 = _mm512_loadu_ps(ra);
  const __m512 a1 = _mm512_loadu_ps(ra + 16);
  const __m512 b0 = _mm512_loadu_ps(rb);
  const __m512 b1 = _mm512_loadu_ps(rb + 16);
  __m512 wk = _mm512_loadu_ps(w);
  __m512 sa = Mul(_mm512_permutex2var_ps(a0, index, a1), wk);
  __m512 sb = Mul(_mm512_permutex2var_ps(b0, index, b1), wk);
  for (int k = 1; k < taps; ++k) {
    index = _mm512_add_epi32(index, one);
    wk = _mm512_loadu_ps(w + k * kPlaneGroup);
    sa = Add(sa, Mul(_mm512_permutex2var_ps(a0, index, a1), wk));
    sb = Add(sb, Mul(_mm512_permutex2var_ps(b0, index, b1), wk));
  }
  *acc_a = sa;
  *acc_b = sb;
}

}  // namespace

int ColourFloatAvx512(const ColourJob& j) { return ColourFloat<Avx512>(j); }

int ColourUint8Avx512(const ColourJob& j, uint8_t* d) {
  using Isa = Avx512;
  const __m512 minus128 = Isa::Set1(-128.0f);
  const __m512 half = Isa::Set1(0.5f);
  // Quantize's value as bytes: floor(v + 0.5) converted rounding down, clamped to
  // [0, 255] as integers (max 0, then vpmovusdb saturates at 255): 3 instructions where
  // Quantize, truncation and vpmovdb take 5 (the values are far inside int32's range).
  const auto bytes = [half](__m512 v) {
    const __m512i q = _mm512_cvt_roundps_epi32(Isa::Add(v, half),
                                               _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, _mm512_setzero_si512()));
  };
  int x = 0;
  for (; x + 16 <= j.n; x += 16) {  // ColourFloat<Avx512>'s operations, then to bytes.
    const __m512 y = Isa::Load(j.y + x);
    const __m512 cb = Isa::Add(Isa::Load(j.cb + x), minus128);
    const __m512 cr = Isa::Add(Isa::Load(j.cr + x), minus128);
    const __m512 r = Isa::Add(y, Isa::Mul(cr, Isa::Set1(kCrToR)));
    const __m512 g = Isa::Add(Isa::Add(y, Isa::Mul(cb, Isa::Set1(kCbToG))),
                              Isa::Mul(cr, Isa::Set1(kCrToG)));
    const __m512 b = Isa::Add(y, Isa::Mul(cb, Isa::Set1(kCbToB)));
    StoreRgb16(bytes(r), bytes(g), bytes(b), x, j.n, j.flip, d);
  }
  return x;
}

void HorizontalPlaneAvx512(const float* row, const PlaneTaps& t, float* out) {
  const int groups = t.n / kPlaneGroup;
  const int taps = t.taps;
  for (int g = 0; g < groups; ++g) {
    if (t.fits[g] == 0) continue;
    const float* r = row + t.base[g];
    const __m512i index = _mm512_loadu_si512(t.lanes + kPlaneGroup * g);
    const float* w = t.group_weights + static_cast<long>(g) * taps * kPlaneGroup;
    _mm512_storeu_ps(out + kPlaneGroup * g,
                     t.fits[g] == 1 ? Group32(r, index, w, taps) : Group64(r, index, w, taps));
  }
}

void HorizontalPlanesAvx512(const float* row_a, const float* row_b, const PlaneTaps& t,
                           float* out_a, float* out_b) {
  const int groups = t.n / kPlaneGroup;
  const int taps = t.taps;
  for (int g = 0; g < groups; ++g) {
    if (t.fits[g] == 0) continue;
    const __m512i index = _mm512_loadu_si512(t.lanes + kPlaneGroup * g);
    const float* w = t.group_weights + static_cast<long>(g) * taps * kPlaneGroup;
    const float* ra = row_a + t.base[g];
    const float* rb = row_b + t.base[g];
    if (t.fits[g] == 1) {
      __m512 a, b;
      Group32Pair(ra, rb, index, w, taps, &a, &b);
      _mm512_storeu_ps(out_a + kPlaneGroup * g, a);
      _mm512_storeu_ps(out_b + kPlaneGroup * g, b);
    } else {
      _mm512_storeu_ps(out_a + kPlaneGroup * g, Group64(ra, index, w, taps));
      _mm512_storeu_ps(out_b + kPlaneGroup * g, Group64(rb, index, w, taps));
    }
  }
}

}  // namespace flowloader::augment::internal
