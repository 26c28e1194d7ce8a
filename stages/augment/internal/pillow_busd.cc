// pillow_busd.cc: PillowResample's horizontal pass with AVX-512 VNNI's vpdpbusd on
// 256-bit registers (pillow_kernels.h's HorizontalRows2Busd, PackWeightsBusd). BUILD
// compiles it with -mavx512vnni -mavx512vl -mavx512bw -mavx512vbmi; PillowResample calls
// it only where the CPU has all four.
//
// Each 22-bit weight k is split into three signed bytes, k = k0 + 2^8 k1 + 2^16 k2 (k0,
// k1 in [-128, 127] by signed-digit carries, |k2| <= 127 as |k| < 2^23), so that
// vpdpbusd's u8 x s8 products, four to an int32 lane, sum four taps of one channel
// exactly: sum(p * k) = S0 + 2^8 S1 + 2^16 S2 (wrapping int32, whose true value fits, as
// Pillow's INT32 sum). One 16-byte load holds a group's four RGB pixels; a byte shuffle
// makes each 32-bit lane one channel's four taps (R0 R1 R2 R3 | G.. | B.. | 0 0 0 0), so an
// output's sums end in one 128-bit lane (R, G, B, -) with no cross-lane reduction. Lane 0
// of a register is row 0's output, lane 1 the same output of row 1: the weights (one
// 16-byte vector per piece and group) are broadcast and shared by both rows. Per tap
// group and output row that is 1.5 vpdpbusd and half a shuffle where pillow_avx2.cc's
// vpdpwssd kernels take 2 and 1, plus their lane sums.
//
// Thread-safety: stateless.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "stages/augment/internal/pillow_kernels.h"

#if !defined(__AVX512VNNI__) || !defined(__AVX512VL__) || !defined(__AVX512BW__) || \
    !defined(__AVX512VBMI__)
#error "pillow_busd.cc must be compiled with -mavx512vnni -mavx512vl -mavx512bw -mavx512vbmi"
#endif

namespace flowloader::augment::internal::pillow {
namespace {

// Pillow's rounding term, the start of each output's S0.
constexpr int kHalf = 1 << (kPrecisionBits - 1);

// Output2 sums one output's taps in two rows: lane 0 row 0 (p0), lane 1 row 1 (p1), each
// lane's int32 (R, G, B, -) sums rounded and shifted down by kPrecisionBits (before
// clamping). G > 0: that many groups, unrolled; G == 0: `groups`.
template <int G>
inline __m256i Output2(const uint8_t* p0, const uint8_t* p1, const int8_t* w, int groups,
                       __m256i spread) {
  __m256i s0 = _mm256_set1_epi32(kHalf);
  __m256i s1 = _mm256_setzero_si256();
  __m256i s2 = _mm256_setzero_si256();
  const int n = G > 0 ? G : groups;
#pragma GCC unroll 4
  for (int g = 0; g < n; ++g) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_inserti128_si256(
            _mm256_castsi128_si256(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + g * 3 * kGroupTaps))),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + g * 3 * kGroupTaps)), 1),
        spread);
    const __m128i* wg = reinterpret_cast<const __m128i*>(w + g * kBusdGroupBytes);
    s0 = _mm256_dpbusd_epi32(s0, px, _mm256_broadcastsi128_si256(_mm_loadu_si128(wg)));
    s1 = _mm256_dpbusd_epi32(s1, px, _mm256_broadcastsi128_si256(_mm_loadu_si128(wg + 1)));
    s2 = _mm256_dpbusd_epi32(s2, px, _mm256_broadcastsi128_si256(_mm_loadu_si128(wg + 2)));
  }
  const __m256i s = _mm256_add_epi32(
      s0, _mm256_slli_epi32(_mm256_add_epi32(s1, _mm256_slli_epi32(s2, 8)), 8));
  return _mm256_srai_epi32(s, kPrecisionBits);
}

// Output4 is Output2 for rows 0/1 (*a) and rows 2/3 (*b), each weight vector loaded once
// for all four (the loads, not the multiplies, bounded Output2 on Zen 4).
template <int G>
inline void Output4(const uint8_t* const* p, const int8_t* w, int groups, __m256i spread,
                    __m256i* a, __m256i* b) {
  __m256i a0 = _mm256_set1_epi32(kHalf), b0 = a0;
  __m256i a1 = _mm256_setzero_si256(), b1 = a1, a2 = a1, b2 = a1;
  const int n = G > 0 ? G : groups;
  auto load = [&](const uint8_t* q0, const uint8_t* q1) {
    return _mm256_shuffle_epi8(
        _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0))),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)), 1),
        spread);
  };
#pragma GCC unroll 4
  for (int g = 0; g < n; ++g) {
    const int off = g * 3 * kGroupTaps;
    const __m256i pa = load(p[0] + off, p[1] + off);
    const __m256i pb = load(p[2] + off, p[3] + off);
    const __m128i* wg = reinterpret_cast<const __m128i*>(w + g * kBusdGroupBytes);
    const __m256i w0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(wg));
    const __m256i w1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(wg + 1));
    const __m256i w2 = _mm256_broadcastsi128_si256(_mm_loadu_si128(wg + 2));
    a0 = _mm256_dpbusd_epi32(a0, pa, w0);
    b0 = _mm256_dpbusd_epi32(b0, pb, w0);
    a1 = _mm256_dpbusd_epi32(a1, pa, w1);
    b1 = _mm256_dpbusd_epi32(b1, pb, w1);
    a2 = _mm256_dpbusd_epi32(a2, pa, w2);
    b2 = _mm256_dpbusd_epi32(b2, pb, w2);
  }
  *a = _mm256_srai_epi32(
      _mm256_add_epi32(a0, _mm256_slli_epi32(_mm256_add_epi32(a1, _mm256_slli_epi32(a2, 8)), 8)),
      kPrecisionBits);
  *b = _mm256_srai_epi32(
      _mm256_add_epi32(b0, _mm256_slli_epi32(_mm256_add_epi32(b1, _mm256_slli_epi32(b2, 8)), 8)),
      kPrecisionBits);
}

// Store8 writes eight outputs (v[i] = [row 0 output i | row 1 output i], as Output2
// leaves them) as 3 * n bytes of each row: 32 bytes when `wide` (the 8 past the 24 are
// the next outputs', written later), else a masked store.
inline void Store8(const __m256i* v, uint8_t* out0, uint8_t* out1, bool wide, int n) {
  // Saturating packs clamp to [0, 255] as clip8: b03 lane 0 holds row 0's outputs 0..3
  // as RGB- bytes, lane 1 row 1's; b47 outputs 4..7.
  const __m256i b03 =
      _mm256_packus_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  const __m256i b47 =
      _mm256_packus_epi16(_mm256_packs_epi32(v[4], v[5]), _mm256_packs_epi32(v[6], v[7]));
  // vpermt2b picks each row's 24 RGB bytes from both (index bit 5: b47).
  const __m256i pick0 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14,  //
                                         32, 33, 34, 36, 37, 38, 40, 41, 42, 44, 45, 46,  //
                                         0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i pick1 = _mm256_add_epi8(pick0, _mm256_set1_epi8(16));
  const __m256i r0 = _mm256_permutex2var_epi8(b03, pick0, b47);
  const __m256i r1 = _mm256_permutex2var_epi8(b03, pick1, b47);
  if (wide) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0), r0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1), r1);
  } else {
    const __mmask32 mask = (1u << (3 * n)) - 1;
    _mm256_mask_storeu_epi8(out0, mask, r0);
    _mm256_mask_storeu_epi8(out1, mask, r1);
  }
}

template <int G>
void Rows2(const uint8_t* row0, const uint8_t* row1, const int* xmin, const int8_t* w,
           int groups, int out_w, uint8_t* out0, uint8_t* out1) {
  const __m256i spread = _mm256_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1,
                                          0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  const ptrdiff_t step = static_cast<ptrdiff_t>(G > 0 ? G : groups) * kBusdGroupBytes;
  int x = 0;
  for (; x + 8 <= out_w; x += 8) {
    __m256i v[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      v[i] = Output2<G>(row0 + 3 * xmin[x + i], row1 + 3 * xmin[x + i], w + (x + i) * step,
                        groups, spread);
    }
    Store8(v, out0 + 3 * x, out1 + 3 * x, x + 11 <= out_w, 8);
  }
  if (x < out_w) {
    const int n = out_w - x;
    __m256i v[8];
    for (int i = 0; i < 8; ++i) {
      v[i] = i < n ? Output2<G>(row0 + 3 * xmin[x + i], row1 + 3 * xmin[x + i],
                                w + (x + i) * step, groups, spread)
                   : _mm256_setzero_si256();
    }
    Store8(v, out0 + 3 * x, out1 + 3 * x, false, n);
  }
}

template <int G>
void Rows4(const uint8_t* const* rows, const int* xmin, const int8_t* w, int groups, int out_w,
           uint8_t* const* outs) {
  const __m256i spread = _mm256_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1,
                                          0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  const ptrdiff_t step = static_cast<ptrdiff_t>(G > 0 ? G : groups) * kBusdGroupBytes;
  auto output = [&](int i, __m256i* a, __m256i* b) {
    const ptrdiff_t o = 3 * static_cast<ptrdiff_t>(xmin[i]);
    const uint8_t* p[4] = {rows[0] + o, rows[1] + o, rows[2] + o, rows[3] + o};
    Output4<G>(p, w + i * step, groups, spread, a, b);
  };
  int x = 0;
  for (; x + 8 <= out_w; x += 8) {
    __m256i va[8], vb[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) output(x + i, &va[i], &vb[i]);
    Store8(va, outs[0] + 3 * x, outs[1] + 3 * x, x + 11 <= out_w, 8);
    Store8(vb, outs[2] + 3 * x, outs[3] + 3 * x, x + 11 <= out_w, 8);
  }
  if (x < out_w) {
    const int n = out_w - x;
    __m256i va[8], vb[8];
    for (int i = 0; i < 8; ++i) {
      if (i < n) {
        output(x + i, &va[i], &vb[i]);
      } else {
        va[i] = vb[i] = _mm256_setzero_si256();
      }
    }
    Store8(va, outs[0] + 3 * x, outs[1] + 3 * x, false, n);
    Store8(vb, outs[2] + 3 * x, outs[3] + 3 * x, false, n);
  }
}

}  // namespace

void PackWeightsBusd(const int* k, int count, int groups, int8_t* w) {
  for (int g = 0; g < groups; ++g, w += kBusdGroupBytes) {
    // Per piece, the group's four taps' bytes (tap t in byte t), signed-digit carries.
    uint32_t piece[3] = {0, 0, 0};
    for (int t = 0; t < kGroupTaps; ++t) {
      const int tap = g * kGroupTaps + t;
      const int kt = tap < count ? k[tap] : 0;
      const int k0 = static_cast<int8_t>(kt & 0xFF);
      const int r = (kt - k0) >> 8;
      const int k1 = static_cast<int8_t>(r & 0xFF);
      const int k2 = (r - k1) >> 8;
      piece[0] |= static_cast<uint32_t>(k0 & 0xFF) << (8 * t);
      piece[1] |= static_cast<uint32_t>(k1 & 0xFF) << (8 * t);
      piece[2] |= static_cast<uint32_t>(k2 & 0xFF) << (8 * t);
    }
    for (int i = 0; i < 3; ++i) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(w + 16 * i),
                       _mm_set1_epi32(static_cast<int>(piece[i])));
    }
  }
}

void HorizontalRows2Busd(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                         const int8_t* w, int groups, int out_w, uint8_t* out0, uint8_t* out1) {
  switch (groups) {
    case 1: return Rows2<1>(row0, row1, xmin, w, groups, out_w, out0, out1);
    case 2: return Rows2<2>(row0, row1, xmin, w, groups, out_w, out0, out1);
    case 3: return Rows2<3>(row0, row1, xmin, w, groups, out_w, out0, out1);
    case 4: return Rows2<4>(row0, row1, xmin, w, groups, out_w, out0, out1);
    default: return Rows2<0>(row0, row1, xmin, w, groups, out_w, out0, out1);
  }
}

void HorizontalRows4Busd(const uint8_t* const* rows, const int* xmin, const int8_t* w,
                         int groups, int out_w, uint8_t* const* outs) {
  switch (groups) {
    case 1: return Rows4<1>(rows, xmin, w, groups, out_w, outs);
    case 2: return Rows4<2>(rows, xmin, w, groups, out_w, outs);
    case 3: return Rows4<3>(rows, xmin, w, groups, out_w, outs);
    case 4: return Rows4<4>(rows, xmin, w, groups, out_w, outs);
    default: return Rows4<0>(rows, xmin, w, groups, out_w, outs);
  }
}

}  // namespace flowloader::augment::internal::pillow
