// geometry.cc: F.affine, F.rotate and F.vflip on interleaved uint8 RGB, restating PIL 9.4's
// Image.transform(AFFINE) (libImaging/Geometry.c: ImagingTransformAffine and the filters
// it picks) and Image.rotate, with torchvision 0.14's matrices
// (functional._get_inverse_affine_matrix). Every step keeps PIL's double arithmetic in
// PIL's order (no FMA: the build's -march=x86-64-v2 has none), so the outputs are PIL's
// bytes. The AVX2 affine kernels make four output pixels at once (the AVX-512 ones
// eight), per lane the same operations as the per-pixel filters, which geometry_test
// checks byte for byte; the bilinear perspective warp runs the same steps at its own
// per-lane positions.
//
// Thread-safety: pure functions; ScaleAffine's column table is thread-local.
#include "stages/augment/ops/kernels/geometry.h"

#include "stages/augment/ops/kernels/colour_internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace flowloader::augment::kernels {
namespace {

// Python's math.radians: x * (pi / 180), the constant rounded first.
constexpr double kDegToRad = 3.14159265358979323846 / 180.0;
double Radians(double degrees) { return degrees * kDegToRad; }

// Geometry.c's COORD and FLOOR: truncation with the negative side sent below zero.
inline int Coord(double v) { return v < 0.0 ? -1 : static_cast<int>(v); }
inline int Floor(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

// Python's round(x, 15): the correctly rounded 15-decimal string, read back (glibc's
// printf rounds the exact binary value, as CPython's dtoa does).
double Round15(double x) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.15f", x);
  return std::strtod(text, nullptr);
}

// Python's float %: the result takes the divisor's sign.
double PyMod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0) {
    if ((m < 0) != (r < 0)) r += m;
  } else {
    r = std::copysign(0.0, m);
  }
  return r;
}

// Image.new(mode, size, fillcolor): the output starts as the fill colour; a transform
// writes only the pixels it maps inside the source (torchvision always passes a
// fillcolor, so PIL's own `fill` flag, which would zero them, is off).
void FillImage(int width, int height, const std::array<uint8_t, 3>& fill, Image* dst) {
  dst->Resize(width, height, 3);
  uint8_t* p = dst->pixels.data();
  if (fill[0] == fill[1] && fill[1] == fill[2]) {
    std::memset(p, fill[0], 3 * static_cast<size_t>(width) * height);
    return;
  }
  // One row by pixel, then copied (timm's fill is the mean colour: the per-pixel loop
  // over the whole image was 1% of its recipe's CPU).
  for (int i = 0; i < width; ++i) {
    p[3 * i] = fill[0];
    p[3 * i + 1] = fill[1];
    p[3 * i + 2] = fill[2];
  }
  const size_t row = 3 * static_cast<size_t>(width);
  for (int y = 1; y < height; ++y) std::memcpy(p + y * row, p, row);
}

// CopyPixel copies one pixel of C channels (3: RGB; 1: a mask or label map plane, which
// the nearest-neighbour paths below also move: AffinePlane, RotatePlane).
template <int C = 3>
inline void CopyPixel(const Image& src, int x, int y, uint8_t* out) {
  const uint8_t* in = src.pixels.data() + static_cast<size_t>(y) * src.stride() + C * x;
  for (int c = 0; c < C; ++c) out[c] = in[c];
}

// Rows is a row-pointer image (op.h's RowImage) for the nearest-neighbour engines below,
// which read `width`, `height`, Row(y) and CopyPixel as they do of an Image: C = 4 moves
// a Pillow RGB pixel (with its padding byte) as one word, as PIL's own transform does.
struct Rows {
  uint8_t* const* rows;
  int width;
  int height;
  uint8_t* Row(int y) const { return rows[y]; }
};

template <int C>
inline void CopyPixel(const Rows& src, int x, int y, uint8_t* out) {
  std::memcpy(out, src.rows[y] + C * static_cast<size_t>(x), C);
}

// ImagingScaleAffine: nearest neighbour when the matrix has no rotation or shear terms;
// column positions tabulated once, both axes accumulated in double as PIL does.
template <int C = 3, typename Src = Image, typename Dst = Image>
void ScaleAffine(const Src& src, const double a[6], Dst* dst) {
  const int w = dst->width, h = dst->height;
  thread_local std::vector<int> xintab;
  xintab.assign(w, 0);  // PIL callocs it.
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  int xmin = w, xmax = 0;
  for (int x = 0; x < w; ++x) {
    const int xin = Coord(xo);
    if (xin >= 0 && xin < src.width) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
      xintab[x] = xin;
    }
    xo += a[0];
  }
  for (int y = 0; y < h; ++y) {
    const int yi = Coord(yo);
    if (yi >= 0 && yi < src.height) {
      uint8_t* out = dst->Row(y);
      for (int x = xmin; x < xmax; ++x) CopyPixel<C>(src, xintab[x], yi, out + C * x);
    }
    yo += a[4];
  }
}

// check_fixed: whether a point maps within 16.16 fixed point's range.
bool CheckFixed(const double a[6], int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
         std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// affine_fixed: nearest neighbour in 16.16 fixed point, PIL's usual rotate/shear path.
// (PIL accumulates in int; int64 here gives the same values without PIL's overflow.)
// FixedTerms: affine_fixed's 16.16 terms a0 a1 a2 a3 a4 a5 (a2 and a5 at the first pixel's
// centre).
void FixedTerms(const double a[6], int64_t t[6]) {
  auto fix = [](double v) -> int64_t { return Floor(v * 65536.0 + 0.5); };
  t[0] = fix(a[0]), t[1] = fix(a[1]), t[3] = fix(a[3]), t[4] = fix(a[4]);
  t[2] = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
  t[5] = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
}

template <int C = 3, typename Src = Image, typename Dst = Image>
void AffineFixed(const Src& src, const double a[6], Dst* dst) {
  int64_t t[6];
  FixedTerms(a, t);
  const int64_t a0 = t[0], a1 = t[1], a3 = t[3], a4 = t[4];
  int64_t a2 = t[2], a5 = t[5];
  for (int y = 0; y < dst->height; ++y) {
    int64_t xx = a2, yy = a5;
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < dst->width; ++x) {
      const int64_t xin = xx >> 16;
      if (xin >= 0 && xin < src.width) {
        const int64_t yin = yy >> 16;
        if (yin >= 0 && yin < src.height) {
          CopyPixel<C>(src, static_cast<int>(xin), static_cast<int>(yin), out + C * x);
        }
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

// ImagingTransformAffine's floating-point nearest path, for maps beyond fixed point.
template <int C = 3, typename Src = Image, typename Dst = Image>
void AffineFloat(const Src& src, const double a[6], Dst* dst) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < dst->height; ++y) {
    double xx = xo, yy = yo;
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < dst->width; ++x) {
      const int xin = Coord(xx);
      if (xin >= 0 && xin < src.width) {
        const int yin = Coord(yy);
        if (yin >= 0 && yin < src.height) CopyPixel<C>(src, xin, yin, out + C * x);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

inline int XClip(const Image& im, int x) { return x < 0 ? 0 : x < im.width ? x : im.width - 1; }
inline int YClip(const Image& im, int y) { return y < 0 ? 0 : y < im.height ? y : im.height - 1; }
inline const uint8_t* SrcRow(const Image& im, int y) {
  return im.pixels.data() + static_cast<size_t>(y) * im.stride();
}

// bilinear_filter32RGB: 2×2 linear interpolation in double, truncated to uint8. Returns
// false (the pixel keeps the fill) when (xin, yin) is outside the source.
bool BilinearFilter(const Image& im, double xin, double yin, uint8_t* out) {
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  const int x0 = 3 * XClip(im, x), x1 = 3 * XClip(im, x + 1);
  const uint8_t* r0 = SrcRow(im, YClip(im, y));
  const bool has_r1 = y + 1 >= 0 && y + 1 < im.height;
  const uint8_t* r1 = has_r1 ? SrcRow(im, y + 1) : nullptr;
  for (int b = 0; b < 3; ++b) {
    double v1 = r0[x0 + b] + (r0[x1 + b] - r0[x0 + b]) * dx;
    double v2 = has_r1 ? r1[x0 + b] + (r1[x1 + b] - r1[x0 + b]) * dx : v1;
    v1 = v1 + (v2 - v1) * dy;
    out[b] = static_cast<uint8_t>(static_cast<int>(v1));
  }
  return true;
}

// Geometry.c's BICUBIC macro (its cubic with a = -1), in double.
inline double Cubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

// bicubic_filter32RGB: 4×4 cubic interpolation, rows past the edge repeating the last
// one read, clamped to [0, 255] and truncated.
bool BicubicFilter(const Image& im, double xin, double yin, uint8_t* out) {
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  --x;
  --y;
  int xs[4];
  for (int k = 0; k < 4; ++k) xs[k] = 3 * XClip(im, x + k);
  const uint8_t* rows[4];
  rows[0] = SrcRow(im, YClip(im, y));
  for (int k = 1; k < 4; ++k) {
    rows[k] = y + k >= 0 && y + k < im.height ? SrcRow(im, y + k) : nullptr;
  }
  for (int b = 0; b < 3; ++b) {
    double v[4];
    for (int k = 0; k < 4; ++k) {
      const uint8_t* r = rows[k];
      v[k] = r != nullptr ? Cubic(r[xs[0] + b], r[xs[1] + b], r[xs[2] + b], r[xs[3] + b], dx)
                          : v[k - 1];
    }
    const double c = Cubic(v[0], v[1], v[2], v[3], dy);
    out[b] = c <= 0.0 ? 0 : c >= 255.0 ? 255 : static_cast<uint8_t>(static_cast<int>(c));
  }
  return true;
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// BicubicFilterAvx2 is BicubicFilter with a pixel's three channels (and a don't-care
// lane) in one register of four doubles: the same double operations in the same order
// per channel (target avx2 alone: no FMA; -v1 is a sign flip as in C), so the same bytes.
// Each tap reads four bytes, so a pixel whose taps touch the image's very last pixel
// takes BicubicFilter. Measured (geometry_bench, 224² affine, wall clock on a loaded
// 2-core VM, so the ratio is what counts): bicubic 5.0 -> 2.2 ms, bilinear 1.0 -> 0.68 ms
// per call; timm's recipe 1.52 -> 1.13 ms of CPU per sample.
__attribute__((target("avx2"))) inline __m256d PixelPd(const uint8_t* p) {
  int32_t word;
  std::memcpy(&word, p, 4);
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(word)));
}

__attribute__((target("avx2"))) inline __m256d CubicPd(__m256d v1, __m256d v2, __m256d v3,
                                                       __m256d v4, __m256d d) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d neg_v1 = _mm256_xor_pd(v1, sign);
  const __m256d p1 = v2;
  const __m256d p2 = _mm256_add_pd(neg_v1, v3);
  const __m256d p3 = _mm256_sub_pd(
      _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), _mm256_sub_pd(v1, v2)), v3), v4);
  const __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_add_pd(neg_v1, v2), v3), v4);
  return _mm256_add_pd(
      p1, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, _mm256_add_pd(p3, _mm256_mul_pd(d, p4))))));
}

__attribute__((target("avx2"))) bool BicubicFilterAvx2(const Image& im, double xin0,
                                                       double yin0, uint8_t* out) {
  double xin = xin0, yin = yin0;
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  --x;
  --y;
  int xs[4];
  for (int k = 0; k < 4; ++k) xs[k] = 3 * XClip(im, x + k);
  const uint8_t* rows[4];
  rows[0] = SrcRow(im, YClip(im, y));
  int last_row = YClip(im, y);
  for (int k = 1; k < 4; ++k) {
    const bool inside = y + k >= 0 && y + k < im.height;
    rows[k] = inside ? SrcRow(im, y + k) : nullptr;
    if (inside) last_row = y + k;
  }
  if (last_row == im.height - 1 && xs[3] == 3 * (im.width - 1)) {
    return BicubicFilter(im, xin0, yin0, out);
  }
  const __m256d dxv = _mm256_set1_pd(dx);
  __m256d v[4];
  for (int k = 0; k < 4; ++k) {
    const uint8_t* r = rows[k];
    v[k] = r != nullptr ? CubicPd(PixelPd(r + xs[0]), PixelPd(r + xs[1]), PixelPd(r + xs[2]),
                                  PixelPd(r + xs[3]), dxv)
                        : v[k - 1];
  }
  __m256d c = CubicPd(v[0], v[1], v[2], v[3], _mm256_set1_pd(dy));
  c = _mm256_min_pd(_mm256_max_pd(c, _mm256_setzero_pd()), _mm256_set1_pd(255.0));
  const __m128i q = _mm256_cvttpd_epi32(c);
  out[0] = static_cast<uint8_t>(_mm_cvtsi128_si32(q));
  out[1] = static_cast<uint8_t>(_mm_extract_epi32(q, 1));
  out[2] = static_cast<uint8_t>(_mm_extract_epi32(q, 2));
  return true;
}

// BilinearFilterAvx2 is BilinearFilter likewise, the channels in one register (the
// difference of two bytes is exact in double, so subtracting them as doubles is C's int
// subtraction then conversion).
__attribute__((target("avx2"))) bool BilinearFilterAvx2(const Image& im, double xin0,
                                                        double yin0, uint8_t* out) {
  double xin = xin0, yin = yin0;
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  const int x0 = 3 * XClip(im, x), x1 = 3 * XClip(im, x + 1);
  const bool has_r1 = y + 1 >= 0 && y + 1 < im.height;
  const int last_row = has_r1 ? y + 1 : YClip(im, y);
  if (last_row == im.height - 1 && x1 == 3 * (im.width - 1)) {
    return BilinearFilter(im, xin0, yin0, out);
  }
  const uint8_t* r0 = SrcRow(im, YClip(im, y));
  const __m256d dxv = _mm256_set1_pd(dx);
  const __m256d a0 = PixelPd(r0 + x0);
  __m256d v1 = _mm256_add_pd(a0, _mm256_mul_pd(_mm256_sub_pd(PixelPd(r0 + x1), a0), dxv));
  __m256d v2 = v1;
  if (has_r1) {
    const uint8_t* r1 = SrcRow(im, y + 1);
    const __m256d b0 = PixelPd(r1 + x0);
    v2 = _mm256_add_pd(b0, _mm256_mul_pd(_mm256_sub_pd(PixelPd(r1 + x1), b0), dxv));
  }
  v1 = _mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), _mm256_set1_pd(dy)));
  const __m128i q = _mm256_cvttpd_epi32(v1);
  out[0] = static_cast<uint8_t>(_mm_cvtsi128_si32(q));
  out[1] = static_cast<uint8_t>(_mm_extract_epi32(q, 1));
  out[2] = static_cast<uint8_t>(_mm_extract_epi32(q, 2));
  return true;
}
#endif

// ImagingGenericTransform with affine_transform: each output pixel's centre mapped
// through `a`, then the filter.
template <bool (*Filter)(const Image&, double, double, uint8_t*)>
void GenericAffine(const Image& src, const double a[6], Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    for (int x = 0; x < dst->width; ++x) {
      const double xin = x + 0.5;
      Filter(src, a[0] * xin + a[1] * yin + a[2], a[3] * xin + a[4] * yin + a[5], out + 3 * x);
    }
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// IntegerShift: whether `a` is a pure translation by whole pixels (a = [1, 0, tx, 0, 1,
// ty], tx and ty integers, as torchvision's TranslateX/Y in trivial_augment_wide pass).
// Then every output centre x + 0.5 maps to x + tx + 0.5 exactly (0 * yin is ±0, small
// integers and halves are exact in double), so the bilinear and bicubic filters see
// dx = dy = 0: bilinear returns its first tap (v1 + (v2 - v1) * 0), bicubic its second
// (p1 + 0 * (...) in both passes), which is source pixel (x + tx, y + ty) unclipped.
bool IntegerShift(const double a[6], int* tx, int* ty) {
  constexpr double kLimit = 1 << 24;
  if (a[0] != 1.0 || a[1] != 0.0 || a[3] != 0.0 || a[4] != 1.0) return false;
  if (!(std::fabs(a[2]) < kLimit) || !(std::fabs(a[5]) < kLimit)) return false;
  if (a[2] != std::floor(a[2]) || a[5] != std::floor(a[5])) return false;
  *tx = static_cast<int>(a[2]);
  *ty = static_cast<int>(a[5]);
  return true;
}

// ShiftCopy is GenericAffine under IntegerShift: out(x, y) = src(x + tx, y + ty) where
// that lies inside the source (xin = x + tx + 0.5 in [0, width)), else the fill stays.
// One memcpy per row; geometry_bench: translate 224² bilinear 0.44 -> 0.005 ms per call.
void ShiftCopy(const Image& src, int tx, int ty, Image* dst) {
  const int x0 = std::max(0, -tx), x1 = std::min(dst->width, src.width - tx);
  if (x0 >= x1) return;
  for (int y = std::max(0, -ty); y < std::min(dst->height, src.height - ty); ++y) {
    std::memcpy(dst->Row(y) + 3 * x0, SrcRow(src, y + ty) + 3 * (x0 + tx), 3 * (x1 - x0));
  }
}

// The vector affine kernels: four output pixels of a row per step, one double lane each,
// each channel in its own register. Per lane they make the same double operations in
// the same order as BilinearFilter / BicubicFilter (target avx2 alone: no FMA), so the
// same bytes. A step whose four pixels all have every tap inside the image (no clipped
// columns, no missing rows, and no load running past the buffer's end) takes the vector
// kernel; any other step, and a row's last width % 4 pixels, take the per-pixel filter.
//
// Taps: each lane's window row is one unaligned load (its taps are adjacent bytes), the
// bytes shuffled channel-major and the four lanes transposed, so that byte 4 * lane + k
// of a channel's register is that lane's tap k. (Four _mm_i32gather_epi32 per window row
// instead were a quarter of the bicubic kernel's time.) The filters' integer parts (tap
// differences, the cubic's p1..p4: small sums of bytes, exact in double) are then dot
// products of those four bytes (_mm_maddubs_epi16 + _mm_madd_epi16), exact in int32.

// AffineLanes: the four pixels' source positions, (a0 * xin + a1 * yin) + a2 per lane
// as GenericAffine evaluates it, less 0.5, split into floor and fraction (Floor is
// floor for every value that fits an int; the others fail the inside test).
struct AffineLanes {
  __m256d dx, dy;  // Fractions.
  __m128i x, y;    // Floors.
  int outside;     // Lanes (bit j: lane j) the filters leave as fill: the position is
                   // outside [0, width) × [0, height) (NaN is not, as in C).
};

// LanesAt: the lanes for source positions (xs, ys), any map's.
__attribute__((target("avx2"))) inline AffineLanes LanesAt(const Image& im, __m256d xs,
                                                           __m256d ys) {
  const __m256d zero = _mm256_setzero_pd();
  const __m256d out = _mm256_or_pd(
      _mm256_or_pd(_mm256_cmp_pd(xs, zero, _CMP_LT_OQ),
                   _mm256_cmp_pd(xs, _mm256_set1_pd(im.width), _CMP_GE_OQ)),
      _mm256_or_pd(_mm256_cmp_pd(ys, zero, _CMP_LT_OQ),
                   _mm256_cmp_pd(ys, _mm256_set1_pd(im.height), _CMP_GE_OQ)));
  const __m256d half = _mm256_set1_pd(0.5);
  const __m256d sx = _mm256_sub_pd(xs, half), sy = _mm256_sub_pd(ys, half);
  const __m256d fx = _mm256_floor_pd(sx), fy = _mm256_floor_pd(sy);
  return {_mm256_sub_pd(sx, fx), _mm256_sub_pd(sy, fy), _mm256_cvttpd_epi32(fx),
          _mm256_cvttpd_epi32(fy), _mm256_movemask_pd(out)};
}

__attribute__((target("avx2"))) inline AffineLanes MapLanes(const Image& im, const double a[6],
                                                            __m256d xin, __m256d a1y,
                                                            __m256d a4y) {
  const __m256d xs = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(a[0]), xin), a1y),
                                   _mm256_set1_pd(a[2]));
  const __m256d ys = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(a[3]), xin), a4y),
                                   _mm256_set1_pd(a[5]));
  return LanesAt(im, xs, ys);
}

// Every window a step tests keeps the filter's own bounds test (0 <= xin < width, ...)
// true: 4×4 and 2×2 windows inside need xin - 0.5 in [0, width - 1) at least; a
// one-pass step's single row (column) is whole, its xin - 0.5 (yin - 0.5) an integer.
//
// TapsInside: the lanes (bit j: lane j) whose tap window, columns [x, x + span_x) ×
// rows [y, y + span_y), lies inside the image, with the `read` bytes a kernel loads from
// its last row's first tap ending within the buffer; `keep` gets them as a mask vector.
// `off` gets each lane's byte offset of its window's first tap; the other lanes get the
// first inside lane's, so that a step may load all four lanes.
__attribute__((target("avx2"))) inline int TapsInside(const Image& im, __m128i x, __m128i y,
                                                      int span_x, int span_y, int read,
                                                      __m128i* off, __m128i* keep) {
  const int stride = static_cast<int>(im.stride());
  const __m128i ok = _mm_and_si128(
      _mm_and_si128(_mm_cmpgt_epi32(x, _mm_set1_epi32(-1)),
                    _mm_cmpgt_epi32(_mm_set1_epi32(im.width - span_x + 1), x)),
      _mm_and_si128(_mm_cmpgt_epi32(y, _mm_set1_epi32(-1)),
                    _mm_cmpgt_epi32(_mm_set1_epi32(im.height - span_y + 1), y)));
  __m128i offv = _mm_add_epi32(_mm_mullo_epi32(y, _mm_set1_epi32(stride)),
                               _mm_mullo_epi32(x, _mm_set1_epi32(3)));
  // The last load's end (only where `ok`, so the int32 arithmetic cannot wrap).
  const __m128i end = _mm_add_epi32(offv, _mm_set1_epi32((span_y - 1) * stride + read));
  const __m128i fits =
      _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(im.pixels.size()) + 1), end);
  *keep = _mm_and_si128(ok, fits);
  const int mask = _mm_movemask_ps(_mm_castsi128_ps(*keep));
  if (mask != 0 && mask != 0xF) {
    const __m128i first = _mm_castps_si128(
        _mm_permutevar_ps(_mm_castsi128_ps(offv), _mm_set1_epi32(__builtin_ctz(mask))));
    offv = _mm_blendv_epi8(first, offv, *keep);
  }
  *off = offv;
  return mask;
}

// ByChannel transposes four lanes' windows, each a register whose dword c holds channel
// c's four taps, into one register per channel: byte 4 * lane + k is lane's tap k.
__attribute__((target("avx2"))) inline void ByChannel(const __m128i w[4], __m128i t[3]) {
  const __m128i lo01 = _mm_unpacklo_epi32(w[0], w[1]), lo23 = _mm_unpacklo_epi32(w[2], w[3]);
  const __m128i hi01 = _mm_unpackhi_epi32(w[0], w[1]), hi23 = _mm_unpackhi_epi32(w[2], w[3]);
  t[0] = _mm_unpacklo_epi64(lo01, lo23);
  t[1] = _mm_unpackhi_epi64(lo01, lo23);
  t[2] = _mm_unpacklo_epi64(hi01, hi23);
}

// Tap: tap k of each lane, zero-extended to int32.
template <int k>
__attribute__((target("avx2"))) inline __m128i Tap(__m128i t) {
  return _mm_shuffle_epi8(t, _mm_setr_epi8(k, -1, -1, -1, 4 + k, -1, -1, -1, 8 + k, -1, -1, -1,
                                           12 + k, -1, -1, -1));
}

// Dot: w0 * tap0 + w1 * tap1 + w2 * tap2 + w3 * tap3 per lane, in int32 (|sum| <= 1530:
// no saturation in the int16 step).
template <int w0, int w1, int w2, int w3>
__attribute__((target("avx2"))) inline __m128i Dot(__m128i t) {
  const __m128i w = _mm_set1_epi32(static_cast<int32_t>(
      (w0 & 0xFF) | (w1 & 0xFF) << 8 | (w2 & 0xFF) << 16 | static_cast<uint32_t>(w3 & 0xFF) << 24));
  return _mm_madd_epi16(_mm_maddubs_epi16(t, w), _mm_set1_epi16(1));
}

__attribute__((target("avx2"))) inline __m256d ToPd(__m128i v) { return _mm256_cvtepi32_pd(v); }

// StoreRgb4 writes the low bytes of four lanes' r, g, b ints (C's uint8_t cast) as 12
// interleaved bytes, for the lanes set in `keep` (the others' 3 bytes stay).
__attribute__((target("avx2"))) inline void StoreRgb4(__m128i r, __m128i g, __m128i b,
                                                      __m128i keep, uint8_t* out) {
  const __m128i lo = _mm_set1_epi32(0xFF);
  const __m128i rgbx =
      _mm_or_si128(_mm_and_si128(r, lo), _mm_or_si128(_mm_slli_epi32(_mm_and_si128(g, lo), 8),
                                                      _mm_slli_epi32(_mm_and_si128(b, lo), 16)));
  __m128i packed = _mm_shuffle_epi8(
      rgbx, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  if (_mm_movemask_ps(_mm_castsi128_ps(keep)) != 0xF) {
    int32_t tail;
    std::memcpy(&tail, out + 8, 4);
    const __m128i old =
        _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(out)), tail, 2);
    const __m128i bytes = _mm_shuffle_epi8(
        keep, _mm_setr_epi8(0, 0, 0, 4, 4, 4, 8, 8, 8, 12, 12, 12, -1, -1, -1, -1));
    packed = _mm_blendv_epi8(old, packed, bytes);
  }
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), packed);
  const int32_t last = _mm_extract_epi32(packed, 2);
  std::memcpy(out + 8, &last, 4);
}

// Gather4 reads the four lanes' RGBx words at base + off.
__attribute__((target("avx2"))) inline __m128i Gather4(const uint8_t* base, __m128i off) {
  return _mm_i32gather_epi32(reinterpret_cast<const int*>(base), off, 1);
}

// IsRun: whether the four lanes' taps are the consecutive pixels off[0] + 3 * lane (a
// translation along one axis, most steps of a shear), with `rows` rows of 16 bytes from
// off[0], `stride` apart, ending within the `size`-byte buffer. Then a one-pass step
// reads each row's four taps by one load (Words4) instead of a gather: translate y
// 10.3 px (bicubic) 0.35 -> 0.29 ms per 224² call. (The four-pass steps' lanes are
// rarely a run: a rotation moves them across rows.)
__attribute__((target("avx2"))) inline bool IsRun(__m128i off, int rows, size_t stride,
                                                  size_t size) {
  const int off0 = _mm_cvtsi128_si32(off);  // >= 0: a tap inside the image.
  const __m128i run = _mm_add_epi32(_mm_set1_epi32(off0), _mm_setr_epi32(0, 3, 6, 9));
  return _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(off, run))) == 0xF &&
         static_cast<size_t>(off0) + (rows - 1) * stride + 16 <= size;
}

// Words4 is Gather4 on a run at p, from one 16-byte load: the pixels k..k+3 of it as
// RGBx words (the x byte, which no Tap reads, zero), k = 0 or (Next) 1.
template <int k>
__attribute__((target("avx2"))) inline __m128i Words4(__m128i bytes) {
  constexpr int b = 3 * k;
  return _mm_shuffle_epi8(bytes, _mm_setr_epi8(b, b + 1, b + 2, -1, b + 3, b + 4, b + 5, -1, b + 6,
                                               b + 7, b + 8, -1, b + 9, b + 10, b + 11, -1));
}

__attribute__((target("avx2"))) inline __m128i Load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Channel: byte c of each lane's RGBx word, zero-extended to int32.
template <int c>
__attribute__((target("avx2"))) inline __m256d Channel(__m128i words) {
  return ToPd(Tap<c>(words));
}

// AllZero: whether the four lanes' fractions are all exactly 0.
__attribute__((target("avx2"))) inline bool AllZero(__m256d d) {
  return _mm256_movemask_pd(_mm256_cmp_pd(d, _mm256_setzero_pd(), _CMP_EQ_OQ)) == 0xF;
}

// BilinearChannel4: BilinearFilter's three lines for channel c of four lanes, from the
// taps' RGBx words (row 0: 0, 1; row 1: 2, 3). The difference of two bytes is exact in
// double, so subtracting them as doubles is C's int subtraction then conversion.
template <int c>
__attribute__((target("avx2"))) inline __m128i BilinearChannel4(const __m128i taps[4],
                                                                 __m256d dx, __m256d dy) {
  const __m256d a = Channel<c>(taps[0]), b = Channel<c>(taps[1]);
  const __m256d e = Channel<c>(taps[2]), f = Channel<c>(taps[3]);
  const __m256d v1 = _mm256_add_pd(a, _mm256_mul_pd(_mm256_sub_pd(b, a), dx));
  const __m256d v2 = _mm256_add_pd(e, _mm256_mul_pd(_mm256_sub_pd(f, e), dx));
  return _mm256_cvttpd_epi32(_mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy)));
}

// BilinearStep4: BilinearFilter on four lanes whose 2×2 windows (top-left taps at
// base + off) are inside the image.
__attribute__((target("avx2"))) inline void BilinearStep4(const uint8_t* base, int stride,
                                                          __m128i off, const AffineLanes& l,
                                                          __m128i keep, uint8_t* out) {
  const __m128i below = _mm_add_epi32(off, _mm_set1_epi32(stride));
  const __m128i three = _mm_set1_epi32(3);
  const __m128i taps[4] = {Gather4(base, off), Gather4(base, _mm_add_epi32(off, three)),
                           Gather4(base, below), Gather4(base, _mm_add_epi32(below, three))};
  StoreRgb4(BilinearChannel4<0>(taps, l.dx, l.dy), BilinearChannel4<1>(taps, l.dx, l.dy),
            BilinearChannel4<2>(taps, l.dx, l.dy), keep, out);
}

// LerpChannel4: a + (b - a) * d for channel c of two taps' RGBx words, truncated.
template <int c>
__attribute__((target("avx2"))) inline __m128i LerpChannel4(__m128i a_words, __m128i b_words,
                                                             __m256d d) {
  const __m256d a = Channel<c>(a_words), b = Channel<c>(b_words);
  return _mm256_cvttpd_epi32(_mm256_add_pd(a, _mm256_mul_pd(_mm256_sub_pd(b, a), d)));
}

// BilinearLineStep4 is BilinearStep4 where every lane's dy is 0 (ShearX, TranslateX) or
// every lane's dx is 0 (ShearY, TranslateY). dy = 0: v1 + (v2 - v1) * 0 is v1 exactly
// (v1 >= 0 is finite; +0 + -0 is +0), the row's lerp between taps 0 and 1. dx = 0: each
// row's r[x0] + (r[x1] - r[x0]) * 0 is r[x0], so the lerp between the rows' taps 0.
// Two gathers instead of four, or on a run (IsRun) one load (dy = 0: the row's taps 0
// and 1 are pixels 0..3 and 1..4 of it) or two (dx = 0).
__attribute__((target("avx2"))) inline void BilinearLineStep4(const uint8_t* base, size_t size,
                                                              __m128i off, int next, __m256d d,
                                                              __m128i keep, uint8_t* out) {
  __m128i a, b;
  if (next == 3 && IsRun(off, 1, 0, size)) {
    const __m128i bytes = Load16(base + _mm_cvtsi128_si32(off));
    a = Words4<0>(bytes);
    b = Words4<1>(bytes);
  } else if (next != 3 && IsRun(off, 2, next, size)) {
    const uint8_t* p = base + _mm_cvtsi128_si32(off);
    a = Words4<0>(Load16(p));
    b = Words4<0>(Load16(p + next));
  } else {
    a = Gather4(base, off);
    b = Gather4(base, _mm_add_epi32(off, _mm_set1_epi32(next)));
  }
  StoreRgb4(LerpChannel4<0>(a, b, d), LerpChannel4<1>(a, b, d), LerpChannel4<2>(a, b, d), keep,
            out);
}

// AffineBilinearAvx2 is GenericAffine<BilinearFilterAvx2>, four pixels a step, each step
// by the cheaper of the kernels above that is exact for it. The taps are gathered as
// RGBx words, one _mm_i32gather_epi32 per tap: here that beat loading and transposing
// the windows as AffineBicubicAvx2 does (0.29 vs 0.32 ms).
// geometry_bench, 224² per call, against GenericAffine<BilinearFilterAvx2> (best of 12
// alternating runs on the shared 2-core VM): rotate+shear 0.49 -> 0.30 ms, shear x
// 0.40 -> 0.22 ms, rotate with expand (~15% fill) 0.56 -> 0.45 ms before the fill skip.
// FilterPixels runs the per-pixel Filter on the pixels x + k < end of output row `out`
// (centre row yin) whose bit k in `done` is clear: the lanes a four-pixel step neither
// wrote nor found outside the source, or (done 0) a row's last pixels.
template <bool (*Filter)(const Image&, double, double, uint8_t*)>
__attribute__((target("avx2"))) inline void FilterPixels(const Image& src, const double a[6],
                                                         int x, int end, double yin, int done,
                                                         uint8_t* out) {
  for (int k = 0; x + k < end; ++k) {
    if (done & (1 << k)) continue;
    const double xk = x + k + 0.5;
    Filter(src, a[0] * xk + a[1] * yin + a[2], a[3] * xk + a[4] * yin + a[5], out + 3 * (x + k));
  }
}

// BilinearLanes4: the vector steps of BilinearQuad on four lanes at `l` (any map's),
// writing output pixels out[0..4); returns the lanes done (bit j: lane j), written or
// outside the source (left as fill). The others need the per-pixel filter.
__attribute__((target("avx2"), always_inline)) inline int BilinearLanes4(const Image& src,
                                                                         const AffineLanes& l,
                                                                         uint8_t* out) {
  if (l.outside == 0xF) return 0xF;  // All fill.
  const uint8_t* base = src.pixels.data();
  const int stride = static_cast<int>(src.stride());
  const size_t size = src.pixels.size();
  // The windows each step reads: its last RGBx word starts 3 bytes after its last
  // row's first tap, or 0 where it reads one column. Lanes outside the step's
  // window (and inside the source) take the per-pixel filter after it.
  __m128i off, keep;
  int inside = 0;
  if (AllZero(l.dy) && (inside = TapsInside(src, l.x, l.y, 2, 1, 7, &off, &keep)) != 0) {
    BilinearLineStep4(base, size, off, 3, l.dx, keep, out);
  } else if (AllZero(l.dx) && (inside = TapsInside(src, l.x, l.y, 1, 2, 4, &off, &keep)) != 0) {
    BilinearLineStep4(base, size, off, stride, l.dy, keep, out);
  } else if ((inside = TapsInside(src, l.x, l.y, 2, 2, 7, &off, &keep)) != 0) {
    BilinearStep4(base, stride, off, l, keep, out);
  }
  return inside | l.outside;
}

// BilinearQuad is one four-pixel step of AffineBilinearAvx2: output pixels x..x + 3 of
// row `out` (centre row yin; a1y, a4y: a[1] * yin, a[4] * yin).
__attribute__((target("avx2"), always_inline)) inline void BilinearQuad(const Image& src,
                                                                        const double a[6], int x,
                                                                        double yin, __m256d a1y,
                                                                        __m256d a4y, uint8_t* out) {
  const __m256d xin = _mm256_add_pd(_mm256_set1_pd(x), _mm256_setr_pd(0.5, 1.5, 2.5, 3.5));
  const int done = BilinearLanes4(src, MapLanes(src, a, xin, a1y, a4y), out + 3 * x);
  if (done != 0xF) FilterPixels<BilinearFilterAvx2>(src, a, x, x + 4, yin, done, out);
}

__attribute__((target("avx2"))) void AffineBilinearAvx2(const Image& src, const double a[6],
                                                        Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
    int x = 0;
    for (; x + 4 <= dst->width; x += 4) BilinearQuad(src, a, x, yin, a1y, a4y, out);
    FilterPixels<BilinearFilterAvx2>(src, a, x, dst->width, yin, 0, out);
  }
}

// CubicRow4: Cubic over one window row's four taps (one channel, four lanes): p1..p4 as
// dot products of the bytes, then d's Horner steps in double as Cubic orders them.
__attribute__((target("avx2"))) inline __m256d CubicRow4(__m128i t, __m256d d) {
  // p3 = -2 (t1 - t0) - (t3 - t2) and p4 = (t1 - t0) + (t3 - t2) share one maddubs.
  const __m128i diffs = _mm_maddubs_epi16(t, _mm_set1_epi32(0x01FF01FF));  // -1, 1, -1, 1
  const __m256d p1 = ToPd(Tap<1>(t));
  const __m256d p2 = ToPd(Dot<-1, 0, 1, 0>(t));
  const __m256d p3 =
      ToPd(_mm_madd_epi16(diffs, _mm_setr_epi16(-2, -1, -2, -1, -2, -1, -2, -1)));
  const __m256d p4 = ToPd(_mm_madd_epi16(diffs, _mm_set1_epi16(1)));
  const __m256d inner = _mm256_add_pd(p3, _mm256_mul_pd(d, p4));
  return _mm256_add_pd(p1, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, inner))));
}

// ClampToInt: BicubicFilter's clamp to [0, 255], truncated.
__attribute__((target("avx2"))) inline __m128i ClampToInt(__m256d v) {
  return _mm256_cvttpd_epi32(
      _mm256_min_pd(_mm256_max_pd(v, _mm256_setzero_pd()), _mm256_set1_pd(255.0)));
}

// WindowRow loads four lanes' window rows at base + off[lane] + row (12 bytes used of
// 16) into one register per channel (ByChannel's layout).
__attribute__((target("avx2"))) inline void WindowRow(const uint8_t* base, __m128i off,
                                                      size_t row, __m128i t[3]) {
  const __m128i window = _mm_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  const uint8_t* p = base + row;
  const int32_t lane_off[4] = {_mm_cvtsi128_si32(off), _mm_extract_epi32(off, 1),
                               _mm_extract_epi32(off, 2), _mm_extract_epi32(off, 3)};
  __m128i w[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    w[j] = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + lane_off[j])), window);
  }
  ByChannel(w, t);
}

// BicubicStep4: BicubicFilter on four lanes whose 4×4 windows (first taps at base + off)
// are inside the image.
__attribute__((target("avx2"))) inline void BicubicStep4(const uint8_t* base, size_t stride,
                                                         __m128i off, const AffineLanes& l,
                                                         __m128i keep, uint8_t* out) {
  __m256d v[3][4];  // [channel][window row]: the rows' horizontal pass.
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    __m128i t[3];
    WindowRow(base, off, r * stride, t);
#pragma GCC unroll 4
    for (int c = 0; c < 3; ++c) v[c][r] = CubicRow4(t[c], l.dx);
  }
  __m128i q[3];
#pragma GCC unroll 4
  for (int c = 0; c < 3; ++c) q[c] = ClampToInt(CubicPd(v[c][0], v[c][1], v[c][2], v[c][3], l.dy));
  StoreRgb4(q[0], q[1], q[2], keep, out);
}

// BicubicRowStep4 is BicubicFilter where every lane's dy is 0 (ShearX, TranslateX: the
// source row is the output row): the vertical pass Cubic(v0, v1, v2, v3, 0) is
// v1 + 0 * (finite) = v1 exactly (a ±0 only where v1 is 0, which clamps alike), so only
// window row 1's horizontal pass is made; `off` is that row's first tap. The other rows
// need not exist. A quarter of BicubicStep4's operations.
__attribute__((target("avx2"))) inline void BicubicRowStep4(const uint8_t* base, __m128i off,
                                                            const AffineLanes& l, __m128i keep,
                                                            uint8_t* out) {
  __m128i t[3];
  WindowRow(base, off, 0, t);
  StoreRgb4(ClampToInt(CubicRow4(t[0], l.dx)), ClampToInt(CubicRow4(t[1], l.dx)),
            ClampToInt(CubicRow4(t[2], l.dx)), keep, out);
}

// BicubicColumnStep4 is BicubicFilter where every lane's dx is 0 (ShearY, TranslateY):
// each row's Cubic(t0, t1, t2, t3, 0) is t1 + 0 * (finite) = t1, its tap 1, exactly, so
// only the vertical pass is made, on the window's column 1 (`off`: its top tap, read as
// RGBx words; on a run, IsRun, one load per row). The other columns need not exist.
__attribute__((target("avx2"))) inline void BicubicColumnStep4(const uint8_t* base, size_t stride,
                                                               size_t size, __m128i off,
                                                               const AffineLanes& l, __m128i keep,
                                                               uint8_t* out) {
  __m256d v[3][4];  // [channel][window row]
  const bool run = IsRun(off, 4, stride, size);
  const uint8_t* p = base + _mm_cvtsi128_si32(off);
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    const __m128i words =
        run ? Words4<0>(Load16(p + r * stride))
            : Gather4(base, _mm_add_epi32(off, _mm_set1_epi32(r * static_cast<int>(stride))));
    v[0][r] = Channel<0>(words);
    v[1][r] = Channel<1>(words);
    v[2][r] = Channel<2>(words);
  }
  __m128i q[3];
#pragma GCC unroll 4
  for (int c = 0; c < 3; ++c) q[c] = ClampToInt(CubicPd(v[c][0], v[c][1], v[c][2], v[c][3], l.dy));
  StoreRgb4(q[0], q[1], q[2], keep, out);
}

// BicubicQuad is one four-pixel step of AffineBicubicAvx2: output pixels x..x + 3 of
// row `out` (centre row yin; a1y, a4y: a[1] * yin, a[4] * yin).
__attribute__((target("avx2"), always_inline)) inline void BicubicQuad(const Image& src,
                                                                       const double a[6], int x,
                                                                       double yin, __m256d a1y,
                                                                       __m256d a4y, uint8_t* out) {
  const uint8_t* base = src.pixels.data();
  const size_t stride = src.stride();
  const size_t size = src.pixels.size();
  const __m256d xin = _mm256_add_pd(_mm256_set1_pd(x), _mm256_setr_pd(0.5, 1.5, 2.5, 3.5));
  const AffineLanes l = MapLanes(src, a, xin, a1y, a4y);
  if (l.outside == 0xF) return;  // All fill.
  // The 4×4 window starts one column and one row before the floor; a one-pass step
  // reads only its row (16 bytes from its first tap) or column (one RGBx word).
  const __m128i one = _mm_set1_epi32(1);
  const __m128i x0 = _mm_sub_epi32(l.x, one), y0 = _mm_sub_epi32(l.y, one);
  __m128i off, keep;
  int inside = 0;
  if (AllZero(l.dy) && (inside = TapsInside(src, x0, l.y, 4, 1, 16, &off, &keep)) != 0) {
    BicubicRowStep4(base, off, l, keep, out + 3 * x);
  } else if (AllZero(l.dx) && (inside = TapsInside(src, l.x, y0, 1, 4, 4, &off, &keep)) != 0) {
    BicubicColumnStep4(base, stride, size, off, l, keep, out + 3 * x);
  } else if ((inside = TapsInside(src, x0, y0, 4, 4, 16, &off, &keep)) != 0) {
    BicubicStep4(base, stride, off, l, keep, out + 3 * x);
  }
  FilterPixels<BicubicFilterAvx2>(src, a, x, x + 4, yin, inside | l.outside, out);
}

// AffineBicubicAvx2 is GenericAffine<BicubicFilterAvx2>, four pixels a step, each step
// by the cheapest of the three kernels above that is exact for it.
// geometry_bench, 224² per call, against GenericAffine<BicubicFilterAvx2> (best of 12
// alternating runs on the shared 2-core VM): rotate+shear 1.45 -> 0.66 ms, shear x
// 1.27 -> 0.29 ms, translate y 10.3 px 1.43 -> 0.35 ms. The timm RandAugment recipe
// 1.17 -> 0.91 ms of CPU per sample (medians of 8).
__attribute__((target("avx2"))) void AffineBicubicAvx2(const Image& src, const double a[6],
                                                       Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
    int x = 0;
    for (; x + 4 <= dst->width; x += 4) BicubicQuad(src, a, x, yin, a1y, a4y, out);
    FilterPixels<BicubicFilterAvx2>(src, a, x, dst->width, yin, 0, out);
  }
}

// The AVX-512 bicubic kernel: BicubicStep4, and the one-pass BicubicRowStep4 and
// BicubicColumnStep4 (OnePassOct), on eight lanes of zmm doubles (F, BW, VL, DQ; and
// no FMA: AVX-512F brings FMA into the target, so fp-contract=off keeps GCC from fusing
// the multiply-adds, here and in the AVX2 code it inlines; no vfmadd in its objdump),
// so every lane's operations are BicubicFilter's. Zen 4 runs a 512-bit double
// operation as two 256-bit halves, so this cannot pay in arithmetic; it pays
// (presumably) in the steps in flight, half the instructions per pixel for the same
// out-of-order window: the four-lane step's long chains (position, taps, two cubic
// passes) kept its vector units half idle (with the FP work removed it still took half
// its time). The same AVX2 kernel recompiled for AVX-512VL's 32 registers gained
// nothing. Steps whose eight windows are not all inside take BicubicQuad twice.
// geometry_bench, 224² per call (best of 4-6 alternating runs): rotate+shear 0.64 ->
// 0.49 ms, shear x 0.26 -> 0.20 ms, translate y 10.3 px 0.32 -> 0.24 ms.
#define FLOWLOADER_AFFINE_AVX512 \
  __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq"), optimize("fp-contract=off")))

// (The maskz forms with every lane set: GCC 12's plain ones warn of an uninitialized
// source.)
FLOWLOADER_AFFINE_AVX512 inline __m512d CubicPd8(__m512d v1, __m512d v2, __m512d v3, __m512d v4,
                                                 __m512d d) {
  const __m512d neg_v1 = _mm512_xor_pd(v1, _mm512_set1_pd(-0.0));
  const __m512d p1 = v2;
  const __m512d p2 = _mm512_add_pd(neg_v1, v3);
  const __m512d p3 = _mm512_sub_pd(
      _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), _mm512_sub_pd(v1, v2)), v3), v4);
  const __m512d p4 = _mm512_add_pd(_mm512_sub_pd(_mm512_add_pd(neg_v1, v2), v3), v4);
  return _mm512_add_pd(
      p1, _mm512_mul_pd(
              d, _mm512_add_pd(p2, _mm512_mul_pd(d, _mm512_add_pd(p3, _mm512_mul_pd(d, p4))))));
}

// CubicRow8 is CubicRow4 on eight lanes (t: byte 4 * lane + k is lane's tap k).
FLOWLOADER_AFFINE_AVX512 inline __m512d CubicRow8(__m256i t, __m512d d) {
  const __m256i diffs = _mm256_maddubs_epi16(t, _mm256_set1_epi32(0x01FF01FF));
  const __m512d p1 = _mm512_maskz_cvtepi32_pd(
      0xFF, _mm256_shuffle_epi8(
                t, _mm256_setr_epi8(1, -1, -1, -1, 5, -1, -1, -1, 9, -1, -1, -1, 13, -1, -1, -1, 1,
                                    -1, -1, -1, 5, -1, -1, -1, 9, -1, -1, -1, 13, -1, -1, -1)));
  const __m512d p2 = _mm512_maskz_cvtepi32_pd(
      0xFF, _mm256_madd_epi16(_mm256_maddubs_epi16(t, _mm256_set1_epi32(0x000100FF)),
                              _mm256_set1_epi16(1)));
  const __m512d p3 = _mm512_maskz_cvtepi32_pd(
      0xFF, _mm256_madd_epi16(diffs, _mm256_setr_epi16(-2, -1, -2, -1, -2, -1, -2, -1, -2, -1, -2,
                                                       -1, -2, -1, -2, -1)));
  const __m512d p4 = _mm512_maskz_cvtepi32_pd(0xFF, _mm256_madd_epi16(diffs, _mm256_set1_epi16(1)));
  const __m512d inner = _mm512_add_pd(p3, _mm512_mul_pd(d, p4));
  return _mm512_add_pd(p1, _mm512_mul_pd(d, _mm512_add_pd(p2, _mm512_mul_pd(d, inner))));
}

// ByChannel8 is ByChannel on eight lanes: w[j] holds lanes j and j + 4 (one per 128-bit
// half), each a window whose dword c holds channel c's four taps.
FLOWLOADER_AFFINE_AVX512 inline void ByChannel8(const __m256i w[4], __m256i t[3]) {
  const __m256i lo01 = _mm256_unpacklo_epi32(w[0], w[1]), lo23 = _mm256_unpacklo_epi32(w[2], w[3]);
  const __m256i hi01 = _mm256_unpackhi_epi32(w[0], w[1]), hi23 = _mm256_unpackhi_epi32(w[2], w[3]);
  t[0] = _mm256_unpacklo_epi64(lo01, lo23);
  t[1] = _mm256_unpackhi_epi64(lo01, lo23);
  t[2] = _mm256_unpacklo_epi64(hi01, hi23);
}

// WindowRow8 loads the eight lanes' 16-byte window rows at p + lane_off[lane] into
// one register per channel: byte 4 * lane + k is lane's tap k.
FLOWLOADER_AFFINE_AVX512 inline void WindowRow8(const uint8_t* p, const int32_t lane_off[8],
                                                __m256i t[3]) {
  const __m128i window = _mm_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  __m256i w[4];  // Lanes j and j + 4, each's channel-major window row.
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + lane_off[j]));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + lane_off[j + 4]));
    w[j] = _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1),
                               _mm256_broadcastsi128_si256(window));
  }
  ByChannel8(w, t);
}

// Channel8: byte c of each of eight RGBx words, as doubles.
template <int c>
FLOWLOADER_AFFINE_AVX512 inline __m512d Channel8(__m256i words) {
  return _mm512_maskz_cvtepi32_pd(
      0xFF, _mm256_shuffle_epi8(words, _mm256_broadcastsi128_si256(
                                           _mm_setr_epi8(c, -1, -1, -1, 4 + c, -1, -1, -1, 8 + c,
                                                         -1, -1, -1, 12 + c, -1, -1, -1))));
}

// OnePassOct is BicubicRowStep4 (`rows`: every dy 0) or BicubicColumnStep4 (every dx 0)
// on eight lanes, where the eight windows (one row, or one column, of four taps) are
// inside; false (nothing written) where not.
FLOWLOADER_AFFINE_AVX512 inline bool OnePassOct(const uint8_t* base, int width, int height,
                                                int stride, int size, __m512d fx, __m512d fy,
                                                __m512d dx, __m512d dy, bool rows, uint8_t* out) {
  const __m256i one = _mm256_set1_epi32(1);
  __m256i x0 = _mm512_maskz_cvttpd_epi32(0xFF, fx), y0 = _mm512_maskz_cvttpd_epi32(0xFF, fy);
  if (rows) {
    x0 = _mm256_sub_epi32(x0, one);
  } else {
    y0 = _mm256_sub_epi32(y0, one);
  }
  const int span_x = rows ? 4 : 1, span_y = rows ? 1 : 4;
  // The last load: 16 bytes from the row's first tap, or the column's last RGBx word.
  const int last = rows ? 16 : 3 * stride + 4;
  const __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(y0, _mm256_set1_epi32(stride)),
                                       _mm256_mullo_epi32(x0, _mm256_set1_epi32(3)));
  const __mmask8 ok = _mm256_cmp_epu32_mask(x0, _mm256_set1_epi32(width - span_x), _MM_CMPINT_LE) &
                      _mm256_cmp_epu32_mask(y0, _mm256_set1_epi32(height - span_y), _MM_CMPINT_LE) &
                      _mm256_cmp_epi32_mask(off, _mm256_set1_epi32(size - last), _MM_CMPINT_LE);
  if (ok != 0xFF) return false;
  __m256i q[3];
  if (rows) {
    alignas(32) int32_t lane_off[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_off), off);
    __m256i t[3];
    WindowRow8(base, lane_off, t);
#pragma GCC unroll 4
    for (int c = 0; c < 3; ++c) {
      q[c] = _mm512_maskz_cvttpd_epi32(
          0xFF, _mm512_maskz_min_pd(
                    0xFF, _mm512_maskz_max_pd(0xFF, CubicRow8(t[c], dx), _mm512_setzero_pd()),
                    _mm512_set1_pd(255.0)));
    }
  } else {
    // A run (eight consecutive pixels, TranslateY) by two loads a row, else gathers.
    const int off0 = _mm256_cvtsi256_si32(off);
    const bool run =
        _mm256_cmp_epi32_mask(off,
                              _mm256_add_epi32(_mm256_set1_epi32(off0),
                                               _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21)),
                              _MM_CMPINT_EQ) == 0xFF &&
        off0 + 3 * stride + 28 <= size;
    __m512d v[3][4];  // [channel][window row]
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      __m256i words;
      if (run) {
        const uint8_t* p = base + off0 + r * stride;
        words = _mm256_inserti128_si256(_mm256_castsi128_si256(Words4<0>(Load16(p))),
                                        Words4<0>(Load16(p + 12)), 1);
      } else {
        words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(base),
                                       _mm256_add_epi32(off, _mm256_set1_epi32(r * stride)), 1);
      }
      v[0][r] = Channel8<0>(words);
      v[1][r] = Channel8<1>(words);
      v[2][r] = Channel8<2>(words);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 3; ++c) {
      q[c] = _mm512_maskz_cvttpd_epi32(
          0xFF, _mm512_maskz_min_pd(
                    0xFF,
                    _mm512_maskz_max_pd(0xFF, CubicPd8(v[c][0], v[c][1], v[c][2], v[c][3], dy),
                                        _mm512_setzero_pd()),
                    _mm512_set1_pd(255.0)));
    }
  }
  internal::StoreRgb8(out, q[0], q[1], q[2]);
  return true;
}

// BicubicOct: output pixels x..x + 7 of row `out`, by an eight-lane step where one
// applies, else two BicubicQuad.
FLOWLOADER_AFFINE_AVX512 inline void BicubicOct(const Image& src, const double a[6], int x,
                                                double yin, __m512d a1y8, __m512d a4y8, __m256d a1y,
                                                __m256d a4y, uint8_t* out) {
  // GenericAffine's (a0 * xin + a1 * yin) + a2 per lane, less 0.5, floor and fraction.
  const __m512d xin =
      _mm512_add_pd(_mm512_set1_pd(x), _mm512_setr_pd(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5));
  const __m512d half = _mm512_set1_pd(0.5);
  const __m512d sx =
      _mm512_sub_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(a[0]), xin), a1y8),
                                  _mm512_set1_pd(a[2])),
                    half);
  const __m512d sy =
      _mm512_sub_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(a[3]), xin), a4y8),
                                  _mm512_set1_pd(a[5])),
                    half);
  const __m512d fx =
      _mm512_maskz_roundscale_pd(0xFF, sx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512d fy =
      _mm512_maskz_roundscale_pd(0xFF, sy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512d dx = _mm512_sub_pd(sx, fx), dy = _mm512_sub_pd(sy, fy);
  const uint8_t* base = src.pixels.data();
  const int stride = static_cast<int>(src.stride());
  const int size = static_cast<int>(src.pixels.size());
  if (src.width < 4 || src.height < 4) {
    BicubicQuad(src, a, x, yin, a1y, a4y, out);
    BicubicQuad(src, a, x + 4, yin, a1y, a4y, out);
    return;
  }
  const bool flat_x = _mm512_cmp_pd_mask(dx, _mm512_setzero_pd(), _CMP_EQ_OQ) == 0xFF;
  const bool flat_y = _mm512_cmp_pd_mask(dy, _mm512_setzero_pd(), _CMP_EQ_OQ) == 0xFF;
  if (flat_x || flat_y) {
    if (!OnePassOct(base, src.width, src.height, stride, size, fx, fy, dx, dy, flat_y,
                    out + 3 * x)) {
      BicubicQuad(src, a, x, yin, a1y, a4y, out);
      BicubicQuad(src, a, x + 4, yin, a1y, a4y, out);
    }
    return;
  }
  // Window columns [x0, x0 + 4) and rows [y0, y0 + 4) inside (which keeps the filter's
  // bounds test true, see TapsInside; NaN and out-of-range floors convert to INT_MIN),
  // and the last row's 16-byte load within the buffer.
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i x0 = _mm256_sub_epi32(_mm512_maskz_cvttpd_epi32(0xFF, fx), one);
  const __m256i y0 = _mm256_sub_epi32(_mm512_maskz_cvttpd_epi32(0xFF, fy), one);
  const __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(y0, _mm256_set1_epi32(stride)),
                                       _mm256_mullo_epi32(x0, _mm256_set1_epi32(3)));
  const __mmask8 ok =
      _mm256_cmp_epu32_mask(x0, _mm256_set1_epi32(src.width - 4), _MM_CMPINT_LE) &
      _mm256_cmp_epu32_mask(y0, _mm256_set1_epi32(src.height - 4), _MM_CMPINT_LE) &
      _mm256_cmp_epi32_mask(off, _mm256_set1_epi32(size - 3 * stride - 16), _MM_CMPINT_LE);
  if (ok != 0xFF) {
    BicubicQuad(src, a, x, yin, a1y, a4y, out);
    BicubicQuad(src, a, x + 4, yin, a1y, a4y, out);
    return;
  }
  alignas(32) int32_t lane_off[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_off), off);
  __m512d v[3][4];  // [channel][window row]
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    __m256i t[3];
    WindowRow8(base + r * static_cast<size_t>(stride), lane_off, t);
#pragma GCC unroll 4
    for (int c = 0; c < 3; ++c) v[c][r] = CubicRow8(t[c], dx);
  }
  __m256i q[3];
#pragma GCC unroll 4
  for (int c = 0; c < 3; ++c) {
    const __m512d cubic = CubicPd8(v[c][0], v[c][1], v[c][2], v[c][3], dy);
    q[c] = _mm512_maskz_cvttpd_epi32(
        0xFF, _mm512_maskz_min_pd(0xFF, _mm512_maskz_max_pd(0xFF, cubic, _mm512_setzero_pd()),
                                  _mm512_set1_pd(255.0)));
  }
  internal::StoreRgb8(out + 3 * x, q[0], q[1], q[2]);
}

// AffineBicubicAvx512 is AffineBicubicAvx2 with BicubicOct: eight pixels a step, each
// row's last width % 8 by BicubicQuad and the per-pixel filter.
FLOWLOADER_AFFINE_AVX512 void AffineBicubicAvx512(const Image& src, const double a[6], Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
    const __m512d a1y8 = _mm512_set1_pd(a[1] * yin), a4y8 = _mm512_set1_pd(a[4] * yin);
    int x = 0;
    for (; x + 8 <= dst->width; x += 8) BicubicOct(src, a, x, yin, a1y8, a4y8, a1y, a4y, out);
    for (; x + 4 <= dst->width; x += 4) BicubicQuad(src, a, x, yin, a1y, a4y, out);
    FilterPixels<BicubicFilterAvx2>(src, a, x, dst->width, yin, 0, out);
  }
}

// The AVX-512 bilinear kernel: BilinearStep4 on eight lanes of zmm doubles, as the
// bicubic one above (and for the same reason: fewer instructions per pixel in flight).
// Every lane whose 2×2 window is inside takes it, the one-axis warps included:
// BilinearFilter's full formula is what the one-pass steps shortcut, so it gives their
// bytes; only the arithmetic a zero fraction leaves exact is skipped (BilinearLane8).
// The windows are loaded 8 bytes a row and transposed (four 8-lane gathers instead
// measured slower), or on a run by two loads a row.
// geometry_bench against AffineBilinearAvx2, us per call (best of 10 alternating runs
// on the loaded 2-core VM): rotate 176² 187 -> 129, shear x 176² 120 -> 74, shear y
// 176² 136 -> 93, translate y 10.3 px 176² 126 -> 90, rotate+shear 224² 307 -> 224.
// The v2 recipe's trivial_augment_wide, 6 epochs: 2.74 -> 2.13 busy s (medians of 5).

// Rows2: a 2×2 window's two rows of 8 bytes (its taps are bytes 0..5 of each).
FLOWLOADER_AFFINE_AVX512 inline __m128i Rows2(const uint8_t* p, int stride) {
  return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + stride)));
}

// Window2x2Oct loads the eight lanes' 2×2 windows (top-left taps at p + lane_off[lane])
// into one register per channel: byte 4 * lane + k is the lane's tap k (0, 1: the top
// row's left and right; 2, 3: the bottom row's).
FLOWLOADER_AFFINE_AVX512 inline void Window2x2Oct(const uint8_t* p, int stride,
                                                  const int32_t lane_off[8], __m256i t[3]) {
  const __m128i window = _mm_setr_epi8(0, 3, 8, 11, 1, 4, 9, 12, 2, 5, 10, 13, -1, -1, -1, -1);
  __m256i w[4];  // Lanes j and j + 4, each's channel-major window.
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    w[j] = _mm256_shuffle_epi8(
        _mm256_inserti128_si256(_mm256_castsi128_si256(Rows2(p + lane_off[j], stride)),
                                Rows2(p + lane_off[j + 4], stride), 1),
        _mm256_broadcastsi128_si256(window));
  }
  ByChannel8(w, t);
}

// RunWindows8: eight windows that are consecutive pixels from p (a run: each lane's
// window 3 bytes after the last's, as translations and ShearX's rows make) in
// Window2x2Oct's layout, by two loads a row and two shuffles a channel instead of
// sixteen loads and the transpose. With `one_row` only the top row (taps 2 and 3 zero).
template <bool one_row>
FLOWLOADER_AFFINE_AVX512 inline void RunWindows8(const uint8_t* p, int stride, __m256i t[3]) {
  const __m256i top = _mm256_inserti128_si256(_mm256_castsi128_si256(Load16(p)), Load16(p + 12), 1);
  __m256i bottom = _mm256_setzero_si256();
  if (!one_row) {
    bottom = _mm256_inserti128_si256(_mm256_castsi128_si256(Load16(p + stride)),
                                     Load16(p + stride + 12), 1);
  }
#pragma GCC unroll 3
  for (int c = 0; c < 3; ++c) {
    t[c] = _mm256_shuffle_epi8(top, _mm256_broadcastsi128_si256(
                                        _mm_setr_epi8(c, c + 3, -1, -1, c + 3, c + 6, -1, -1, c + 6,
                                                      c + 9, -1, -1, c + 9, c + 12, -1, -1)));
    if (!one_row) {
      t[c] = _mm256_or_si256(
          t[c], _mm256_shuffle_epi8(bottom, _mm256_broadcastsi128_si256(_mm_setr_epi8(
                                                -1, -1, c, c + 3, -1, -1, c + 3, c + 6, -1, -1,
                                                c + 6, c + 9, -1, -1, c + 9, c + 12))));
    }
  }
}

// Flat: which fractions are 0 in all eight lanes.
enum class Flat { kNone, kDy, kDx };

// BilinearLane8: BilinearFilter's three lines for one channel of eight lanes (t:
// Window2x2Oct's layout). The taps' differences are made in int (one maddubs: b - a
// and f - e as int16 pairs), exact in double as C's int subtraction then conversion.
// Where every dy is 0 the result is v1 (v1 + (v2 - v1) * 0 = v1: v1 >= 0 is finite,
// +0 + -0 is +0); where every dx is 0 each row's lerp is its left tap.
template <Flat flat>
FLOWLOADER_AFFINE_AVX512 inline __m256i BilinearLane8(__m256i t, __m512d dx, __m512d dy) {
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m512d left0 = _mm512_maskz_cvtepi32_pd(0xFF, _mm256_and_si256(t, byte));
  const __m512d left1 =
      _mm512_maskz_cvtepi32_pd(0xFF, _mm256_and_si256(_mm256_srli_epi32(t, 16), byte));
  if (flat == Flat::kDx) {
    return _mm512_maskz_cvttpd_epi32(
        0xFF, _mm512_add_pd(left0, _mm512_mul_pd(_mm512_sub_pd(left1, left0), dy)));
  }
  const __m256i diffs = _mm256_maddubs_epi16(t, _mm256_set1_epi16(0x01FF));  // -1, 1
  const __m512d d0 =
      _mm512_maskz_cvtepi32_pd(0xFF, _mm256_srai_epi32(_mm256_slli_epi32(diffs, 16), 16));
  const __m512d v1 = _mm512_add_pd(left0, _mm512_mul_pd(d0, dx));
  if (flat == Flat::kDy) return _mm512_maskz_cvttpd_epi32(0xFF, v1);
  const __m512d d1 = _mm512_maskz_cvtepi32_pd(0xFF, _mm256_srai_epi32(diffs, 16));
  const __m512d v2 = _mm512_add_pd(left1, _mm512_mul_pd(d1, dx));
  return _mm512_maskz_cvttpd_epi32(0xFF,
                                   _mm512_add_pd(v1, _mm512_mul_pd(_mm512_sub_pd(v2, v1), dy)));
}

// ColumnLane8 is BilinearLane8<Flat::kDx> on the window columns' RGBx words (top,
// bottom).
template <int c>
FLOWLOADER_AFFINE_AVX512 inline __m256i ColumnLane8(__m256i top, __m256i bottom, __m512d dy) {
  const __m512d left0 = Channel8<c>(top), left1 = Channel8<c>(bottom);
  return _mm512_maskz_cvttpd_epi32(
      0xFF, _mm512_add_pd(left0, _mm512_mul_pd(_mm512_sub_pd(left1, left0), dy)));
}

// StoreRgb8Keep is internal::StoreRgb8 for the lanes set in `keep` (the others' three
// bytes stay): the 24 bytes made contiguous, then one byte-masked store.
FLOWLOADER_AFFINE_AVX512 inline void StoreRgb8Keep(uint8_t* p, __m256i r, __m256i g, __m256i b,
                                                   __mmask8 keep) {
  if (keep == 0xFF) {
    internal::StoreRgb8(p, r, g, b);
    return;
  }
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0,
                                        1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i rgb = _mm256_shuffle_epi8(
      _mm256_or_si256(r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16))), pack);
  const __m256i bytes = _mm256_permutexvar_epi32(_mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7), rgb);
  uint32_t byte_mask = 0;
  for (int j = 0; j < 8; ++j) {
    if (keep >> j & 1) byte_mask |= 7u << (3 * j);
  }
  _mm256_mask_storeu_epi8(p, byte_mask, bytes);
}

template <Flat flat>
FLOWLOADER_AFFINE_AVX512 inline void BilinearStore8(const __m256i t[3], __m512d dx, __m512d dy,
                                                    __mmask8 keep, uint8_t* out) {
  StoreRgb8Keep(out, BilinearLane8<flat>(t[0], dx, dy), BilinearLane8<flat>(t[1], dx, dy),
                BilinearLane8<flat>(t[2], dx, dy), keep);
}

// BilinearInside8: BilinearFilter on the `keep` lanes of eight, whose 2×2 windows
// (top-left taps at base + off) are inside the image; the others' offsets are one of
// theirs.
FLOWLOADER_AFFINE_AVX512 inline void BilinearInside8(const uint8_t* base, int stride, int size,
                                                     __m256i off, __m512d dx, __m512d dy,
                                                     __mmask8 keep, uint8_t* out) {
  const __m512d zero = _mm512_setzero_pd();
  const bool flat_y = _mm512_cmp_pd_mask(dy, zero, _CMP_EQ_OQ) == 0xFF;
  const bool flat_x = _mm512_cmp_pd_mask(dx, zero, _CMP_EQ_OQ) == 0xFF;
  __m256i t[3];
  const int off0 = _mm256_cvtsi256_si32(off);
  const bool run =
      _mm256_cmp_epi32_mask(
          off,
          _mm256_add_epi32(_mm256_set1_epi32(off0), _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21)),
          _MM_CMPINT_EQ) == 0xFF &&
      off0 + stride + 28 <= size;
  if (run) {
    if (flat_y) {
      RunWindows8<true>(base + off0, stride, t);
      BilinearStore8<Flat::kDy>(t, dx, dy, keep, out);
      return;
    }
    RunWindows8<false>(base + off0, stride, t);
  } else if (flat_x) {
    // ShearY: each lane's left column, rows y0 and y0 + 1, by two gathers.
    const __m256i top = _mm256_i32gather_epi32(reinterpret_cast<const int*>(base), off, 1);
    const __m256i bottom = _mm256_i32gather_epi32(
        reinterpret_cast<const int*>(base), _mm256_add_epi32(off, _mm256_set1_epi32(stride)), 1);
    StoreRgb8Keep(out, ColumnLane8<0>(top, bottom, dy), ColumnLane8<1>(top, bottom, dy),
                  ColumnLane8<2>(top, bottom, dy), keep);
    return;
  } else {
    alignas(32) int32_t lane_off[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_off), off);
    Window2x2Oct(base, stride, lane_off, t);
  }
  if (flat_y) {
    BilinearStore8<Flat::kDy>(t, dx, dy, keep, out);
  } else if (flat_x) {
    BilinearStore8<Flat::kDx>(t, dx, dy, keep, out);
  } else {
    BilinearStore8<Flat::kNone>(t, dx, dy, keep, out);
  }
}

// BilinearAt8: BilinearFilter at eight lanes' source positions (xs, ys), any map's,
// writing output pixels out[0..8) of the lanes whose 2×2 windows are inside (`ok`).
// `outside`: the lanes BilinearFilter leaves as fill (NaN is not outside, as in C). The
// other lanes (the one-pixel band along the edges) need the per-pixel filter; where
// `ok` is 0 nothing was written.
FLOWLOADER_AFFINE_AVX512 inline void BilinearAt8(const Image& src, __m512d xs, __m512d ys,
                                                 uint8_t* out, __mmask8* outside,
                                                 __mmask8* ok) {
  const __m512d zero = _mm512_setzero_pd();
  *outside = _mm512_cmp_pd_mask(xs, zero, _CMP_LT_OQ) |
             _mm512_cmp_pd_mask(xs, _mm512_set1_pd(src.width), _CMP_GE_OQ) |
             _mm512_cmp_pd_mask(ys, zero, _CMP_LT_OQ) |
             _mm512_cmp_pd_mask(ys, _mm512_set1_pd(src.height), _CMP_GE_OQ);
  *ok = 0;
  if (*outside == 0xFF || src.width < 2 || src.height < 2) return;
  const __m512d half = _mm512_set1_pd(0.5);
  const __m512d sx = _mm512_sub_pd(xs, half), sy = _mm512_sub_pd(ys, half);
  const __m512d fx =
      _mm512_maskz_roundscale_pd(0xFF, sx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512d fy =
      _mm512_maskz_roundscale_pd(0xFF, sy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  // Window columns [x0, x0 + 2) and rows [y0, y0 + 2) inside (which keeps the filter's
  // bounds test true, see TapsInside; NaN and out-of-range floors convert to INT_MIN),
  // and the bottom row's 8-byte load within the buffer.
  const int stride = static_cast<int>(src.stride());
  const int size = static_cast<int>(src.pixels.size());
  const __m256i x0 = _mm512_maskz_cvttpd_epi32(0xFF, fx);
  const __m256i y0 = _mm512_maskz_cvttpd_epi32(0xFF, fy);
  __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(y0, _mm256_set1_epi32(stride)),
                                 _mm256_mullo_epi32(x0, _mm256_set1_epi32(3)));
  *ok = _mm256_cmp_epu32_mask(x0, _mm256_set1_epi32(src.width - 2), _MM_CMPINT_LE) &
        _mm256_cmp_epu32_mask(y0, _mm256_set1_epi32(src.height - 2), _MM_CMPINT_LE) &
        _mm256_cmp_epi32_mask(off, _mm256_set1_epi32(size - stride - 8), _MM_CMPINT_LE);
  if (*ok == 0) return;
  if (*ok != 0xFF) {
    // The other lanes read the first inside lane's window.
    off = _mm256_mask_blend_epi32(
        *ok, _mm256_permutexvar_epi32(_mm256_set1_epi32(__builtin_ctz(*ok)), off), off);
  }
  BilinearInside8(src.pixels.data(), stride, size, off, _mm512_sub_pd(sx, fx),
                  _mm512_sub_pd(sy, fy), *ok, out);
}

// BilinearOct: output pixels x..x + 7 of row `out`: the eight-lane step on the lanes
// whose windows are inside, the others left as fill where outside the source, else
// (the one-pixel band along the edges) by the per-pixel filter; where no window is
// inside, two BilinearQuad. (Two BilinearQuad for every step with a lane not inside
// instead: rotate 224² with expand 252 -> 284 us, best of 10.)
FLOWLOADER_AFFINE_AVX512 inline void BilinearOct(const Image& src, const double a[6], int x,
                                                 double yin, __m512d a1y8, __m512d a4y8,
                                                 __m256d a1y, __m256d a4y, uint8_t* out) {
  // GenericAffine's (a0 * xin + a1 * yin) + a2 per lane.
  const __m512d xin =
      _mm512_add_pd(_mm512_set1_pd(x), _mm512_setr_pd(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5));
  const __m512d xs = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(a[0]), xin), a1y8),
                                   _mm512_set1_pd(a[2]));
  const __m512d ys = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(a[3]), xin), a4y8),
                                   _mm512_set1_pd(a[5]));
  __mmask8 outside, ok;
  BilinearAt8(src, xs, ys, out + 3 * x, &outside, &ok);
  if (outside == 0xFF) return;
  if (ok == 0) {
    BilinearQuad(src, a, x, yin, a1y, a4y, out);
    BilinearQuad(src, a, x + 4, yin, a1y, a4y, out);
    return;
  }
  if ((ok | outside) != 0xFF) {
    FilterPixels<BilinearFilterAvx2>(src, a, x, x + 8, yin, ok | outside, out);
  }
}

// AffineBilinearAvx512 is AffineBilinearAvx2 with BilinearOct: eight pixels a step, each
// row's last width % 8 by BilinearQuad and the per-pixel filter.
FLOWLOADER_AFFINE_AVX512 void AffineBilinearAvx512(const Image& src, const double a[6],
                                                   Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
    const __m512d a1y8 = _mm512_set1_pd(a[1] * yin), a4y8 = _mm512_set1_pd(a[4] * yin);
    int x = 0;
    for (; x + 8 <= dst->width; x += 8) BilinearOct(src, a, x, yin, a1y8, a4y8, a1y, a4y, out);
    for (; x + 4 <= dst->width; x += 4) BilinearQuad(src, a, x, yin, a1y, a4y, out);
    FilterPixels<BilinearFilterAvx2>(src, a, x, dst->width, yin, 0, out);
  }
}
#endif

std::atomic<bool> affine_avx2_only{false};

// TransformAffine is Image.transform(size, AFFINE, a, resample, fillcolor=fill) into
// `dst` of width × height: ImagingTransformAffine's choice of engine.
void TransformAffine(const Image& src, const double a[6], int width, int height,
                     Interpolation interpolation, const std::array<uint8_t, 3>& fill,
                     Image* dst) {
  FillImage(width, height, fill, dst);
#if defined(FLOWLOADER_COLOUR_AVX2)
  // The shortcuts (ShiftCopy, the vector kernels) run where the AVX2 kernels do, so
  // that SetPortableForTesting(true) leaves PIL's per-pixel filters for the tests to
  // compare them with (geometry_test). The vector kernels index with int32 offsets.
  int tx = 0, ty = 0;
  if ((interpolation == Interpolation::kBilinear || interpolation == Interpolation::kBicubic) &&
      internal::HasAvx2() && IntegerShift(a, &tx, &ty)) {
    ShiftCopy(src, tx, ty, dst);
    return;
  }
  const bool vector_ok = src.pixels.size() < (size_t{1} << 30);
#endif
  if (interpolation == Interpolation::kBilinear) {
#if defined(FLOWLOADER_COLOUR_AVX2)
    if (internal::HasAvx2()) {
      if (vector_ok) {
        if (internal::HasAvx512() && !affine_avx2_only.load(std::memory_order_relaxed)) {
          AffineBilinearAvx512(src, a, dst);
        } else {
          AffineBilinearAvx2(src, a, dst);
        }
      } else {
        GenericAffine<BilinearFilterAvx2>(src, a, dst);
      }
      return;
    }
#endif
    GenericAffine<BilinearFilter>(src, a, dst);
  } else if (interpolation == Interpolation::kBicubic) {
#if defined(FLOWLOADER_COLOUR_AVX2)
    if (internal::HasAvx2()) {
      if (vector_ok) {
        if (internal::HasAvx512() && !affine_avx2_only.load(std::memory_order_relaxed)) {
          AffineBicubicAvx512(src, a, dst);
        } else {
          AffineBicubicAvx2(src, a, dst);
        }
      } else {
        GenericAffine<BicubicFilterAvx2>(src, a, dst);
      }
      return;
    }
#endif
    GenericAffine<BicubicFilter>(src, a, dst);
  } else if (a[1] == 0 && a[3] == 0) {
    ScaleAffine(src, a, dst);
  } else if (CheckFixed(a, 0, 0) && CheckFixed(a, width, height) && CheckFixed(a, 0, height) &&
             CheckFixed(a, width, 0)) {
    AffineFixed(src, a, dst);
  } else {
    AffineFloat(src, a, dst);
  }
}

// Transposes (Image.transpose), the fast paths Image.rotate takes for multiples of 90°.
// ROTATE_90 turns counter-clockwise: out(x, y) = in(w - 1 - y, x).
template <int C = 3>
void Rotate90(const Image& src, bool counter_clockwise, Image* dst) {
  const int w = src.width, h = src.height;
  dst->Resize(h, w, C);
  for (int y = 0; y < w; ++y) {
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < h; ++x) {
      if (counter_clockwise) {
        CopyPixel<C>(src, w - 1 - y, x, out + C * x);
      } else {
        CopyPixel<C>(src, y, h - 1 - x, out + C * x);
      }
    }
  }
}

template <int C = 3>
void Rotate180(const Image& src, Image* dst) {
  const int w = src.width, h = src.height;
  dst->Resize(w, h, C);
  for (int y = 0; y < h; ++y) {
    uint8_t* out = dst->Row(y);
    for (int x = 0; x < w; ++x) CopyPixel<C>(src, w - 1 - x, h - 1 - y, out + C * x);
  }
}

// NearestPlane is TransformAffine's nearest-neighbour engines on a one-channel plane
// (PIL's "L" image): `dst` of width × height starts as `fill`, and each pixel the map
// sends inside `src` copies one source byte.
void NearestPlane(const Image& src, const double a[6], int width, int height, uint8_t fill,
                  Image* dst) {
  dst->Resize(width, height, 1);
  std::memset(dst->pixels.data(), fill, dst->pixels.size());
  if (a[1] == 0 && a[3] == 0) {
    ScaleAffine<1>(src, a, dst);
  } else if (CheckFixed(a, 0, 0) && CheckFixed(a, width, height) && CheckFixed(a, 0, height) &&
             CheckFixed(a, width, 0)) {
    AffineFixed<1>(src, a, dst);
  } else {
    AffineFloat<1>(src, a, dst);
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// AffineFixedSpanAvx512 writes output pixels [x0, x1) (x1 - x0 a multiple of 8) of row y
// for AffineFixedRowsAvx512, eight a step.
__attribute__((target("avx512f"))) inline void AffineFixedSpanAvx512(
    const Rows& src, const int64_t t[6], int64_t stride, __m256i fills, int y, int x0, int x1,
    uint8_t* out) {
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  // Lane k's position at pixel x0 + k: t2 + y t1 + (x0 + k) t0 (and likewise for y), the
  // sums AffineFixed accumulates, exact in int64. (k t0 by _mm512_mul_epi32: |t0| < 2^31
  // for every map CheckFixed passes.)
  __m512i xs = _mm512_add_epi64(_mm512_set1_epi64(t[2] + y * t[1] + x0 * t[0]),
                                _mm512_mul_epi32(lanes, _mm512_set1_epi64(t[0])));
  __m512i ys = _mm512_add_epi64(_mm512_set1_epi64(t[5] + y * t[4] + x0 * t[3]),
                                _mm512_mul_epi32(lanes, _mm512_set1_epi64(t[3])));
  const __m512i step_x = _mm512_set1_epi64(8 * t[0]), step_y = _mm512_set1_epi64(8 * t[3]);
  const __m512i width = _mm512_set1_epi64(src.width), height = _mm512_set1_epi64(src.height);
  const __m512i zero = _mm512_setzero_si512(), strides = _mm512_set1_epi64(stride);
  const long long* row_table = reinterpret_cast<const long long*>(src.rows);
  for (int x = x0; x < x1; x += 8) {
    const __m512i xin = _mm512_srai_epi64(xs, 16), yin = _mm512_srai_epi64(ys, 16);
    __mmask8 inside = _mm512_cmpge_epi64_mask(xin, zero);
    inside = _mm512_mask_cmplt_epi64_mask(inside, xin, width);
    inside = _mm512_mask_cmpge_epi64_mask(inside, yin, zero);
    inside = _mm512_mask_cmplt_epi64_mask(inside, yin, height);
    __m256i pixels;
    if (stride != 0) {
      const __m512i at =
          _mm512_add_epi64(_mm512_mul_epi32(yin, strides), _mm512_slli_epi64(xin, 2));
      pixels = _mm512_mask_i64gather_epi32(fills, inside, at, src.rows[0], 1);
    } else {
      const __m512i row = _mm512_mask_i64gather_epi64(zero, inside, yin, row_table, 8);
      const __m512i at = _mm512_add_epi64(row, _mm512_slli_epi64(xin, 2));
      pixels = _mm512_mask_i64gather_epi32(fills, inside, at, nullptr, 1);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 * static_cast<size_t>(x)), pixels);
    xs = _mm512_add_epi64(xs, step_x);
    ys = _mm512_add_epi64(ys, step_y);
  }
}

// Lanes16: base + k step for lanes k = 0..15, in int32 (modulo 2^32).
__attribute__((target("avx512f"))) inline __m512i Lanes16(int64_t base, int64_t step) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_add_epi32(
      _mm512_set1_epi32(static_cast<int32_t>(base)),
      _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int32_t>(step))));
}

// AffineFixedSpan16Avx512 is AffineFixedSpanAvx512 with sixteen lanes of int32, for
// maps whose every position and source offset fits int32 (FitsInt32): the same 16.16
// sums, wrapping where an intermediate (k t0) would not fit but exact in the result,
// each inside pixel one lane of a 32-bit-index gather (vpgatherdd, 16 a step instead of
// vpgatherqd's 8). 1024² rotation by 30°, one core, alone: 400-410 -> 300-330 us.
//
// `ahead` (bytes; 0: none) prefetches three lanes' source pixels about eight rows
// below (this step's offsets moved by eight rows' step, rounded: a prefetch needs no
// exact address and never faults): a shallow map's gathers otherwise wait on memory
// one line at a time whenever other work has evicted the image. 1024² at 30° and -12°,
// one core, the caches flushed before each call: 950-1700 -> 370-430 us; warm 295-310
// -> 320-370 us. (Steep strips gain nothing from it: cold 910 -> 865, warm 560 -> 715.)
__attribute__((target("avx512f"))) inline void AffineFixedSpan16Avx512(
    const Rows& src, const int64_t t[6], int32_t stride, __m512i fills, intptr_t ahead, int y,
    int x0, int x1, uint8_t* out) {
  const uintptr_t prefetch_base = reinterpret_cast<uintptr_t>(src.rows[0]) + ahead;
  __m512i xs = Lanes16(t[2] + y * t[1] + x0 * t[0], t[0]);
  __m512i ys = Lanes16(t[5] + y * t[4] + x0 * t[3], t[3]);
  const __m512i step_x = _mm512_set1_epi32(static_cast<int32_t>(16 * t[0]));
  const __m512i step_y = _mm512_set1_epi32(static_cast<int32_t>(16 * t[3]));
  const __m512i width = _mm512_set1_epi32(src.width), height = _mm512_set1_epi32(src.height);
  const __m512i strides = _mm512_set1_epi32(stride);
  for (int x = x0; x < x1; x += 16) {
    const __m512i xin = _mm512_srai_epi32(xs, 16), yin = _mm512_srai_epi32(ys, 16);
    // 0 <= xin < width and 0 <= yin < height, as unsigned compares.
    const __mmask16 inside =
        _mm512_cmplt_epu32_mask(xin, width) & _mm512_cmplt_epu32_mask(yin, height);
    const __m512i at = _mm512_add_epi32(_mm512_mullo_epi32(yin, strides), _mm512_slli_epi32(xin, 2));
    if (ahead != 0) {
      const int32_t lanes[3] = {_mm512_cvtsi512_si32(at),
                                _mm_cvtsi128_si32(_mm512_extracti32x4_epi32(at, 2)),
                                _mm_extract_epi32(_mm512_extracti32x4_epi32(at, 3), 3)};
      for (const int32_t lane : lanes) {
        _mm_prefetch(reinterpret_cast<const char*>(prefetch_base + static_cast<intptr_t>(lane)),
                     _MM_HINT_T0);
      }
    }
    const __m512i pixels = _mm512_mask_i32gather_epi32(fills, inside, at, src.rows[0], 1);
    _mm512_storeu_si512(out + 4 * static_cast<size_t>(x), pixels);
    xs = _mm512_add_epi32(xs, step_x);
    ys = _mm512_add_epi32(ys, step_y);
  }
}

// FitsInt32: whether AffineFixedSpan16Avx512 may run: rows evenly spaced (`stride`), the
// last source byte within int32, and every output pixel's positions t2 + y t1 + x t0 and
// t5 + y t4 + x t3 within int32 (they are affine in x and y: the corners bound them).
bool FitsInt32(const int64_t t[6], int width, int height, int64_t stride, int src_height) {
  constexpr int64_t kMax = INT32_MAX, kMin = INT32_MIN;
  if (stride == 0 || stride * src_height > kMax) return false;
  for (const int64_t y : {int64_t{0}, int64_t{height - 1}}) {
    for (const int64_t x : {int64_t{0}, int64_t{width - 1}}) {
      const int64_t px = t[2] + y * t[1] + x * t[0], py = t[5] + y * t[4] + x * t[3];
      if (px < kMin || px > kMax || py < kMin || py > kMax) return false;
    }
  }
  return true;
}

// TiledSpans writes output rows [0, height), columns [0, full) (a multiple of the
// lanes: 16 with `int32` lanes, else 8) tile by tile, in the order that keeps
// consecutive gathers on the same source lines: where an output row walks across fewer
// source rows than an output column does (|t3| <= |t4|: a rotation within 45° of
// upright), tiles of 8 rows x 256 columns; else strips 16 columns wide and 256 rows
// tall, each source line reused by the rows below. Measured (1024² nearest rotation,
// one core, alone, 16 lanes): 0° 310 us (16 x 64 tiles 360), 30° 313 (375), 60° 520
// (600), 90° 640 (whole rows 2970, 16 x 64 tiles 1830).
template <bool int32>
__attribute__((target("avx512f"))) void TiledSpans(const Rows& src, const int64_t t[6],
                                                   int64_t stride, uint32_t fill_word, int full,
                                                   Rows* dst) {
  const bool steep = std::llabs(t[3]) > std::llabs(t[4]);
  const int tile_h = steep ? 256 : 8, tile_w = steep ? 16 : 256;
  // Eight rows' step in bytes (the span's prefetch), shallow maps only.
  const intptr_t ahead =
      steep ? 0 : static_cast<intptr_t>((8 * t[4]) >> 16) * stride + 4 * ((8 * t[1]) >> 16);
  const __m512i fills16 = _mm512_set1_epi32(static_cast<int>(fill_word));
  const __m256i fills8 = _mm256_set1_epi32(static_cast<int>(fill_word));
  for (int y0 = 0; y0 < dst->height; y0 += tile_h) {
    const int y1 = std::min(dst->height, y0 + tile_h);
    for (int x0 = 0; x0 < full; x0 += tile_w) {
      const int x1 = std::min(full, x0 + tile_w);
      for (int y = y0; y < y1; ++y) {
        if (int32) {
          AffineFixedSpan16Avx512(src, t, static_cast<int32_t>(stride), fills16, ahead, y, x0,
                                  x1, dst->rows[y]);
        } else {
          AffineFixedSpanAvx512(src, t, stride, fills8, y, x0, x1, dst->rows[y]);
        }
      }
    }
  }
}

// AffineFixedRowsAvx512 is AffineFixed<4> on row images of 4-byte pixels, 16 (or 8)
// output pixels a step, writing every pixel (those mapped outside get `fill`, so no
// fill pass first): the same positions, the same floor shift, each inside pixel one
// 32-bit gather lane. With `stride` (rows evenly spaced from rows[0], as a Pillow image
// within one arena block) the offset is yin * stride + 4 xin; else (stride 0) each
// lane's row pointer is gathered first (eight lanes of int64). The output goes tile by
// tile (TiledSpans): a rotation's output row crosses a source row every pixel or two,
// so a whole row at a time walks hundreds of source rows (pages), a tile's a few dozen.
// Measured (1024² RandomRotation(30), one core, CPU time, eager_bench): PIL's engine on
// the rows 2269 us (PIL 2186), this in rows ~1760, in tiles: docs/performance.md.
__attribute__((target("avx512f"))) void AffineFixedRowsAvx512(const Rows& src, const double a[6],
                                                               const uint8_t fill[4],
                                                               int64_t stride, Rows* dst) {
  int64_t t[6];
  FixedTerms(a, t);
  uint32_t fill_word;
  std::memcpy(&fill_word, fill, 4);
  // The columns the vector steps make; the rest per pixel below.
  int full;
  if (FitsInt32(t, dst->width, dst->height, stride, src.height)) {
    full = dst->width & ~15;
    TiledSpans<true>(src, t, stride, fill_word, full, dst);
  } else {
    full = dst->width & ~7;
    TiledSpans<false>(src, t, stride, fill_word, full, dst);
  }
  for (int y = 0; y < dst->height; ++y) {  // The last columns, per pixel.
    uint8_t* out = dst->rows[y];
    for (int x = full; x < dst->width; ++x) {
      const int64_t xin = (t[2] + y * t[1] + x * t[0]) >> 16;
      const int64_t yin = (t[5] + y * t[4] + x * t[3]) >> 16;
      const bool in = xin >= 0 && xin < src.width && yin >= 0 && yin < src.height;
      std::memcpy(out + 4 * static_cast<size_t>(x),
                  in ? src.rows[yin] + 4 * static_cast<size_t>(xin) : fill, 4);
    }
  }
}
#endif

// RowStride: the distance between consecutive rows where all are evenly spaced and every
// byte offset within the image fits the gathers' arithmetic, else 0.
int64_t RowStride(const RowImage& im) {
  if (im.height < 2) return 0;
  const int64_t stride = im.rows[1] - im.rows[0];
  if (stride < 4 * static_cast<int64_t>(im.width) || stride > (int64_t{1} << 30)) return 0;
  for (int y = 2; y < im.height; ++y) {
    if (im.rows[y] - im.rows[y - 1] != stride) return 0;
  }
  return stride;
}

// NearestRows is NearestPlane on row-pointer images: `dst` starts as `fill` (one byte:
// fill[0]), then the engines TransformAffine picks for kNearest copy what the map sends
// inside `src`, a whole pixel (4 bytes, or 1) at a time.
void NearestRows(const RowImage& src, const double a[6], const std::array<uint8_t, 3>& fill,
                 const RowImage& dst) {
  const Rows s{src.rows, src.width, src.height};
  Rows d{dst.rows, dst.width, dst.height};
  const uint8_t word[4] = {fill[0], fill[1], fill[2], 255};
  const int w = dst.width, h = dst.height;
  const bool scale = a[1] == 0 && a[3] == 0;
  const bool fixed = CheckFixed(a, 0, 0) && CheckFixed(a, w, h) && CheckFixed(a, 0, h) &&
                     CheckFixed(a, w, 0);
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (dst.bpp == 4 && !scale && fixed && internal::HasAvx512()) {
    AffineFixedRowsAvx512(s, a, word, RowStride(src), &d);
    return;
  }
#endif
  for (int y = 0; y < dst.height; ++y) {
    uint8_t* row = dst.rows[y];
    if (dst.bpp == 1) {
      std::memset(row, fill[0], dst.width);
    } else {
      for (int x = 0; x < dst.width; ++x) std::memcpy(row + 4 * static_cast<size_t>(x), word, 4);
    }
  }
  if (dst.bpp == 1) {
    scale ? ScaleAffine<1>(s, a, &d) : fixed ? AffineFixed<1>(s, a, &d) : AffineFloat<1>(s, a, &d);
  } else {
    scale ? ScaleAffine<4>(s, a, &d) : fixed ? AffineFixed<4>(s, a, &d) : AffineFloat<4>(s, a, &d);
  }
}

// AffineMatrix: F.affine's inverse map on a PIL image of width × height, about the centre
// (w * 0.5, h * 0.5) or `center` ([x, y], F.affine's center=):
// _get_inverse_affine_matrix(center, angle, translate, scale, shear), term by term.
void AffineMatrix(int width, int height, double angle, double translate_x, double translate_y,
                  double scale, double shear_x, double shear_y, double m[6],
                  const double* center) {
  const double cx = center ? center[0] : width * 0.5;
  const double cy = center ? center[1] : height * 0.5;
  const double rot = Radians(angle);
  const double sx = Radians(shear_x);
  const double sy = Radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  const double inv[6] = {d, -b, 0.0, -c, a, 0.0};
  for (int k = 0; k < 6; ++k) m[k] = inv[k] / scale;
  m[2] += m[0] * (-cx - translate_x) + m[1] * (-cy - translate_y);
  m[5] += m[3] * (-cx - translate_x) + m[4] * (-cy - translate_y);
  m[2] += cx;
  m[5] += cy;
}

// RotateTransposes says which transpose Image.rotate takes for `angle` (already mod 360)
// on a width × height image: 0 (none: an affine map), 90, 180 or 270; 360 stands for the
// plain copy of angle 0. With a centre PIL always maps (`if not (center or translate)`).
int RotateTransposes(double angle, int width, int height, bool expand,
                     const double* center = nullptr) {
  if (center) return 0;
  if (angle == 0) return 360;
  if (angle == 180) return 180;
  if ((angle == 90 || angle == 270) && (expand || width == height)) {
    return static_cast<int>(angle);
  }
  return 0;
}

// RotateMatrix: Image.rotate's inverse map (output to source) about the centre
// (w / 2, h / 2) or `center` ([x, y]), its entries rounded to 15 decimals as PIL does; with
// `expand` the output grows to the rotated corners' bounding box, re-centred as PIL does
// (by half the growth, whatever the centre). Writes the output's size.
void RotateMatrix(int w, int h, double angle, bool expand, double m[6], int* out_w,
                  int* out_h, const double* center = nullptr) {
  const double r = -Radians(angle);
  const double rounded[6] = {Round15(std::cos(r)), Round15(std::sin(r)),  0.0,
                             Round15(-std::sin(r)), Round15(std::cos(r)), 0.0};
  for (int k = 0; k < 6; ++k) m[k] = rounded[k];
  auto map = [m](double x, double y, double* ox, double* oy) {
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
  };
  const double cx = center ? center[0] : w / 2.0, cy = center ? center[1] : h / 2.0;
  map(-cx, -cy, &m[2], &m[5]);
  m[2] += cx;
  m[5] += cy;
  if (expand) {
    double xs[4], ys[4];
    const double cx4[4] = {0, static_cast<double>(w), static_cast<double>(w), 0};
    const double cy4[4] = {0, 0, static_cast<double>(h), static_cast<double>(h)};
    for (int k = 0; k < 4; ++k) map(cx4[k], cy4[k], &xs[k], &ys[k]);
    const int nw = static_cast<int>(std::ceil(*std::max_element(xs, xs + 4)) -
                                    std::floor(*std::min_element(xs, xs + 4)));
    const int nh = static_cast<int>(std::ceil(*std::max_element(ys, ys + 4)) -
                                    std::floor(*std::min_element(ys, ys + 4)));
    map(-(nw - w) / 2.0, -(nh - h) / 2.0, &m[2], &m[5]);
    w = nw;
    h = nh;
  }
  *out_w = w;
  *out_h = h;
}

}  // namespace

void Affine(const Image& src, double angle, double translate_x, double translate_y,
            double scale, double shear_x, double shear_y, Interpolation interpolation,
            const std::array<uint8_t, 3>& fill, Image* dst, const double* center) {
  double m[6];
  AffineMatrix(src.width, src.height, angle, translate_x, translate_y, scale, shear_x, shear_y,
               m, center);
  TransformAffine(src, m, src.width, src.height, interpolation, fill, dst);
}

void AffinePlane(const Image& src, double angle, double translate_x, double translate_y,
                 double scale, double shear_x, double shear_y, uint8_t fill, Image* dst,
                 const double* center) {
  double m[6];
  AffineMatrix(src.width, src.height, angle, translate_x, translate_y, scale, shear_x, shear_y,
               m, center);
  NearestPlane(src, m, src.width, src.height, fill, dst);
}

void AffineInverse(int width, int height, double angle, double translate_x,
                   double translate_y, double scale, double shear_x, double shear_y,
                   const double* center, double m[6]) {
  AffineMatrix(width, height, angle, translate_x, translate_y, scale, shear_x, shear_y, m,
               center);
}

void RotateInverse(int width, int height, double angle, bool expand, const double* center,
                   double m[6], int* out_width, int* out_height) {
  RotateMatrix(width, height, PyMod(angle, 360.0), expand, m, out_width, out_height, center);
}

void Rotate(const Image& src, double angle, Interpolation interpolation, bool expand,
            const std::array<uint8_t, 3>& fill, Image* dst, const double* center) {
  // Image.rotate(angle, resample, expand, center, translate=None, fillcolor).
  angle = PyMod(angle, 360.0);
  switch (RotateTransposes(angle, src.width, src.height, expand, center)) {
    case 360: *dst = src; return;
    case 180: Rotate180(src, dst); return;
    case 90: Rotate90(src, true, dst); return;
    case 270: Rotate90(src, false, dst); return;
    default: break;
  }
  double m[6];
  int w = 0, h = 0;
  RotateMatrix(src.width, src.height, angle, expand, m, &w, &h, center);
  TransformAffine(src, m, w, h, interpolation, fill, dst);
}

void RotatePlane(const Image& src, double angle, bool expand, uint8_t fill, Image* dst,
                 const double* center) {
  angle = PyMod(angle, 360.0);
  switch (RotateTransposes(angle, src.width, src.height, expand, center)) {
    case 360: *dst = src; return;
    case 180: Rotate180<1>(src, dst); return;
    case 90: Rotate90<1>(src, true, dst); return;
    case 270: Rotate90<1>(src, false, dst); return;
    default: break;
  }
  double m[6];
  int w = 0, h = 0;
  RotateMatrix(src.width, src.height, angle, expand, m, &w, &h, center);
  NearestPlane(src, m, w, h, fill, dst);
}

bool AffineNearestRows(const RowImage& src, double angle, double translate_x,
                       double translate_y, double scale, double shear_x, double shear_y,
                       const std::array<uint8_t, 3>& fill, const RowImage& dst,
                       const double* center) {
  if (src.bpp != dst.bpp || (src.bpp != 4 && src.bpp != 1) || dst.width != src.width ||
      dst.height != src.height) {
    return false;
  }
  double m[6];
  AffineMatrix(src.width, src.height, angle, translate_x, translate_y, scale, shear_x, shear_y,
               m, center);
  NearestRows(src, m, fill, dst);
  return true;
}

bool RotateNearestRows(const RowImage& src, double angle, bool expand,
                       const std::array<uint8_t, 3>& fill, const RowImage& dst,
                       const double* center) {
  angle = PyMod(angle, 360.0);
  if (src.bpp != dst.bpp || (src.bpp != 4 && src.bpp != 1) ||
      RotateTransposes(angle, src.width, src.height, expand, center) != 0) {
    return false;  // The transposes: Rotate's own paths.
  }
  double m[6];
  int w = 0, h = 0;
  RotateMatrix(src.width, src.height, angle, expand, m, &w, &h, center);
  if (w != dst.width || h != dst.height) return false;
  NearestRows(src, m, fill, dst);
  return true;
}

void RotatedSize(int width, int height, double angle, bool expand, int* out_width,
                 int* out_height, const double* center) {
  angle = PyMod(angle, 360.0);
  const int turn = RotateTransposes(angle, width, height, expand, center);
  if (turn == 90 || turn == 270) {
    *out_width = height;
    *out_height = width;
    return;
  }
  if (turn != 0) {
    *out_width = width;
    *out_height = height;
    return;
  }
  double m[6];
  RotateMatrix(width, height, angle, expand, m, out_width, out_height, center);
}

namespace {

// nearest_filter32: the pixel at (COORD(xin), COORD(yin)), or false outside the source.
bool NearestFilter(const Image& im, double xin, double yin, uint8_t* out) {
  const int x = Coord(xin), y = Coord(yin);
  if (x < 0 || x >= im.width || y < 0 || y >= im.height) return false;
  CopyPixel(im, x, y, out);
  return true;
}

// ImagingGenericTransform with perspective_transform: each output pixel's centre mapped
// through `a` (Geometry.c's expression, in its order), then the filter.
template <bool (*Filter)(const Image&, double, double, uint8_t*)>
void GenericPerspective(const Image& src, const double a[8], Image* dst) {
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    for (int x = 0; x < dst->width; ++x) {
      const double xin = x + 0.5;
      Filter(src, (a[0] * xin + a[1] * yin + a[2]) / (a[6] * xin + a[7] * yin + 1),
             (a[3] * xin + a[4] * yin + a[5]) / (a[6] * xin + a[7] * yin + 1), out + 3 * x);
    }
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// The vector perspective warps: GenericPerspective<BilinearFilter> with the affine
// kernels' bilinear steps (BilinearLanes4, BilinearAt8) at positions computed per lane
// as perspective_transform computes them: numerator and denominator in Geometry.c's
// order, a[1] * yin (and a[4], a[7]) once per row (the same product), then IEEE
// division, so every lane's position, and so its bytes, are the per-pixel path's
// (geometry_test compares them). Lanes whose windows are not inside take
// BilinearFilterAvx2 at the scalar position.

// PerspectivePixels runs the per-pixel filter on the pixels x + k < end of output row
// `out` (centre row yin) whose bit k in `done` is clear.
__attribute__((target("avx2"))) inline void PerspectivePixels(const Image& src,
                                                              const double a[8], int x, int end,
                                                              double yin, int done,
                                                              uint8_t* out) {
  for (int k = 0; x + k < end; ++k) {
    if (done & (1 << k)) continue;
    const double xin = x + k + 0.5;
    BilinearFilterAvx2(src, (a[0] * xin + a[1] * yin + a[2]) / (a[6] * xin + a[7] * yin + 1),
                       (a[3] * xin + a[4] * yin + a[5]) / (a[6] * xin + a[7] * yin + 1),
                       out + 3 * (x + k));
  }
}

// PerspectiveBilinearAvx2: four output pixels a step.
__attribute__((target("avx2"))) void PerspectiveBilinearAvx2(const Image& src, const double a[8],
                                                             Image* dst) {
  const __m256d a0 = _mm256_set1_pd(a[0]), a2 = _mm256_set1_pd(a[2]);
  const __m256d a3 = _mm256_set1_pd(a[3]), a5 = _mm256_set1_pd(a[5]);
  const __m256d a6 = _mm256_set1_pd(a[6]), one = _mm256_set1_pd(1.0);
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m256d a1y = _mm256_set1_pd(a[1] * yin), a4y = _mm256_set1_pd(a[4] * yin);
    const __m256d a7y = _mm256_set1_pd(a[7] * yin);
    int x = 0;
    for (; x + 4 <= dst->width; x += 4) {
      const __m256d xin = _mm256_add_pd(_mm256_set1_pd(x), _mm256_setr_pd(0.5, 1.5, 2.5, 3.5));
      const __m256d den = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(a6, xin), a7y), one);
      const __m256d xs =
          _mm256_div_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(a0, xin), a1y), a2), den);
      const __m256d ys =
          _mm256_div_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(a3, xin), a4y), a5), den);
      const int done = BilinearLanes4(src, LanesAt(src, xs, ys), out + 3 * x);
      if (done != 0xF) PerspectivePixels(src, a, x, x + 4, yin, done, out);
    }
    PerspectivePixels(src, a, x, dst->width, yin, 0, out);
  }
}

// PerspectiveBilinearAvx512: eight output pixels a step (BilinearAt8), each row's last
// width % 8 by the per-pixel filter. Measured (an eager RandomPerspective(p=1) of a
// 1024² photo, one core, CPU time, alternating): 7450-7970 us with the per-pixel
// GenericPerspective<BilinearFilter>, 2500 us with this (torchvision's ~14500).
FLOWLOADER_AFFINE_AVX512 void PerspectiveBilinearAvx512(const Image& src, const double a[8],
                                                        Image* dst) {
  const __m512d a0 = _mm512_set1_pd(a[0]), a2 = _mm512_set1_pd(a[2]);
  const __m512d a3 = _mm512_set1_pd(a[3]), a5 = _mm512_set1_pd(a[5]);
  const __m512d a6 = _mm512_set1_pd(a[6]), one = _mm512_set1_pd(1.0);
  const __m512d lanes = _mm512_setr_pd(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
  for (int y = 0; y < dst->height; ++y) {
    uint8_t* out = dst->Row(y);
    const double yin = y + 0.5;
    const __m512d a1y = _mm512_set1_pd(a[1] * yin), a4y = _mm512_set1_pd(a[4] * yin);
    const __m512d a7y = _mm512_set1_pd(a[7] * yin);
    int x = 0;
    for (; x + 8 <= dst->width; x += 8) {
      const __m512d xin = _mm512_add_pd(_mm512_set1_pd(x), lanes);
      const __m512d den = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(a6, xin), a7y), one);
      const __m512d xs =
          _mm512_div_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(a0, xin), a1y), a2), den);
      const __m512d ys =
          _mm512_div_pd(_mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(a3, xin), a4y), a5), den);
      __mmask8 outside, ok;
      BilinearAt8(src, xs, ys, out + 3 * x, &outside, &ok);
      if ((ok | outside) != 0xFF) PerspectivePixels(src, a, x, x + 8, yin, ok | outside, out);
    }
    PerspectivePixels(src, a, x, dst->width, yin, 0, out);
  }
}
#endif

}  // namespace

bool PerspectiveCoeffs(const double start[8], const double end[8], double coeffs[8]) {
  // _get_perspective_coeffs' system A c = b: two rows per point pair (end -> start).
  double m[8][9];
  for (int i = 0; i < 4; ++i) {
    const double ex = end[2 * i], ey = end[2 * i + 1];
    const double sx = start[2 * i], sy = start[2 * i + 1];
    const double r0[9] = {ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey, sx};
    const double r1[9] = {0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey, sy};
    std::copy(r0, r0 + 9, m[2 * i]);
    std::copy(r1, r1 + 9, m[2 * i + 1]);
  }
  // Gaussian elimination with partial pivoting, in double (torchvision solves the same
  // system in float32 by LAPACK's gels: the coefficients agree to float32's precision).
  for (int col = 0; col < 8; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 8; ++r) {
      if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
    }
    if (!(std::fabs(m[pivot][col]) > 1e-12)) return false;  // Not of full rank.
    if (pivot != col) std::swap(m[pivot], m[col]);
    for (int r = col + 1; r < 8; ++r) {
      const double f = m[r][col] / m[col][col];
      for (int k = col; k < 9; ++k) m[r][k] -= f * m[col][k];
    }
  }
  for (int r = 7; r >= 0; --r) {
    double v = m[r][8];
    for (int k = r + 1; k < 8; ++k) v -= m[r][k] * coeffs[k];
    coeffs[r] = v / m[r][r];
  }
  for (int k = 0; k < 8; ++k) {
    if (!std::isfinite(coeffs[k])) return false;
  }
  return true;
}

void Perspective(const Image& src, const double coeffs[8], Interpolation interpolation,
                 const std::array<uint8_t, 3>& fill, Image* dst) {
  // Image.transform(size, PERSPECTIVE, coeffs, resample, fillcolor=fill): a new image of
  // the fill colour, then every pixel whose centre maps inside the source.
  FillImage(src.width, src.height, fill, dst);
  switch (interpolation) {
    case Interpolation::kNearest:
      GenericPerspective<NearestFilter>(src, coeffs, dst);
      break;
    case Interpolation::kBilinear:
#if defined(FLOWLOADER_COLOUR_AVX2)
      // The vector kernels index with int32 offsets (as TransformAffine's).
      if (internal::HasAvx2() && src.pixels.size() < (size_t{1} << 30)) {
        if (internal::HasAvx512() && !affine_avx2_only.load(std::memory_order_relaxed)) {
          PerspectiveBilinearAvx512(src, coeffs, dst);
        } else {
          PerspectiveBilinearAvx2(src, coeffs, dst);
        }
        break;
      }
#endif
      GenericPerspective<BilinearFilter>(src, coeffs, dst);
      break;
    case Interpolation::kBicubic:
      GenericPerspective<BicubicFilter>(src, coeffs, dst);
      break;
  }
}

void SetAffineAvx2OnlyForTesting(bool avx2_only) { affine_avx2_only.store(avx2_only); }

void VerticalFlip(Image& img) {
  // Rows swapped through one thread-local row (memcpy: whole-row block moves).
  thread_local std::vector<uint8_t> tmp;
  const size_t stride = img.stride();
  tmp.resize(stride);
  for (int top = 0, bottom = img.height - 1; top < bottom; ++top, --bottom) {
    std::memcpy(tmp.data(), img.Row(top), stride);
    std::memcpy(img.Row(top), img.Row(bottom), stride);
    std::memcpy(img.Row(bottom), tmp.data(), stride);
  }
}

}  // namespace flowloader::augment::kernels
