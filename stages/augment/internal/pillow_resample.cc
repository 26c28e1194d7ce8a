// pillow_resample.cc: Pillow 9's Resample.c (ImagingResample) and ImagingScaleAffine,
// restated for interleaved RGB.
#include "stages/augment/internal/pillow_resample.h"

#include <immintrin.h>  // SSE4.1; AVX2 in target("avx2") functions.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "stages/augment/internal/pillow_kernels.h"
#include "stages/core/cpu.h"

namespace flowloader::augment::internal {
namespace {

constexpr int kPrecisionBits = pillow::kPrecisionBits;

// Set by SetPillowScalarForTesting: every call takes the plain passes.
std::atomic<bool> g_scalar_only{false};
// Set by SetPillowNoVnniForTesting: the SIMD passes keep to AVX2.
std::atomic<bool> g_no_vnni{false};
// Set by SetPillowNoBusdForTesting: the VNNI horizontal pass keeps to vpdpwssd.
std::atomic<bool> g_no_busd{false};

// The filters, two arguments at a time (SSE4.1): Pillow's bilinear_filter and
// bicubic_filter (a = -0.5, its and torchvision's PIL-path cubic constant) with each
// branch's arithmetic as Pillow writes it, selected per lane, so the same doubles.
// |x| stands for Pillow's `if (x < 0) x = -x` (they differ only at -0.0, where both
// filters give the same value).
__m128d BilinearFilter2(__m128d x) {
  x = _mm_andnot_pd(_mm_set1_pd(-0.0), x);
  const __m128d inside = _mm_cmplt_pd(x, _mm_set1_pd(1.0));
  return _mm_and_pd(inside, _mm_sub_pd(_mm_set1_pd(1.0), x));
}

__m128d BicubicFilter2(__m128d x) {
  constexpr double a = -0.5;
  x = _mm_andnot_pd(_mm_set1_pd(-0.0), x);
  // ((a + 2) * x - (a + 3)) * x * x + 1 for |x| < 1.
  const __m128d near = _mm_add_pd(
      _mm_mul_pd(_mm_mul_pd(_mm_sub_pd(_mm_mul_pd(_mm_set1_pd(a + 2.0), x), _mm_set1_pd(a + 3.0)),
                            x),
                 x),
      _mm_set1_pd(1.0));
  // (((x - 5) * x + 8) * x - 4) * a for 1 <= |x| < 2.
  const __m128d far = _mm_mul_pd(
      _mm_sub_pd(
          _mm_mul_pd(_mm_add_pd(_mm_mul_pd(_mm_sub_pd(x, _mm_set1_pd(5.0)), x), _mm_set1_pd(8.0)),
                     x),
          _mm_set1_pd(4.0)),
      _mm_set1_pd(a));
  const __m128d within2 = _mm_and_pd(_mm_cmplt_pd(x, _mm_set1_pd(2.0)), far);
  return _mm_blendv_pd(within2, near, _mm_cmplt_pd(x, _mm_set1_pd(1.0)));
}

// TapWindow is one output's filter centre and source pixels [xmin, xmin + count)
// (precompute_coeffs' center, xmin and xmax).
struct TapWindow {
  double center = 0;
  int xmin = 0;
  int count = 0;
};

TapWindow WindowAt(int xx, double in0, double scale, double support, int in_size) {
  TapWindow t;
  t.center = in0 + (xx + 0.5) * scale;
  t.xmin = static_cast<int>(t.center - support + 0.5);
  if (t.xmin < 0) t.xmin = 0;
  int xmax = static_cast<int>(t.center + support + 0.5);
  if (xmax > in_size) xmax = in_size;
  t.count = xmax - t.xmin;
  return t;
}

// FilterPair writes the filter weights of two outputs' windows, lane by lane, into w0
// and w1 (ksize each; 0 from a window's count on) and returns their sums. Each sum adds
// its weights in tap order from 0.0, as Pillow's loop does; the zeros past a count
// leave it unchanged.
__m128d FilterPair(const TapWindow& a, const TapWindow& b, double ss, int ksize, bool bicubic,
                   double* w0, double* w1) {
  const __m128d center = _mm_setr_pd(a.center, b.center);
  const __m128d count = _mm_setr_pd(a.count, b.count);
  const __m128d half = _mm_set1_pd(0.5), vss = _mm_set1_pd(ss), one = _mm_set1_pd(1.0);
  // x and x + xmin as doubles, stepped by 1.0 (exact: small integers).
  __m128d tap = _mm_setzero_pd();
  __m128d pos = _mm_setr_pd(a.xmin, b.xmin);
  __m128d ww = _mm_setzero_pd();
  for (int x = 0; x < ksize; ++x, tap = _mm_add_pd(tap, one), pos = _mm_add_pd(pos, one)) {
    // (x + xmin - center + 0.5) * ss, x + xmin an int in Pillow (exact either way).
    const __m128d arg = _mm_mul_pd(_mm_add_pd(_mm_sub_pd(pos, center), half), vss);
    const __m128d in_window = _mm_cmplt_pd(tap, count);
    const __m128d v =
        _mm_and_pd(in_window, bicubic ? BicubicFilter2(arg) : BilinearFilter2(arg));
    _mm_storel_pd(w0 + x, v);
    _mm_storeh_pd(w1 + x, v);
    ww = _mm_add_pd(ww, v);
  }
  return ww;
}

// NormalizeTaps is normalize_coeffs_8bpc for one output: each weight divided by the
// sum (when it is not 0), scaled to 22-bit fixed point and rounded half away from zero,
// two at a time (the same division and rounding per value).
void NormalizeTaps(const double* w, double ww, int ksize, int* k) {
  const __m128d div = _mm_set1_pd(ww);
  const __m128d one = _mm_set1_pd(static_cast<double>(1 << kPrecisionBits));
  int x = 0;
  for (; x + 2 <= ksize; x += 2) {
    __m128d v = _mm_loadu_pd(w + x);
    if (ww != 0.0) v = _mm_div_pd(v, div);
    v = _mm_mul_pd(v, one);
    // (int) (v < 0 ? trunc(-0.5 + v) : trunc(0.5 + v)): cvttpd truncates.
    const __m128d half =
        _mm_blendv_pd(_mm_set1_pd(0.5), _mm_set1_pd(-0.5), _mm_cmplt_pd(v, _mm_setzero_pd()));
    const __m128i q = _mm_cvttpd_epi32(_mm_add_pd(half, v));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(k + x), q);
  }
  for (; x < ksize; ++x) {
    double v = ww != 0.0 ? w[x] / ww : w[x];
    v *= (1 << kPrecisionBits);
    k[x] = static_cast<int>(v < 0 ? std::trunc(-0.5 + v) : std::trunc(0.5 + v));
  }
}

// The AVX2 form of FilterPair and NormalizeTaps: four outputs at a time, the same
// arithmetic per lane (target avx2 alone: no FMA to contract it), called only where the
// CPU has AVX2.
__attribute__((target("avx2"))) __m256d BilinearFilter4(__m256d x) {
  x = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
  const __m256d inside = _mm256_cmp_pd(x, _mm256_set1_pd(1.0), _CMP_LT_OQ);
  return _mm256_and_pd(inside, _mm256_sub_pd(_mm256_set1_pd(1.0), x));
}

__attribute__((target("avx2"))) __m256d BicubicFilter4(__m256d x) {
  constexpr double a = -0.5;
  x = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
  const __m256d near = _mm256_add_pd(
      _mm256_mul_pd(
          _mm256_mul_pd(
              _mm256_sub_pd(_mm256_mul_pd(_mm256_set1_pd(a + 2.0), x), _mm256_set1_pd(a + 3.0)),
              x),
          x),
      _mm256_set1_pd(1.0));
  const __m256d far = _mm256_mul_pd(
      _mm256_sub_pd(
          _mm256_mul_pd(
              _mm256_add_pd(_mm256_mul_pd(_mm256_sub_pd(x, _mm256_set1_pd(5.0)), x),
                            _mm256_set1_pd(8.0)),
              x),
          _mm256_set1_pd(4.0)),
      _mm256_set1_pd(a));
  const __m256d within2 = _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(2.0), _CMP_LT_OQ), far);
  return _mm256_blendv_pd(within2, near, _mm256_cmp_pd(x, _mm256_set1_pd(1.0), _CMP_LT_OQ));
}

// TapsQuadAvx2 writes the taps of outputs first .. first + 3 (windows win[0..3]; an
// empty window for a lane past the last output, whose taps are not stored): weights per
// tap for the four lanes, summed in tap order per lane, then normalized per lane.
__attribute__((target("avx2"))) void TapsQuadAvx2(const TapWindow (&win)[4], double ss,
                                                  bool bicubic, int first, int lanes,
                                                  PillowTaps* t) {
  const int ksize = t->ksize;
  thread_local std::vector<double> wt;  // Tap x of lane l at wt[4 * x + l].
  if (wt.size() < 4 * static_cast<size_t>(ksize)) wt.resize(4 * static_cast<size_t>(ksize));
  const __m256d center = _mm256_setr_pd(win[0].center, win[1].center, win[2].center,
                                        win[3].center);
  const __m256d count = _mm256_setr_pd(win[0].count, win[1].count, win[2].count, win[3].count);
  const __m256d half = _mm256_set1_pd(0.5), vss = _mm256_set1_pd(ss), one = _mm256_set1_pd(1.0);
  __m256d tap = _mm256_setzero_pd();
  __m256d pos = _mm256_setr_pd(win[0].xmin, win[1].xmin, win[2].xmin, win[3].xmin);
  __m256d ww = _mm256_setzero_pd();
  for (int x = 0; x < ksize;
       ++x, tap = _mm256_add_pd(tap, one), pos = _mm256_add_pd(pos, one)) {
    const __m256d arg = _mm256_mul_pd(_mm256_add_pd(_mm256_sub_pd(pos, center), half), vss);
    const __m256d in_window = _mm256_cmp_pd(tap, count, _CMP_LT_OQ);
    const __m256d v =
        _mm256_and_pd(in_window, bicubic ? BicubicFilter4(arg) : BilinearFilter4(arg));
    _mm256_storeu_pd(&wt[4 * static_cast<size_t>(x)], v);
    ww = _mm256_add_pd(ww, v);
  }
  // normalize_coeffs_8bpc per lane: w / ww where ww != 0, else w; then as NormalizeTaps.
  const __m256d zero_sum = _mm256_cmp_pd(ww, _mm256_setzero_pd(), _CMP_EQ_OQ);
  const __m256d fixed = _mm256_set1_pd(static_cast<double>(1 << kPrecisionBits));
  for (int x = 0; x < ksize; ++x) {
    const __m256d w = _mm256_loadu_pd(&wt[4 * static_cast<size_t>(x)]);
    // A lane with sum 0 divides by 0 here (masked, no trap) and keeps w instead.
    __m256d v = _mm256_blendv_pd(_mm256_div_pd(w, ww), w, zero_sum);
    v = _mm256_mul_pd(v, fixed);
    const __m256d half_away = _mm256_blendv_pd(_mm256_set1_pd(0.5), _mm256_set1_pd(-0.5),
                                               _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_LT_OQ));
    alignas(16) int32_t q[4];
    const __m128i rounded = _mm256_cvttpd_epi32(_mm256_add_pd(half_away, v));
    _mm_store_si128(reinterpret_cast<__m128i*>(q), rounded);
    for (int lane = 0; lane < lanes; ++lane) {
      t->k[static_cast<size_t>(first + lane) * ksize + x] = q[lane];
    }
  }
}

// TapsAvx2: whether PrecomputePillowTaps takes TapsQuadAvx2 (the CPU has AVX2 and no
// test asked for the plain passes).
bool TapsAvx2() {
  static const bool avx2 = CpuHas(CpuFeature::kAvx2);
  return avx2 && !g_scalar_only.load(std::memory_order_relaxed);
}

}  // namespace

// Pillow's precompute_coeffs + normalize_coeffs_8bpc: with AVX2, four outputs at a time
// (TapsQuadAvx2); else two outputs at a time through the filter (each lane its own
// window and sum) and two taps at a time through the normalization. Every tap of the
// ksize is written (0 past an output's count).
void PrecomputePillowTaps(int in_size, double in0, double in1, int out_size, bool bicubic,
                          PillowTaps* t) {
  const double support_base = bicubic ? 2.0 : 1.0;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_base * filterscale;
  const double ss = 1.0 / filterscale;
  t->ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t->bounds.resize(2 * out_size);
  t->k.resize(static_cast<size_t>(out_size) * t->ksize);
  if (TapsAvx2()) {
    for (int xx = 0; xx < out_size; xx += 4) {
      TapWindow win[4];
      const int lanes = std::min(4, out_size - xx);
      for (int lane = 0; lane < lanes; ++lane) {
        win[lane] = WindowAt(xx + lane, in0, scale, support, in_size);
        t->bounds[2 * (xx + lane)] = win[lane].xmin;
        t->bounds[2 * (xx + lane) + 1] = win[lane].count;
      }
      TapsQuadAvx2(win, ss, bicubic, xx, lanes, t);
    }
    return;
  }
  thread_local std::vector<double> w;
  w.resize(2 * static_cast<size_t>(t->ksize));
  for (int xx = 0; xx < out_size; xx += 2) {
    const TapWindow a = WindowAt(xx, in0, scale, support, in_size);
    // An odd last output pairs with an empty window (no taps, sum 0, nothing stored).
    const TapWindow b =
        xx + 1 < out_size ? WindowAt(xx + 1, in0, scale, support, in_size) : TapWindow{};
    alignas(16) double sums[2];
    _mm_store_pd(sums, FilterPair(a, b, ss, t->ksize, bicubic, w.data(), w.data() + t->ksize));
    for (int lane = 0; lane < 2 && xx + lane < out_size; ++lane) {
      const TapWindow& win = lane == 0 ? a : b;
      NormalizeTaps(w.data() + lane * t->ksize, sums[lane], t->ksize,
                    &t->k[static_cast<size_t>(xx + lane) * t->ksize]);
      t->bounds[2 * (xx + lane)] = win.xmin;
      t->bounds[2 * (xx + lane) + 1] = win.count;
    }
  }
}

namespace {

// The other filters, as Resample.c writes them (in double, libm's sin and cos).
double BoxFilter(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

double HammingFilter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  return std::sin(x) / x * (0.54 + 0.46 * std::cos(x));
}

double SincFilter(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double LanczosFilter(double x) {
  return -3.0 <= x && x < 3.0 ? SincFilter(x) * SincFilter(x / 3) : 0.0;
}

// PrecomputeFilterTaps is precompute_coeffs + normalize_coeffs_8bpc for `filter`, one
// tap at a time, in Pillow's order of operations.
void PrecomputeFilterTaps(int in_size, double in0, double in1, int out_size,
                          PillowFilter filter, PillowTaps* t) {
  double (*fn)(double) = filter == PillowFilter::kBox       ? BoxFilter
                         : filter == PillowFilter::kHamming ? HammingFilter
                                                            : LanczosFilter;
  const double support_base = filter == PillowFilter::kBox       ? 0.5
                              : filter == PillowFilter::kHamming ? 1.0
                                                                 : 3.0;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_base * filterscale;
  const double ss = 1.0 / filterscale;
  t->ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t->bounds.resize(2 * out_size);
  t->k.resize(static_cast<size_t>(out_size) * t->ksize);
  std::vector<double> k(t->ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    const int xmin = std::max(0, static_cast<int>(center - support + 0.5));
    const int xmax = std::min(in_size, static_cast<int>(center + support + 0.5)) - xmin;
    int x = 0;
    for (; x < xmax; ++x) {
      k[x] = fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
    }
    for (; x < t->ksize; ++x) k[x] = 0;
    int* out = &t->k[static_cast<size_t>(xx) * t->ksize];
    for (x = 0; x < t->ksize; ++x) {
      out[x] = k[x] < 0 ? static_cast<int>(-0.5 + k[x] * (1 << kPrecisionBits))
                        : static_cast<int>(0.5 + k[x] * (1 << kPrecisionBits));
    }
    t->bounds[2 * xx] = xmin;
    t->bounds[2 * xx + 1] = std::max(xmax, 0);
  }
}

using Taps = PillowTaps;

inline uint8_t Clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// The sums fit int32 as in Pillow (INT32 ss): |weights| sum to under 1.3 × 2^22, times 255.

// LoadPixel widens one RGB pixel to four int32 lanes (the fourth is don't-care): a
// four-byte load, so the caller keeps the image's very last pixel out of it.
inline __m128i LoadPixel(const uint8_t* p) {
  int32_t word;
  std::memcpy(&word, p, 4);
  return _mm_cvtepu8_epi32(_mm_cvtsi32_si128(word));
}

// HorizontalPass resamples rows [y0, y0 + rows) of `src` into `out` (out_w × rows): one
// pixel's three channels per SSE4.1 multiply-add, the same integer sums as Pillow's.
void HorizontalPass(const ImageView& src, int y0, const Taps& th, int out_w, Image* out) {
  const uint8_t* last = src.Row(src.height - 1) + (src.width - 1) * 3;
  const __m128i half = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  for (int y = 0; y < out->height; ++y) {
    const uint8_t* in = src.Row(y + y0);
    uint8_t* row = out->Row(y);
    for (int xx = 0; xx < out_w; ++xx) {
      const int xmin = th.bounds[2 * xx];
      const int xmax = th.bounds[2 * xx + 1];
      const int* k = &th.k[static_cast<size_t>(xx) * th.ksize];
      const uint8_t* p = in + xmin * 3;
      __m128i acc = half;
      // The image's last pixel is read through a 4-byte copy, the rest directly.
      const int direct = p + 3 * (xmax - 1) == last ? xmax - 1 : xmax;
      for (int x = 0; x < direct; ++x, p += 3) {
        acc = _mm_add_epi32(acc, _mm_mullo_epi32(LoadPixel(p), _mm_set1_epi32(k[x])));
      }
      if (direct < xmax) {
        uint8_t pixel[4] = {p[0], p[1], p[2], 0};
        acc = _mm_add_epi32(acc, _mm_mullo_epi32(LoadPixel(pixel), _mm_set1_epi32(k[direct])));
      }
      alignas(16) int32_t sums[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(sums), acc);
      row[3 * xx] = Clip8(sums[0]);
      row[3 * xx + 1] = Clip8(sums[1]);
      row[3 * xx + 2] = Clip8(sums[2]);
    }
  }
}

// VerticalPass: taps outer, values inner, so the inner loop is a vectorizable
// multiply-add over the whole row.
void VerticalPass(const ImageView& mid, const Taps& tv, int out_w, int out_h, Image* dst) {
  thread_local std::vector<int32_t> acc;
  const int n = out_w * 3;
  acc.resize(n);
  dst->Resize(out_w, out_h, 3);
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = tv.bounds[2 * yy];
    const int ymax = tv.bounds[2 * yy + 1];
    const int* k = &tv.k[static_cast<size_t>(yy) * tv.ksize];
    int32_t* a = acc.data();
    for (int x = 0; x < n; ++x) a[x] = 1 << (kPrecisionBits - 1);
    for (int y = 0; y < ymax; ++y) {
      const uint8_t* in = mid.Row(y + ymin);
      const int32_t w = k[y];
      for (int x = 0; x < n; ++x) a[x] += in[x] * w;
    }
    uint8_t* out = dst->Row(yy);
    for (int x = 0; x < n; ++x) out[x] = Clip8(a[x]);
  }
}

// SimdPasses says whether PillowResample runs the AVX2 passes (pillow_kernels.h).
bool SimdPasses() {
  static const bool avx2 = CpuHas(CpuFeature::kAvx2);
  return avx2 && !g_scalar_only.load(std::memory_order_relaxed);
}

// VnniPasses says whether the horizontal pass takes its vpdpwssd kernels.
bool VnniPasses() {
  static const bool vnni =
      CpuHas(CpuFeature::kAvx512Vnni) && CpuHas(CpuFeature::kAvx512Vl);
  return vnni && !g_no_vnni.load(std::memory_order_relaxed);
}

// BusdPasses says whether the horizontal pass takes its vpdpbusd kernel (pillow_busd.cc).
bool BusdPasses() {
  static const bool busd =
      CpuHas(CpuFeature::kAvx512Vnni) && CpuHas(CpuFeature::kAvx512Vl) &&
      CpuHas(CpuFeature::kAvx512Bw) && CpuHas(CpuFeature::kAvx512Vbmi);
  return busd && VnniPasses() && !g_no_busd.load(std::memory_order_relaxed);
}

// HorizontalSimd is HorizontalPass with the AVX2 kernel, columns mirrored when `flip` (the
// vertical pass treats columns alike, so mirroring here mirrors the output). A tap
// group's load never leaves the view's rows (or a zero-padded copy of the last one).
void HorizontalSimd(const ImageView& src, int y0, const Taps& th, int out_w, bool flip,
                    Image* out) {
  int max_count = 1;
  for (int xx = 0; xx < out_w; ++xx) max_count = std::max(max_count, th.bounds[2 * xx + 1]);
  const int groups = (max_count + pillow::kGroupTaps - 1) / pillow::kGroupTaps;
  const int xlo = th.bounds[0];
  int xhi = xlo;
  thread_local std::vector<int> xmin;
  thread_local std::vector<int16_t> w;
  thread_local std::vector<int8_t> wb;
  const bool busd = BusdPasses();
  xmin.resize(out_w);
  if (busd) {
    wb.resize(static_cast<size_t>(out_w) * groups * pillow::kBusdGroupBytes);
  } else {
    w.resize(static_cast<size_t>(out_w) * groups * pillow::kGroupWeights);
  }
  int max_rel = 0;
  for (int xx = 0; xx < out_w; ++xx) {
    const int pos = flip ? out_w - 1 - xx : xx;
    const int x0 = th.bounds[2 * xx], count = th.bounds[2 * xx + 1];
    xmin[pos] = x0 - xlo;
    max_rel = std::max(max_rel, x0 - xlo);
    xhi = std::max(xhi, x0 + count);
    const int* k = &th.k[static_cast<size_t>(xx) * th.ksize];
    if (busd) {
      pillow::PackWeightsBusd(k, count, groups,
                              &wb[static_cast<size_t>(pos) * groups * pillow::kBusdGroupBytes]);
      continue;
    }
    int16_t* wp = &w[static_cast<size_t>(pos) * groups * pillow::kGroupWeights];
    // Every weight written once, taps past `count` as 0 (a zero fill of the whole table
    // first, then the taps, was 0.7% of DINO's CPU).
    for (int g = 0; g < groups; ++g, wp += pillow::kGroupWeights) {
      for (int lane = 0; lane < 2; ++lane) {
        const int t0 = 4 * g + 2 * lane, t1 = t0 + 1;
        const int k0 = t0 < count ? k[t0] : 0, k1 = t1 < count ? k[t1] : 0;
        int16_t* lo = wp + 8 * lane;
        int16_t* hi = lo + 16;
        for (int c = 0; c < 3; ++c) {
          lo[2 * c] = static_cast<int16_t>(k0 & 0x7FFF);
          lo[2 * c + 1] = static_cast<int16_t>(k1 & 0x7FFF);
          hi[2 * c] = static_cast<int16_t>(k0 >> 15);
          hi[2 * c + 1] = static_cast<int16_t>(k1 >> 15);
        }
        lo[6] = lo[7] = hi[6] = hi[7] = 0;
      }
    }
  }
  // A row is read in place where the bytes past its span (weighted 0) are still the
  // view's: below its last row, the next row's pixels (copying every row cost 0.1 ms of
  // DINO's 3.2 ms per sample).
  const size_t need =
      (static_cast<size_t>(max_rel) + groups * pillow::kGroupTaps) * 3 + pillow::kRowSlack;
  const bool in_place = static_cast<size_t>(xlo) * 3 + need <= src.stride + src.width * 3;
  // The copy slots are only grown: their bytes past a row's span are weighted 0, so
  // what an earlier row left there does not matter.
  thread_local std::vector<uint8_t> row;
  const size_t span = static_cast<size_t>(xhi - xlo) * 3;
  if (row.size() < 4 * need) row.resize(4 * need);  // Four slots: HorizontalRows4Busd.
  // Row y's pixels, in place or copied to copy slot `slot`.
  auto source = [&](int y, int slot) {
    const uint8_t* in = src.Row(y + y0) + xlo * 3;
    if (!in_place || y + y0 + 1 >= src.height) {
      uint8_t* copy = row.data() + slot * need;
      std::memcpy(copy, in, span);
      in = copy;
    }
    return in;
  };
  int y = 0;
  if (busd) {
    for (; y + 4 <= out->height; y += 4) {
      const uint8_t* rows[4] = {source(y, 0), source(y + 1, 1), source(y + 2, 2),
                                source(y + 3, 3)};
      uint8_t* outs[4] = {out->Row(y), out->Row(y + 1), out->Row(y + 2), out->Row(y + 3)};
      pillow::HorizontalRows4Busd(rows, xmin.data(), wb.data(), groups, out_w, outs);
    }
    for (; y + 2 <= out->height; y += 2) {
      pillow::HorizontalRows2Busd(source(y, 0), source(y + 1, 1), xmin.data(), wb.data(), groups,
                                  out_w, out->Row(y), out->Row(y + 1));
    }
    if (y < out->height) {
      const uint8_t* in = source(y, 0);
      pillow::HorizontalRows2Busd(in, in, xmin.data(), wb.data(), groups, out_w, out->Row(y),
                                  out->Row(y));
    }
    return;
  }
  const bool vnni = VnniPasses();
  const auto rows2 = vnni ? pillow::HorizontalRows2Vnni : pillow::HorizontalRows2Avx2;
  const auto row1 = vnni ? pillow::HorizontalRowVnni : pillow::HorizontalRowAvx2;
  // Two rows per call where the group count allows.
  for (; y + 2 <= out->height; y += 2) {
    if (!rows2(source(y, 0), source(y + 1, 1), xmin.data(), w.data(), groups, out_w,
               out->Row(y), out->Row(y + 1))) {
      break;
    }
  }
  for (; y < out->height; ++y) {
    row1(source(y, 0), xmin.data(), w.data(), groups, out_w, out->Row(y));
  }
}

void VerticalSimd(const ImageView& mid, const Taps& tv, int out_w, int out_h, Image* dst) {
  dst->Resize(out_w, out_h, 3);
  for (int yy = 0; yy < out_h; ++yy) {
    pillow::VerticalRowAvx2(mid.Row(tv.bounds[2 * yy]), mid.stride,
                            &tv.k[static_cast<size_t>(yy) * tv.ksize], tv.bounds[2 * yy + 1],
                            out_w * 3, dst->Row(yy));
  }
}

// ResizeScratch sizes the horizontal pass's thread-local output, whose bytes the pass
// all writes and which is read through Row() and view() only: its storage is grown,
// never shrunk, so the next, larger crop does not zero it again (pixels may be longer
// than width × height × 3).
void ResizeScratch(int width, int height, Image* img) {
  img->width = width;
  img->height = height;
  img->channels = 3;
  const size_t bytes = static_cast<size_t>(width) * height * 3;
  if (img->pixels.size() < bytes) img->pixels.resize(bytes);
}

// SliceTaps keeps outputs [first, first + count) of `t` (a window of the output).
void SliceTaps(int first, int count, PillowTaps* t) {
  t->bounds.erase(t->bounds.begin(), t->bounds.begin() + 2 * first);
  t->bounds.resize(2 * static_cast<size_t>(count));
  t->k.erase(t->k.begin(), t->k.begin() + static_cast<size_t>(first) * t->ksize);
  t->k.resize(static_cast<size_t>(count) * t->ksize);
}

// OutputWindow is the part of the resized image a caller wants: columns [x, x + w) and
// rows [y, y + h) of the full out_w × out_h output (w == 0: all of it).
struct OutputWindow {
  int x = 0, y = 0, w = 0, h = 0;
};

// ResampleInner is ImagingResampleInner; `flip` mirrors the output (returns whether it
// did: only the SIMD horizontal pass folds it in).
// `other`: one of the filters PillowFilter names (else bicubic or bilinear). `window`
// (not null) writes only that window of the output: the taps of the full output, sliced,
// so every pixel is the one the full resize writes there.
// kKeptTempBytes is what a thread keeps of its horizontal pass between resizes (its
// storage is reused at the sizes training uses: 224² reads ~1 MiB).
constexpr size_t kKeptTempBytes = size_t{16} << 20;

bool ResampleInner(const ImageView& src_in, const RectF& box, int out_w, int out_h,
                   bool bicubic, bool flip, Image* dst, const PillowFilter* other = nullptr,
                   const OutputWindow* window = nullptr) {
  ImageView src = src_in;
  const bool need_h = out_w != src.width || box.x != 0 || box.w != out_w;
  const bool need_v = out_h != src.height || box.y != 0 || box.h != out_h;
  // The tables are thread-local: their storage is reused, and every entry rewritten.
  thread_local Taps th, tv;
  if (other != nullptr) {
    PrecomputeFilterTaps(src.width, box.x, box.x + box.w, out_w, *other, &th);
    PrecomputeFilterTaps(src.height, box.y, box.y + box.h, out_h, *other, &tv);
  } else {
    PrecomputePillowTaps(src.width, box.x, box.x + box.w, out_w, bicubic, &th);
    PrecomputePillowTaps(src.height, box.y, box.y + box.h, out_h, bicubic, &tv);
  }
  if (window != nullptr) {
    SliceTaps(window->x, window->w, &th);
    SliceTaps(window->y, window->h, &tv);
    out_w = window->w;
    out_h = window->h;
    // A pass Pillow skips copies its axis: the window's columns (the vertical pass and
    // the copy read the source from column 0), and, when both are skipped, its rows
    // (the horizontal pass starts at the window's first row itself).
    if (!need_h) src.data += static_cast<size_t>(window->x) * 3;
    if (!need_h && !need_v) src.data += static_cast<size_t>(window->y) * src.stride;
  }
  const int ybox_first = tv.bounds[0];
  const int ybox_last = tv.bounds[2 * out_h - 2] + tv.bounds[2 * out_h - 1];
  const bool simd = SimdPasses() && th.ksize <= pillow::kMaxSimdTaps &&
                    tv.ksize <= pillow::kMaxSimdTaps;

  // The horizontal pass first, over the rows the vertical pass reads (Pillow's order).
  thread_local Image temp;
  ImageView mid = src;
  bool flipped = false;
  if (need_h) {
    for (int i = 0; i < out_h; ++i) tv.bounds[2 * i] -= ybox_first;
    ResizeScratch(out_w, ybox_last - ybox_first, &temp);
    if (simd) {
      HorizontalSimd(src, ybox_first, th, out_w, flip, &temp);
      flipped = flip;
    } else {
      HorizontalPass(src, ybox_first, th, out_w, &temp);
    }
    mid = temp.view();
  }
  if (need_v) {
    if (simd) {
      VerticalSimd(mid, tv, out_w, out_h, dst);
    } else {
      VerticalPass(mid, tv, out_w, out_h, dst);
    }
  } else {
    dst->Resize(out_w, out_h, 3);
    for (int y = 0; y < out_h; ++y) {
      std::copy(mid.Row(y), mid.Row(y) + out_w * 3, dst->Row(y));
    }
  }
  // A pass made for one large image goes back at once: kept, it stayed beside the next
  // samples' images, outside the worker's memory check (152 MiB after an 8192² resize).
  if (temp.pixels.capacity() > kKeptTempBytes) temp = Image();
  return flipped;
}

// Nearest: Pillow's ImagingScaleAffine for a = [box.w / out_w, 0, box.x, 0, box.h / out_h,
// box.y].
void ResampleNearest(const ImageView& src, const RectF& box, int out_w, int out_h, Image* dst) {
  const double a0 = box.w / out_w;
  const double a4 = box.h / out_h;
  auto coord = [](double v) { return v < 0.0 ? -1 : static_cast<int>(v); };
  std::vector<int> xin(out_w, -1);
  double xo = box.x + a0 * 0.5;
  for (int x = 0; x < out_w; ++x) {
    const int xi = coord(xo);
    if (xi >= 0 && xi < src.width) xin[x] = xi;
    xo += a0;
  }
  dst->Resize(out_w, out_h, 3);
  double yo = box.y + a4 * 0.5;
  for (int y = 0; y < out_h; ++y) {
    const int yi = coord(yo);
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < out_w; ++x) {
      const bool inside = yi >= 0 && yi < src.height && xin[x] >= 0;
      for (int c = 0; c < 3; ++c) out[x * 3 + c] = inside ? src.Row(yi)[xin[x] * 3 + c] : 0;
    }
    yo += a4;
  }
}

// ResampleNearestWindow is ResampleNearest's columns [x0, x0 + w) and rows [y0, y0 + h):
// the source coordinates accumulated from 0 as there, so the same pixels.
void ResampleNearestWindow(const ImageView& src, const RectF& box, int out_w, int out_h, int x0,
                           int y0, int w, int h, Image* dst) {
  const double a0 = box.w / out_w;
  const double a4 = box.h / out_h;
  auto coord = [](double v) { return v < 0.0 ? -1 : static_cast<int>(v); };
  std::vector<int> xin(out_w, -1), yin(out_h, -1);
  double xo = box.x + a0 * 0.5;
  for (int x = 0; x < out_w; ++x, xo += a0) {
    const int xi = coord(xo);
    if (xi >= 0 && xi < src.width) xin[x] = xi;
  }
  double yo = box.y + a4 * 0.5;
  for (int y = 0; y < out_h; ++y, yo += a4) {
    const int yi = coord(yo);
    if (yi >= 0 && yi < src.height) yin[y] = yi;
  }
  dst->Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    const int yi = yin[y0 + y];
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < w; ++x) {
      const int xi = xin[x0 + x];
      const bool inside = yi >= 0 && xi >= 0;
      for (int c = 0; c < 3; ++c) out[x * 3 + c] = inside ? src.Row(yi)[xi * 3 + c] : 0;
    }
  }
}

void FlipColumns(Image* img) {
  for (int y = 0; y < img->height; ++y) {
    uint8_t* row = img->Row(y);
    for (int l = 0, r = img->width - 1; l < r; ++l, --r) {
      for (int c = 0; c < 3; ++c) std::swap(row[l * 3 + c], row[r * 3 + c]);
    }
  }
}

}  // namespace

void PillowResample(const ImageView& src, const RectF& box, int out_width, int out_height,
                    Interpolation filter, bool flip, Image* dst) {
  if (filter == Interpolation::kNearest) {
    ResampleNearest(src, box, out_width, out_height, dst);
  } else {
    if (ResampleInner(src, box, out_width, out_height, filter == Interpolation::kBicubic, flip,
                      dst)) {
      return;
    }
  }
  if (flip) FlipColumns(dst);
}

void PillowResampleWindow(const ImageView& src, int out_width, int out_height,
                          Interpolation filter, int x, int y, int width, int height,
                          Image* dst) {
  const RectF all{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)};
  if (filter == Interpolation::kNearest) {
    // Nearest reads one source pixel per output: the window of the source it picks.
    ResampleNearestWindow(src, all, out_width, out_height, x, y, width, height, dst);
    return;
  }
  const OutputWindow window{x, y, width, height};
  ResampleInner(src, all, out_width, out_height, filter == Interpolation::kBicubic, false, dst,
                nullptr, &window);
}

void PillowResampleFilter(const ImageView& src, const RectF& box, int out_width,
                          int out_height, PillowFilter filter, Image* dst) {
  ResampleInner(src, box, out_width, out_height, false, false, dst, &filter);
}

void SetPillowScalarForTesting(bool scalar) { g_scalar_only.store(scalar); }

void SetPillowNoVnniForTesting(bool no_vnni) { g_no_vnni.store(no_vnni); }

void SetPillowNoBusdForTesting(bool no_busd) { g_no_busd.store(no_busd); }

}  // namespace flowloader::augment::internal
