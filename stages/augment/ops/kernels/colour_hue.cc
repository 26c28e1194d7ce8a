// colour_hue.cc: F.adjust_hue on a PIL image (torchvision's
// functional_pil.adjust_hue): img.convert("HSV"), H += uint8(hue_factor * 255)
// wrapping, convert back to RGB. Both conversions restate PIL 9.4's
// libImaging/Convert.c (rgb2hsv_row, hsv2rgb) with its C types (float
// variables, double constants), so the bytes are PIL's; the round trip is lossy
// even for a zero shift, as in PIL.
//
// Speed: the portable path (HuePixels) takes RGB -> HSV from two tables. H depends
// only on which channel is the largest and which the smallest (six forms), the
// spread cr = max - min and the middle channel's distance from the max; S only on
// cr and max. The tables are built once per process by running the literal
// conversion (RgbToHsvLiteral). Its HSV -> RGB keeps PIL's double arithmetic. The
// vector paths (HuePixelsAvx2, HuePixelsAvx512; AdjustHue takes the widest the CPU runs)
// use no large table: float values of exact rationals, exact corrections where those
// cannot decide PIL's rounding.
#include "stages/augment/ops/kernels/colour_hue.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "stages/augment/ops/kernels/colour_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized (GCC bug 105593, fixed in GCC 13;
// as in resample_ycc_avx512.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "stages/augment/ops/kernels/colour.h"

namespace flowloader::augment::kernels {
namespace internal {
namespace {

inline uint8_t Clip8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

}  // namespace

// Convert.c rgb2hsv_row, line for line ("following colorsys.py").
void RgbToHsvLiteral(const uint8_t* in, uint8_t* out) {
  float h, s, rc, gc, bc, cr;
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b));
  const uint8_t minc = std::min(r, std::min(g, b));
  uint8_t uh, us;
  const uint8_t uv = maxc;
  if (minc == maxc) {
    uh = 0;
    us = 0;
  } else {
    cr = static_cast<float>(maxc - minc);
    s = cr / static_cast<float>(maxc);
    rc = static_cast<float>(maxc - r) / cr;
    gc = static_cast<float>(maxc - g) / cr;
    bc = static_cast<float>(maxc - b) / cr;
    if (r == maxc) {
      h = bc - gc;
    } else if (g == maxc) {
      h = 2.0 + rc - bc;  // In double, as C promotes it, then stored as float.
    } else {
      h = 4.0 + gc - rc;
    }
    h = std::fmod((h / 6.0 + 1.0), 1.0);
    uh = Clip8(static_cast<int>(h * 255.0));
    us = Clip8(static_cast<int>(s * 255.0));
  }
  out[0] = uh;
  out[1] = us;
  out[2] = uv;
}

// Convert.c hsv2rgb, line for line.
void HsvToRgbLiteral(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = static_cast<int>(std::floor(static_cast<float>(h) * 6.0 / 255.0));
  const float f = static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i);
  const float fs = static_cast<float>(s) / 255.0;
  const uint8_t up = Clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs))));
  const uint8_t uq = Clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * f))));
  const uint8_t ut =
      Clip8(static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * (1.0 - f)))));
  switch (i % 6) {
    case 0:
      out[0] = v, out[1] = ut, out[2] = up;
      break;
    case 1:
      out[0] = uq, out[1] = v, out[2] = up;
      break;
    case 2:
      out[0] = up, out[1] = v, out[2] = ut;
      break;
    case 3:
      out[0] = up, out[1] = uq, out[2] = v;
      break;
    case 4:
      out[0] = ut, out[1] = up, out[2] = v;
      break;
    default:
      out[0] = v, out[1] = up, out[2] = uq;
      break;
  }
}

int HueShift(double hue_factor) {
  // np.uint8(hue_factor * 255): truncated toward zero, then wrapped modulo 256.
  return static_cast<int>(hue_factor * 255.0) & 255;
}

namespace {

// HueTables: what the per-pixel conversions look up.
struct HueTables {
  // hue[form][cr * 256 + d]: RGB -> HSV's H for a pixel of that form whose
  // largest and smallest channels differ by cr and whose middle channel is d
  // below the largest.
  uint8_t hue[6][256 * 256];
  // sat[cr * 256 + max]: RGB -> HSV's S (0 for cr = 0, a grey pixel).
  uint8_t sat[256 * 256];
  // HSV -> RGB: H's sector (i % 6) and fraction f, S's fraction fs.
  uint8_t sector[256];
  float frac[256];
  float sfrac[256];
  // The vector paths' corrections where the exact H (or S) is an integer k: bit k set
  // where Convert.c's float steps give k - 1 (none for S; the table build checks).
  uint32_t hue_dec[8];
  uint32_t sat_dec[8];
};

// The form's channel roles (which channel is the largest, which the smallest), as
// PIL's branches take them; hue[form] is built from a pixel of each form:
//   0: r max, b min   1: r max, g min   2: g max, r min
//   3: g max, b min   4: b max, g min   5: b max, r min
// FormOf picks it from three comparisons (r >= g, r >= b, g >= b) by table, without
// branches (a colour's channel order is unpredictable). Where two channels tie, the
// forms it may pick give the same H (PIL's quotient for the tied channels is equal), so
// any tie-break matches; colour_kernels_test checks every colour.
constexpr uint8_t kForm[8] = {5, 4, 5, 1, 2, 2, 3, 0};
inline int FormOf(int r, int g, int b) { return kForm[(r >= g) | (r >= b) << 1 | (g >= b) << 2]; }

// CorrectionMarks collects, for each exact integer k of H (or S), which value PIL gives
// (see the vector paths' comment): k, or k - 1, or 0 for k = 255 (H's fmod wrap). Mark
// aborts on anything else or on two answers for one k, which would make the fast paths
// wrong; Pack writes the k - 1 cases as bits (bit k of word k / 32).
class CorrectionMarks {
 public:
  void Mark(int k, int got) {
    const bool dec = got == k - 1;
    const uint8_t answer = dec ? kDecrement : kSame;
    if (!(got == k || dec || (k == 255 && got == 0)) ||
        (answer_[k] != kUnseen && answer_[k] != answer)) {
      std::fprintf(stderr, "colour_hue: no correction bit fits k=%d got=%d\n", k, got);
      std::abort();
    }
    answer_[k] = answer;
  }
  void Pack(uint32_t words[8]) const {
    for (int k = 0; k < 256; ++k) {
      if (answer_[k] == kDecrement) words[k / 32] |= uint32_t{1} << (k % 32);
    }
  }

 private:
  static constexpr uint8_t kUnseen = 0, kSame = 1, kDecrement = 2;
  std::array<uint8_t, 256> answer_{};
};

const HueTables& Tables() {
  static const HueTables* const tables = [] {
    auto* t = new HueTables();
    CorrectionMarks hue_marks, sat_marks;
    for (int cr = 1; cr < 256; ++cr) {
      const int maxc = 255, minc = 255 - cr;
      for (int d = 0; d <= cr; ++d) {
        const int mid = 255 - d;
        const uint8_t px[6][3] = {
            {uint8_t(maxc), uint8_t(mid), uint8_t(minc)},
            {uint8_t(maxc), uint8_t(minc), uint8_t(mid)},
            {uint8_t(minc), uint8_t(maxc), uint8_t(mid)},
            {uint8_t(mid), uint8_t(maxc), uint8_t(minc)},
            {uint8_t(mid), uint8_t(minc), uint8_t(maxc)},
            {uint8_t(minc), uint8_t(mid), uint8_t(maxc)},
        };
        for (int form = 0; form < 6; ++form) {
          uint8_t hsv[3];
          RgbToHsvLiteral(px[form], hsv);
          t->hue[form][cr * 256 + d] = hsv[0];
          // X = 42.5 * (a * cr + sign * d) / cr (the vector paths); where it is an
          // integer k, record whether PIL gives k - 1.
          constexpr int kA[6] = {1, 5, 3, 1, 5, 3}, kSign[6] = {-1, 1, -1, 1, -1, 1};
          const int num = 85 * (kA[form] * cr + kSign[form] * d);
          if (num % (2 * cr) == 0) hue_marks.Mark(num / (2 * cr), hsv[0]);
        }
      }
      for (int m = cr; m < 256; ++m) {
        const uint8_t px[3] = {uint8_t(m), uint8_t(m - cr), uint8_t(m - cr)};
        uint8_t hsv[3];
        RgbToHsvLiteral(px, hsv);
        t->sat[cr * 256 + m] = hsv[1];
        if (255 * cr % m == 0) sat_marks.Mark(255 * cr / m, hsv[1]);
      }
    }
    hue_marks.Pack(t->hue_dec);
    sat_marks.Pack(t->sat_dec);
    for (const uint32_t word : t->sat_dec) {
      if (word != 0) {  // The vector paths take S without corrections.
        std::fprintf(stderr, "colour_hue: S needs a correction\n");
        std::abort();
      }
    }
    for (int h = 0; h < 256; ++h) {
      const int i = static_cast<int>(std::floor(static_cast<float>(h) * 6.0 / 255.0));
      t->sector[h] = static_cast<uint8_t>(i % 6);
      t->frac[h] = static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i);
      t->sfrac[h] = static_cast<float>(h) / 255.0;
    }
    return t;
  }();
  return *tables;
}

// RoundToByte is C's round() (half away from zero) for hsv2rgb's values, which lie in
// [0, 255]: floor and the exact remainder, without a libm call.
inline uint8_t RoundToByte(double x) {
  const double whole = std::floor(x);
  return static_cast<uint8_t>(static_cast<int>(whole) + (x - whole >= 0.5));
}

}  // namespace

void RgbToHsvFast(const uint8_t* in, uint8_t* out) {
  const HueTables& t = Tables();
  const int r = in[0], g = in[1], b = in[2];
  const int maxc = std::max(r, std::max(g, b));
  const int minc = std::min(r, std::min(g, b));
  out[2] = static_cast<uint8_t>(maxc);
  if (maxc == minc) {
    out[0] = out[1] = 0;
    return;
  }
  const int cr = maxc - minc;
  const int d = maxc - (r + g + b - maxc - minc);  // How far the middle is below the max.
  out[0] = t.hue[FormOf(r, g, b)][cr * 256 + d];
  out[1] = t.sat[cr * 256 + maxc];
}

}  // namespace internal

namespace internal {
namespace {

// hsv2rgb's six sectors: which of {v, p, q, t} each output channel takes.
constexpr uint8_t kPick[6][3] = {{0, 3, 1}, {2, 0, 1}, {1, 0, 3}, {1, 2, 0}, {3, 1, 0}, {0, 1, 2}};

// HuePixels converts n pixels one at a time.
void HuePixels(const HueTables& t, int shift, uint8_t* p, size_t n) {
  for (size_t k = 0; k < n; ++k, p += 3) {
    const int r = p[0], g = p[1], b = p[2];
    const int maxc = std::max(r, std::max(g, b));
    const int minc = std::min(r, std::min(g, b));
    // A grey pixel (cr = 0) and S = 0 need no branch: sat[] is 0 there, so fs = 0 and
    // p = q = t = v, hsv2rgb's (V, V, V).
    const int cr = maxc - minc;
    const uint8_t s = t.sat[cr * 256 + maxc];
    const int form = FormOf(r, g, b);
    const int d = maxc - (r + g + b - maxc - minc);  // How far the middle is below the max.
    const uint8_t h = static_cast<uint8_t>(t.hue[form][cr * 256 + d] + shift);
    // hsv2rgb with v = maxc, its float and double steps as Convert.c has them.
    const float f = t.frac[h];
    const float fs = t.sfrac[s];
    const float vf = static_cast<float>(maxc);
    const uint8_t vals[4] = {static_cast<uint8_t>(maxc), RoundToByte(vf * (1.0 - fs)),
                             RoundToByte(vf * (1.0 - fs * f)),
                             RoundToByte(vf * (1.0 - fs * (1.0 - f)))};
    const uint8_t* pick = kPick[t.sector[h]];
    p[0] = vals[pick[0]];
    p[1] = vals[pick[1]];
    p[2] = vals[pick[2]];
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// The vector paths (HuePixelsAvx2, HuePixelsAvx512) compute HuePixels' bytes with no large
// tables: each value PIL computes is near an exact small rational, and a float value of
// that rational decides PIL's rounding except where the rational lies on (or, for
// hsv2rgb, within 2^-12 of) the rounding boundary; those cases are handled exactly.
//
// RGB -> HSV. With d = how far the middle channel is below the max, PIL's H is trunc(X) of
// its float/double value of X = 42.5 * num / cr with num = a * cr + sign * d, a and sign
// per form (form 0, r max b min: 42.5 * (cr - d) / cr), within 2e-5 of X (float d / cr,
// float h: |h - exact| <= 2^-22 + 2^-23, times 42.5). 42.5 * num (<= 65025, a multiple of
// 0.5) and cr are exact in float, so one correctly rounded division (vdivps) gives x = X
// exactly where X is an integer, and within 255 * 2^-24 = 1.5e-5 of X elsewhere, far less
// than X's distance from an integer (at least 1 / (2 * cr) >= 1 / 510): trunc(x) is
// trunc(X), and X is an integer exactly where x is. Where X is an integer k, PIL's float
// steps give k or k - 1 (0 for k = 255, fmod's wrap), a function of k alone (k fixes the
// rational d / cr and the form's formula): one bit per k (hue_dec), found at table build
// from the literal conversion (CorrectionMarks aborts if a k had two answers); the paths
// subtract it where x == trunc(x). X = 255 does not occur here: for tied channels FormOf
// picks the forms that give X = 0 (the all-colours tests check). S is trunc of PIL's value
// of Y = 255 * cr / max, likewise exact in the division where Y is an integer and at least
// 1 / 255 from one elsewhere; PIL never gives k - 1 for an integer Y = k (checked at table
// build), so S = trunc(y) with no correction.
//
// HSV -> RGB. With i = floor(6h / 255) (= (1543 h) >> 16 for every h, so a 16-bit
// multiply-add gives it, and a second one g = 6h - 255i), p, q, t are
// v (255 - s) / 255, v (65025 - s g) / 65025 and v (65025 - s (255 - g)) / 65025; with
// A = vs, B = Ag and V = 65025v every numerator (255v - A, V - B, V - 255A + B) is an
// integer below 2^24, exact in float, so the estimates (numerator * fl(1/den)) are within
// 255 * 2^-23 = 3.1e-5 of the rationals. Convert.c's float fs and f are within 2^-25
// (+ 2^-52) of s / 255 and g / 255 and fs * f is a float product, so its doubles are
// within 255 * 3 * 2^-25 = 2.3e-5 of the rationals: estimate and PIL's double differ by
// under 5.4e-5 < 2^-12. Where the estimate is 2^-12 or more from a half-integer, both
// round to the same integer (PIL's round() and round-to-nearest agree away from halves).
// p's rational is never nearer a half than 1 / 510, so p needs no check; a pixel whose q
// or t is within 2^-12 of a half (about 2 * 2^-11 per pixel) is redone alone by the
// scalar path. The output: per 128-bit lane (four pixels) the bytes v0..v3, p0..p3,
// q0..q3, t0..t3 (two saturating packs), from which one byte shuffle per pixel picks the
// sector's three (SectorControl).
//
// The tests AdjustHueIsPilsRoundTripOnEveryPath and AdjustHueFastPathMatchesOnEveryColour
// check every path on all 16M colours.
//
// Measured (colour_bench, thread CPU per 224x224 call, Zen 4, alternating runs): the
// first AVX2 kernel (gathers from the 384 KB H and 64 KB S tables, double p, q, t per
// lane) 258-262 us; the next (reciprocal estimates, a tolerance band and a correction
// where X is near an integer, a group of eight redone when any lane was near a half,
// sectors picked by variable shifts) 136 us; HuePixelsAvx2 now 85-86 us and
// HuePixelsAvx512 65-66 us (the portable path 380 us).
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr int kTruncate = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

// SectorControl is, for hsv2rgb's sector `sec` (kPick), a byte-shuffle control for one
// pixel: the bytes of its output R, G, B in a 128-bit lane of v, p, q, t runs (above), for
// the lane's first pixel (the others add their position 0..3); its fourth byte is zeroed.
constexpr int SectorControl(int sec) {
  return static_cast<int>(4u * kPick[sec][0] | 4u * kPick[sec][1] << 8 | 4u * kPick[sec][2] << 16 |
                          0x80u << 24);
}

// RedoPixelsAvx2 converts again, by the scalar path, the pixels of a group of eight whose
// bits are set in `lanes`, from their channels as read (r, g, b).
__attribute__((target("avx2"), noinline)) void RedoPixelsAvx2(const HueTables& t, int shift,
                                                              __m256i r, __m256i g, __m256i b,
                                                              uint32_t lanes, uint8_t* p) {
  alignas(32) int32_t in[3][8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(in[0]), r);
  _mm256_store_si256(reinterpret_cast<__m256i*>(in[1]), g);
  _mm256_store_si256(reinterpret_cast<__m256i*>(in[2]), b);
  for (; lanes != 0; lanes &= lanes - 1) {
    const int j = __builtin_ctz(lanes);
    uint8_t* px = p + 3 * j;
    px[0] = static_cast<uint8_t>(in[0][j]);
    px[1] = static_cast<uint8_t>(in[1][j]);
    px[2] = static_cast<uint8_t>(in[2][j]);
    HuePixels(t, shift, px, 1);
  }
}

// StoreLanes12 writes the first 12 bytes of each 128-bit lane of v as 24 bytes (no more).
__attribute__((target("avx2"))) inline void StoreLanes12(uint8_t* p, __m256i v) {
  const __m128i second = _mm256_extracti128_si256(v, 1);
  // 16 bytes, of which the last 4 the next store overwrites.
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(v));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 12), second);
  const int last = _mm_extract_epi32(second, 2);
  std::memcpy(p + 20, &last, 4);
}

// LoadRgb8Lanes is LoadRgb8 (the same three vectors) by fewer steps: pixels 0..3 and 4..7
// to one 128-bit lane each, then one byte shuffle per channel.
__attribute__((target("avx2"))) inline void LoadRgb8Lanes(const uint8_t* p, __m256i* r, __m256i* g,
                                                          __m256i* b) {
  const __m256i bytes = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16)), 1);
  const __m256i lanes =
      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5));
  *r = _mm256_shuffle_epi8(
      lanes, _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1, 0, -1, -1,
                              -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1));
  *g = _mm256_shuffle_epi8(
      lanes, _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1, 1, -1,
                              -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1));
  *b = _mm256_shuffle_epi8(
      lanes, _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1, 2, -1,
                              -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1));
}

// HuePixelsAvx2 is HuePixels eight pixels at a time (n a multiple of 8), as the comment
// above describes.
__attribute__((target("avx2"))) void HuePixelsAvx2(const HueTables& t, int shift, uint8_t* p,
                                                   size_t n) {
  // Per comparison bits (r >= g) | (r >= b) << 1 | (g >= b) << 2, the form's a and sign
  // times 42.5 (exact, as are their products with cr and d and the sum, 42.5 * num).
  const __m256 form_a =
      _mm256_mul_ps(_mm256_setr_ps(3, 5, 3, 5, 3, 3, 1, 1), _mm256_set1_ps(42.5f));
  const __m256 form_sign =
      _mm256_mul_ps(_mm256_setr_ps(1, -1, 1, 1, -1, -1, 1, -1), _mm256_set1_ps(42.5f));
  const __m256i hue_dec = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.hue_dec));
  // By i = floor(6h / 255), 0..6 (6, for h = 255, is sector 0).
  const __m256i sector_control =
      _mm256_setr_epi32(SectorControl(0), SectorControl(1), SectorControl(2), SectorControl(3),
                        SectorControl(4), SectorControl(5), SectorControl(0), 0);
  const __m256i lane_position =
      _mm256_setr_epi32(0, 0x010101, 0x020202, 0x030303, 0, 0x010101, 0x020202, 0x030303);
  // A lane's four 4-byte controls to 12 bytes.
  const __m256i compact = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                           0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m256i hue_shift = _mm256_set1_epi32(shift);
  // 16-bit multiply-add factors: h * 1543 (i in the high half); 6 * h - 255 * i.
  const __m256i sector_mul = _mm256_set1_epi32(1543);
  const __m256i frac_mul = _mm256_set1_epi32(static_cast<int>(0xFF010006u));  // (6, -255).
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 half_tol = _mm256_set1_ps(0.5f - 0x1p-12f);
  const __m256 one_f = _mm256_set1_ps(1.0f);
  const __m256 c255 = _mm256_set1_ps(255.0f);
  const __m256 inv255 = _mm256_set1_ps(1.0f / 255.0f);
  const __m256 inv65025 = _mm256_set1_ps(1.0f / 65025.0f);
  for (size_t k = 0; k < n; k += 8, p += 24) {
    __m256i r, g, b;
    LoadRgb8Lanes(p, &r, &g, &b);
    const __m256i min_rg = _mm256_min_epi32(r, g);
    const __m256i max_rg = _mm256_max_epi32(r, g);
    const __m256i maxc = _mm256_max_epi32(max_rg, b);
    const __m256i minc = _mm256_min_epi32(min_rg, b);
    const __m256i mid = _mm256_max_epi32(min_rg, _mm256_min_epi32(max_rg, b));
    const __m256i bits = _mm256_or_si256(
        _mm256_andnot_si256(_mm256_cmpgt_epi32(g, r), one),
        _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpgt_epi32(b, r), _mm256_set1_epi32(2)),
                        _mm256_andnot_si256(_mm256_cmpgt_epi32(b, g), _mm256_set1_epi32(4))));
    const __m256 crf = _mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, minc));
    const __m256 df = _mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, mid));
    const __m256 vf = _mm256_cvtepi32_ps(maxc);
    // H. A grey pixel (cr = 0) divides by 1 instead; its H does not matter (S = 0).
    const __m256 crf1 = _mm256_max_ps(crf, one_f);
    const __m256 num42 =
        _mm256_add_ps(_mm256_mul_ps(_mm256_permutevar8x32_ps(form_a, bits), crf1),
                      _mm256_mul_ps(_mm256_permutevar8x32_ps(form_sign, bits), df));
    const __m256 x = _mm256_div_ps(num42, crf1);
    const __m256i hk = _mm256_cvttps_epi32(x);
    const __m256i whole = _mm256_castps_si256(_mm256_cmp_ps(_mm256_cvtepi32_ps(hk), x, _CMP_EQ_OQ));
    // Bit k of hue_dec: word k >> 5, bit k & 31; subtracted where X is the integer k.
    const __m256i dec_word = _mm256_permutevar8x32_epi32(hue_dec, _mm256_srli_epi32(hk, 5));
    const __m256i dec =
        _mm256_and_si256(_mm256_srlv_epi32(dec_word, _mm256_and_si256(hk, _mm256_set1_epi32(31))),
                         _mm256_and_si256(whole, one));
    const __m256i h =
        _mm256_and_si256(_mm256_add_epi32(_mm256_sub_epi32(hk, dec), hue_shift), byte);
    // S (0 for a grey pixel; v = 0 only there).
    const __m256 sf = _mm256_round_ps(
        _mm256_div_ps(_mm256_mul_ps(crf, c255), _mm256_max_ps(vf, one_f)), kTruncate);
    // i and g = 6h - 255i.
    const __m256i h_sector = _mm256_madd_epi16(h, sector_mul);
    const __m256i i = _mm256_srli_epi32(h_sector, 16);
    const __m256 gf =
        _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_blend_epi16(h, h_sector, 0xAA), frac_mul));
    const __m256 a_vs = _mm256_mul_ps(vf, sf);
    const __m256 b_vsg = _mm256_mul_ps(a_vs, gf);
    const __m256 v65025 = _mm256_mul_ps(vf, _mm256_set1_ps(65025.0f));
    const __m256 pe = _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(vf, c255), a_vs), inv255);
    const __m256 qe = _mm256_mul_ps(_mm256_sub_ps(v65025, b_vsg), inv65025);
    const __m256 te = _mm256_mul_ps(
        _mm256_add_ps(_mm256_sub_ps(v65025, _mm256_mul_ps(a_vs, c255)), b_vsg), inv65025);
    const __m256 qr = _mm256_round_ps(qe, kNearest);
    const __m256 tr = _mm256_round_ps(te, kNearest);
    const int near_half = _mm256_movemask_ps(_mm256_or_ps(
        _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(qe, qr), abs_mask), half_tol, _CMP_GT_OQ),
        _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(te, tr), abs_mask), half_tol, _CMP_GT_OQ)));
    const __m256i pi = _mm256_cvttps_epi32(_mm256_round_ps(pe, kNearest));
    const __m256i vpqt =
        _mm256_packus_epi16(_mm256_packus_epi32(maxc, pi),
                            _mm256_packus_epi32(_mm256_cvttps_epi32(qr), _mm256_cvttps_epi32(tr)));
    const __m256i control = _mm256_shuffle_epi8(
        _mm256_add_epi32(_mm256_permutevar8x32_epi32(sector_control, i), lane_position), compact);
    StoreLanes12(p, _mm256_shuffle_epi8(vpqt, control));
    if (__builtin_expect(near_half != 0, 0)) RedoPixelsAvx2(t, shift, r, g, b, near_half, p);
  }
}

// The target of the AVX-512 path: F, BW, VL and DQ (HasAvx512), and FMA, which every
// CPU with AVX-512 has.
#define FLOWLOADER_HUE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

// LoadRgb16 reads 16 interleaved pixels (48 bytes, no more) as three int32 x 16 vectors.
// `raw` keeps the 48 bytes as read, for RedoPixelsAvx512.
FLOWLOADER_HUE_AVX512 inline void LoadRgb16(const uint8_t* p, __m512i* raw, __m512i* r, __m512i* g,
                                            __m512i* b) {
  *raw = _mm512_maskz_loadu_epi32(0x0FFF, p);
  // Pixels 4L..4L+3 (dwords 3L..3L+2) to 128-bit lane L, where a byte shuffle reaches them.
  const __m512i lanes = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11), *raw);
  *r = _mm512_shuffle_epi8(lanes, _mm512_broadcast_i32x4(_mm_setr_epi8(
                                      0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1)));
  *g =
      _mm512_shuffle_epi8(lanes, _mm512_broadcast_i32x4(_mm_setr_epi8(
                                     1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1)));
  *b =
      _mm512_shuffle_epi8(lanes, _mm512_broadcast_i32x4(_mm_setr_epi8(
                                     2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1)));
}

// StoreRgb16 writes the first 12 bytes of each 128-bit lane of v as 48 bytes (no more):
// two plain stores, not one masked 64-byte store, which the next group's load (inside
// those 64 bytes) had to wait for (colour_bench 125 -> 68 us on Zen 4).
FLOWLOADER_HUE_AVX512 inline void StoreRgb16(uint8_t* p, __m512i v) {
  const __m512i rgb = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 15, 15, 15), v);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(rgb));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 32), _mm512_extracti32x4_epi32(rgb, 2));
}

// RedoPixelsAvx512 converts again, by the scalar path, the pixels of a group of sixteen
// whose bits are set in `lanes`, from the group's bytes as read (`raw`).
FLOWLOADER_HUE_AVX512 __attribute__((noinline)) void RedoPixelsAvx512(const HueTables& t, int shift,
                                                                      __m512i raw, uint32_t lanes,
                                                                      uint8_t* p) {
  alignas(64) uint8_t in[64];
  _mm512_store_si512(in, raw);
  for (; lanes != 0; lanes &= lanes - 1) {
    const int j = __builtin_ctz(lanes);
    std::memcpy(p + 3 * j, in + 3 * j, 3);
    HuePixels(t, shift, p + 3 * j, 1);
  }
}

// HuePixelsAvx512 is HuePixelsAvx2 sixteen pixels at a time (n a multiple of 16), with
// mask registers for the comparisons, vreduceps for the distance from an integer, and the
// rounding in the conversion.
FLOWLOADER_HUE_AVX512 void HuePixelsAvx512(const HueTables& t, int shift, uint8_t* p, size_t n) {
  // Per comparison bits (r >= g) | (r >= b) << 1 | (g >= b) << 2, the form's a and sign
  // times 42.5 (exact, as are their products with cr and d and the sum, 42.5 * num).
  const __m512 form_a = _mm512_mul_ps(
      _mm512_setr_ps(3, 5, 3, 5, 3, 3, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), _mm512_set1_ps(42.5f));
  const __m512 form_sign = _mm512_mul_ps(
      _mm512_setr_ps(1, -1, 1, 1, -1, -1, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0), _mm512_set1_ps(42.5f));
  // hue_dec's eight words, twice (a permute index k >> 5 is 0..7).
  const __m512i hue_dec =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.hue_dec)));
  // By i = floor(6h / 255), 0..6 (6, for h = 255, is sector 0).
  const __m512i sector_control = _mm512_setr_epi32(
      SectorControl(0), SectorControl(1), SectorControl(2), SectorControl(3), SectorControl(4),
      SectorControl(5), SectorControl(0), 0, 0, 0, 0, 0, 0, 0, 0, 0);
  // Each pixel's position in its 128-bit lane, in the three control bytes.
  const __m512i lane_position =
      _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x010101, 0x020202, 0x030303));
  // A lane's four 4-byte controls to 12 bytes.
  const __m512i compact_bytes =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i byte = _mm512_set1_epi32(0xFF);
  const __m512i hue_shift = _mm512_set1_epi32(shift);
  // 16-bit multiply-add factors: h * 1543 (i in the high half); 6 * h - 255 * i.
  const __m512i sector_mul = _mm512_set1_epi32(1543);
  const __m512i frac_mul = _mm512_set1_epi32(static_cast<int>(0xFF010006u));  // (6, -255).
  const __m512 one_f = _mm512_set1_ps(1.0f);
  const __m512 c255 = _mm512_set1_ps(255.0f);
  const __m512 half_tol = _mm512_set1_ps(0.5f - 0x1p-12f);
  for (size_t k = 0; k < n; k += 16, p += 48) {
    __m512i raw, r, g, b;
    LoadRgb16(p, &raw, &r, &g, &b);
    const __m512i min_rg = _mm512_min_epi32(r, g);
    const __m512i max_rg = _mm512_max_epi32(r, g);
    const __m512i maxc = _mm512_max_epi32(max_rg, b);
    const __m512i minc = _mm512_min_epi32(min_rg, b);
    const __m512i mid = _mm512_max_epi32(min_rg, _mm512_min_epi32(max_rg, b));
    __m512i bits = _mm512_maskz_mov_epi32(_mm512_cmpge_epi32_mask(r, g), one);
    bits = _mm512_mask_add_epi32(bits, _mm512_cmpge_epi32_mask(r, b), bits, _mm512_set1_epi32(2));
    bits = _mm512_mask_add_epi32(bits, _mm512_cmpge_epi32_mask(g, b), bits, _mm512_set1_epi32(4));
    const __m512 crf = _mm512_cvtepi32_ps(_mm512_sub_epi32(maxc, minc));
    const __m512 df = _mm512_cvtepi32_ps(_mm512_sub_epi32(maxc, mid));
    const __m512 vf = _mm512_cvtepi32_ps(maxc);
    // H. A grey pixel (cr = 0) divides by 1 instead; its H does not matter (S = 0).
    const __m512 crf1 = _mm512_max_ps(crf, one_f);
    const __m512 num42 = _mm512_fmadd_ps(_mm512_permutexvar_ps(bits, form_a), crf1,
                                         _mm512_mul_ps(_mm512_permutexvar_ps(bits, form_sign), df));
    const __m512 x = _mm512_div_ps(num42, crf1);
    __m512i hk = _mm512_cvttps_epi32(x);
    const __mmask16 whole = _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(hk), x, _CMP_EQ_OQ);
    const __m512i dec_word = _mm512_permutexvar_epi32(_mm512_srli_epi32(hk, 5), hue_dec);
    const __mmask16 dec = _mm512_mask_test_epi32_mask(whole, _mm512_rorv_epi32(dec_word, hk), one);
    hk = _mm512_mask_sub_epi32(hk, dec, hk, one);
    const __m512i h = _mm512_and_si512(_mm512_add_epi32(hk, hue_shift), byte);
    // S (0 for a grey pixel; v = 0 only there).
    const __m512 sf = _mm512_roundscale_ps(
        _mm512_div_ps(_mm512_mul_ps(crf, c255), _mm512_max_ps(vf, one_f)), kTruncate);
    // i and g = 6h - 255i.
    const __m512i h_sector = _mm512_madd_epi16(h, sector_mul);
    const __m512i i = _mm512_srli_epi32(h_sector, 16);
    const __m512i gi =
        _mm512_madd_epi16(_mm512_mask_blend_epi16(0xAAAAAAAA, h, h_sector), frac_mul);
    const __m512 gf = _mm512_cvtepi32_ps(gi);
    // Exact numerators (integers below 2^24): p = (255v - A) / 255, q = (V - B) / 65025,
    // t = (V - 255A + B) / 65025 with A = vs, B = vsg, V = 65025v.
    const __m512 a_vs = _mm512_mul_ps(vf, sf);
    const __m512 b_vsg = _mm512_mul_ps(a_vs, gf);
    const __m512 v65025 = _mm512_mul_ps(vf, _mm512_set1_ps(65025.0f));
    const __m512 pe = _mm512_mul_ps(_mm512_fmsub_ps(vf, c255, a_vs), _mm512_set1_ps(1.0f / 255.0f));
    const __m512 inv65025 = _mm512_set1_ps(1.0f / 65025.0f);
    const __m512 qe = _mm512_mul_ps(_mm512_sub_ps(v65025, b_vsg), inv65025);
    const __m512 te =
        _mm512_mul_ps(_mm512_add_ps(_mm512_fnmadd_ps(c255, a_vs, v65025), b_vsg), inv65025);
    constexpr int kNearestNoExc = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    // reduce(x) = x - nearest integer: within 2^-12 of +-0.5 is near a half.
    const __mmask16 near_half =
        _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_reduce_ps(qe, kNearestNoExc)), half_tol,
                           _CMP_GT_OQ) |
        _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_reduce_ps(te, kNearestNoExc)), half_tol,
                           _CMP_GT_OQ);
    const __m512i pi = _mm512_cvt_roundps_epi32(pe, kNearestNoExc);
    const __m512i qi = _mm512_cvt_roundps_epi32(qe, kNearestNoExc);
    const __m512i ti = _mm512_cvt_roundps_epi32(te, kNearestNoExc);
    // Per 128-bit lane (four pixels): bytes v0..v3, p0..p3, q0..q3, t0..t3.
    const __m512i vpqt =
        _mm512_packus_epi16(_mm512_packus_epi32(maxc, pi), _mm512_packus_epi32(qi, ti));
    const __m512i control = _mm512_shuffle_epi8(
        _mm512_add_epi32(_mm512_permutexvar_epi32(i, sector_control), lane_position),
        compact_bytes);
    StoreRgb16(p, _mm512_shuffle_epi8(vpqt, control));
    if (__builtin_expect(near_half != 0, 0)) RedoPixelsAvx512(t, shift, raw, near_half, p);
  }
}
#endif

}  // namespace

void AdjustHuePortable(Image& img, double hue_factor) {
  AdjustHueOn(HuePath::kPortable, img, hue_factor);
}

bool HuePathRuns(HuePath path) {
  switch (path) {
#if defined(FLOWLOADER_COLOUR_AVX2)
    case HuePath::kAvx2:
      return HasAvx2();
    case HuePath::kAvx512:
      return HasAvx512();
#endif
    case HuePath::kPortable:
      return true;
    default:
      return false;
  }
}

void AdjustHueOn(HuePath path, Image& img, double hue_factor) {
  const HueTables& t = Tables();
  const int shift = HueShift(hue_factor);
  uint8_t* p = img.pixels.data();
  size_t n = static_cast<size_t>(img.width) * img.height;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (path == HuePath::kAvx512) {
    const size_t bulk = n & ~static_cast<size_t>(15);
    HuePixelsAvx512(t, shift, p, bulk);
    p += 3 * bulk;
    n -= bulk;
  } else if (path == HuePath::kAvx2) {
    const size_t bulk = n & ~static_cast<size_t>(7);
    HuePixelsAvx2(t, shift, p, bulk);
    p += 3 * bulk;
    n -= bulk;
  }
#endif
  HuePixels(t, shift, p, n);
}

}  // namespace internal

void AdjustHue(Image& img, double hue_factor) {
  using internal::HuePath;
  const HuePath path = internal::HuePathRuns(HuePath::kAvx512) ? HuePath::kAvx512
                       : internal::HuePathRuns(HuePath::kAvx2) ? HuePath::kAvx2
                                                               : HuePath::kPortable;
  internal::AdjustHueOn(path, img, hue_factor);
}

}  // namespace flowloader::augment::kernels
