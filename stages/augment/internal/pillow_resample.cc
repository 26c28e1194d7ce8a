// pillow_resample.cc: Pillow 9's Resample.c (ImagingResample) and ImagingScaleAffine,
// restated for interleaved RGB.
#include "stages/augment/internal/pillow_resample.h"

#include <smmintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "stages/augment/internal/pillow_kernels.h"

namespace flowloader::augment::internal {
namespace {

constexpr int kPrecisionBits = pillow::kPrecisionBits;

// Set by SetPillowScalarForTesting: every call takes the plain passes.
std::atomic<bool> g_scalar_only{false};
// Set by SetPillowNoVnniForTesting: the SIMD passes keep to AVX2.
std::atomic<bool> g_no_vnni{false};
// Set by SetPillowNoBusdForTesting: the VNNI horizontal pass keeps to vpdpwssd.
std::atomic<bool> g_no_busd{false};

double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

double BicubicFilter(double x) {
  constexpr double a = -0.5;  // Pillow's (and torchvision's PIL path) cubic constant.
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Taps is precompute_coeffs + normalize_coeffs_8bpc for one axis.
struct Taps {
  int ksize = 0;
  std::vector<int> bounds;  // xmin, count per output.
  std::vector<int> k;       // Fixed-point weights, ksize per output.
};

Taps PrecomputeTaps(int in_size, double in0, double in1, int out_size, bool bicubic) {
  const double support_base = bicubic ? 2.0 : 1.0;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_base * filterscale;
  Taps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.bounds.resize(2 * out_size);
  t.k.assign(static_cast<size_t>(out_size) * t.ksize, 0);
  std::vector<double> w(t.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double v = bicubic ? BicubicFilter((x + xmin - center + 0.5) * ss)
                               : BilinearFilter((x + xmin - center + 0.5) * ss);
      w[x] = v;
      ww += v;
    }
    for (int x = 0; x < xmax; ++x) {
      double v = ww != 0.0 ? w[x] / ww : w[x];
      v *= (1 << kPrecisionBits);
      t.k[static_cast<size_t>(xx) * t.ksize + x] =
          static_cast<int>(v < 0 ? std::trunc(-0.5 + v) : std::trunc(0.5 + v));
    }
    t.bounds[2 * xx] = xmin;
    t.bounds[2 * xx + 1] = xmax;
  }
  return t;
}

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
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 && !g_scalar_only.load(std::memory_order_relaxed);
}

// VnniPasses says whether the horizontal pass takes its vpdpwssd kernels.
bool VnniPasses() {
  static const bool vnni =
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
  return vnni && !g_no_vnni.load(std::memory_order_relaxed);
}

// BusdPasses says whether the horizontal pass takes its vpdpbusd kernel (pillow_busd.cc).
bool BusdPasses() {
  static const bool busd =
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
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
  thread_local std::vector<uint8_t> row;
  const size_t span = static_cast<size_t>(xhi - xlo) * 3;
  row.assign(4 * need, 0);
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

// ResampleInner is ImagingResampleInner; `flip` mirrors the output (returns whether it
// did: only the SIMD horizontal pass folds it in).
bool ResampleInner(const ImageView& src, const RectF& box, int out_w, int out_h, bool bicubic,
                   bool flip, Image* dst) {
  const bool need_h = out_w != src.width || box.x != 0 || box.w != out_w;
  const bool need_v = out_h != src.height || box.y != 0 || box.h != out_h;
  const Taps th = PrecomputeTaps(src.width, box.x, box.x + box.w, out_w, bicubic);
  Taps tv = PrecomputeTaps(src.height, box.y, box.y + box.h, out_h, bicubic);
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
    temp.Resize(out_w, ybox_last - ybox_first, 3);
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

void SetPillowScalarForTesting(bool scalar) { g_scalar_only.store(scalar); }

void SetPillowNoVnniForTesting(bool no_vnni) { g_no_vnni.store(no_vnni); }

void SetPillowNoBusdForTesting(bool no_busd) { g_no_busd.store(no_busd); }

}  // namespace flowloader::augment::internal
