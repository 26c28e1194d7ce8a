// colour_hue.cc: F.adjust_hue on a PIL image (torchvision's
// functional_pil.adjust_hue): img.convert("HSV"), H += uint8(hue_factor * 255)
// wrapping, convert back to RGB. Both conversions restate PIL 9.4's
// libImaging/Convert.c (rgb2hsv_row, hsv2rgb) with its C types (float
// variables, double constants), so the bytes are PIL's; the round trip is lossy
// even for a zero shift, as in PIL.
//
// Speed: RGB -> HSV is two table lookups per pixel. H depends only on which
// channel is the largest and which the smallest (six forms), the spread cr =
// max - min and the middle channel's distance from the max; S only on cr and
// max. The tables are built once per process by running the literal conversion
// (RgbToHsvLiteral). HSV -> RGB keeps PIL's double arithmetic per pixel, with
// H's sector and fraction and S's fraction from 256-entry tables.
#include "stages/augment/ops/kernels/colour_hue.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

const HueTables& Tables() {
  static const HueTables* const tables = [] {
    auto* t = new HueTables();
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
        }
      }
      for (int m = cr; m < 256; ++m) {
        const uint8_t px[3] = {uint8_t(m), uint8_t(m - cr), uint8_t(m - cr)};
        uint8_t hsv[3];
        RgbToHsvLiteral(px, hsv);
        t->sat[cr * 256 + m] = hsv[1];
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
// RoundPd is RoundToByte on four doubles: floor, plus one where the remainder >= 0.5.
__attribute__((target("avx2"))) inline __m128i RoundPd(__m256d x) {
  const __m256d whole = _mm256_round_pd(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m256d up = _mm256_and_pd(
      _mm256_cmp_pd(_mm256_sub_pd(x, whole), _mm256_set1_pd(0.5), _CMP_GE_OQ), _mm256_set1_pd(1.0));
  return _mm256_cvttpd_epi32(_mm256_add_pd(whole, up));
}

// HuePixelsAvx2 is HuePixels eight pixels at a time (n a multiple of 8): the same
// lookups as gathers, the same float and double operations per lane (no FMA: the
// target is avx2 alone), the sector's picks as per-lane shifts of {v, p, q, t} packed
// in one word. Byte gathers read 4 bytes; the 3 past a table's end stay inside
// HueTables (the next member).
__attribute__((target("avx2"))) void HuePixelsAvx2(const HueTables& t, int shift, uint8_t* p,
                                                   size_t n) {
  const __m256i form_table = _mm256_setr_epi32(kForm[0], kForm[1], kForm[2], kForm[3], kForm[4],
                                               kForm[5], kForm[6], kForm[7]);
  // Shift of each output channel's value in the packed word, per sector (kPick * 8).
  const __m256i shift_r = _mm256_setr_epi32(0, 16, 8, 8, 24, 0, 0, 0);
  const __m256i shift_g = _mm256_setr_epi32(24, 0, 0, 16, 8, 8, 0, 0);
  const __m256i shift_b = _mm256_setr_epi32(8, 8, 24, 0, 0, 16, 0, 0);
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m256i hue_shift = _mm256_set1_epi32(shift);
  const __m256d one = _mm256_set1_pd(1.0);
  const int* sat = reinterpret_cast<const int*>(t.sat);
  const int* hue = reinterpret_cast<const int*>(&t.hue[0][0]);
  const int* sector = reinterpret_cast<const int*>(t.sector);
  for (size_t k = 0; k < n; k += 8, p += 24) {
    __m256i r, g, b;
    LoadRgb8(p, &r, &g, &b);
    const __m256i maxc = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
    const __m256i minc = _mm256_min_epi32(r, _mm256_min_epi32(g, b));
    const __m256i cr = _mm256_sub_epi32(maxc, minc);
    const __m256i s = _mm256_and_si256(
        _mm256_i32gather_epi32(sat, _mm256_add_epi32(_mm256_slli_epi32(cr, 8), maxc), 1), byte);
    // bits = (r >= g) | (r >= b) << 1 | (g >= b) << 2.
    const __m256i bits = _mm256_or_si256(
        _mm256_andnot_si256(_mm256_cmpgt_epi32(g, r), _mm256_set1_epi32(1)),
        _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpgt_epi32(b, r), _mm256_set1_epi32(2)),
                        _mm256_andnot_si256(_mm256_cmpgt_epi32(b, g), _mm256_set1_epi32(4))));
    const __m256i form = _mm256_permutevar8x32_epi32(form_table, bits);
    const __m256i mid =
        _mm256_sub_epi32(_mm256_add_epi32(r, _mm256_add_epi32(g, b)), _mm256_add_epi32(maxc, minc));
    const __m256i d = _mm256_sub_epi32(maxc, mid);
    const __m256i hue_index =
        _mm256_or_si256(_mm256_slli_epi32(form, 16), _mm256_or_si256(_mm256_slli_epi32(cr, 8), d));
    const __m256i h = _mm256_and_si256(
        _mm256_add_epi32(_mm256_i32gather_epi32(hue, hue_index, 1), hue_shift), byte);
    const __m256 f = _mm256_i32gather_ps(t.frac, h, 4);
    const __m256 fs = _mm256_i32gather_ps(t.sfrac, s, 4);
    const __m256i sec = _mm256_and_si256(_mm256_i32gather_epi32(sector, h, 1), byte);
    const __m256 fs_f = _mm256_mul_ps(fs, f);  // fs * f: a float product in Convert.c.
    const __m256 vf = _mm256_cvtepi32_ps(maxc);
    __m128i pv[2], qv[2], tv[2];
    for (int half = 0; half < 2; ++half) {
      const __m128 vf4 = half ? _mm256_extractf128_ps(vf, 1) : _mm256_castps256_ps128(vf);
      const __m128 fs4 = half ? _mm256_extractf128_ps(fs, 1) : _mm256_castps256_ps128(fs);
      const __m128 f4 = half ? _mm256_extractf128_ps(f, 1) : _mm256_castps256_ps128(f);
      const __m128 fsf4 = half ? _mm256_extractf128_ps(fs_f, 1) : _mm256_castps256_ps128(fs_f);
      const __m256d vd = _mm256_cvtps_pd(vf4);
      const __m256d fsd = _mm256_cvtps_pd(fs4);
      pv[half] = RoundPd(_mm256_mul_pd(vd, _mm256_sub_pd(one, fsd)));
      qv[half] = RoundPd(_mm256_mul_pd(vd, _mm256_sub_pd(one, _mm256_cvtps_pd(fsf4))));
      tv[half] = RoundPd(_mm256_mul_pd(
          vd, _mm256_sub_pd(one, _mm256_mul_pd(fsd, _mm256_sub_pd(one, _mm256_cvtps_pd(f4))))));
    }
    const __m256i pq = _mm256_or_si256(_mm256_slli_epi32(_mm256_set_m128i(pv[1], pv[0]), 8),
                                       _mm256_slli_epi32(_mm256_set_m128i(qv[1], qv[0]), 16));
    const __m256i word = _mm256_or_si256(_mm256_or_si256(maxc, pq),
                                         _mm256_slli_epi32(_mm256_set_m128i(tv[1], tv[0]), 24));
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
