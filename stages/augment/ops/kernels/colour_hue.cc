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
// AVX2 path (HuePixelsAvx2) uses no large table: float estimates of exact rationals,
// exact corrections where the estimate cannot decide PIL's rounding.
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
  // HuePixelsAvx2's corrections where the exact H (or S) is an integer k: bit k set
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
// (see HuePixelsAvx2): k, or k - 1, or 0 for k = 255 (H's fmod wrap). Mark aborts on
// anything else or on two answers for one k, which would make the fast path wrong;
// Pack writes the k - 1 cases as bits (bit k of word k / 32).
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
          // X = 42.5 * (a * cr + sign * d) / cr (HuePixelsAvx2); where it is an integer k,
          // record whether PIL gives k - 1.
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
      if (word != 0) {  // HuePixelsAvx2 takes S without corrections.
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
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// TruncateNear is PIL's H from x, an estimate of the exact X (HuePixelsAvx2; x >= 0,
// within 1.2e-4 of X): where x is within 2^-10 of an integer k, X = k and PIL gives k
// less k's bit in dec; elsewhere trunc(x).
__attribute__((target("avx2"))) inline __m256i TruncateNear(__m256 x, __m256i dec) {
  const __m256 kf = _mm256_round_ps(x, kNearest);
  const __m256i k = _mm256_cvttps_epi32(kf);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 on_int = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(x, kf), abs_mask),
                                      _mm256_set1_ps(0x1p-10f), _CMP_LT_OQ);
  const __m256i bit = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(dec, _mm256_srli_epi32(k, 5)),
                        _mm256_and_si256(k, _mm256_set1_epi32(31))),
      _mm256_set1_epi32(1));
  return _mm256_blendv_epi8(_mm256_cvttps_epi32(x), _mm256_sub_epi32(k, bit),
                            _mm256_castps_si256(on_int));
}

// Recip is 1 / b within a relative 2^-21: rcp_ps (documented error <= 1.5 * 2^-12 on
// Intel and AMD; the bound below holds up to 2^-11) and one Newton step (error e^2 plus
// three float roundings). Measured 3% faster than two vdivps in HuePixelsAvx2
// (colour_bench 138 vs 142 us, alternating runs).
__attribute__((target("avx2"))) inline __m256 Recip(__m256 b) {
  const __m256 r = _mm256_rcp_ps(b);
  return _mm256_mul_ps(r, _mm256_sub_ps(_mm256_set1_ps(2.0f), _mm256_mul_ps(b, r)));
}

// HuePixelsAvx2 is HuePixels eight pixels at a time (n a multiple of 8), with no large
// tables: each value PIL computes is near an exact small rational, and a float estimate
// of that rational decides PIL's rounding except where the rational lies on (or, for
// hsv2rgb, within 2^-12 of) the rounding boundary; those cases are handled exactly.
//
// RGB -> HSV. With d = how far the middle channel is below the max, PIL's H is
// trunc(X) of its float/double value of X = 42.5 * (a * cr + sign * d) / cr, a and sign
// per form (form 0, r max b min: 42.5 * (cr - d) / cr), within 2e-5 of X (float d / cr,
// float h: |h - exact| <= 2^-22 + 2^-23, times 42.5). The numerator (<= 65025) is exact
// in float, so X_est = num * Recip(cr) is within 255 * 2^-21 = 1.2e-4 of X. Where X is
// not an integer it is at least 1 / (2 * cr) >= 1 / 510 = 1.96e-3 from one, so
// trunc(X_est) is PIL's H, and X_est is more than 2^-10 from an integer. Where X is an
// integer k (X_est within 2^-10 of k), PIL's float steps give k or k - 1 (0 for k = 255,
// fmod's wrap), a function of k alone (k fixes the rational d / cr and the form's
// formula): one bit per k (TruncateNear), found at table build from the literal
// conversion (CorrectionMarks aborts if a k had two answers). S = trunc of PIL's
// value of Y = 255 * cr / max, likewise: Y is at least 1 / 255 from an integer unless it
// is one, and PIL never gives k - 1 for an integer Y = k (checked at table build), so
// S = trunc(Y_est + 2^-10).
//
// HSV -> RGB. With i = floor(6h / 255), g = 6h - 255i (f = g / 255), p, q, t are
// v (255 - s) / 255, v (65025 - s g) / 65025 and v (65025 - s (255 - g)) / 65025;
// every numerator is an integer below 2^24, so the estimates (numerator * fl(1/den))
// are within 255 * 2^-23 = 3.1e-5 of the rationals. Convert.c's float fs and f are
// within 2^-25 (+ 2^-52) of s / 255 and g / 255 and fs * f is a float product, so its
// doubles are within 255 * 3 * 2^-25 = 2.3e-5 of the rationals: estimate and PIL's
// double differ by under 5.4e-5 < 2^-12. Where the estimate is 2^-12 or more from a
// half-integer, both round to the same integer (PIL's round() and round-to-nearest
// agree away from halves). p's rational is never nearer a half than 1 / 510, so p needs
// no check; for q and t, a group of eight with any lane within 2^-12 of a half (about
// 2 * 2^-11 per pixel, under 1% of groups) is redone by the scalar path. The test
// AdjustHueFastPathMatchesOnEveryColour checks all 16M colours (all 256 shifts were
// checked once while developing).
//
// Measured (colour_bench, thread CPU per 224x224 call, Zen 4, alternating runs): the
// previous kernel (gathers from the 384 KB H and 64 KB S tables, double p, q, t per
// lane) 258-262 us, this one 137-140 us (0.53x); CPU per image -10% (DINO), -13% (SimCLR).
__attribute__((target("avx2"))) void HuePixelsAvx2(const HueTables& t, int shift, uint8_t* p,
                                                   size_t n) {
  // Per comparison bits (r >= g) | (r >= b) << 1 | (g >= b) << 2, the form's a and sign.
  const __m256 form_a = _mm256_setr_ps(3, 5, 3, 5, 3, 3, 1, 1);      // kForm -> a.
  const __m256 form_sign = _mm256_setr_ps(1, -1, 1, 1, -1, -1, 1, -1);  // kForm -> sign.
  const __m256i hue_dec = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.hue_dec));
  // Shift of each output channel's value in the packed word, per sector (kPick * 8).
  const __m256i shift_r = _mm256_setr_epi32(0, 16, 8, 8, 24, 0, 0, 0);
  const __m256i shift_g = _mm256_setr_epi32(24, 0, 0, 16, 8, 8, 0, 0);
  const __m256i shift_b = _mm256_setr_epi32(8, 8, 24, 0, 0, 16, 0, 0);
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m256i one_i = _mm256_set1_epi32(1);
  const __m256i hue_shift = _mm256_set1_epi32(shift);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 half_tol = _mm256_set1_ps(0.5f - 0x1p-12f);
  const __m256 one_f = _mm256_set1_ps(1.0f);
  const __m256 c42_5 = _mm256_set1_ps(42.5f);
  const __m256 c255 = _mm256_set1_ps(255.0f);
  const __m256 c65025 = _mm256_set1_ps(65025.0f);
  const __m256 inv255 = _mm256_set1_ps(1.0f / 255.0f);
  const __m256 inv65025 = _mm256_set1_ps(1.0f / 65025.0f);
  for (size_t k = 0; k < n; k += 8, p += 24) {
    __m256i r, g, b;
    LoadRgb8(p, &r, &g, &b);
    const __m256i maxc = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
    const __m256i minc = _mm256_min_epi32(r, _mm256_min_epi32(g, b));
    const __m256i cr = _mm256_sub_epi32(maxc, minc);
    const __m256i bits = _mm256_or_si256(
        _mm256_andnot_si256(_mm256_cmpgt_epi32(g, r), one_i),
        _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpgt_epi32(b, r), _mm256_set1_epi32(2)),
                        _mm256_andnot_si256(_mm256_cmpgt_epi32(b, g), _mm256_set1_epi32(4))));
    const __m256i mid =
        _mm256_sub_epi32(_mm256_add_epi32(r, _mm256_add_epi32(g, b)), _mm256_add_epi32(maxc, minc));
    const __m256 crf = _mm256_cvtepi32_ps(cr);
    const __m256 df = _mm256_cvtepi32_ps(_mm256_sub_epi32(maxc, mid));
    const __m256 vf = _mm256_cvtepi32_ps(maxc);
    // A grey pixel (cr = 0): num = 0 and cr := 1 give X = 0, Y = 0 (S = 0: p = q = t = v).
    const __m256 num = _mm256_add_ps(_mm256_mul_ps(_mm256_permutevar8x32_ps(form_a, bits), crf),
                                     _mm256_mul_ps(_mm256_permutevar8x32_ps(form_sign, bits), df));
    const __m256 x = _mm256_mul_ps(_mm256_mul_ps(num, c42_5), Recip(_mm256_max_ps(crf, one_f)));
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(crf, c255), Recip(_mm256_max_ps(vf, one_f)));
    __m256i hk = TruncateNear(x, hue_dec);
    // X = 255 (PIL: fmod to 0) wraps with the & 255 below.
    hk = _mm256_sub_epi32(hk, _mm256_cmpeq_epi32(hk, byte));
    const __m256i h = _mm256_and_si256(_mm256_add_epi32(hk, hue_shift), byte);
    // S's corrections are all zero (checked at table build), so trunc(y + 2^-10) is
    // TruncateNear's value: k for an integer Y = k, trunc(Y) elsewhere (saves ~10 ops).
    const __m256i s = _mm256_cvttps_epi32(_mm256_add_ps(y, _mm256_set1_ps(0x1p-10f)));
    // i = floor(6h / 255) ((x + (x >> 8) + 1) >> 8 is x / 255 for x < 65535), g = 6h - 255i.
    const __m256i h6 = _mm256_add_epi32(_mm256_slli_epi32(h, 2), _mm256_slli_epi32(h, 1));
    const __m256i i = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(h6, _mm256_srli_epi32(h6, 8)), one_i), 8);
    const __m256i gi = _mm256_sub_epi32(h6, _mm256_sub_epi32(_mm256_slli_epi32(i, 8), i));
    const __m256i sec = _mm256_andnot_si256(_mm256_cmpeq_epi32(i, _mm256_set1_epi32(6)), i);
    const __m256 sf = _mm256_cvtepi32_ps(s);
    const __m256 gf = _mm256_cvtepi32_ps(gi);
    const __m256 pe = _mm256_mul_ps(_mm256_mul_ps(vf, _mm256_sub_ps(c255, sf)), inv255);
    const __m256 qe =
        _mm256_mul_ps(_mm256_mul_ps(vf, _mm256_sub_ps(c65025, _mm256_mul_ps(sf, gf))), inv65025);
    const __m256 te = _mm256_mul_ps(
        _mm256_mul_ps(vf, _mm256_sub_ps(c65025, _mm256_mul_ps(sf, _mm256_sub_ps(c255, gf)))),
        inv65025);
    const __m256 pr = _mm256_round_ps(pe, kNearest);
    const __m256 qr = _mm256_round_ps(qe, kNearest);
    const __m256 tr = _mm256_round_ps(te, kNearest);
    const __m256 near_half = _mm256_or_ps(
        _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(qe, qr), abs_mask), half_tol, _CMP_GT_OQ),
        _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(te, tr), abs_mask), half_tol, _CMP_GT_OQ));
    if (__builtin_expect(_mm256_movemask_ps(near_half) != 0, 0)) {
      HuePixels(t, shift, p, 8);
      continue;
    }
    const __m256i pq = _mm256_or_si256(_mm256_slli_epi32(_mm256_cvttps_epi32(pr), 8),
                                       _mm256_slli_epi32(_mm256_cvttps_epi32(qr), 16));
    const __m256i word = _mm256_or_si256(_mm256_or_si256(maxc, pq),
                                         _mm256_slli_epi32(_mm256_cvttps_epi32(tr), 24));
    const __m256i out_r =
        _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_permutevar8x32_epi32(shift_r, sec)), byte);
    const __m256i out_g =
        _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_permutevar8x32_epi32(shift_g, sec)), byte);
    const __m256i out_b =
        _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_permutevar8x32_epi32(shift_b, sec)), byte);
    StoreRgb8(p, out_r, out_g, out_b);
  }
}
#endif

}  // namespace

void AdjustHuePortable(Image& img, double hue_factor) {
  HuePixels(Tables(), HueShift(hue_factor), img.pixels.data(),
            static_cast<size_t>(img.width) * img.height);
}

}  // namespace internal

void AdjustHue(Image& img, double hue_factor) {
  const internal::HueTables& t = internal::Tables();
  const int shift = internal::HueShift(hue_factor);
  uint8_t* p = img.pixels.data();
  size_t n = static_cast<size_t>(img.width) * img.height;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasAvx2()) {
    const size_t bulk = n & ~static_cast<size_t>(7);
    internal::HuePixelsAvx2(t, shift, p, bulk);
    p += 3 * bulk;
    n -= bulk;
  }
#endif
  internal::HuePixels(t, shift, p, n);
}

}  // namespace flowloader::augment::kernels
