// tap_kernels.h: BuildAxisFilter's weight pass (resample.h), several outputs per register:
// each lane is one output, run through the scalar code's double operations in the same
// order, so every set gives the scalar code's bits (resample_isa_test).
//
// Why across outputs: per output the work is a few taps (2 nonzero when upsampling), a
// chain of dependent double operations (floor, triangle, ordered sum, divide); the
// scalar loop was bound by that chain and by mispredicted variable-length tap loops
// (12.3 ns per output; dividing by a reciprocal instead measured no faster). One lane
// per output runs the chain for 2, 4 or 8 outputs at once, with a fixed tap count per
// call: 10.9, 7.8 and 6.4 ns per output with BuildAxisFilter's layout (resample.cc).
//
// Included by resample_kernels.h (see there why each set's code is compiled in its own
// file, inside an unnamed namespace, without library templates).
//
// Thread-safety: stateless functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_TAP_KERNELS_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_TAP_KERNELS_H_

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace flowloader::augment::internal {

// TapJob is one axis for the weight pass: output i (0 <= i < out_size) is centred on
// origin + (i + 0.5) * scale and reads the window [xmin[i], xmin[i] + count) with
// Pillow's bilinear weights, count = min(max(xmax - xmin, 0), max_taps).
// The pass writes, for every i below out_size rounded up to 8:
//   weights[k * stride + i]: tap k's weight divided by the output's weight sum, as a
//     float (0 for k >= count or a zero weight), k < max_taps;
//   xmin[i]: the clamped window start;
//   nonzero[i]: bit k set where tap k's weight is above 0 (0: no tap; the caller then
//     takes the nearest pixel, and ignores that output's weights).
struct TapJob {
  double origin;
  double scale;
  double support;
  double inv_filterscale;
  int out_size;
  int win_lo;
  int win_hi;
  int stride;  // >= out_size rounded up to 8.
  float* weights;
  int* xmin;
  uint32_t* nonzero;
};

// TapFn runs the pass for one max_taps (the template argument of TapPass).
using TapFn = void (*)(const TapJob&);

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized in every caller (GCC bug 105593;
// see resample_kernels.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace {

// TapSse41 holds 2 outputs per register; TapAvx2 4; TapAvx512 8 (each defined only
// where its file's flags allow, as the sets in resample_kernels.h). D is the lanes' doubles,
// I their int32s, B the int64 nonzero bits.
struct TapSse41 {
  static constexpr int kLanes = 2;
  using D = __m128d;
  using I = __m128i;
  using B = __m128i;
  static D Set1(double v) { return _mm_set1_pd(v); }
  static D Add(D a, D b) { return _mm_add_pd(a, b); }
  static D Sub(D a, D b) { return _mm_sub_pd(a, b); }
  static D Mul(D a, D b) { return _mm_mul_pd(a, b); }
  static D Div(D a, D b) { return _mm_div_pd(a, b); }
  static D Floor(D v) { return _mm_floor_pd(v); }
  static D Abs(D v) { return _mm_andnot_pd(_mm_set1_pd(-0.0), v); }
  static D Max(D a, D b) { return _mm_max_pd(a, b); }
  // Keep: v where a < b, else 0.
  static D KeepLess(D v, D a, D b) { return _mm_and_pd(v, _mm_cmplt_pd(a, b)); }
  static I Index(int i) { return _mm_setr_epi32(i, i + 1, 0, 0); }
  static D ToDouble(I v) { return _mm_cvtepi32_pd(v); }
  static I ToInt(D v) { return _mm_cvttpd_epi32(v); }
  static I Set1I(int v) { return _mm_set1_epi32(v); }
  static I MinI(I a, I b) { return _mm_min_epi32(a, b); }
  static I MaxI(I a, I b) { return _mm_max_epi32(a, b); }
  static I SubI(I a, I b) { return _mm_sub_epi32(a, b); }
  static B ZeroB() { return _mm_setzero_si128(); }
  // bits | (bit where v > 0).
  static B OrPositive(B bits, D v, int bit) {
    return _mm_or_si128(bits, _mm_and_si128(_mm_castpd_si128(_mm_cmpgt_pd(v, _mm_setzero_pd())),
                                            _mm_set1_epi64x(bit)));
  }
  static void StoreFloats(float* p, D v) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), _mm_cvtpd_ps(v));
  }
  static void StoreInts(int* p, I v) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v); }
  static void StoreBits(uint32_t* p, B v) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_shuffle_epi32(v, 0x08));
  }
};

#ifdef __AVX2__
struct TapAvx2 {
  static constexpr int kLanes = 4;
  using D = __m256d;
  using I = __m128i;
  using B = __m256i;
  static D Set1(double v) { return _mm256_set1_pd(v); }
  static D Add(D a, D b) { return _mm256_add_pd(a, b); }
  static D Sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D Mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D Div(D a, D b) { return _mm256_div_pd(a, b); }
  static D Floor(D v) { return _mm256_floor_pd(v); }
  static D Abs(D v) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v); }
  static D Max(D a, D b) { return _mm256_max_pd(a, b); }
  static D KeepLess(D v, D a, D b) { return _mm256_and_pd(v, _mm256_cmp_pd(a, b, _CMP_LT_OQ)); }
  static I Index(int i) { return _mm_setr_epi32(i, i + 1, i + 2, i + 3); }
  static D ToDouble(I v) { return _mm256_cvtepi32_pd(v); }
  static I ToInt(D v) { return _mm256_cvttpd_epi32(v); }
  static I Set1I(int v) { return _mm_set1_epi32(v); }
  static I MinI(I a, I b) { return _mm_min_epi32(a, b); }
  static I MaxI(I a, I b) { return _mm_max_epi32(a, b); }
  static I SubI(I a, I b) { return _mm_sub_epi32(a, b); }
  static B ZeroB() { return _mm256_setzero_si256(); }
  static B OrPositive(B bits, D v, int bit) {
    const __m256d positive = _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_GT_OQ);
    return _mm256_or_si256(bits, _mm256_and_si256(_mm256_castpd_si256(positive),
                                                  _mm256_set1_epi64x(bit)));
  }
  static void StoreFloats(float* p, D v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
  static void StoreInts(int* p, I v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  static void StoreBits(uint32_t* p, B v) {
    const __m256i low = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(low));
  }
};

#endif  // __AVX2__

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Arithmetic in the _round_ forms with the current rounding mode: the compiler cannot
// fuse those into an FMA (see Avx512 in resample_kernels.h).
struct TapAvx512 {
  static constexpr int kLanes = 8;
  using D = __m512d;
  using I = __m256i;
  using B = __m512i;
  static D Set1(double v) { return _mm512_set1_pd(v); }
  static D Add(D a, D b) { return _mm512_add_round_pd(a, b, _MM_FROUND_CUR_DIRECTION); }
  static D Sub(D a, D b) { return _mm512_sub_round_pd(a, b, _MM_FROUND_CUR_DIRECTION); }
  static D Mul(D a, D b) { return _mm512_mul_round_pd(a, b, _MM_FROUND_CUR_DIRECTION); }
  static D Div(D a, D b) { return _mm512_div_round_pd(a, b, _MM_FROUND_CUR_DIRECTION); }
  static D Floor(D v) {
    return _mm512_roundscale_pd(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  static D Abs(D v) { return _mm512_abs_pd(v); }
  static D Max(D a, D b) { return _mm512_max_pd(a, b); }
  static D KeepLess(D v, D a, D b) {
    return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), v);
  }
  static I Index(int i) {
    return _mm256_add_epi32(_mm256_set1_epi32(i), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static D ToDouble(I v) { return _mm512_cvtepi32_pd(v); }
  static I ToInt(D v) { return _mm512_cvttpd_epi32(v); }
  static I Set1I(int v) { return _mm256_set1_epi32(v); }
  static I MinI(I a, I b) { return _mm256_min_epi32(a, b); }
  static I MaxI(I a, I b) { return _mm256_max_epi32(a, b); }
  static I SubI(I a, I b) { return _mm256_sub_epi32(a, b); }
  static B ZeroB() { return _mm512_setzero_si512(); }
  static B OrPositive(B bits, D v, int bit) {
    const __mmask8 positive = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ);
    return _mm512_mask_or_epi64(bits, positive, bits, _mm512_set1_epi64(bit));
  }
  static void StoreFloats(float* p, D v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
  static void StoreInts(int* p, I v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static void StoreBits(uint32_t* p, B v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi64_epi32(v));
  }
};
#endif  // __AVX512F__ && __AVX512BW__

// TapPass is the scalar BuildAxisFilter's per-output loop (resample.cc) for kLanes
// outputs at a time, with M = max_taps taps each, kept or zeroed by k < count.
// Bit-exactness: per lane the same operations in the same order; zeroed taps add +0 to
// the sum (exact), and divide to +0, as the scalar code's padding.
template <class T, int M>
void TapPass(const TapJob& j) {
  using D = typename T::D;
  using I = typename T::I;
  const D half = T::Set1(0.5);
  const D one = T::Set1(1.0);
  const D zero = T::Set1(0.0);
  const D inv = T::Set1(j.inv_filterscale);
  const D origin = T::Set1(j.origin);
  const D scale = T::Set1(j.scale);
  const D support = T::Set1(j.support);
  const I win_lo = T::Set1I(j.win_lo);
  const I win_hi = T::Set1I(j.win_hi);
  const I max_taps = T::Set1I(M);
  for (int i = 0; i < j.out_size; i += T::kLanes) {
    // center = origin + (i + 0.5) * scale; xmin, xmax as Pillow, clamped.
    const D center = T::Add(origin, T::Mul(T::Add(T::ToDouble(T::Index(i)), half), scale));
    const I xmin = T::MaxI(T::ToInt(T::Floor(T::Add(T::Sub(center, support), half))), win_lo);
    const I xmax = T::MinI(T::ToInt(T::Floor(T::Add(T::Add(center, support), half))), win_hi);
    const I count = T::MinI(T::MaxI(T::SubI(xmax, xmin), T::Set1I(0)), max_taps);
    const D xmin_d = T::ToDouble(xmin);
    const D count_d = T::ToDouble(count);
    D w[M];
    D sum = zero;
    typename T::B bits = T::ZeroB();
    for (int k = 0; k < M; ++k) {
      const D kd = T::Set1(k);
      // Triangle((xmin + k - center + 0.5) * inv): 1 - |x| where positive, else 0.
      const D x = T::Mul(T::Add(T::Sub(T::Add(xmin_d, kd), center), half), inv);
      w[k] = T::KeepLess(T::Max(T::Sub(one, T::Abs(x)), zero), kd, count_d);
      sum = T::Add(sum, w[k]);
      bits = T::OrPositive(bits, w[k], 1 << k);
    }
    for (int k = 0; k < M; ++k) {
      T::StoreFloats(j.weights + static_cast<size_t>(k) * j.stride + i, T::Div(w[k], sum));
    }
    T::StoreInts(j.xmin + i, xmin);
    T::StoreBits(j.nonzero + i, bits);
  }
}

// TapsFor is T's pass for max_taps (odd: 2 * ceil(support) + 1), or nullptr past 9 taps
// (scale above 4), which the scalar loop builds.
template <class T>
TapFn TapsFor(int max_taps) {
  switch (max_taps) {
    case 3: return TapPass<T, 3>;
    case 5: return TapPass<T, 5>;
    case 7: return TapPass<T, 7>;
    case 9: return TapPass<T, 9>;
    default: return nullptr;
  }
}

}  // namespace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_TAP_KERNELS_H_
