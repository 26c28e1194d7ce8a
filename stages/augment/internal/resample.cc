// resample.cc: see resample.h for the algorithm and its deviations from Pillow.
//
// Thread-safety: all mutable state is in the thread_local Scratch below.
#include "stages/augment/internal/resample.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

// The SIMD kernels: this file compiles resample_kernels.h for SSE4.1, the baseline
// (x86-64-v2, .bazelrc); resample_avx2.cc and resample_avx512.cc compile it for the wider
// sets, which run only where the CPU has them.
#include "stages/augment/internal/resample_kernels.h"
#include "stages/core/cpu.h"

namespace flowloader::augment::internal {
namespace {

// Forced kernel set (SetResampleIsaForTesting), or -1 for the detected one.
std::atomic<int> forced_isa{-1};

// Pillow's bilinear_filter: a triangle of half-width 1.
double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

struct Scratch {
  AxisFilter fx, fy;
  FilterKey key_x, key_y;
  bool have_x = false;
  bool have_y = false;
  // Horizontal weights, each repeated 4 times so one 4-wide multiply covers R, G, B, and
  // scaled by 2^-kVerticalBits to undo the vertical pass's fixed point; grouped for
  // wx4_pixels pixels per register (LayoutHorizontal).
  std::vector<float> wx4;
  int wx4_pixels = 0;
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
  std::vector<uint8_t> stage;  // One uint8 output row, before StreamCopy.
  // BuildAxisFilter's weight pass (TapJob): weights by tap, then output; nonzero bits.
  std::vector<float> tap_weights;
  std::vector<uint32_t> tap_bits;
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// LayoutHorizontal broadcasts each weight to 4 lanes, scaled by `unscale`, for kernels
// holding m pixels per register that work on groups of 4m output pixels: in group g,
// register q (0-3) holds pixel 4mg + q + 4l in lanes 4l..4l+3 (l < m), its tap k's
// weights at w[((4g + q) * taps + k) * 4m]. With that pairing the 4x4 transpose within
// 128-bit lanes gives the group's reds, greens and blues in pixel order. Pixels past the
// last whole group are laid out as for m = 1: pixel x's tap k at w[(x * taps + k) * 4].
void LayoutHorizontal(const AxisFilter& f, int m, float unscale, std::vector<float>* w) {
  const int taps = f.taps;
  w->resize(f.weights.size() * 4);
  const int grouped = f.out_size / (4 * m) * (4 * m);
  float* dst = w->data();
  for (int g = 0; g < grouped / (4 * m); ++g) {
    for (int q = 0; q < 4; ++q) {
      for (int k = 0; k < taps; ++k) {
        for (int l = 0; l < m; ++l) {
          const int x = 4 * m * g + q + 4 * l;
          const float v = f.weights[static_cast<size_t>(x) * taps + k] * unscale;
          for (int c = 0; c < 4; ++c) *dst++ = v;
        }
      }
    }
  }
  for (size_t i = static_cast<size_t>(grouped) * taps; i < f.weights.size(); ++i) {
    for (int c = 0; c < 4; ++c) *dst++ = f.weights[i] * unscale;
  }
}

// StreamCopy copies `bytes` (a multiple of 16) to 16-byte aligned `dst` with
// non-temporal stores. The uint8 kernels write a row's 12- to 48-byte pieces to a staging
// row in L1 and this streams it out: uint8 rows start on 16 bytes only when n is a
// multiple of 16, and the pieces themselves are unaligned.
inline void StreamCopy(const uint8_t* src, uint8_t* dst, int bytes) {
  for (int i = 0; i < bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
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
  const bool stream = Streams(dst, dst + plane, dst + 2 * plane, n, 4);  // Every row then.
  for (int y = 0; y < n; ++y) {
    const uint8_t* s = src.Row(y0 + y) + 3 * static_cast<size_t>(x0);
    float* d0 = dst + static_cast<size_t>(y) * n;
    int x = 0;
    for (; x + 4 <= n && x < load_end; x += 4) {
      const __m128i v = _mm_shuffle_epi8(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * x)), planar);
      const __m128 r = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(v));
      const __m128 g = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(v, 4)));
      const __m128 b = _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(v, 8)));
      WritePlanes<Sse41>(_mm_add_ps(_mm_mul_ps(r, s0), o0), _mm_add_ps(_mm_mul_ps(g, s1), o1),
                         _mm_add_ps(_mm_mul_ps(b, s2), o2), x, n, flip, stream, d0,
                         d0 + plane, d0 + 2 * plane);
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

const Kernels& Sse41Kernels() { return kKernels<Sse41>; }

ResampleIsa ActiveResampleIsa() {
  const int forced = forced_isa.load(std::memory_order_relaxed);
  return forced < 0 ? DetectedResampleIsa() : static_cast<ResampleIsa>(forced);
}

const Kernels& ActiveKernels() {
  switch (ActiveResampleIsa()) {
    case ResampleIsa::kAvx512: return Avx512Kernels();
    case ResampleIsa::kAvx2: return Avx2Kernels();
    default: return Sse41Kernels();
  }
}

void QuantizeVerticalPairs(const AxisFilter& f, std::vector<int32_t>* out, int* n_pairs) {
  thread_local std::vector<int16_t> w16_storage;
  const int pairs = (f.taps + 1) / 2;
  *n_pairs = pairs;
  out->resize(static_cast<size_t>(f.out_size) * pairs);
  if (w16_storage.size() < static_cast<size_t>(f.taps) + 1) w16_storage.resize(f.taps + 1);
  int16_t* w16 = w16_storage.data();
  for (int y = 0; y < f.out_size; ++y) {
    const float* w = &f.weights[static_cast<size_t>(y) * f.taps];
    int sum = 0;
    int largest = 0;
    int best = -1;  // w16[largest] in a register (v2, perf samples: 140 -> 101).
    for (int k = 0; k < f.taps; ++k) {
      // std::lround for w >= 0 (exact in double), without its libm call per tap.
      const int v =
          static_cast<int16_t>(static_cast<double>(w[k]) * (1 << kVerticalBits) + 0.5);
      w16[k] = static_cast<int16_t>(v);
      sum += v;
      if (v > best) {  // The first largest, as before.
        best = v;
        largest = k;
      }
    }
    w16[largest] = static_cast<int16_t>(w16[largest] + ((1 << kVerticalBits) - sum));
    w16[f.taps] = 0;
    for (int p = 0; p < pairs; ++p) {
      const uint32_t lo = static_cast<uint16_t>(w16[2 * p]);
      const uint32_t hi = static_cast<uint16_t>(w16[2 * p + 1]);
      (*out)[static_cast<size_t>(y) * pairs + p] = static_cast<int32_t>(lo | (hi << 16));
    }
  }
}

// VerticalRow: see resample_kernels.h.
void VerticalRow(VerticalFn span, const uint8_t* base, size_t stride, int first, int taps,
                 const int32_t* pairs, int n_pairs, int n, const uint8_t** rows,
                 float* row) {
  const int last = first + taps - 1;
  for (int k = 0; k < 2 * n_pairs; ++k) {
    // An odd last tap pairs with a repeat of itself (weight 0), never a row past `last`.
    rows[k] = base + static_cast<size_t>(std::min(first + k, last)) * stride;
  }
  if (n >= 16) {
    span(rows, pairs, n_pairs, n, row);
    return;
  }
  // Narrower than one vector: scalar (a 16-byte load could run past the image's end).
  for (int j = 0; j < n; ++j) {
    int32_t acc = 0;
    for (int p = 0; p < n_pairs; ++p) {
      const int16_t w0 = static_cast<int16_t>(pairs[p] & 0xffff);
      const int16_t w1 = static_cast<int16_t>(static_cast<uint32_t>(pairs[p]) >> 16);
      acc += w0 * rows[2 * p][j] + w1 * rows[2 * p + 1][j];
    }
    row[j] = static_cast<float>(acc);
  }
}

namespace {

// BuildAxisFilterScalar is BuildAxisFilter one output and one tap at a time: the
// reference that the weight passes (tap_kernels.h) reproduce, and the builder for more
// than 9 taps (scale above 4).
void BuildAxisFilterScalar(double origin, double length, int out_size, int win_lo,
                           int win_hi, AxisFilter* filter) {
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

}  // namespace

void BuildAxisFilterScalarForTesting(double origin, double length, int out_size,
                                     int win_lo, int win_hi, AxisFilter* filter) {
  BuildAxisFilterScalar(origin, length, out_size, win_lo, win_hi, filter);
}

// The weight pass (TapJob) gives each output's normalized taps over its whole window;
// this keeps the nonzero ones and lays them out as BuildAxisFilterScalar does, with the
// same padding, shifts and nearest-pixel fallback. Per output, on v2-like random crops
// to 176 (3- to 9-tap windows), against the scalar loop's 12.3 ns: AVX-512 6.4 ns,
// AVX2 7.8 ns, SSE4.1 10.9 ns; resize_bench, train 4:2:0 planes, AVX-512: 100 -> 95 µs.
void BuildAxisFilter(double origin, double length, int out_size, int win_lo, int win_hi,
                     AxisFilter* filter) {
  const double scale = length / out_size;
  const double filterscale = std::max(scale, 1.0);
  const int max_taps = static_cast<int>(std::ceil(filterscale)) * 2 + 1;
  const TapFn pass = ActiveKernels().taps(max_taps);
  if (pass == nullptr) {
    BuildAxisFilterScalar(origin, length, out_size, win_lo, win_hi, filter);
    return;
  }
  Scratch& s = ThreadScratch();
  const int stride = (out_size + 7) / 8 * 8;
  s.tap_weights.resize(static_cast<size_t>(stride) * max_taps);
  s.raw_first.resize(stride);
  s.raw_count.resize(stride);
  s.tap_bits.resize(stride);
  float* const w = s.tap_weights.data();
  int* const first = s.raw_first.data();
  int* const begin = s.raw_count.data();
  pass(TapJob{origin, scale, filterscale, 1.0 / filterscale, out_size, win_lo, win_hi,
              stride, w, first, s.tap_bits.data()});

  int taps = 1;
  for (int i = 0; i < out_size; ++i) {
    uint32_t bits = s.tap_bits[i];
    if (bits == 0) {  // No weight: the nearest pixel, as BuildAxisFilterScalar.
      const double center = origin + (i + 0.5) * scale;
      first[i] = std::min(std::max(static_cast<int>(std::floor(center)), win_lo), win_hi - 1);
      for (int k = 0; k < max_taps; ++k) w[static_cast<size_t>(k) * stride + i] = k == 0 ? 1.0f : 0.0f;
      bits = 1;
    }
    begin[i] = __builtin_ctz(bits);
    first[i] += begin[i];
    taps = std::max(taps, 32 - __builtin_clz(bits) - begin[i]);
  }

  // One tap count for every output, as BuildAxisFilterScalar: taps past an output's last
  // nonzero one are zeros of its window (or past it: 0), shifted left at win_hi.
  filter->out_size = out_size;
  filter->taps = taps;
  filter->first.resize(out_size);
  filter->weights.resize(static_cast<size_t>(out_size) * taps);
  int lo = win_hi;
  int hi = win_lo;
  bool identity = taps == 1;
  const int first0 = std::min(first[0], win_hi - taps);
  for (int i = 0; i < out_size; ++i) {
    const int shift = std::max(0, first[i] + taps - win_hi);
    const int at = first[i] - shift;
    const int from = begin[i] - shift;
    float* dst = &filter->weights[static_cast<size_t>(i) * taps];
    const float* src = w + i;
    if (from == 0) {  // Nearly always: the window starts on a nonzero tap, unshifted.
      for (int k = 0; k < taps; ++k) dst[k] = src[static_cast<size_t>(k) * stride];
    } else {
      for (int k = 0; k < taps; ++k) {
        const int t = from + k;
        dst[k] = t >= 0 && t < max_taps ? src[static_cast<size_t>(t) * stride] : 0.0f;
      }
    }
    filter->first[i] = at;
    lo = std::min(lo, at);
    hi = std::max(hi, at + taps);
    identity = identity && dst[0] == 1.0f && at == first0 + i;
  }
  filter->lo = lo;
  filter->hi = hi;
  filter->identity = identity;
}

ResampleIsa DetectedResampleIsa() {
  static const ResampleIsa detected = [] {
    __builtin_cpu_init();
    // Skylake-SP and its successors up to Cooper Lake lower the core's clock while 512-bit
    // float instructions run, which would slow the decode sharing the core; later Intel
    // cores and AMD's do not. (A precaution: only an AMD Zen 5 was measured.)
    const bool downclocks = __builtin_cpu_is("skylake-avx512") ||
                            __builtin_cpu_is("cascadelake") ||
                            __builtin_cpu_is("cooperlake");
    if (CpuHas(CpuFeature::kAvx512F) && CpuHas(CpuFeature::kAvx512Bw) &&
        !downclocks) {
      return ResampleIsa::kAvx512;
    }
    if (CpuHas(CpuFeature::kAvx2)) return ResampleIsa::kAvx2;
    return ResampleIsa::kSse41;
  }();
  return detected;
}

bool ResampleIsaSupported(ResampleIsa isa) {
  switch (isa) {
    case ResampleIsa::kSse41: return true;
    case ResampleIsa::kAvx2: return CpuHas(CpuFeature::kAvx2);
    case ResampleIsa::kAvx512:
      return CpuHas(CpuFeature::kAvx512F) && CpuHas(CpuFeature::kAvx512Bw);
  }
  return false;
}

bool SetResampleIsaForTesting(ResampleIsa isa) {
  if (!ResampleIsaSupported(isa)) return false;
  forced_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

void ResetResampleIsaForTesting() { forced_isa.store(-1, std::memory_order_relaxed); }

void ResampleRgb(const ResampleSpec& spec, const OutputSpec& out) {
  Scratch& s = ThreadScratch();
  const int n_out = spec.out_size;
  const Kernels& kernels = ActiveKernels();

  const FilterKey key_x{spec.box.x, spec.box.w, n_out, spec.win_x0, spec.win_x1};
  if (!s.have_x || !(s.key_x == key_x) || s.wx4_pixels != kernels.pixels) {
    BuildAxisFilter(spec.box.x, spec.box.w, n_out, spec.win_x0, spec.win_x1, &s.fx);
    LayoutHorizontal(s.fx, kernels.pixels, 1.0f / (1 << kVerticalBits), &s.wx4);
    s.wx4_pixels = kernels.pixels;
    s.x_offset.resize(n_out);
    for (int x = 0; x < n_out; ++x) s.x_offset[x] = 3 * (s.fx.first[x] - s.fx.lo);
    s.key_x = key_x;
    s.have_x = true;
  }
  const FilterKey key_y{spec.box.y, spec.box.h, n_out, spec.win_y0, spec.win_y1};
  if (!s.have_y || !(s.key_y == key_y)) {
    BuildAxisFilter(spec.box.y, spec.box.h, n_out, spec.win_y0, spec.win_y1, &s.fy);
    QuantizeVerticalPairs(s.fy, &s.wy_pairs, &s.pairs_y);
    s.key_y = key_y;
    s.have_y = true;
  }
  const AxisFilter& fx = s.fx;
  const AxisFilter& fy = s.fy;

  if (fx.identity && fy.identity) {
    if (out.kind == OutputSpec::Kind::kFloatCHW) {
      CropToFloat(spec.src, fx.lo, fy.lo, n_out, spec.flip, out.scale, out.offset,
                  static_cast<float*>(out.dst));
      _mm_sfence();  // See below.
    } else {
      CropToUint8(spec.src, fx.lo, fy.lo, n_out, spec.flip, static_cast<uint8_t*>(out.dst));
    }
    return;
  }

  // The vertical pass covers only the columns the horizontal taps read.
  const int row_values = (fx.hi - fx.lo) * 3;
  // +16: room for the horizontal pass's 4-wide loads, which read one value past a
  // pixel's last tap. +16 more: the row starts on a 64-byte boundary, so the vertical
  // kernels' whole-register stores never split a cache line; where the heap's layout
  // put it elsewhere, eval (one cached filter) measured up to 25% slower (resize_bench,
  // uint8 HWC, AVX-512 77 -> 97 µs).
  if (s.row.size() < static_cast<size_t>(row_values) + 32) {
    s.row.resize(static_cast<size_t>(row_values) + 32, 0.0f);
  }
  float* const row = reinterpret_cast<float*>(
      (reinterpret_cast<uintptr_t>(s.row.data()) + 63) & ~static_cast<uintptr_t>(63));
  if (s.rows.size() < static_cast<size_t>(2 * s.pairs_y)) s.rows.resize(2 * s.pairs_y);
  const uint8_t* src_base = spec.src.data + static_cast<size_t>(fx.lo) * 3;
  const VerticalFn vertical = kernels.vertical(s.pairs_y);
  const HorizontalFns horizontal = kernels.horizontal(fx.taps);

  RowJob job;
  job.row = row;
  job.offset = s.x_offset.data();
  job.wx4 = s.wx4.data();
  job.taps = fx.taps;
  job.n = n_out;
  job.flip = spec.flip;
  job.scale = out.scale;
  job.offset_c = out.offset;
  const size_t plane = static_cast<size_t>(n_out) * n_out;
  // uint8 rows are staged and streamed out (StreamCopy) where they are all aligned.
  const bool stream_u8 = out.kind == OutputSpec::Kind::kUint8HWC && n_out % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(out.dst) % 16 == 0;
  if (stream_u8 && s.stage.size() < static_cast<size_t>(n_out) * 3) {
    s.stage.resize(static_cast<size_t>(n_out) * 3);
  }

  for (int y = 0; y < n_out; ++y) {
    VerticalRow(vertical, src_base, spec.src.stride, fy.first[y], fy.taps,
                &s.wy_pairs[static_cast<size_t>(y) * s.pairs_y], s.pairs_y, row_values,
                s.rows.data(), row);
    if (out.kind == OutputSpec::Kind::kFloatCHW) {
      float* d0 = static_cast<float*>(out.dst) + static_cast<size_t>(y) * n_out;
      horizontal.to_float(job, d0, d0 + plane, d0 + 2 * plane);
    } else {
      uint8_t* d = static_cast<uint8_t*>(out.dst) + static_cast<size_t>(y) * n_out * 3;
      if (stream_u8) {
        horizontal.to_uint8(job, s.stage.data());
        StreamCopy(s.stage.data(), d, n_out * 3);
      } else {
        horizontal.to_uint8(job, d);
      }
    }
  }
  // Non-temporal stores are weakly ordered: fence them before whatever tells another
  // thread the sample is written.
  _mm_sfence();
}

}  // namespace flowloader::augment::internal
