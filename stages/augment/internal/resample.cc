// resample.cc: see resample.h for the algorithm and its deviations from Pillow.
//
// Thread-safety: all mutable state is in the thread_local Scratch below.
#include "stages/augment/internal/resample.h"

#include <smmintrin.h>  // SSE4.1: the target is x86-64-v2 (.bazelrc).

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flowloader::augment::internal {
namespace {

// Pillow's bilinear_filter: a triangle of half-width 1.
double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// FilterKey identifies an AxisFilter, so a thread resizing the same geometry again (every
// eval image of one size, every train crop of one size) skips rebuilding it.
struct FilterKey {
  double origin = 0;
  double length = 0;
  int out_size = 0;
  int win_lo = 0;
  int win_hi = 0;

  bool operator==(const FilterKey& o) const {
    return origin == o.origin && length == o.length && out_size == o.out_size &&
           win_lo == o.win_lo && win_hi == o.win_hi;
  }
};

// Vertical weights are 16-bit fixed point with this many fraction bits: pmaddwd takes
// int16 operands, and 1.0 (16384) must fit.
constexpr int kVerticalBits = 14;

struct Scratch {
  AxisFilter fx, fy;
  FilterKey key_x, key_y;
  bool have_x = false;
  bool have_y = false;
  // Horizontal weights, each repeated 4 times so one SSE multiply covers R, G, B, and
  // scaled by 2^-kVerticalBits to undo the vertical pass's fixed point.
  std::vector<float> wx4;
  // Vertical weights as int16 pairs (w[2p], w[2p+1]) packed in one int32 for pmaddwd,
  // pairs_y per output row (an odd last tap is paired with a zero weight).
  std::vector<int32_t> wy_pairs;
  int pairs_y = 0;
  // One vertically filtered row, interleaved RGB, in units of 2^-kVerticalBits, plus
  // padding for the horizontal pass's 4-wide loads.
  std::vector<float> row;
  // Per horizontal output pixel: index of its first tap's R in `row`.
  std::vector<int> x_offset;
  // Source row pointers for the vertical pass.
  std::vector<const uint8_t*> rows;
  // Raw (untrimmed) taps while building a filter.
  std::vector<double> raw;
  std::vector<int> raw_first;
  std::vector<int> raw_count;
  std::vector<int16_t> w16;  // One row's int16 vertical weights while quantizing.
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// QuantizeVertical turns row y's float taps into int16 pairs whose sum is exactly
// 2^kVerticalBits, so a constant image stays exactly constant.
void QuantizeVertical(const AxisFilter& f, Scratch* s) {
  const int pairs = (f.taps + 1) / 2;
  s->pairs_y = pairs;
  s->wy_pairs.resize(static_cast<size_t>(f.out_size) * pairs);
  if (s->w16.size() < static_cast<size_t>(f.taps) + 1) s->w16.resize(f.taps + 1);
  int16_t* w16 = s->w16.data();
  for (int y = 0; y < f.out_size; ++y) {
    const float* w = &f.weights[static_cast<size_t>(y) * f.taps];
    int sum = 0;
    int largest = 0;
    for (int k = 0; k < f.taps; ++k) {
      w16[k] = static_cast<int16_t>(std::lround(w[k] * (1 << kVerticalBits)));
      sum += w16[k];
      if (w16[k] > w16[largest]) largest = k;
    }
    w16[largest] = static_cast<int16_t>(w16[largest] + ((1 << kVerticalBits) - sum));
    w16[f.taps] = 0;
    for (int p = 0; p < pairs; ++p) {
      const uint32_t lo = static_cast<uint16_t>(w16[2 * p]);
      const uint32_t hi = static_cast<uint16_t>(w16[2 * p + 1]);
      s->wy_pairs[static_cast<size_t>(y) * pairs + p] = static_cast<int32_t>(lo | (hi << 16));
    }
  }
}

// VerticalSpan writes row[j] = sum_k w[k] * rows[k][j] for j in [0, n) with n a
// multiple of 16, in units of 2^-kVerticalBits. Two source rows per pmaddwd: their
// bytes are interleaved, widened to int16 and multiplied by the (w[2p], w[2p+1]) pair,
// summing into int32. kPairs > 0 fixes the pair count so the weights stay in registers.
template <int kPairs>
void VerticalSpan(const uint8_t* const* rows, const int32_t* pairs, int n_pairs, int n,
                  float* row) {
  const int np = kPairs > 0 ? kPairs : n_pairs;
  __m128i w[kPairs > 0 ? kPairs : 1];
  if (kPairs > 0) {
    for (int p = 0; p < np; ++p) w[p] = _mm_set1_epi32(pairs[p]);
  }
  const __m128i zero = _mm_setzero_si128();
  for (int j = 0; j < n; j += 16) {
    __m128i acc0 = zero, acc1 = zero, acc2 = zero, acc3 = zero;
    for (int p = 0; p < np; ++p) {
      const __m128i wp = kPairs > 0 ? w[p] : _mm_set1_epi32(pairs[p]);
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * p] + j));
      const __m128i b =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * p + 1] + j));
      const __m128i ab_lo = _mm_unpacklo_epi8(a, b);
      const __m128i ab_hi = _mm_unpackhi_epi8(a, b);
      acc0 = _mm_add_epi32(acc0, _mm_madd_epi16(_mm_unpacklo_epi8(ab_lo, zero), wp));
      acc1 = _mm_add_epi32(acc1, _mm_madd_epi16(_mm_unpackhi_epi8(ab_lo, zero), wp));
      acc2 = _mm_add_epi32(acc2, _mm_madd_epi16(_mm_unpacklo_epi8(ab_hi, zero), wp));
      acc3 = _mm_add_epi32(acc3, _mm_madd_epi16(_mm_unpackhi_epi8(ab_hi, zero), wp));
    }
    _mm_storeu_ps(row + j, _mm_cvtepi32_ps(acc0));
    _mm_storeu_ps(row + j + 4, _mm_cvtepi32_ps(acc1));
    _mm_storeu_ps(row + j + 8, _mm_cvtepi32_ps(acc2));
    _mm_storeu_ps(row + j + 12, _mm_cvtepi32_ps(acc3));
  }
}

using VerticalFn = void (*)(const uint8_t* const*, const int32_t*, int, int, float*);

VerticalFn PickVertical(int pairs) {
  switch (pairs) {
    case 1: return VerticalSpan<1>;
    case 2: return VerticalSpan<2>;
    case 3: return VerticalSpan<3>;
    case 4: return VerticalSpan<4>;
    default: return VerticalSpan<0>;
  }
}

// VerticalRow filters output row `first`'s taps over n values into `row`. `rows` is
// scratch for 2 * n_pairs row pointers.
void VerticalRow(VerticalFn span, const uint8_t* base, size_t stride, int first, int taps,
                 const int32_t* pairs, int n_pairs, int n, const uint8_t** rows,
                 float* row) {
  const int last = first + taps - 1;
  for (int k = 0; k < 2 * n_pairs; ++k) {
    // An odd last tap pairs with a repeat of itself (weight 0), never a row past `last`.
    rows[k] = base + static_cast<size_t>(std::min(first + k, last)) * stride;
  }
  const int n16 = n & ~15;
  span(rows, pairs, n_pairs, n16, row);
  // The tail stays scalar: a 16-byte load there could run past the image's last row.
  for (int j = n16; j < n; ++j) {
    int32_t acc = 0;
    for (int p = 0; p < n_pairs; ++p) {
      const int16_t w0 = static_cast<int16_t>(pairs[p] & 0xffff);
      const int16_t w1 = static_cast<int16_t>(static_cast<uint32_t>(pairs[p]) >> 16);
      acc += w0 * rows[2 * p][j] + w1 * rows[2 * p + 1][j];
    }
    row[j] = static_cast<float>(acc);
  }
}

// Round half up, as Pillow's fixed point does ((v * 2^22 + 2^21) >> 22). Filter values
// stay within [0, 255] (non-negative weights summing to 1), so no clamp is needed.
inline __m128 RoundHalfUp(__m128 v) { return _mm_floor_ps(_mm_add_ps(v, _mm_set1_ps(0.5f))); }

// Pixel is one output pixel of the horizontal pass: R, G, B in lanes 0-2 and a
// don't-care lane 3 (one 4-wide multiply-add per tap reads the pixel's 3 values plus
// the next pixel's R).
template <int kTaps>
inline __m128 Pixel(const float* p, const float* w, int taps) {
  const int t = kTaps > 0 ? kTaps : taps;
  __m128 acc = _mm_mul_ps(_mm_loadu_ps(p), _mm_loadu_ps(w));
  for (int k = 1; k < t; ++k) {
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_loadu_ps(p + 3 * k), _mm_loadu_ps(w + 4 * k)));
  }
  return acc;
}

// RowJob is what the horizontal pass needs for one output row.
struct RowJob {
  const float* row;     // Vertical pass output.
  const int* offset;    // Per output pixel: index of its first tap's R in `row`.
  const float* wx4;     // Broadcast horizontal weights.
  int taps;
  int n;                // Output width.
  bool flip;
  const float* scale;   // kFloatCHW normalization.
  const float* offset_c;
};

// HorizontalFloat writes one output row as 3 normalized float plane rows. Four pixels
// at a time are transposed in registers into 4 reds, 4 greens, 4 blues; a flip reverses
// the lanes and the group's position. The job's fields are copied to locals: the
// stores through float pointers would otherwise make the compiler reload them.
template <int kTaps>
void HorizontalFloat(const RowJob& j, float* d0, float* d1, float* d2) {
  const __m128 s0 = _mm_set1_ps(j.scale[0]), s1 = _mm_set1_ps(j.scale[1]),
               s2 = _mm_set1_ps(j.scale[2]);
  const __m128 o0 = _mm_set1_ps(j.offset_c[0]), o1 = _mm_set1_ps(j.offset_c[1]),
               o2 = _mm_set1_ps(j.offset_c[2]);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const float* w = j.wx4;
  const int w_step = 4 * taps;
  int x = 0;
  for (; x + 4 <= n; x += 4) {
    __m128 p0 = Pixel<kTaps>(row + offset[x], w, taps);
    __m128 p1 = Pixel<kTaps>(row + offset[x + 1], w + w_step, taps);
    __m128 p2 = Pixel<kTaps>(row + offset[x + 2], w + 2 * w_step, taps);
    __m128 p3 = Pixel<kTaps>(row + offset[x + 3], w + 3 * w_step, taps);
    w += 4 * w_step;
    _MM_TRANSPOSE4_PS(p0, p1, p2, p3);  // p0 = 4 reds, p1 = greens, p2 = blues.
    __m128 r = _mm_add_ps(_mm_mul_ps(RoundHalfUp(p0), s0), o0);
    __m128 g = _mm_add_ps(_mm_mul_ps(RoundHalfUp(p1), s1), o1);
    __m128 b = _mm_add_ps(_mm_mul_ps(RoundHalfUp(p2), s2), o2);
    int xo = x;
    if (flip) {
      r = _mm_shuffle_ps(r, r, _MM_SHUFFLE(0, 1, 2, 3));
      g = _mm_shuffle_ps(g, g, _MM_SHUFFLE(0, 1, 2, 3));
      b = _mm_shuffle_ps(b, b, _MM_SHUFFLE(0, 1, 2, 3));
      xo = n - 4 - x;
    }
    _mm_storeu_ps(d0 + xo, r);
    _mm_storeu_ps(d1 + xo, g);
    _mm_storeu_ps(d2 + xo, b);
  }
  for (; x < n; ++x, w += w_step) {
    alignas(16) float v[4];
    _mm_store_ps(v, RoundHalfUp(Pixel<kTaps>(row + offset[x], w, taps)));
    const int xo = flip ? n - 1 - x : x;
    d0[xo] = v[0] * j.scale[0] + j.offset_c[0];
    d1[xo] = v[1] * j.scale[1] + j.offset_c[1];
    d2[xo] = v[2] * j.scale[2] + j.offset_c[2];
  }
}

// HorizontalUint8 writes one output row as packed RGB bytes, four pixels per store.
template <int kTaps>
void HorizontalUint8(const RowJob& j, uint8_t* d) {
  // RGBx RGBx RGBx RGBx -> RGBRGBRGBRGB, in order or (flip) with the pixels reversed.
  const __m128i keep = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m128i keep_reversed =
      _mm_setr_epi8(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const __m128i squeeze = flip ? keep_reversed : keep;
  const float* w = j.wx4;
  const int w_step = 4 * taps;
  int x = 0;
  for (; x + 4 <= n; x += 4) {
    const __m128i q0 =
        _mm_cvttps_epi32(RoundHalfUp(Pixel<kTaps>(row + offset[x], w, taps)));
    const __m128i q1 =
        _mm_cvttps_epi32(RoundHalfUp(Pixel<kTaps>(row + offset[x + 1], w + w_step, taps)));
    const __m128i q2 = _mm_cvttps_epi32(
        RoundHalfUp(Pixel<kTaps>(row + offset[x + 2], w + 2 * w_step, taps)));
    const __m128i q3 = _mm_cvttps_epi32(
        RoundHalfUp(Pixel<kTaps>(row + offset[x + 3], w + 3 * w_step, taps)));
    w += 4 * w_step;
    const __m128i bytes =
        _mm_packus_epi16(_mm_packs_epi32(q0, q1), _mm_packs_epi32(q2, q3));
    const __m128i rgb = _mm_shuffle_epi8(bytes, squeeze);
    uint8_t* out = d + 3 * (flip ? n - 4 - x : x);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
    const uint32_t tail = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(rgb, 8)));
    std::memcpy(out + 8, &tail, 4);
  }
  for (; x < n; ++x, w += w_step) {
    alignas(16) float v[4];
    _mm_store_ps(v, RoundHalfUp(Pixel<kTaps>(row + offset[x], w, taps)));
    uint8_t* out = d + 3 * (flip ? n - 1 - x : x);
    for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>(std::min(255.0f, v[c]));
  }
}

struct HorizontalFns {
  void (*to_float)(const RowJob&, float*, float*, float*);
  void (*to_uint8)(const RowJob&, uint8_t*);
};

template <int kTaps>
constexpr HorizontalFns kHorizontal = {HorizontalFloat<kTaps>, HorizontalUint8<kTaps>};

HorizontalFns PickHorizontal(int taps) {
  switch (taps) {
    case 1: return kHorizontal<1>;
    case 2: return kHorizontal<2>;
    case 3: return kHorizontal<3>;
    case 4: return kHorizontal<4>;
    case 5: return kHorizontal<5>;
    case 6: return kHorizontal<6>;
    default: return kHorizontal<0>;
  }
}

// CropToFloat is the whole resize when both axes are the identity (scale 1 on an aligned
// box: a train crop of exactly the output size, or an eval image whose shorter side is
// already resize_size): output (x, y) is source (x0 + x, y0 + y), normalized straight
// from the source bytes with no filter pass.
void CropToFloat(const ImageView& src, int x0, int y0, int n, bool flip,
                 const float* scale, const float* offset, float* dst) {
  // RGBRGBRGBRGB -> RRRR GGGG BBBB.
  const __m128i planar = _mm_setr_epi8(0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, -1, -1, -1, -1);
  const __m128 s0 = _mm_set1_ps(scale[0]), s1 = _mm_set1_ps(scale[1]), s2 = _mm_set1_ps(scale[2]);
  const __m128 o0 = _mm_set1_ps(offset[0]), o1 = _mm_set1_ps(offset[1]),
               o2 = _mm_set1_ps(offset[2]);
  const size_t plane = static_cast<size_t>(n) * n;
  // A 16-byte load at pixel x reads bytes up to 3x + 15: for x < load_end it stays in
  // the source row (the image's last row ends the buffer).
  const int load_end = src.width - x0 - 5;
  for (int y = 0; y < n; ++y) {
    const uint8_t* s = src.Row(y0 + y) + 3 * static_cast<size_t>(x0);
    float* d0 = dst + static_cast<size_t>(y) * n;
    int x = 0;
    for (; x + 4 <= n && x < load_end; x += 4) {
      const __m128i v = _mm_shuffle_epi8(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * x)), planar);
      __m128 r = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(v));
      __m128 g = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(v, 4)));
      __m128 b = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(v, 8)));
      r = _mm_add_ps(_mm_mul_ps(r, s0), o0);
      g = _mm_add_ps(_mm_mul_ps(g, s1), o1);
      b = _mm_add_ps(_mm_mul_ps(b, s2), o2);
      int xo = x;
      if (flip) {
        r = _mm_shuffle_ps(r, r, _MM_SHUFFLE(0, 1, 2, 3));
        g = _mm_shuffle_ps(g, g, _MM_SHUFFLE(0, 1, 2, 3));
        b = _mm_shuffle_ps(b, b, _MM_SHUFFLE(0, 1, 2, 3));
        xo = n - 4 - x;
      }
      _mm_storeu_ps(d0 + xo, r);
      _mm_storeu_ps(d0 + plane + xo, g);
      _mm_storeu_ps(d0 + 2 * plane + xo, b);
    }
    for (; x < n; ++x) {
      const int xo = flip ? n - 1 - x : x;
      for (int c = 0; c < 3; ++c) {
        d0[c * plane + xo] = static_cast<float>(s[3 * x + c]) * scale[c] + offset[c];
      }
    }
  }
}

// CropToUint8 is CropToFloat for the uint8 layout: a row copy, or a pixel-reversing one.
void CropToUint8(const ImageView& src, int x0, int y0, int n, bool flip, uint8_t* dst) {
  const __m128i reverse = _mm_setr_epi8(9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, -1, -1, -1, -1);
  const int load_end = src.width - x0 - 5;  // As in CropToFloat.
  for (int y = 0; y < n; ++y) {
    const uint8_t* s = src.Row(y0 + y) + 3 * static_cast<size_t>(x0);
    uint8_t* d = dst + static_cast<size_t>(y) * n * 3;
    if (!flip) {
      std::memcpy(d, s, 3 * static_cast<size_t>(n));
      continue;
    }
    int x = 0;
    for (; x + 4 <= n && x < load_end; x += 4) {
      const __m128i v = _mm_shuffle_epi8(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * x)), reverse);
      uint8_t* out = d + 3 * (n - 4 - x);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out), v);
      const uint32_t tail = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(v, 8)));
      std::memcpy(out + 8, &tail, 4);
    }
    for (; x < n; ++x) std::memcpy(d + 3 * (n - 1 - x), s + 3 * x, 3);
  }
}

}  // namespace

void BuildAxisFilter(double origin, double length, int out_size, int win_lo, int win_hi,
                     AxisFilter* filter) {
  Scratch& s = ThreadScratch();
  const double scale = length / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // Bilinear support (1) times the filter scale.
  const double inv_filterscale = 1.0 / filterscale;
  const int max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;  // Pillow's ksize.

  s.raw.resize(static_cast<size_t>(out_size) * max_taps);
  s.raw_first.resize(out_size);
  s.raw_count.resize(out_size);
  int taps = 1;
  for (int i = 0; i < out_size; ++i) {
    const double center = origin + (i + 0.5) * scale;
    // Pillow: xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5),
    // clamped to the image; floor instead of (int) because origin may put us below 0.
    int xmin = static_cast<int>(std::floor(center - support + 0.5));
    int xmax = static_cast<int>(std::floor(center + support + 0.5));
    xmin = std::max(xmin, win_lo);
    xmax = std::min(xmax, win_hi);
    double* w = &s.raw[static_cast<size_t>(i) * max_taps];
    double sum = 0;
    int count = std::min(std::max(xmax - xmin, 0), max_taps);
    for (int k = 0; k < count; ++k) {
      w[k] = Triangle((xmin + k - center + 0.5) * inv_filterscale);
      sum += w[k];
    }
    // Drop the zero-weight taps Pillow keeps at the window's ends: they cost a full
    // multiply-add per pixel and change nothing.
    int begin = 0;
    while (begin < count && w[begin] == 0.0) ++begin;
    while (count > begin && w[count - 1] == 0.0) --count;
    if (sum == 0.0 || begin == count) {
      // Only reachable for a box outside the window; use the nearest pixel.
      xmin = std::min(std::max(static_cast<int>(std::floor(center)), win_lo), win_hi - 1);
      w[0] = 1.0;
      sum = 1.0;
      begin = 0;
      count = 1;
    }
    for (int k = begin; k < count; ++k) w[k - begin] = w[k] / sum;
    s.raw_first[i] = xmin + begin;
    s.raw_count[i] = count - begin;
    taps = std::max(taps, count - begin);
  }

  // Lay out with one tap count for every output: pad at the end, or shift the window left
  // where padding would read past win_hi (taps <= win_hi - win_lo always holds).
  filter->out_size = out_size;
  filter->taps = taps;
  filter->first.resize(out_size);
  filter->weights.assign(static_cast<size_t>(out_size) * taps, 0.0f);
  filter->lo = win_hi;
  filter->hi = win_lo;
  bool identity = taps == 1;
  for (int i = 0; i < out_size; ++i) {
    int first = s.raw_first[i];
    const int shift = std::max(0, first + taps - win_hi);
    first -= shift;
    const double* w = &s.raw[static_cast<size_t>(i) * max_taps];
    float* dst = &filter->weights[static_cast<size_t>(i) * taps + shift];
    for (int k = 0; k < s.raw_count[i]; ++k) dst[k] = static_cast<float>(w[k]);
    filter->first[i] = first;
    filter->lo = std::min(filter->lo, first);
    filter->hi = std::max(filter->hi, first + taps);
    identity = identity && filter->weights[i] == 1.0f && first == filter->first[0] + i;
  }
  filter->identity = identity;
}

void ResampleRgb(const ResampleSpec& spec, const OutputSpec& out) {
  Scratch& s = ThreadScratch();
  const int n_out = spec.out_size;

  const FilterKey key_x{spec.box.x, spec.box.w, n_out, spec.win_x0, spec.win_x1};
  if (!s.have_x || !(s.key_x == key_x)) {
    BuildAxisFilter(spec.box.x, spec.box.w, n_out, spec.win_x0, spec.win_x1, &s.fx);
    s.wx4.resize(s.fx.weights.size() * 4);
    const float unscale = 1.0f / (1 << kVerticalBits);
    for (size_t i = 0; i < s.fx.weights.size(); ++i) {
      for (int c = 0; c < 4; ++c) s.wx4[i * 4 + c] = s.fx.weights[i] * unscale;
    }
    s.x_offset.resize(n_out);
    for (int x = 0; x < n_out; ++x) s.x_offset[x] = 3 * (s.fx.first[x] - s.fx.lo);
    s.key_x = key_x;
    s.have_x = true;
  }
  const FilterKey key_y{spec.box.y, spec.box.h, n_out, spec.win_y0, spec.win_y1};
  if (!s.have_y || !(s.key_y == key_y)) {
    BuildAxisFilter(spec.box.y, spec.box.h, n_out, spec.win_y0, spec.win_y1, &s.fy);
    QuantizeVertical(s.fy, &s);
    s.key_y = key_y;
    s.have_y = true;
  }
  const AxisFilter& fx = s.fx;
  const AxisFilter& fy = s.fy;

  if (fx.identity && fy.identity) {
    if (out.kind == OutputSpec::Kind::kFloatCHW) {
      CropToFloat(spec.src, fx.lo, fy.lo, n_out, spec.flip, out.scale, out.offset,
                  static_cast<float*>(out.dst));
    } else {
      CropToUint8(spec.src, fx.lo, fy.lo, n_out, spec.flip, static_cast<uint8_t*>(out.dst));
    }
    return;
  }

  // The vertical pass covers only the columns the horizontal taps read.
  const int row_values = (fx.hi - fx.lo) * 3;
  // +16: room for the 16-wide vertical store and the horizontal pass's 4-wide loads.
  if (s.row.size() < static_cast<size_t>(row_values) + 16) {
    s.row.resize(static_cast<size_t>(row_values) + 16, 0.0f);
  }
  if (s.rows.size() < static_cast<size_t>(2 * s.pairs_y)) s.rows.resize(2 * s.pairs_y);
  const uint8_t* src_base = spec.src.data + static_cast<size_t>(fx.lo) * 3;
  const VerticalFn vertical = PickVertical(s.pairs_y);
  const HorizontalFns horizontal = PickHorizontal(fx.taps);

  RowJob job;
  job.row = s.row.data();
  job.offset = s.x_offset.data();
  job.wx4 = s.wx4.data();
  job.taps = fx.taps;
  job.n = n_out;
  job.flip = spec.flip;
  job.scale = out.scale;
  job.offset_c = out.offset;
  const size_t plane = static_cast<size_t>(n_out) * n_out;

  for (int y = 0; y < n_out; ++y) {
    VerticalRow(vertical, src_base, spec.src.stride, fy.first[y], fy.taps,
                &s.wy_pairs[static_cast<size_t>(y) * s.pairs_y], s.pairs_y, row_values,
                s.rows.data(), s.row.data());
    if (out.kind == OutputSpec::Kind::kFloatCHW) {
      float* d0 = static_cast<float*>(out.dst) + static_cast<size_t>(y) * n_out;
      horizontal.to_float(job, d0, d0 + plane, d0 + 2 * plane);
    } else {
      horizontal.to_uint8(job, static_cast<uint8_t*>(out.dst) + static_cast<size_t>(y) * n_out * 3);
    }
  }
}

}  // namespace flowloader::augment::internal
