// colour.cc: the colour kernels of colour.h that are a table or a blend per
// value (PIL 9.4's ImageEnhance and ImageOps, restated on interleaved uint8
// RGB, same bytes). AdjustHue is in colour_hue.cc, AdjustSharpness in
// colour_sharpness.cc.
//
// Speed: a table per call (256 entries, or 3 × 256 from per-channel histograms or
// ranges; looked up 64 values at a time where the CPU has AVX-512 VBMI) and one pass
// over the pixels, or for saturation one float blend per value
// over a row (16 pixels a step where the CPU has AVX-512 VBMI, 8 with AVX2);
// nothing allocates once a thread's row buffer is warm.
#include "stages/augment/ops/kernels/colour.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/core/cpu.h"

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

namespace {
std::atomic<bool> portable_for_testing{false};
std::atomic<bool> no_vbmi_for_testing{false};

#if defined(FLOWLOADER_COLOUR_AVX2)
// Lookup256 looks 64 values up in a 256-entry table held as four 64-entry quarters: two
// 128-entry permutes (vpermt2b, index bits 0..6), picked by the values' top bits (`high`).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i Lookup256(
    __m512i x, __mmask64 high, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
  return _mm512_mask_blend_epi8(high, _mm512_permutex2var_epi8(t0, x, t1),
                                _mm512_permutex2var_epi8(t2, x, t3));
}

// ApplyLutVbmi maps the first n & ~63 values through `lut` and returns how many, 64 a
// step (Lookup256).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t ApplyLutVbmi(
    uint8_t* p, size_t n, const uint8_t (&lut)[256]) {
  const size_t bulk = n & ~static_cast<size_t>(63);
  const __m512i t0 = _mm512_loadu_si512(lut), t1 = _mm512_loadu_si512(lut + 64);
  const __m512i t2 = _mm512_loadu_si512(lut + 128), t3 = _mm512_loadu_si512(lut + 192);
  for (size_t i = 0; i < bulk; i += 64) {
    const __m512i x = _mm512_loadu_si512(p + i);
    _mm512_storeu_si512(p + i, Lookup256(x, _mm512_movepi8_mask(x), t0, t1, t2, t3));
  }
  return bulk;
}
#endif
}  // namespace

#if defined(FLOWLOADER_COLOUR_AVX2)
namespace {
// ChannelMask(s, c): the bytes j of a 64-byte block whose channel (s + j) % 3 is c, s being
// the block's offset in the image modulo 3.
constexpr __mmask64 ChannelMask(int s, int c) {
  __mmask64 m = 0;
  for (int j = 0; j < 64; ++j) {
    if ((s + j) % 3 == c) m |= static_cast<__mmask64>(1) << j;
  }
  return m;
}

// Quarter is entries 64 q .. 64 q + 63 of channel c's table.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i Quarter(
    const uint8_t (&lut)[3][256], int c, int q) {
  return _mm512_loadu_si512(lut[c] + 64 * q);
}

// ApplyLutsVbmi maps the first n & ~63 bytes of interleaved RGB through the channel tables
// and returns how many: each 64-byte block looked up in all three tables, the channels
// picked by position (the block's offset modulo 3: 0, 1, 2 for the three blocks of a
// 192-byte step). The tables stay in named registers (GCC spills arrays of vectors).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t ApplyLutsVbmi(
    uint8_t* p, size_t n, const uint8_t (&lut)[3][256]) {
  const __m512i r0 = Quarter(lut, 0, 0), r1 = Quarter(lut, 0, 1);
  const __m512i r2 = Quarter(lut, 0, 2), r3 = Quarter(lut, 0, 3);
  const __m512i g0 = Quarter(lut, 1, 0), g1 = Quarter(lut, 1, 1);
  const __m512i g2 = Quarter(lut, 1, 2), g3 = Quarter(lut, 1, 3);
  const __m512i b0 = Quarter(lut, 2, 0), b1 = Quarter(lut, 2, 1);
  const __m512i b2 = Quarter(lut, 2, 2), b3 = Quarter(lut, 2, 3);
  // One block at an offset s modulo 3: byte j is in channel (s + j) % 3.
#define FLOWLOADER_LUTS_STEP(at, s)                                                  \
  do {                                                                               \
    const __m512i x = _mm512_loadu_si512(p + (at));                                  \
    const __mmask64 high = _mm512_movepi8_mask(x);                                   \
    const __m512i rg = _mm512_mask_blend_epi8(ChannelMask(s, 1),                     \
                                              Lookup256(x, high, r0, r1, r2, r3),    \
                                              Lookup256(x, high, g0, g1, g2, g3));   \
    _mm512_storeu_si512(p + (at), _mm512_mask_blend_epi8(ChannelMask(s, 2), rg,      \
                                                         Lookup256(x, high, b0, b1,  \
                                                                   b2, b3)));        \
  } while (0)
  size_t i = 0;
  for (; i + 192 <= n; i += 192) {
    FLOWLOADER_LUTS_STEP(i, 0);
    FLOWLOADER_LUTS_STEP(i + 64, 1);
    FLOWLOADER_LUTS_STEP(i + 128, 2);
  }
  if (i + 64 <= n) {
    FLOWLOADER_LUTS_STEP(i, 0);
    i += 64;
    if (i + 64 <= n) {
      FLOWLOADER_LUTS_STEP(i, 1);
      i += 64;
    }
  }
#undef FLOWLOADER_LUTS_STEP
  return i;
}
}  // namespace
#endif

// ApplyLuts: 64 values a step where the CPU has VBMI, else one pixel at a time (224²
// equalize: 100 -> 51.5 us, and 49.1 us with Histograms' sub-histograms; with
// ChannelRanges, autocontrast: 98 -> 9 us; colour_bench).
void ApplyLuts(Image& img, const uint8_t (&lut)[3][256]) {
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height * 3;
  size_t i = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (HasVbmi()) i = ApplyLutsVbmi(p, n, lut);
#endif
  for (; i < n && i % 3 != 0; ++i) p[i] = lut[i % 3][p[i]];
  for (; i < n; i += 3) {
    p[i] = lut[0][p[i]];
    p[i + 1] = lut[1][p[i + 1]];
    p[i + 2] = lut[2][p[i + 2]];
  }
}

void ApplyLut(Image& img, const uint8_t (&lut)[256]) {
  uint8_t* p = img.pixels.data();
  const size_t n = img.pixels.size();
  size_t i = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (HasVbmi()) i = ApplyLutVbmi(p, n, lut);
#endif
  for (; i < n; ++i) p[i] = lut[p[i]];
}

void SetPortableForTesting(bool portable) { portable_for_testing.store(portable); }

bool PortableForTesting() { return portable_for_testing.load(std::memory_order_relaxed); }

void SetNoVbmiForTesting(bool no_vbmi) { no_vbmi_for_testing.store(no_vbmi); }

#if defined(FLOWLOADER_COLOUR_AVX2)
bool HasAvx2() {
  static const bool has = CpuHas(CpuFeature::kAvx2);
  return has && !portable_for_testing.load(std::memory_order_relaxed);
}

bool HasAvx512() {
  static const bool has = CpuHas(CpuFeature::kAvx512F) &&
                          CpuHas(CpuFeature::kAvx512Bw) &&
                          CpuHas(CpuFeature::kAvx512Vl) && CpuHas(CpuFeature::kAvx512Dq);
  return has && !portable_for_testing.load(std::memory_order_relaxed);
}

bool HasVbmi() {
  static const bool has =
      CpuHas(CpuFeature::kAvx512Vbmi) && CpuHas(CpuFeature::kAvx512Bw);
  return has && !portable_for_testing.load(std::memory_order_relaxed) &&
         !no_vbmi_for_testing.load(std::memory_order_relaxed);
}
#endif

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

// Histograms counts each channel's values (Image.histogram on an RGB image) in four
// sub-histograms, value k of each 12-byte step in sub k % 4 (four pixels in a row of one
// channel land in four of them), added up at the end; the 12 values come from two loads.
// 224² equalize: 51.5 -> 49.1 us against one histogram and a pixel a step (colour_bench);
// the increments' stores bound both, about one a cycle.
void Histograms(const Image& img, uint32_t (&h)[3][256]) {
  uint32_t s0[768], s1[768], s2[768], s3[768];  // Channel c's value v at 256 c + v.
  std::memset(s0, 0, sizeof(s0));
  std::memset(s1, 0, sizeof(s1));
  std::memset(s2, 0, sizeof(s2));
  std::memset(s3, 0, sizeof(s3));
  const uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height * 3;
  size_t i = 0;
  for (; i + 12 <= n; i += 12) {
    uint64_t a;
    uint32_t b;
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 4);
    ++s0[a & 255];
    ++s1[256 + ((a >> 8) & 255)];
    ++s2[512 + ((a >> 16) & 255)];
    ++s3[(a >> 24) & 255];
    ++s0[256 + ((a >> 32) & 255)];
    ++s1[512 + ((a >> 40) & 255)];
    ++s2[(a >> 48) & 255];
    ++s3[256 + (a >> 56)];
    ++s0[512 + (b & 255)];
    ++s1[(b >> 8) & 255];
    ++s2[256 + ((b >> 16) & 255)];
    ++s3[512 + (b >> 24)];
  }
  for (; i < n; ++i) ++s0[256 * (i % 3) + p[i]];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const int k = 256 * c + v;
      h[c][v] = s0[k] + s1[k] + s2[k] + s3[k];
    }
  }
}

// ChannelRanges finds each channel's lowest and highest value (255 and 0 where there are
// no pixels): all of the histogram that autocontrast with cutoff 0 reads. 48 bytes a
// step (three vectors, byte j of the step in channel j % 3) in SSE4.1 builds
// (224² autocontrast with the VBMI tables: 9 us, colour_bench).
void ChannelRanges(const Image& img, int (&lo)[3], int (&hi)[3]) {
  const uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height * 3;
  for (int c = 0; c < 3; ++c) lo[c] = 255, hi[c] = 0;
  size_t i = 0;
#if defined(__SSE4_1__)
  if (!internal::PortableForTesting() && n >= 48) {
    // Named registers: GCC keeps arrays of vectors in memory.
    __m128i mn0 = _mm_set1_epi8(-1), mn1 = mn0, mn2 = mn0;
    __m128i mx0 = _mm_setzero_si128(), mx1 = mx0, mx2 = mx0;
    for (; i + 48 <= n; i += 48) {
      const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16));
      const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 32));
      mn0 = _mm_min_epu8(mn0, x0), mx0 = _mm_max_epu8(mx0, x0);
      mn1 = _mm_min_epu8(mn1, x1), mx1 = _mm_max_epu8(mx1, x1);
      mn2 = _mm_min_epu8(mn2, x2), mx2 = _mm_max_epu8(mx2, x2);
    }
    const __m128i mn[3] = {mn0, mn1, mn2}, mx[3] = {mx0, mx1, mx2};
    uint8_t lows[48], highs[48];
    for (int k = 0; k < 3; ++k) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lows + 16 * k), mn[k]);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(highs + 16 * k), mx[k]);
    }
    for (int j = 0; j < 48; ++j) {
      lo[j % 3] = std::min<int>(lo[j % 3], lows[j]);
      hi[j % 3] = std::max<int>(hi[j % 3], highs[j]);
    }
  }
#endif
  for (; i < n; ++i) {
    lo[i % 3] = std::min<int>(lo[i % 3], p[i]);
    hi[i % 3] = std::max<int>(hi[i % 3], p[i]);
  }
}

// The AVX2 paths below do, per pixel, what the portable loops after them do; each
// handles a multiple of 8 pixels and returns how many.
#if defined(FLOWLOADER_COLOUR_AVX2)
// GreySumAvx2 adds GreyValue over the first n & ~7 pixels.
__attribute__((target("avx2"))) size_t GreySumAvx2(const uint8_t* p, size_t n, uint64_t* sum) {
  const size_t bulk = n & ~static_cast<size_t>(7);
  uint64_t total = 0;
  for (size_t k = 0; k < bulk;) {
    // int32 lanes hold at most 2^20 * 255 before they are added up.
    const size_t end = std::min(bulk, k + (static_cast<size_t>(8) << 20));
    __m256i acc = _mm256_setzero_si256();
    for (; k < end; k += 8, p += 24) {
      __m256i r, g, b;
      internal::LoadRgb8(p, &r, &g, &b);
      acc = _mm256_add_epi32(acc, internal::Grey8(r, g, b));
    }
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    for (uint32_t v : lanes) total += v;
  }
  *sum = total;
  return bulk;
}

// SaturationAvx2 blends the first n & ~7 pixels with their grey value.
__attribute__((target("avx2"))) size_t SaturationAvx2(uint8_t* p, size_t n, float alpha) {
  const size_t bulk = n & ~static_cast<size_t>(7);
  const __m256 a = _mm256_set1_ps(alpha);
  for (size_t k = 0; k < bulk; k += 8, p += 24) {
    __m256i r, g, b;
    internal::LoadRgb8(p, &r, &g, &b);
    const __m256i l = internal::Grey8(r, g, b);
    internal::StoreRgb8(p, internal::Blend8(l, r, a), internal::Blend8(l, g, a),
                        internal::Blend8(l, b, a));
  }
  return bulk;
}

// The AVX-512 VBMI paths take 16 pixels (48 bytes) a step: vpermb with a zeroing mask
// spreads them to int32 lanes (r | g << 16 and b | g << 16), and one more
// vpermb packs the three blended channels back to 48 bytes.
alignas(64) constexpr uint8_t kRgLanes[64] = {
    0,  0, 1,  0, 3,  0, 4,  0, 6,  0, 7,  0, 9,  0, 10, 0, 12, 0, 13, 0, 15, 0,
    16, 0, 18, 0, 19, 0, 21, 0, 22, 0, 24, 0, 25, 0, 27, 0, 28, 0, 30, 0, 31, 0,
    33, 0, 34, 0, 36, 0, 37, 0, 39, 0, 40, 0, 42, 0, 43, 0, 45, 0, 46, 0};
alignas(64) constexpr uint8_t kBgLanes[64] = {
    2,  0, 1,  0, 5,  0, 4,  0, 8,  0, 7,  0, 11, 0, 10, 0, 14, 0, 13, 0, 17, 0,
    16, 0, 20, 0, 19, 0, 23, 0, 22, 0, 26, 0, 25, 0, 29, 0, 28, 0, 32, 0, 31, 0,
    35, 0, 34, 0, 38, 0, 37, 0, 41, 0, 40, 0, 44, 0, 43, 0, 47, 0, 46, 0};
// Byte 3j + c of 16 pixels from int32 lane j's byte c; bytes 48..63 from the second
// operand of vpermt2b (64 + 48..63).
alignas(64) constexpr uint8_t kPackRgb[64] = {
    0,  1,  2,  4,  5,  6,  8,  9,  10, 12, 13, 14, 16, 17, 18, 20, 21, 22, 24, 25, 26, 28,
    29, 30, 32, 33, 34, 36, 37, 38, 40, 41, 42, 44, 45, 46, 48, 49, 50, 52, 53, 54, 56, 57,
    58, 60, 61, 62, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125,
    126, 127};
// Byte 3j + c of 16 pixels from vpackuswb(vpackssdw(r, g), vpackssdw(b, b)), whose
// 128-bit lane j / 4 holds r, g, b, b of pixels 4 (j / 4) .. + 3: byte 16 (j / 4) + 4c +
// j % 4; bytes 48..63 from the second operand of vpermt2b (64 + 48..63).
alignas(64) constexpr uint8_t kPackPacked[64] = {
    0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 16, 20, 24, 17, 21, 25, 18, 22, 26, 19, 23, 27, 32,
    36, 40, 33, 37, 41, 34, 38, 42, 35, 39, 43, 48, 52, 56, 49, 53, 57, 50, 54, 58, 51, 55, 59,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127};
constexpr __mmask64 kRgbBytes = (static_cast<__mmask64>(1) << 48) - 1;

// GreyRgb16 is GreyValue of 16 pixels, from lanes r | g << 16 and b | g << 16: two
// vpmaddwd, g's weight 38470 split in two halves of 19235 (which fit signed words).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i GreyRgb16(__m512i rg,
                                                                                __m512i bg) {
  const __m512i sum = _mm512_add_epi32(
      _mm512_madd_epi16(rg, _mm512_set1_epi32(19235 * 65536 + 19595)),
      _mm512_add_epi32(_mm512_madd_epi16(bg, _mm512_set1_epi32(19235 * 65536 + 7471)),
                       _mm512_set1_epi32(0x8000)));
  return _mm512_srli_epi32(sum, 16);
}

// How SaturationVbmi keeps the blend in 0..255 (BlendValue's clamp, for factors outside
// [0, 1]): kInside: no need, the float result of a factor in [0, 1] lies in 0..255;
// kPacks: vpackssdw and vpackuswb saturate, where |factor| <= 1000 keeps the float result
// well inside int32; kFloat: min and max in float, for larger factors.
enum class Clamp { kInside, kPacks, kFloat };

// Blend16 is BlendValue on 16 values (l: the grey image's), as int32, before any clamp
// but kFloat's. The add with an explicit rounding mode is a plain add that the compiler
// cannot fuse with the multiply (an FMA rounds once, BlendValue twice).
template <Clamp kClamp>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i Blend16(__m512i l,
                                                                              __m512 lf,
                                                                              __m512i c,
                                                                              __m512 alpha) {
  __m512 v = _mm512_mul_ps(alpha, _mm512_cvtepi32_ps(_mm512_sub_epi32(c, l)));
  v = _mm512_add_round_ps(lf, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (kClamp == Clamp::kFloat) {
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
  }
  return _mm512_cvttps_epi32(v);
}

// GreySumVbmi adds GreyValue over the first n & ~15 pixels.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t GreySumVbmi(const uint8_t* p,
                                                                          size_t n,
                                                                          uint64_t* sum) {
  const size_t bulk = n & ~static_cast<size_t>(15);
  const __m512i rg_lanes = _mm512_load_si512(kRgLanes), bg_lanes = _mm512_load_si512(kBgLanes);
  uint64_t total = 0;
  for (size_t k = 0; k < bulk;) {
    // Each int32 lane adds at most 2^18 values of 255, their sum stays below 2^31.
    const size_t end = std::min(bulk, k + (static_cast<size_t>(16) << 18));
    __m512i acc = _mm512_setzero_si512();
    for (; k < end; k += 16, p += 48) {
      const __m512i x = _mm512_maskz_loadu_epi8(kRgbBytes, p);
      const __m512i rg = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, rg_lanes, x);
      const __m512i bg = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, bg_lanes, x);
      acc = _mm512_add_epi32(acc, GreyRgb16(rg, bg));
    }
    total += static_cast<uint64_t>(_mm512_reduce_add_epi32(acc));
  }
  *sum = total;
  return bulk;
}

// SaturationStep16 blends 16 pixels (the first 48 bytes of x) and returns them in the
// first 48 bytes; the other 16 are x's.
template <Clamp kClamp>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i SaturationStep16(
    __m512i x, __m512 a, __m512i rg_lanes, __m512i bg_lanes, __m512i pack) {
  const __m512i rg = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, rg_lanes, x);
  const __m512i bg = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, bg_lanes, x);
  const __m512i l = GreyRgb16(rg, bg);
  const __m512 lf = _mm512_cvtepi32_ps(l);
  const __m512i qr = Blend16<kClamp>(l, lf, _mm512_and_si512(rg, _mm512_set1_epi32(0xffff)), a);
  const __m512i qg = Blend16<kClamp>(l, lf, _mm512_srli_epi32(rg, 16), a);
  const __m512i qb = Blend16<kClamp>(l, lf, _mm512_and_si512(bg, _mm512_set1_epi32(0xffff)), a);
  if (kClamp == Clamp::kPacks) {
    // Signed saturation to int16, then unsigned to uint8: BlendValue's clamp to 0..255.
    const __m512i q =
        _mm512_packus_epi16(_mm512_packs_epi32(qr, qg), _mm512_packs_epi32(qb, qb));
    return _mm512_permutex2var_epi8(q, pack, x);
  }
  // qr | qg << 8 | qb << 16 (vpternlogd 0xfe: a | b | c); cheaper than the packs.
  const __m512i q =
      _mm512_ternarylogic_epi32(qr, _mm512_slli_epi32(qg, 8), _mm512_slli_epi32(qb, 16), 0xfe);
  return _mm512_permutex2var_epi8(q, pack, x);
}

// SaturationVbmi blends the first n & ~15 pixels with their grey value: 64-byte loads and
// stores (the last 16 bytes rewritten unchanged, before the next step reads them; masked
// stores are slow on Zen 4) while 64 bytes remain, masked ones for the last steps.
template <Clamp kClamp>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t SaturationVbmi(uint8_t* p, size_t n,
                                                                             float alpha) {
  const size_t bulk = n & ~static_cast<size_t>(15);
  const __m512 a = _mm512_set1_ps(alpha);
  const __m512i rg_lanes = _mm512_load_si512(kRgLanes), bg_lanes = _mm512_load_si512(kBgLanes);
  const __m512i pack = _mm512_load_si512(kClamp == Clamp::kPacks ? kPackPacked : kPackRgb);
  size_t k = 0;
  if (bulk >= 16 && 3 * n >= 64) {
    // Each step loads the next 64 bytes before it stores its own: the load would
    // otherwise overlap the store's last 16 bytes and wait for it (no forwarding).
    __m512i x = _mm512_loadu_si512(p);
    for (; k + 16 < bulk && 3 * k + 48 + 64 <= 3 * n; k += 16, p += 48) {
      const __m512i next = _mm512_loadu_si512(p + 48);
      _mm512_storeu_si512(p, SaturationStep16<kClamp>(x, a, rg_lanes, bg_lanes, pack));
      x = next;
    }
    _mm512_storeu_si512(p, SaturationStep16<kClamp>(x, a, rg_lanes, bg_lanes, pack));
    k += 16;
    p += 48;
  }
  for (; k < bulk; k += 16, p += 48) {
    const __m512i x = _mm512_maskz_loadu_epi8(kRgbBytes, p);
    _mm512_mask_storeu_epi8(p, kRgbBytes, SaturationStep16<kClamp>(x, a, rg_lanes, bg_lanes, pack));
  }
  return bulk;
}

// GrayscaleAvx2 writes the first n & ~7 pixels' grey value to their three channels.
__attribute__((target("avx2"))) size_t GrayscaleAvx2(uint8_t* p, size_t n) {
  const size_t bulk = n & ~static_cast<size_t>(7);
  for (size_t k = 0; k < bulk; k += 8, p += 24) {
    __m256i r, g, b;
    internal::LoadRgb8(p, &r, &g, &b);
    const __m256i l = internal::Grey8(r, g, b);
    internal::StoreRgb8(p, l, l, l);
  }
  return bulk;
}
#endif

#if defined(FLOWLOADER_COLOUR_AVX2)
// BlendConstAvx2 is BlendValue(constant, v, alpha) over the first n & ~31 values.
__attribute__((target("avx2"))) size_t BlendConstAvx2(uint8_t* p, size_t n, int constant,
                                                      float alpha) {
  const size_t bulk = n & ~static_cast<size_t>(31);
  const __m256 a = _mm256_set1_ps(alpha);
  const __m256i c = _mm256_set1_epi32(constant);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t i = 0; i < bulk; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m128i lo = _mm256_castsi256_si128(x), hi = _mm256_extracti128_si256(x, 1);
    const __m256i q0 = internal::Blend8(c, _mm256_cvtepu8_epi32(lo), a);
    const __m256i q1 = internal::Blend8(c, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), a);
    const __m256i q2 = internal::Blend8(c, _mm256_cvtepu8_epi32(hi), a);
    const __m256i q3 = internal::Blend8(c, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), a);
    // packus works within 128-bit lanes; the permute puts the four groups back in order.
    const __m256i packed = _mm256_permutevar8x32_epi32(
        _mm256_packus_epi16(_mm256_packus_epi32(q0, q1), _mm256_packus_epi32(q2, q3)), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + i), packed);
  }
  return bulk;
}
#endif

// BlendConstant is ImageEnhance's blend of a constant degenerate image with the image:
// a table, looked up 64 values at a time where the CPU has VBMI (BlendConst's float
// arithmetic was 4.4% of DINO's CPU); else AVX2 arithmetic where it has that; else the
// table one value at a time.
void BlendConstant(Image& img, int constant, double factor) {
  const float alpha = static_cast<float>(factor);
  uint8_t* p = img.pixels.data();
  const size_t n = img.pixels.size();
  size_t done = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasAvx2() && !internal::HasVbmi()) done = BlendConstAvx2(p, n, constant, alpha);
#endif
  if (done == 0) {
    uint8_t lut[256];
    BlendLut(constant, factor, lut);
    internal::ApplyLut(img, lut);
    return;
  }
  for (size_t i = done; i < n; ++i) p[i] = BlendValue(constant, p[i], alpha);
}

// Each kernel's AVX-512 VBMI or AVX2 part where the CPU has it (0 pixels done otherwise).
size_t GreySumFast(const uint8_t* p, size_t n, uint64_t* sum) {
  *sum = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasVbmi()) return GreySumVbmi(p, n, sum);
  if (internal::HasAvx2()) return GreySumAvx2(p, n, sum);
#endif
  return 0;
}
size_t SaturationFast(uint8_t* p, size_t n, float alpha) {
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasVbmi()) {
    if (alpha >= 0 && alpha <= 1) return SaturationVbmi<Clamp::kInside>(p, n, alpha);
    if (alpha >= -1000 && alpha <= 1000) {
      return SaturationVbmi<Clamp::kPacks>(p, n, alpha);
    }
    return SaturationVbmi<Clamp::kFloat>(p, n, alpha);
  }
  if (internal::HasAvx2()) return SaturationAvx2(p, n, alpha);
#endif
  return 0;
}
size_t GrayscaleFast(uint8_t* p, size_t n) {
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasAvx2()) return GrayscaleAvx2(p, n);
#endif
  return 0;
}

}  // namespace

// ImageEnhance.Brightness: Image.blend(black, image, factor): out = 0 + factor
// * v.
void AdjustBrightness(Image& img, double factor) {
  if (static_cast<float>(factor) == 1.0f) return;  // Blend.c's copy shortcut.
  BlendConstant(img, 0, factor);
}

// ImageEnhance.Contrast: the degenerate image is the constant int(mean(L) +
// 0.5), the mean as ImageStat computes it (sum of L values / count, in double).
void AdjustContrast(Image& img, double factor) {
  const size_t n = static_cast<size_t>(img.width) * img.height;
  if (n == 0 || static_cast<float>(factor) == 1.0f) return;
  uint64_t sum = 0;
  const size_t done = GreySumFast(img.pixels.data(), n, &sum);
  const uint8_t* p = img.pixels.data() + 3 * done;
  for (size_t i = done; i < n; ++i, p += 3) sum += internal::GreyValue(p);
  const double mean = static_cast<double>(sum) / static_cast<double>(n);
  BlendConstant(img, static_cast<int>(mean + 0.5), factor);
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
  const size_t n = static_cast<size_t>(img.width) * img.height;
  const size_t done = SaturationFast(img.pixels.data(), n, alpha);
  if (done == n) return;
  if (done > 0) {  // The few pixels the AVX2 part left, per value.
    for (uint8_t* p = img.pixels.data() + 3 * done; p < img.pixels.data() + 3 * n; p += 3) {
      const uint8_t l = internal::GreyValue(p);
      for (int c = 0; c < 3; ++c) p[c] = BlendValue(l, p[c], alpha);
    }
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
  const size_t n = static_cast<size_t>(img.width) * img.height;
  const size_t done = GrayscaleFast(img.pixels.data(), n);
  uint8_t* p = img.pixels.data() + 3 * done;
  for (size_t i = done; i < n; ++i, p += 3) p[0] = p[1] = p[2] = internal::GreyValue(p);
}

// ForEachValue applies `vec` to 16 values at a time (SSE4.1 builds) and `one` to the
// rest: Posterize, Solarize and Invert restate their ImageOps tables as arithmetic.
template <typename Vec, typename One>
void ForEachValue(Image& img, Vec vec, One one) {
  uint8_t* p = img.pixels.data();
  const size_t n = img.pixels.size();
  size_t i = 0;
#if defined(__SSE4_1__)
  for (; i + 16 <= n; i += 16) {
    __m128i* at = reinterpret_cast<__m128i*>(p + i);
    _mm_storeu_si128(at, vec(_mm_loadu_si128(at)));
  }
#endif
  for (; i < n; ++i) p[i] = one(p[i]);
}

// ImageOps.posterize: i & ~(2 ** (8 - bits) - 1), for bits in 0..8.
void Posterize(Image& img, int bits) {
  if (bits >= 8) return;
  const uint8_t mask = static_cast<uint8_t>(bits <= 0 ? 0 : ~((1 << (8 - bits)) - 1));
#if defined(__SSE4_1__)
  const __m128i m = _mm_set1_epi8(static_cast<char>(mask));
#endif
  ForEachValue(
      img, [&](auto v) { return _mm_and_si128(v, m); },
      [&](uint8_t v) { return static_cast<uint8_t>(v & mask); });
}

// ImageOps.solarize: i if i < threshold else 255 - i; for whole i, i < threshold is
// i < ceil(threshold), and 255 - i is i ^ 255.
void Solarize(Image& img, double threshold) {
  if (threshold > 255) return;
  const int t = threshold <= 0 ? 0 : static_cast<int>(std::ceil(threshold));
#if defined(__SSE4_1__)
  const __m128i tv = _mm_set1_epi8(static_cast<char>(t));
#endif
  ForEachValue(
      img,
      [&](auto v) {  // v >= t where max(v, t) == v.
        return _mm_xor_si128(v, _mm_cmpeq_epi8(_mm_max_epu8(v, tv), v));
      },
      [&](uint8_t v) { return static_cast<uint8_t>(v < t ? v : 255 - v); });
}

// ImageOps.invert: 255 - i.
void Invert(Image& img) {
  ForEachValue(
      img, [](auto v) { return _mm_xor_si128(v, _mm_set1_epi8(-1)); },
      [](uint8_t v) { return static_cast<uint8_t>(255 - v); });
}

// AutocontrastLuts is ImageOps.autocontrast(cutoff=0, ignore=None)'s tables from each
// channel's lowest and highest value present: where hi > lo, lut[i] = int(i * scale +
// offset) clipped to 0..255 with scale = 255 / (hi - lo), offset = -lo * scale (Python
// doubles); else the identity.
static void AutocontrastLuts(const int (&lows)[3], const int (&highs)[3],
                             uint8_t (&lut)[3][256]) {
  for (int c = 0; c < 3; ++c) {
    const int lo = lows[c], hi = highs[c];
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
}

// ImageOps.autocontrast(cutoff=0, ignore=None): AutocontrastLuts of each channel's range.
void Autocontrast(Image& img) {
  int lows[3], highs[3];
  ChannelRanges(img, lows, highs);
  uint8_t lut[3][256];
  AutocontrastLuts(lows, highs, lut);
  internal::ApplyLuts(img, lut);
}

void AutocontrastTables(const uint32_t (&h)[3][256], uint8_t (&lut)[3][256]) {
  int lows[3], highs[3];  // As ChannelRanges: 255 and 0 where there are no pixels.
  for (int c = 0; c < 3; ++c) {
    lows[c] = 255, highs[c] = 0;
    for (int v = 0; v < 256; ++v) {
      if (h[c][v] == 0) continue;
      if (v < lows[c]) lows[c] = v;
      highs[c] = v;
    }
  }
  AutocontrastLuts(lows, highs, lut);
}

// ImageOps.equalize: per channel, with the non-zero bins' counts `histo`, step
// = (sum(histo) - histo[-1]) // 255; where there is more than one bin and step
// > 0, lut[i] = (step // 2 + sum(h[:i])) // step, which Image.point clips to
// 255 (CLIP8); else the identity.
void EqualizeTables(const uint32_t (&h)[3][256], uint8_t (&lut)[3][256]) {
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
}

void Equalize(Image& img) {
  uint32_t h[3][256];
  Histograms(img, h);
  uint8_t lut[3][256];
  EqualizeTables(h, lut);
  internal::ApplyLuts(img, lut);
}

// The one-table ops' tables, from the per-value arithmetic of their kernels' scalar
// parts (BlendLut is AdjustBrightness's own table; its AVX2 path matches it).
void BrightnessTable(double factor, uint8_t (&lut)[256]) { BlendLut(0, factor, lut); }

void PosterizeTable(int bits, uint8_t (&lut)[256]) {
  const uint8_t mask =
      static_cast<uint8_t>(bits >= 8 ? 255 : bits <= 0 ? 0 : ~((1 << (8 - bits)) - 1));
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v & mask);
}

void SolarizeTable(double threshold, uint8_t (&lut)[256]) {
  const int t = threshold > 255  ? 256
                : threshold <= 0 ? 0
                                 : static_cast<int>(std::ceil(threshold));
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v < t ? v : 255 - v);
}

void InvertTable(uint8_t (&lut)[256]) {
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(255 - v);
}

}  // namespace flowloader::augment::kernels
