// pil_blur.cc: PIL's ImageFilter.GaussianBlur(radius) on an RGB image, the blur of
// DINO's and MoCo v3's own GaussianBlur classes, byte for byte as Pillow 9.4
// (libImaging/BoxBlur.c):
//   - ImagingGaussianBlur turns the radius (a C float) into the radius of a box blur
//     applied three times, with a fractional part (_gaussian_blur_radius, float and
//     double arithmetic restated below with the same types);
//   - each pass is ImagingHorizontalBoxBlur: a box of 2r + 1 pixels (r the radius'
//     whole part) weighted ww, plus the two pixels just outside it weighted fw (the
//     fraction), 24-bit fixed point, rounded, edge pixels repeated; three passes along
//     the rows, then three along the columns (Pillow transposes, blurs rows and
//     transposes back: the same sums).
// A pass's output pixel is thus out = (S·ww + T·fw + 2^23) >> 24, S the sum of the 2r + 1
// pixels around it, T the two beyond, positions clamped to the image. Pillow keeps a
// running sum along each line; here each output sums its own taps, which vectorizes
// across a whole row (columns pass: across the row, rows pass: across its interior) and
// is as cheap for DINO's radii (0.1 to 2.0: r is 0 or 1). Radii whose box is wider than
// kMaxDirectRadius take Pillow's running sums instead.
//
// AVX2 path: 16 outputs per step; S and T as 16-bit lanes, the weights split in 12-bit
// halves so that one pmaddwd gives S·w_hi + T·f_hi and another S·w_lo + T·f_lo, exactly.
// AVX-512 path: the same, 32 per step; with VNNI and VBMI, vpdpwssd and one vpermt2b in
// place of the adds, shifts and packs.
//
// Thread-safety: pure function; its scratch is thread-local.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/core/cpu.h"

namespace flowloader::augment::kernels {
namespace {

// Pillow's ImagingGaussianBlur: three box passes per direction.
constexpr int kPasses = 3;
// Up to this box radius each output sums its taps directly (2r + 3 loads per value);
// wider boxes use running sums. The 16-bit sums of the AVX2 path hold 255·(2r + 1).
constexpr int kMaxDirectRadius = 4;

// BoxWeights: one pass's box, as ImagingHorizontalBoxBlur derives it from the float
// radius: r = (int)radius, ww = 2^24 / (2·radius + 1) in float, truncated, and fw the
// rest of 2^24 split over the two pixels just outside the box.
struct BoxWeights {
  int r = 0;
  uint32_t ww = 0;
  uint32_t fw = 0;
};

BoxWeights WeightsFor(float box_radius) {
  BoxWeights w;
  w.r = static_cast<int>(box_radius);
  w.ww = static_cast<uint32_t>(static_cast<float>(1u << 24) / (box_radius * 2 + 1));
  w.fw = ((1u << 24) - static_cast<uint32_t>(w.r * 2 + 1) * w.ww) / 2;
  return w;
}

inline uint8_t Round24(uint32_t s, uint32_t t, const BoxWeights& w) {
  return static_cast<uint8_t>((s * w.ww + t * w.fw + (1u << 23)) >> 24);
}

inline int Clamp(int i, int n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

// PairWeights: ww and fw as the (w, f) word pairs that pmaddwd / vpdpwssd multiply (S, T)
// word pairs by, split in their high and low 12 bits: ww, fw < 2^24, so each half is
// below 2^12 and S·w + T·f stays far inside int32.
struct PairWeights {
  int hi = 0;
  int lo = 0;
};

inline PairWeights PairWeightsOf(const BoxWeights& w) {
  return {static_cast<int>((w.ww >> 12) | (w.fw >> 12) << 16),
          static_cast<int>((w.ww & 4095) | (w.fw & 4095) << 16)};
}

// Taps is a span's tap pointers; TapsFrom advances them by `done` values.
struct Taps {
  const uint8_t* p[2 * kMaxDirectRadius + 1];
};

inline Taps TapsFrom(const uint8_t* const* taps, int num_taps, int done) {
  Taps rest;
  for (int t = 0; t < num_taps; ++t) rest.p[t] = taps[t] + done;
  return rest;
}

// BoxSpanPortable writes n outputs: out[i] = Round24(Σ_t taps[t][i], lo[i] + hi[i]).
void BoxSpanPortable(const uint8_t* const* taps, int num_taps, const uint8_t* lo,
                     const uint8_t* hi, int n, const BoxWeights& w, uint8_t* out) {
  for (int i = 0; i < n; ++i) {
    uint32_t s = 0;
    for (int t = 0; t < num_taps; ++t) s += taps[t][i];
    out[i] = Round24(s, static_cast<uint32_t>(lo[i]) + hi[i], w);
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
__attribute__((target("avx2"))) inline __m256i Widen16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Round24Pairs: Round24 of eight (S, T) word pairs, the weights' high and low 12 bits
// as (w, f) word pairs.
__attribute__((target("avx2"))) inline __m256i Round24Pairs(__m256i pairs, __m256i weights_hi,
                                                            __m256i weights_lo) {
  const __m256i high = _mm256_slli_epi32(_mm256_madd_epi16(pairs, weights_hi), 12);
  const __m256i low = _mm256_madd_epi16(pairs, weights_lo);
  // Below 255·2^24 + 2^23 < 2^32: the unsigned shift gives Pillow's value.
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(high, low),
                                            _mm256_set1_epi32(1 << 23)), 24);
}

// BoxSpanAvx2 is BoxSpanPortable 16 values per step; returns how many it wrote.
__attribute__((target("avx2"))) int BoxSpanAvx2(const uint8_t* const* taps, int num_taps,
                                                const uint8_t* lo, const uint8_t* hi, int n,
                                                const BoxWeights& w, uint8_t* out) {
  const PairWeights pw = PairWeightsOf(w);
  const __m256i weights_hi = _mm256_set1_epi32(pw.hi), weights_lo = _mm256_set1_epi32(pw.lo);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i s = Widen16(taps[0] + i);
    for (int t = 1; t < num_taps; ++t) s = _mm256_add_epi16(s, Widen16(taps[t] + i));
    const __m256i far = _mm256_add_epi16(Widen16(lo + i), Widen16(hi + i));
    // Per 128-bit lane: values 0-3 | 8-11 in `a`, 4-7 | 12-15 in `b`; the packs below
    // undo the interleave lane by lane.
    const __m256i a = _mm256_unpacklo_epi16(s, far), b = _mm256_unpackhi_epi16(s, far);
    const __m256i words = _mm256_packus_epi32(Round24Pairs(a, weights_hi, weights_lo),
                                              Round24Pairs(b, weights_hi, weights_lo));
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(bytes));
  }
  return i;
}

// The AVX-512 path: BoxSpanAvx2's operations on 32 values per step (F and BW; vpmovwb
// packs the words in order). DINO's recipe with pil_gaussian_blur (perf samples, Zen 4,
// which runs 512-bit operations as two halves): BoxSpan 2046 with AVX2, 1763 with this.
#define FLOWLOADER_PIL_BLUR_AVX512 "avx512f,avx512bw"

__attribute__((target(FLOWLOADER_PIL_BLUR_AVX512))) inline __m512i Widen32(const uint8_t* p) {
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// StPairs512: values i..i+31's S (the taps' sum) and T (lo + hi) as word pairs, values
// 0-3 | 8-11 | 16-19 | 24-27 in `a`, the others in `b` (unpacks work per 128-bit lane).
__attribute__((target(FLOWLOADER_PIL_BLUR_AVX512))) inline void StPairs512(
    const uint8_t* const* taps, int num_taps, const uint8_t* lo, const uint8_t* hi, int i,
    __m512i* a, __m512i* b) {
  __m512i s = Widen32(taps[0] + i);
  for (int t = 1; t < num_taps; ++t) s = _mm512_add_epi16(s, Widen32(taps[t] + i));
  const __m512i far = _mm512_add_epi16(Widen32(lo + i), Widen32(hi + i));
  *a = _mm512_unpacklo_epi16(s, far);
  *b = _mm512_unpackhi_epi16(s, far);
}

__attribute__((target(FLOWLOADER_PIL_BLUR_AVX512))) inline __m512i Round24Pairs512(
    __m512i pairs, __m512i weights_hi, __m512i weights_lo) {
  const __m512i high = _mm512_slli_epi32(_mm512_madd_epi16(pairs, weights_hi), 12);
  const __m512i low = _mm512_madd_epi16(pairs, weights_lo);
  return _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(high, low),
                                            _mm512_set1_epi32(1 << 23)), 24);
}

__attribute__((target(FLOWLOADER_PIL_BLUR_AVX512))) int BoxSpanAvx512(
    const uint8_t* const* taps, int num_taps, const uint8_t* lo, const uint8_t* hi, int n,
    const BoxWeights& w, uint8_t* out) {
  const PairWeights pw = PairWeightsOf(w);
  const __m512i weights_hi = _mm512_set1_epi32(pw.hi), weights_lo = _mm512_set1_epi32(pw.lo);
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512i a, b;
    StPairs512(taps, num_taps, lo, hi, i, &a, &b);
    const __m512i words = _mm512_packus_epi32(Round24Pairs512(a, weights_hi, weights_lo),
                                              Round24Pairs512(b, weights_hi, weights_lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi16_epi8(words));
  }
  return i;
}

// The AVX-512 path where the CPU has VNNI and VBMI too (Zen 4, Ice Lake on): vpdpwssd
// folds the rounding constant and the sum of the two halves into the multiplies,
// (S·w_hi + T·f_hi + 2^11)·2^12 + S·w_lo + T·f_lo, and one vpermt2b takes each sum's top
// byte (bits 24-31, the rounded value; the sum wraps past 2^31 as an int32 but stays
// below 2^32) from both halves in order, in place of two adds, two shifts and two packs.
// geometry_bench on Zen 4, 224x224, radius 0.1-2.0: 118-142 us/image with the plain
// AVX-512 path, 84-117 with this.
#define FLOWLOADER_PIL_BLUR_VNNI "avx512f,avx512bw,avx512vnni,avx512vbmi"

struct TopBytes {
  alignas(64) uint8_t index[64] = {};
  constexpr TopBytes() {
    // Output j (of 32): 128-bit lane L = j / 8 of the unpacks; its values 0-3 are
    // dwords 0-3 of that lane in `a` (bytes 0-63), 4-7 in `b` (bytes 64-127).
    for (int j = 0; j < 32; ++j) {
      const int lane = j / 8, k = j % 8;
      index[j] = static_cast<uint8_t>((k < 4 ? 0 : 64) + 16 * lane + 4 * (k % 4) + 3);
    }
  }
};
constexpr TopBytes kTopBytes;

// Sum24Vnni: S·ww + T·fw + 2^23 (mod 2^32) of sixteen (S, T) word pairs.
__attribute__((target(FLOWLOADER_PIL_BLUR_VNNI))) inline __m512i Sum24Vnni(
    __m512i pairs, __m512i half, __m512i weights_hi, __m512i weights_lo) {
  const __m512i high = _mm512_slli_epi32(_mm512_dpwssd_epi32(half, pairs, weights_hi), 12);
  return _mm512_dpwssd_epi32(high, pairs, weights_lo);
}

__attribute__((target(FLOWLOADER_PIL_BLUR_VNNI))) int BoxSpanAvx512Vnni(
    const uint8_t* const* taps, int num_taps, const uint8_t* lo, const uint8_t* hi, int n,
    const BoxWeights& w, uint8_t* out) {
  const PairWeights pw = PairWeightsOf(w);
  const __m512i weights_hi = _mm512_set1_epi32(pw.hi), weights_lo = _mm512_set1_epi32(pw.lo);
  const __m512i half = _mm512_set1_epi32(1 << 11);
  const __m512i top = _mm512_load_si512(kTopBytes.index);
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512i a, b;
    StPairs512(taps, num_taps, lo, hi, i, &a, &b);
    const __m512i bytes = _mm512_permutex2var_epi8(Sum24Vnni(a, half, weights_hi, weights_lo), top,
                                                     Sum24Vnni(b, half, weights_hi, weights_lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_castsi512_si256(bytes));
  }
  return i;
}

std::atomic<bool> no_avx512_for_testing{false};
std::atomic<bool> no_vnni_for_testing{false};

bool UseAvx512() {
  static const bool has =
      CpuHas(CpuFeature::kAvx512F) && CpuHas(CpuFeature::kAvx512Bw);
  return has && internal::HasAvx2() && !no_avx512_for_testing.load(std::memory_order_relaxed);
}

bool UseAvx512Vnni() {
  static const bool has =
      CpuHas(CpuFeature::kAvx512Vnni) && CpuHas(CpuFeature::kAvx512Vbmi);
  return has && UseAvx512() && !no_vnni_for_testing.load(std::memory_order_relaxed);
}
#endif

// BoxSpan: BoxSpanPortable, on AVX-512 or AVX2 where the CPU has it.
void BoxSpan(const uint8_t* const* taps, int num_taps, const uint8_t* lo, const uint8_t* hi,
             int n, const BoxWeights& w, uint8_t* out) {
  int done = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (UseAvx512Vnni()) {
    done = BoxSpanAvx512Vnni(taps, num_taps, lo, hi, n, w, out);
  } else if (UseAvx512()) {
    done = BoxSpanAvx512(taps, num_taps, lo, hi, n, w, out);
  }
  // AVX2 for the rest in steps of 16 (all of it on CPUs without AVX-512).
  if (n - done >= 16 && internal::HasAvx2()) {
    const Taps rest = TapsFrom(taps, num_taps, done);
    done += BoxSpanAvx2(rest.p, num_taps, lo + done, hi + done, n - done, w, out + done);
  }
#endif
  if (done == n) return;
  const Taps rest = TapsFrom(taps, num_taps, done);
  BoxSpanPortable(rest.p, num_taps, lo + done, hi + done, n - done, w, out + done);
}

// RunningLine is ImagingLineBoxBlur8 on one line of n values `step` bytes apart: a
// running sum of the box, for wide boxes. Writes `out` with the same spacing.
void RunningLine(const uint8_t* in, int n, size_t step, const BoxWeights& w, uint8_t* out) {
  const auto at = [&](int i) -> uint32_t { return in[static_cast<size_t>(Clamp(i, n)) * step]; };
  // The box around position -1, positions clamped.
  uint32_t s = 0;
  for (int k = -w.r - 1; k < w.r; ++k) s += at(k);
  for (int i = 0; i < n; ++i) {
    s += at(i + w.r) - at(i - w.r - 1);
    out[static_cast<size_t>(i) * step] = Round24(s, at(i - w.r - 1) + at(i + w.r + 1), w);
  }
}

// RowPass blurs one RGB row of `width` pixels along x (out != in), through `padded`:
// the row with its edge pixels repeated r + 1 times on each side, so that every output
// sums its taps alike (a pixel's neighbours are 3 bytes apart).
void RowPass(const uint8_t* in, int width, const BoxWeights& w, std::vector<uint8_t>* padded,
             uint8_t* out) {
  if (w.r > kMaxDirectRadius) {
    for (int c = 0; c < 3; ++c) RunningLine(in + c, width, 3, w, out + c);
    return;
  }
  const int pad = w.r + 1;
  padded->resize(3 * (static_cast<size_t>(width) + 2 * pad));
  uint8_t* p = padded->data();
  std::memcpy(p + 3 * pad, in, 3 * static_cast<size_t>(width));
  for (int i = 0; i < pad; ++i) {
    std::memcpy(p + 3 * i, in, 3);
    std::memcpy(p + 3 * (pad + width + i), in + 3 * (width - 1), 3);
  }
  const uint8_t* taps[2 * kMaxDirectRadius + 1];
  for (int k = -w.r; k <= w.r; ++k) taps[k + w.r] = p + 3 * (pad + k);
  BoxSpan(taps, 2 * w.r + 1, p, p + 3 * (pad + w.r + 1), 3 * width, w, out);
}

// ColumnPass blurs a whole image along y (dst != src), a row of outputs at a time.
void ColumnPass(const Image& src, const BoxWeights& w, Image* dst) {
  const int h = src.height;
  const size_t row = src.stride();
  dst->Resize(src.width, h, 3);
  if (w.r > kMaxDirectRadius) {
    for (size_t x = 0; x < row; ++x) RunningLine(src.pixels.data() + x, h, row, w, dst->pixels.data() + x);
    return;
  }
  const uint8_t* taps[2 * kMaxDirectRadius + 1];
  for (int y = 0; y < h; ++y) {
    const auto source_row = [&](int yy) { return src.pixels.data() + Clamp(yy, h) * row; };
    for (int k = -w.r; k <= w.r; ++k) taps[k + w.r] = source_row(y + k);
    BoxSpan(taps, 2 * w.r + 1, source_row(y - w.r - 1), source_row(y + w.r + 1),
            static_cast<int>(row), w, dst->Row(y));
  }
}

struct PilBlurScratch {
  std::vector<uint8_t> line_a, line_b;  // One row between the three row passes.
  std::vector<uint8_t> padded;          // A row pass's input with its edges repeated.
  Image image;                          // The image between the column passes.
};

PilBlurScratch& Scratch() {
  thread_local PilBlurScratch s;
  return s;
}

}  // namespace

namespace internal {
void SetPilBlurNoAvx512ForTesting(bool no_avx512) {
#if defined(FLOWLOADER_COLOUR_AVX2)
  no_avx512_for_testing.store(no_avx512);
#else
  (void)no_avx512;
#endif
}

void SetPilBlurNoVnniForTesting(bool no_vnni) {
#if defined(FLOWLOADER_COLOUR_AVX2)
  no_vnni_for_testing.store(no_vnni);
#else
  (void)no_vnni;
#endif
}
}  // namespace internal

float PilBoxRadius(float radius) {
  // _gaussian_blur_radius(radius, 3): C float variables, double literals.
  const float sigma2 = radius * radius / kPasses;
  const float length = static_cast<float>(std::sqrt(12.0 * sigma2 + 1.0));
  const float l = static_cast<float>(std::floor((length - 1.0) / 2.0));
  float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
  a /= 6 * (sigma2 - (l + 1) * (l + 1));
  return l + a;
}

void PilGaussianBlur(const Image& src, float radius, Image* dst) {
  PilBlurScratch& s = Scratch();
  const BoxWeights w = WeightsFor(PilBoxRadius(radius));
  const int width = src.width, height = src.height;
  const size_t row = src.stride();
  // Rows: three passes per row, row -> a -> b -> the scratch image.
  s.line_a.resize(row);
  s.line_b.resize(row);
  s.image.Resize(width, height, 3);
  for (int y = 0; y < height; ++y) {
    RowPass(src.pixels.data() + y * row, width, w, &s.padded, s.line_a.data());
    RowPass(s.line_a.data(), width, w, &s.padded, s.line_b.data());
    RowPass(s.line_b.data(), width, w, &s.padded, s.image.Row(y));
  }
  // Columns: scratch -> dst -> scratch -> dst.
  ColumnPass(s.image, w, dst);
  ColumnPass(*dst, w, &s.image);
  ColumnPass(s.image, w, dst);
}

}  // namespace flowloader::augment::kernels
