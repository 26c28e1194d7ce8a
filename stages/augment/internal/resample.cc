// resample.cc: see resample.h for the algorithm and its deviations from Pillow.
//
// Thread-safety: all mutable state is in the thread_local Scratch below.
#include "stages/augment/internal/resample.h"

// The baseline is SSE4.1 (x86-64-v2, .bazelrc); the AVX2 and AVX-512 kernels are compiled
// with per-function target attributes and run only where the CPU has them.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

// FLOWLOADER_AVX2 and FLOWLOADER_AVX512 compile one function for that instruction set.
// Neither enables FMA: a fused multiply-add rounds once where the SSE4.1 kernels round
// twice, and every kernel set must give the same bits.
#define FLOWLOADER_AVX2 __attribute__((target("avx2")))
#define FLOWLOADER_AVX512 __attribute__((target("avx2,avx512f,avx512bw")))

namespace flowloader::augment::internal {
namespace {

// Forced kernel set (SetResampleIsaForTesting), or -1 for the detected one.
std::atomic<int> forced_isa{-1};

ResampleIsa ActiveIsa() {
  const int forced = forced_isa.load(std::memory_order_relaxed);
  return forced < 0 ? DetectedResampleIsa() : static_cast<ResampleIsa>(forced);
}

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
  std::vector<int16_t> w16;  // One row's int16 vertical weights while quantizing.
  std::vector<uint8_t> stage;  // One uint8 output row, before StreamCopy.
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
      // std::lround for w >= 0 (exact in double), without its libm call per tap.
      w16[k] = static_cast<int16_t>(static_cast<double>(w[k]) * (1 << kVerticalBits) + 0.5);
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

using VerticalFn = void (*)(const uint8_t* const*, const int32_t*, int, int, float*);

// RowJob is what the horizontal pass needs for one output row.
struct RowJob {
  const float* row;     // Vertical pass output.
  const int* offset;    // Per output pixel: index of its first tap's R in `row`.
  const float* wx4;     // Broadcast horizontal weights (LayoutHorizontal).
  int taps;
  int n;                // Output width.
  bool flip;
  const float* scale;   // kFloatCHW normalization.
  const float* offset_c;
};

struct HorizontalFns {
  void (*to_float)(const RowJob&, float*, float*, float*);
  void (*to_uint8)(const RowJob&, uint8_t*);
};

// Kernels is one instruction set's passes. `pixels` is how many output pixels one
// register of the horizontal pass holds (each as 4 lanes: R, G, B, don't-care).
struct Kernels {
  int pixels;
  VerticalFn (*vertical)(int pairs);
  HorizontalFns (*horizontal)(int taps);
};

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

// Streams says whether a float kernel storing g floats at a time writes its three plane
// rows with non-temporal stores: where the rows start on a g-float boundary and n is a
// multiple of g (so every store, flipped or not, is aligned). A float output is 600 KB
// per 224² sample and a batch of them is far bigger than the caches; streaming skips
// reading each line in before overwriting it (resize_bench, 64 output slots).
inline bool Streams(const float* d0, const float* d1, const float* d2, int n, int g) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(d0) | reinterpret_cast<uintptr_t>(d1) |
                         reinterpret_cast<uintptr_t>(d2);
  return n % g == 0 && bits % (4 * static_cast<uintptr_t>(g)) == 0;
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

// Round half up, as Pillow's fixed point does ((v * 2^22 + 2^21) >> 22). Filter values
// stay within [0, 255] (non-negative weights summing to 1), so no clamp is needed.
inline __m128 RoundHalfUp(__m128 v) { return _mm_floor_ps(_mm_add_ps(v, _mm_set1_ps(0.5f))); }

namespace sse41 {

// VerticalSpan writes row[j] = sum_k w[k] * rows[k][j] for j in [0, n), n >= 16, in
// units of 2^-kVerticalBits. Two source rows per pmaddwd: their bytes are interleaved,
// widened to int16 and multiplied by the (w[2p], w[2p+1]) pair, summing into int32. A
// last partial block is redone as the 16 values ending at n (exact integer sums: the
// overlap rewrites the same values). kPairs > 0 fixes the pair count so the weights stay
// in registers.
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
    j = std::min(j, n - 16);
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

VerticalFn VerticalFor(int pairs) {
  switch (pairs) {
    case 1: return VerticalSpan<1>;
    case 2: return VerticalSpan<2>;
    case 3: return VerticalSpan<3>;
    case 4: return VerticalSpan<4>;
    default: return VerticalSpan<0>;
  }
}

// Pixel is one output pixel of the horizontal pass: R, G, B in lanes 0-2 and a
// don't-care lane 3 (one 4-wide multiply-add per tap reads the pixel's 3 values plus
// the next pixel's R). Tap k's weights are at w[4k..4k+3].
template <int kTaps>
inline __m128 Pixel(const float* p, const float* w, int taps) {
  const int t = kTaps > 0 ? kTaps : taps;
  __m128 acc = _mm_mul_ps(_mm_loadu_ps(p), _mm_loadu_ps(w));
  for (int k = 1; k < t; ++k) {
    acc = _mm_add_ps(acc, _mm_mul_ps(_mm_loadu_ps(p + 3 * k), _mm_loadu_ps(w + 4 * k)));
  }
  return acc;
}

// HorizontalFloat writes one output row as 3 normalized float plane rows. Four pixels
// at a time are transposed in registers into 4 reds, 4 greens, 4 blues; a flip reverses
// the lanes and the group's position. The job's fields are copied to locals: the
// stores through float pointers would otherwise make the compiler reload them.
// Never inlined: inside an AVX-512 caller (row tails) GCC would fuse the scalar tail's
// multiply-add into an FMA (AVX-512F has scalar FMA), changing its rounding.
template <int kTaps>
__attribute__((noinline)) void HorizontalFloat(const RowJob& j, float* d0, float* d1, float* d2) {
  const __m128 s0 = _mm_set1_ps(j.scale[0]), s1 = _mm_set1_ps(j.scale[1]),
               s2 = _mm_set1_ps(j.scale[2]);
  const __m128 o0 = _mm_set1_ps(j.offset_c[0]), o1 = _mm_set1_ps(j.offset_c[1]),
               o2 = _mm_set1_ps(j.offset_c[2]);
  const bool stream = Streams(d0, d1, d2, j.n, 4);
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
    if (stream) {
      _mm_stream_ps(d0 + xo, r);
      _mm_stream_ps(d1 + xo, g);
      _mm_stream_ps(d2 + xo, b);
    } else {
      _mm_storeu_ps(d0 + xo, r);
      _mm_storeu_ps(d1 + xo, g);
      _mm_storeu_ps(d2 + xo, b);
    }
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

template <int kTaps>
constexpr HorizontalFns kHorizontal = {HorizontalFloat<kTaps>, HorizontalUint8<kTaps>};

HorizontalFns HorizontalFor(int taps) {
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

constexpr Kernels kKernels = {1, VerticalFor, HorizontalFor};

}  // namespace sse41

// The AVX2 and AVX-512 kernels do the SSE4.1 kernels' arithmetic, operation for operation
// (exact integer sums in the vertical pass; per lane the same float multiplies and adds
// in the same order in the horizontal pass), on 2 or 4 times the lanes, so every set
// gives the same bits. A row's last pixels that fill no whole group go to the SSE4.1
// kernel (Tail).

// Tail finishes a row from pixel x on with the SSE4.1 kernel: pixel x + i of the row is
// pixel i of a row of n - x pixels whose output starts at x (at 0 when flipped).
inline RowJob Tail(const RowJob& j, int x, const float* w) {
  RowJob t = j;
  t.offset = j.offset + x;
  t.wx4 = w;
  t.n = j.n - x;
  return t;
}

namespace avx2 {

// Vertical16 is one step of sse41::VerticalSpan on 16 values: each source row's 16 bytes
// are widened to int16 by the load (vpmovzxbw), so one unpack per pair of rows and
// 128-bit lane gives the (a, b) pairs for vpmaddwd. Unpacking works within lanes, so the
// sums come out as values [0-3 | 8-11] and [4-7 | 12-15]: two lane permutes per step (not
// per pair) put them back in order.
FLOWLOADER_AVX2 inline void Vertical16(const uint8_t* const* rows, const int32_t* pairs,
                                       int np, int j, float* row) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
  for (int p = 0; p < np; ++p) {
    const __m256i wp = _mm256_set1_epi32(pairs[p]);
    const __m256i a = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * p] + j)));
    const __m256i b = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * p + 1] + j)));
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), wp));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), wp));
  }
  const __m256 f0 = _mm256_cvtepi32_ps(acc0);
  const __m256 f1 = _mm256_cvtepi32_ps(acc1);
  _mm256_storeu_ps(row + j, _mm256_permute2f128_ps(f0, f1, 0x20));
  _mm256_storeu_ps(row + j + 8, _mm256_permute2f128_ps(f0, f1, 0x31));
}

// VerticalSpan is sse41::VerticalSpan, 32 values per step: bytes are interleaved and
// widened as there, within 128-bit lanes, so the four sums hold values [0-3 | 16-19],
// [4-7 | 20-23], [8-11 | 24-27], [12-15 | 28-31]; four lane permutes per step reorder
// them. The last partial step is Vertical16 steps, the last one ending at n.
template <int kPairs>
FLOWLOADER_AVX2 void VerticalSpan(const uint8_t* const* rows, const int32_t* pairs,
                                  int n_pairs, int n, float* row) {
  const int np = kPairs > 0 ? kPairs : n_pairs;
  __m256i w[kPairs > 0 ? kPairs : 1];
  if (kPairs > 0) {
    for (int p = 0; p < np; ++p) w[p] = _mm256_set1_epi32(pairs[p]);
  }
  const __m256i zero = _mm256_setzero_si256();
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256i acc0 = zero, acc1 = zero, acc2 = zero, acc3 = zero;
    for (int p = 0; p < np; ++p) {
      const __m256i wp = kPairs > 0 ? w[p] : _mm256_set1_epi32(pairs[p]);
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p] + j));
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p + 1] + j));
      const __m256i ab_lo = _mm256_unpacklo_epi8(a, b);
      const __m256i ab_hi = _mm256_unpackhi_epi8(a, b);
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_unpacklo_epi8(ab_lo, zero), wp));
      acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_unpackhi_epi8(ab_lo, zero), wp));
      acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_unpacklo_epi8(ab_hi, zero), wp));
      acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(_mm256_unpackhi_epi8(ab_hi, zero), wp));
    }
    const __m256 f0 = _mm256_cvtepi32_ps(acc0);
    const __m256 f1 = _mm256_cvtepi32_ps(acc1);
    const __m256 f2 = _mm256_cvtepi32_ps(acc2);
    const __m256 f3 = _mm256_cvtepi32_ps(acc3);
    _mm256_storeu_ps(row + j, _mm256_permute2f128_ps(f0, f1, 0x20));
    _mm256_storeu_ps(row + j + 8, _mm256_permute2f128_ps(f2, f3, 0x20));
    _mm256_storeu_ps(row + j + 16, _mm256_permute2f128_ps(f0, f1, 0x31));
    _mm256_storeu_ps(row + j + 24, _mm256_permute2f128_ps(f2, f3, 0x31));
  }
  for (; j < n; j += 16) Vertical16(rows, pairs, np, std::min(j, n - 16), row);
}

VerticalFn VerticalFor(int pairs) {
  switch (pairs) {
    case 1: return VerticalSpan<1>;
    case 2: return VerticalSpan<2>;
    case 3: return VerticalSpan<3>;
    case 4: return VerticalSpan<4>;
    default: return VerticalSpan<0>;
  }
}

// Load2 is pixel a's 4 floats in lanes 0-3 and pixel b's in lanes 4-7.
FLOWLOADER_AVX2 inline __m256 Load2(const float* a, const float* b) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(b), 1);
}

// Pixels2 is sse41::Pixel for two output pixels, reading row + o[0] and row + o[4]
// (LayoutHorizontal with m = 2: tap k's weights at w[8k..8k+7]).
template <int kTaps>
FLOWLOADER_AVX2 inline __m256 Pixels2(const float* row, const int* o, const float* w,
                                      int taps) {
  const int t = kTaps > 0 ? kTaps : taps;
  __m256 acc = _mm256_mul_ps(Load2(row + o[0], row + o[4]), _mm256_loadu_ps(w));
  for (int k = 1; k < t; ++k) {
    acc = _mm256_add_ps(acc, _mm256_mul_ps(Load2(row + o[0] + 3 * k, row + o[4] + 3 * k),
                                           _mm256_loadu_ps(w + 8 * k)));
  }
  return acc;
}

FLOWLOADER_AVX2 inline __m256 RoundHalfUp(__m256 v) {
  return _mm256_floor_ps(_mm256_add_ps(v, _mm256_set1_ps(0.5f)));
}

// Group is 8 output pixels x..x+7 as 4 registers: p[q] holds pixels x+q, x+q+4.
struct Group {
  __m256 p[4];
};

// Pixels8 fills a Group. Written out, not looped: GCC -O2 leaves a loop over g.p rolled,
// which puts the array on the stack (stores reloaded at once: a 25% slower row).
template <int kTaps>
FLOWLOADER_AVX2 inline Group Pixels8(const float* row, const int* offset, const float* w,
                                     int taps) {
  Group g;
  g.p[0] = Pixels2<kTaps>(row, offset, w, taps);
  g.p[1] = Pixels2<kTaps>(row, offset + 1, w + 8 * taps, taps);
  g.p[2] = Pixels2<kTaps>(row, offset + 2, w + 16 * taps, taps);
  g.p[3] = Pixels2<kTaps>(row, offset + 3, w + 24 * taps, taps);
  return g;
}

// HorizontalFloat is sse41::HorizontalFloat, 8 pixels per step.
template <int kTaps>
FLOWLOADER_AVX2 void HorizontalFloat(const RowJob& j, float* d0, float* d1, float* d2) {
  const __m256 s0 = _mm256_set1_ps(j.scale[0]), s1 = _mm256_set1_ps(j.scale[1]),
               s2 = _mm256_set1_ps(j.scale[2]);
  const __m256 o0 = _mm256_set1_ps(j.offset_c[0]), o1 = _mm256_set1_ps(j.offset_c[1]),
               o2 = _mm256_set1_ps(j.offset_c[2]);
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const bool stream = Streams(d0, d1, d2, j.n, 8);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const float* w = j.wx4;
  int x = 0;
  for (; x + 8 <= n; x += 8, w += 32 * taps) {
    const Group q = Pixels8<kTaps>(row, offset + x, w, taps);
    const __m256 rg01 = _mm256_unpacklo_ps(q.p[0], q.p[1]);  // r0 r1 g0 g1 | r4 r5 g4 g5
    const __m256 rg23 = _mm256_unpacklo_ps(q.p[2], q.p[3]);
    const __m256 bx01 = _mm256_unpackhi_ps(q.p[0], q.p[1]);  // b0 b1 .. .. | b4 b5 .. ..
    const __m256 bx23 = _mm256_unpackhi_ps(q.p[2], q.p[3]);
    __m256 r = _mm256_shuffle_ps(rg01, rg23, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 g = _mm256_shuffle_ps(rg01, rg23, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 b = _mm256_shuffle_ps(bx01, bx23, _MM_SHUFFLE(1, 0, 1, 0));
    r = _mm256_add_ps(_mm256_mul_ps(RoundHalfUp(r), s0), o0);
    g = _mm256_add_ps(_mm256_mul_ps(RoundHalfUp(g), s1), o1);
    b = _mm256_add_ps(_mm256_mul_ps(RoundHalfUp(b), s2), o2);
    int xo = x;
    if (flip) {
      r = _mm256_permutevar8x32_ps(r, reverse);
      g = _mm256_permutevar8x32_ps(g, reverse);
      b = _mm256_permutevar8x32_ps(b, reverse);
      xo = n - 8 - x;
    }
    if (stream) {
      _mm256_stream_ps(d0 + xo, r);
      _mm256_stream_ps(d1 + xo, g);
      _mm256_stream_ps(d2 + xo, b);
    } else {
      _mm256_storeu_ps(d0 + xo, r);
      _mm256_storeu_ps(d1 + xo, g);
      _mm256_storeu_ps(d2 + xo, b);
    }
  }
  if (x < n) {
    const int at = flip ? 0 : x;
    sse41::HorizontalFloat<kTaps>(Tail(j, x, w), d0 + at, d1 + at, d2 + at);
  }
}

// HorizontalUint8 is sse41::HorizontalUint8, 8 pixels (24 bytes) per step.
template <int kTaps>
FLOWLOADER_AVX2 void HorizontalUint8(const RowJob& j, uint8_t* d) {
  // Within each 128-bit lane, 4 pixels' RGBx -> 12 RGB bytes (pixels reversed for a
  // flip); then the lanes' 12 bytes joined into 24 (the upper lane's first for a flip).
  const __m256i keep = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  const __m256i keep_reversed = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1));
  const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  const __m256i join_reversed = _mm256_setr_epi32(4, 5, 6, 0, 1, 2, 3, 7);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const __m256i squeeze = flip ? keep_reversed : keep;
  const __m256i order = flip ? join_reversed : join;
  const float* w = j.wx4;
  int x = 0;
  for (; x + 8 <= n; x += 8, w += 32 * taps) {
    const Group q = Pixels8<kTaps>(row, offset + x, w, taps);
    const __m256i q0 = _mm256_cvttps_epi32(RoundHalfUp(q.p[0]));  // Pixels 0 | 4.
    const __m256i q1 = _mm256_cvttps_epi32(RoundHalfUp(q.p[1]));  // 1 | 5.
    const __m256i q2 = _mm256_cvttps_epi32(RoundHalfUp(q.p[2]));
    const __m256i q3 = _mm256_cvttps_epi32(RoundHalfUp(q.p[3]));
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(q0, q1),
                                              _mm256_packs_epi32(q2, q3));  // 0-3 | 4-7.
    const __m256i rgb =
        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(bytes, squeeze), order);
    uint8_t* out = d + 3 * (flip ? n - 8 - x : x);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(rgb));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), _mm256_extracti128_si256(rgb, 1));
  }
  if (x < n) sse41::HorizontalUint8<kTaps>(Tail(j, x, w), d + (flip ? 0 : 3 * x));
}

template <int kTaps>
constexpr HorizontalFns kHorizontal = {HorizontalFloat<kTaps>, HorizontalUint8<kTaps>};

HorizontalFns HorizontalFor(int taps) {
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

constexpr Kernels kKernels = {2, VerticalFor, HorizontalFor};

}  // namespace avx2

// GCC 12's AVX-512 headers set the undefined upper lanes with `__m512 __Y = __Y;`, which
// -Wmaybe-uninitialized reports in every caller (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace avx512 {

// Add and Mul are vaddps and vmulps that the compiler cannot fuse into an FMA (AVX-512F
// has 512-bit FMA, and GCC contracts a multiply feeding an add by default): the
// "current rounding mode" forms are builtins, not vector arithmetic.
FLOWLOADER_AVX512 inline __m512 Add(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_CUR_DIRECTION);
}
FLOWLOADER_AVX512 inline __m512 Mul(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION);
}

// VerticalSpan is avx2::Vertical16 on 32 values per step (vpmovzxbw of 32 bytes); the
// sums hold values [0-3 | 8-11 | 16-19 | 24-27] and [4-7 | 12-15 | 20-23 | 28-31], and
// two two-register permutes per step reorder them.
template <int kPairs>
FLOWLOADER_AVX512 void VerticalSpan(const uint8_t* const* rows, const int32_t* pairs,
                                    int n_pairs, int n, float* row) {
  const int np = kPairs > 0 ? kPairs : n_pairs;
  __m512i w[kPairs > 0 ? kPairs : 1];
  if (kPairs > 0) {
    for (int p = 0; p < np; ++p) w[p] = _mm512_set1_epi32(pairs[p]);
  }
  const __m512i first =
      _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
    for (int p = 0; p < np; ++p) {
      const __m512i wp = kPairs > 0 ? w[p] : _mm512_set1_epi32(pairs[p]);
      const __m512i a = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p] + j)));
      const __m512i b = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p + 1] + j)));
      acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(_mm512_unpacklo_epi16(a, b), wp));
      acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(_mm512_unpackhi_epi16(a, b), wp));
    }
    const __m512 f0 = _mm512_cvtepi32_ps(acc0);
    const __m512 f1 = _mm512_cvtepi32_ps(acc1);
    _mm512_storeu_ps(row + j, _mm512_permutex2var_ps(f0, first, f1));
    _mm512_storeu_ps(row + j + 16, _mm512_permutex2var_ps(f0, second, f1));
  }
  for (; j < n; j += 16) avx2::Vertical16(rows, pairs, np, std::min(j, n - 16), row);
}

VerticalFn VerticalFor(int pairs) {
  switch (pairs) {
    case 1: return VerticalSpan<1>;
    case 2: return VerticalSpan<2>;
    case 3: return VerticalSpan<3>;
    case 4: return VerticalSpan<4>;
    default: return VerticalSpan<0>;
  }
}

// Load4 is the 4 floats at row + o[4l] + i in lanes 4l..4l+3.
FLOWLOADER_AVX512 inline __m512 Load4(const float* row, const int* o, int i) {
  __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(row + o[0] + i));
  v = _mm512_insertf32x4(v, _mm_loadu_ps(row + o[4] + i), 1);
  v = _mm512_insertf32x4(v, _mm_loadu_ps(row + o[8] + i), 2);
  return _mm512_insertf32x4(v, _mm_loadu_ps(row + o[12] + i), 3);
}

// Pixels4 is sse41::Pixel for output pixels o[0], o[4], o[8], o[12] (LayoutHorizontal
// with m = 4: tap k's weights at w[16k..16k+15]).
template <int kTaps>
FLOWLOADER_AVX512 inline __m512 Pixels4(const float* row, const int* o, const float* w,
                                        int taps) {
  const int t = kTaps > 0 ? kTaps : taps;
  __m512 acc = Mul(Load4(row, o, 0), _mm512_loadu_ps(w));
  for (int k = 1; k < t; ++k) {
    acc = Add(acc, Mul(Load4(row, o, 3 * k), _mm512_loadu_ps(w + 16 * k)));
  }
  return acc;
}

FLOWLOADER_AVX512 inline __m512 RoundHalfUp(__m512 v) {
  return _mm512_roundscale_ps(Add(v, _mm512_set1_ps(0.5f)),
                              _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

// Group is 16 output pixels x..x+15 as 4 registers: p[q] holds x+q, +4, +8, +12.
struct Group {
  __m512 p[4];
};

// Pixels16 fills a Group, written out for the reason given at avx2::Pixels8.
template <int kTaps>
FLOWLOADER_AVX512 inline Group Pixels16(const float* row, const int* offset, const float* w,
                                        int taps) {
  Group g;
  g.p[0] = Pixels4<kTaps>(row, offset, w, taps);
  g.p[1] = Pixels4<kTaps>(row, offset + 1, w + 16 * taps, taps);
  g.p[2] = Pixels4<kTaps>(row, offset + 2, w + 32 * taps, taps);
  g.p[3] = Pixels4<kTaps>(row, offset + 3, w + 48 * taps, taps);
  return g;
}

// HorizontalFloat is sse41::HorizontalFloat, 16 pixels per step.
template <int kTaps>
FLOWLOADER_AVX512 void HorizontalFloat(const RowJob& j, float* d0, float* d1, float* d2) {
  const __m512 s0 = _mm512_set1_ps(j.scale[0]), s1 = _mm512_set1_ps(j.scale[1]),
               s2 = _mm512_set1_ps(j.scale[2]);
  const __m512 o0 = _mm512_set1_ps(j.offset_c[0]), o1 = _mm512_set1_ps(j.offset_c[1]),
               o2 = _mm512_set1_ps(j.offset_c[2]);
  const __m512i reverse =
      _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const bool stream = Streams(d0, d1, d2, j.n, 16);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const float* w = j.wx4;
  int x = 0;
  for (; x + 16 <= n; x += 16, w += 64 * taps) {
    const Group q = Pixels16<kTaps>(row, offset + x, w, taps);
    const __m512 rg01 = _mm512_unpacklo_ps(q.p[0], q.p[1]);
    const __m512 rg23 = _mm512_unpacklo_ps(q.p[2], q.p[3]);
    const __m512 bx01 = _mm512_unpackhi_ps(q.p[0], q.p[1]);
    const __m512 bx23 = _mm512_unpackhi_ps(q.p[2], q.p[3]);
    __m512 r = _mm512_shuffle_ps(rg01, rg23, _MM_SHUFFLE(1, 0, 1, 0));
    __m512 g = _mm512_shuffle_ps(rg01, rg23, _MM_SHUFFLE(3, 2, 3, 2));
    __m512 b = _mm512_shuffle_ps(bx01, bx23, _MM_SHUFFLE(1, 0, 1, 0));
    r = Add(Mul(RoundHalfUp(r), s0), o0);
    g = Add(Mul(RoundHalfUp(g), s1), o1);
    b = Add(Mul(RoundHalfUp(b), s2), o2);
    int xo = x;
    if (flip) {
      r = _mm512_permutexvar_ps(reverse, r);
      g = _mm512_permutexvar_ps(reverse, g);
      b = _mm512_permutexvar_ps(reverse, b);
      xo = n - 16 - x;
    }
    if (stream) {
      _mm512_stream_ps(d0 + xo, r);
      _mm512_stream_ps(d1 + xo, g);
      _mm512_stream_ps(d2 + xo, b);
    } else {
      _mm512_storeu_ps(d0 + xo, r);
      _mm512_storeu_ps(d1 + xo, g);
      _mm512_storeu_ps(d2 + xo, b);
    }
  }
  if (x < n) {
    const int at = flip ? 0 : x;
    sse41::HorizontalFloat<kTaps>(Tail(j, x, w), d0 + at, d1 + at, d2 + at);
  }
}

// HorizontalUint8 is sse41::HorizontalUint8, 16 pixels (48 bytes) per step.
template <int kTaps>
FLOWLOADER_AVX512 void HorizontalUint8(const RowJob& j, uint8_t* d) {
  const __m512i keep = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
  const __m512i keep_reversed = _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1));
  const __m512i join =
      _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15);
  const __m512i join_reversed =
      _mm512_setr_epi32(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, 3, 7, 11, 15);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const __m512i squeeze = flip ? keep_reversed : keep;
  const __m512i order = flip ? join_reversed : join;
  const float* w = j.wx4;
  int x = 0;
  for (; x + 16 <= n; x += 16, w += 64 * taps) {
    const Group q = Pixels16<kTaps>(row, offset + x, w, taps);
    const __m512i q0 = _mm512_cvttps_epi32(RoundHalfUp(q.p[0]));
    const __m512i q1 = _mm512_cvttps_epi32(RoundHalfUp(q.p[1]));
    const __m512i q2 = _mm512_cvttps_epi32(RoundHalfUp(q.p[2]));
    const __m512i q3 = _mm512_cvttps_epi32(RoundHalfUp(q.p[3]));
    // Lane l: pixels 4l..4l+3 as RGBx bytes.
    const __m512i bytes = _mm512_packus_epi16(_mm512_packs_epi32(q0, q1),
                                              _mm512_packs_epi32(q2, q3));
    const __m512i rgb = _mm512_permutexvar_epi32(order, _mm512_shuffle_epi8(bytes, squeeze));
    // Two plain stores, not one masked 48-byte store: on Zen 5 a masked store to a line
    // that is not in cache costs 15% of the row (resize_bench, 64 slots).
    uint8_t* out = d + 3 * (flip ? n - 16 - x : x);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(rgb));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm512_extracti32x4_epi32(rgb, 2));
  }
  if (x < n) sse41::HorizontalUint8<kTaps>(Tail(j, x, w), d + (flip ? 0 : 3 * x));
}

template <int kTaps>
constexpr HorizontalFns kHorizontal = {HorizontalFloat<kTaps>, HorizontalUint8<kTaps>};

HorizontalFns HorizontalFor(int taps) {
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

constexpr Kernels kKernels = {4, VerticalFor, HorizontalFor};

}  // namespace avx512

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

const Kernels& KernelsFor(ResampleIsa isa) {
  switch (isa) {
    case ResampleIsa::kAvx512: return avx512::kKernels;
    case ResampleIsa::kAvx2: return avx2::kKernels;
    default: return sse41::kKernels;
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
      if (stream) {
        _mm_stream_ps(d0 + xo, r);
        _mm_stream_ps(d0 + plane + xo, g);
        _mm_stream_ps(d0 + 2 * plane + xo, b);
      } else {
        _mm_storeu_ps(d0 + xo, r);
        _mm_storeu_ps(d0 + plane + xo, g);
        _mm_storeu_ps(d0 + 2 * plane + xo, b);
      }
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

ResampleIsa DetectedResampleIsa() {
  static const ResampleIsa detected = [] {
    // __builtin_cpu_supports also checks that the OS saves the wider registers.
    __builtin_cpu_init();
    // Skylake-SP and its successors up to Cooper Lake lower the core's clock while 512-bit
    // float instructions run, which would slow the decode sharing the core; later Intel
    // cores and AMD's do not. (A precaution: only an AMD Zen 5 was measured.)
    const bool downclocks = __builtin_cpu_is("skylake-avx512") ||
                            __builtin_cpu_is("cascadelake") ||
                            __builtin_cpu_is("cooperlake");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        !downclocks) {
      return ResampleIsa::kAvx512;
    }
    if (__builtin_cpu_supports("avx2")) return ResampleIsa::kAvx2;
    return ResampleIsa::kSse41;
  }();
  return detected;
}

bool ResampleIsaSupported(ResampleIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case ResampleIsa::kSse41: return true;
    case ResampleIsa::kAvx2: return __builtin_cpu_supports("avx2");
    case ResampleIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
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
  const Kernels& kernels = KernelsFor(ActiveIsa());

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
      _mm_sfence();  // See below.
    } else {
      CropToUint8(spec.src, fx.lo, fy.lo, n_out, spec.flip, static_cast<uint8_t*>(out.dst));
    }
    return;
  }

  // The vertical pass covers only the columns the horizontal taps read.
  const int row_values = (fx.hi - fx.lo) * 3;
  // +16: room for the horizontal pass's 4-wide loads, which read one value past a
  // pixel's last tap.
  if (s.row.size() < static_cast<size_t>(row_values) + 16) {
    s.row.resize(static_cast<size_t>(row_values) + 16, 0.0f);
  }
  if (s.rows.size() < static_cast<size_t>(2 * s.pairs_y)) s.rows.resize(2 * s.pairs_y);
  const uint8_t* src_base = spec.src.data + static_cast<size_t>(fx.lo) * 3;
  const VerticalFn vertical = kernels.vertical(s.pairs_y);
  const HorizontalFns horizontal = kernels.horizontal(fx.taps);

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
  // uint8 rows are staged and streamed out (StreamCopy) where they are all aligned.
  const bool stream_u8 = out.kind == OutputSpec::Kind::kUint8HWC && n_out % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(out.dst) % 16 == 0;
  if (stream_u8 && s.stage.size() < static_cast<size_t>(n_out) * 3) {
    s.stage.resize(static_cast<size_t>(n_out) * 3);
  }

  for (int y = 0; y < n_out; ++y) {
    VerticalRow(vertical, src_base, spec.src.stride, fy.first[y], fy.taps,
                &s.wy_pairs[static_cast<size_t>(y) * s.pairs_y], s.pairs_y, row_values,
                s.rows.data(), s.row.data());
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
