// resample_kernels.h: ResampleRgb's SIMD kernels (resample.h), written once as templates
// over an instruction-set traits struct (Sse41, Avx2, Avx512) that holds the few
// intrinsics in which the sets differ.
//
// Three files include this header, each compiled for one set (BUILD): resample.cc with
// the baseline flags (SSE4.1), resample_avx2.cc with -mavx2, resample_avx512.cc with
// -mavx512f -mavx512bw; each instantiates the kernels for its set and exports them as
// a Kernels table (Sse41Kernels, Avx2Kernels, Avx512Kernels). Why files, not
// __attribute__((target)) on each function: a template cannot take its target from a
// template argument; GCC 12 inlines target-attributed traits into the templates only
// through always_inline tricks, and clang 14 (the fuzzer's compiler) rejects those
// outright (a function without AVX calling one that returns an AVX vector is an error).
// A file's flags give every function in it, templates included, that set's target.
//
// Everything with code below is in an unnamed namespace, so each including file compiles
// its own copy with its own flags and the linker can never pick an AVX-512 copy for the
// SSE4.1 path. For the same reason the code here uses no library templates (std::min
// and the like are shared, out-of-line copies under tsan's -fno-inline), and the AVX2
// and AVX-512 files hold nothing but this header's instantiations: nothing in them may
// run before ResampleRgb has checked the CPU (no static initializers).
//
// The sets do the same arithmetic, operation for operation (exact integer sums in the
// vertical pass; per lane the same float multiplies and adds in the same order in the
// horizontal pass, never fused into an FMA), on 1, 2 or 4 pixels per register, so every
// set gives the same bits (resample_isa_test). A row's last pixels that fill no whole step
// of a wider set go to the SSE4.1 kernel (Tail).
//
// Thread-safety: stateless functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_KERNELS_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_KERNELS_H_

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "stages/augment/internal/tap_kernels.h"

namespace flowloader::augment::internal {

// VerticalFn filters one output row: row[j] = sum_k w[k] * rows[k][j] for j in [0, n),
// n >= 16, in units of 2^-14 (kVerticalBits in resample.cc), from n_pairs (w[2p], w[2p+1]) int16 weight pairs packed in
// int32s and 2 * n_pairs source row pointers.
using VerticalFn = void (*)(const uint8_t* const* rows, const int32_t* pairs, int n_pairs,
                            int n, float* row);

// RowJob is what the horizontal pass needs for one output row.
struct RowJob {
  const float* row;     // Vertical pass output.
  const int* offset;    // Per output pixel: index of its first tap's R in `row`.
  const float* wx4;     // Broadcast horizontal weights (LayoutHorizontal in resample.cc).
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
  TapFn (*taps)(int max_taps);  // BuildAxisFilter's weight pass (tap_kernels.h).
};

// Each set's table, from the file compiled for it. Call the AVX ones only where
// ResampleIsaSupported says the CPU runs them.
const Kernels& Sse41Kernels();   // resample.cc
const Kernels& Avx2Kernels();    // resample_avx2.cc
const Kernels& Avx512Kernels();  // resample_avx512.cc

// ActiveKernels is the set ResampleRgb uses now (resample.cc; see ActiveResampleIsa).
const Kernels& ActiveKernels();

// VerticalRow (resample.cc) filters one output row of the vertical pass: the taps
// [first, first + taps) of the 8-bit rows at base + row * stride, over n values, with
// n_pairs weight pairs (QuantizeVerticalPairs), into `row` in units of 2^-14. `span` is
// the set's kernel for n >= 16; narrower rows are done in scalar code. `rows` is scratch
// for 2 * n_pairs row pointers.
void VerticalRow(VerticalFn span, const uint8_t* base, size_t stride, int first, int taps,
                 const int32_t* pairs, int n_pairs, int n, const uint8_t** rows,
                 float* row);

namespace {

// ---- The instruction sets ----------------------------------------------------------------
//
// Members of every traits struct:
//   F, I               float and integer registers
//   kPixels            output pixels per float register in the horizontal pass
//   kVerticalValues    values per step of the vertical pass
//   kWidenOnLoad       the vertical step: VerticalWidened (true) or VerticalInterleaved
//   Narrow             (AVX sets) the set whose VerticalWidened does the 16-value steps
//   Set1 Load Add Mul Floor Min Max Store Stream   float arithmetic and memory
//   LoadPixels         tap i of the pixels at row + o[0], o[4], o[8], o[12] (kPixels of
//                      them, one per 128-bit lane), 4 floats each
//   UnpackLo UnpackHi PairsLo PairsHi           permutes within 128-bit lanes
//   Reverse            mirrors the whole register
//   ToInt PackS32 PackUs16 KeepRgb JoinRgb SqueezeRgb StoreRgb   the uint8 layout
//   Set1i ZeroI LoadBytes (LoadWidened) UnpackLo8 UnpackHi8 (UnpackLo16 UnpackHi16) Madd
//   Add32 IntToFloat StoreSums                  the vertical pass

// Sse41 is the baseline set: 128-bit registers, one pixel per register.
struct Sse41 {
  using F = __m128;
  using I = __m128i;
  static constexpr int kPixels = 1;
  using Taps = TapSse41;  // BuildAxisFilter's weight pass.
  static constexpr int kVerticalValues = 16;
  static constexpr bool kWidenOnLoad = false;

  static F Set1(float v) { return _mm_set1_ps(v); }
  static F Load(const float* p) { return _mm_loadu_ps(p); }
  static F Add(F a, F b) { return _mm_add_ps(a, b); }
  static F Mul(F a, F b) { return _mm_mul_ps(a, b); }
  static F Floor(F v) { return _mm_floor_ps(v); }
  static F Min(F a, F b) { return _mm_min_ps(a, b); }
  static F Max(F a, F b) { return _mm_max_ps(a, b); }
  static void Store(float* p, F v) { _mm_storeu_ps(p, v); }
  static void Stream(float* p, F v) { _mm_stream_ps(p, v); }
  static F LoadPixels(const float* row, const int* o, int i) { return Load(row + o[0] + i); }
  static F UnpackLo(F a, F b) { return _mm_unpacklo_ps(a, b); }
  static F UnpackHi(F a, F b) { return _mm_unpackhi_ps(a, b); }
  static F PairsLo(F a, F b) { return _mm_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)); }
  static F PairsHi(F a, F b) { return _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)); }
  static F Reverse(F v) { return _mm_shuffle_ps(v, v, _MM_SHUFFLE(0, 1, 2, 3)); }

  static I ToInt(F v) { return _mm_cvttps_epi32(v); }
  static I PackS32(I a, I b) { return _mm_packs_epi32(a, b); }
  static I PackUs16(I a, I b) { return _mm_packus_epi16(a, b); }
  // RGBx RGBx RGBx RGBx -> RGBRGBRGBRGB, in order or (flip) with the pixels reversed.
  static I KeepRgb(bool flip) {
    return flip ? _mm_setr_epi8(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1)
                : _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  }
  static I JoinRgb(bool) { return _mm_setzero_si128(); }  // One lane: nothing to join.
  static I SqueezeRgb(I bytes, I keep, I) { return _mm_shuffle_epi8(bytes, keep); }
  static void StoreRgb(uint8_t* out, I rgb) {  // 12 bytes.
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), rgb);
    const uint32_t tail = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(rgb, 8)));
    std::memcpy(out + 8, &tail, 4);
  }

  static I Set1i(int32_t v) { return _mm_set1_epi32(v); }
  static I ZeroI() { return _mm_setzero_si128(); }
  static I LoadBytes(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static I UnpackLo8(I a, I b) { return _mm_unpacklo_epi8(a, b); }
  static I UnpackHi8(I a, I b) { return _mm_unpackhi_epi8(a, b); }
  static I Madd(I a, I b) { return _mm_madd_epi16(a, b); }
  static I Add32(I a, I b) { return _mm_add_epi32(a, b); }
  static F IntToFloat(I v) { return _mm_cvtepi32_ps(v); }
  static void StoreSums(float* row, F f0, F f1, F f2, F f3) {  // Already in order.
    Store(row, f0);
    Store(row + 4, f1);
    Store(row + 8, f2);
    Store(row + 12, f3);
  }
};

#ifdef __AVX2__
// Avx2 holds two pixels per register. Its vertical step is VerticalInterleaved on 32
// values; its and AVX-512's last partial steps are VerticalWidened on 16.
struct Avx2 {
  using F = __m256;
  using I = __m256i;
  static constexpr int kPixels = 2;
  using Taps = TapAvx2;  // BuildAxisFilter's weight pass.
  static constexpr int kVerticalValues = 32;
  static constexpr bool kWidenOnLoad = false;
  using Narrow = Avx2;

  static F Set1(float v) { return _mm256_set1_ps(v); }
  static F Load(const float* p) { return _mm256_loadu_ps(p); }
  static F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Floor(F v) { return _mm256_floor_ps(v); }
  static F Min(F a, F b) { return _mm256_min_ps(a, b); }
  static F Max(F a, F b) { return _mm256_max_ps(a, b); }
  static void Store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void Stream(float* p, F v) { _mm256_stream_ps(p, v); }
  static F LoadPixels(const float* row, const int* o, int i) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row + o[0] + i)),
                                _mm_loadu_ps(row + o[4] + i), 1);
  }
  static F UnpackLo(F a, F b) { return _mm256_unpacklo_ps(a, b); }
  static F UnpackHi(F a, F b) { return _mm256_unpackhi_ps(a, b); }
  static F PairsLo(F a, F b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)); }
  static F PairsHi(F a, F b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)); }
  static F Reverse(F v) {
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
  }

  static I ToInt(F v) { return _mm256_cvttps_epi32(v); }
  static I PackS32(I a, I b) { return _mm256_packs_epi32(a, b); }
  static I PackUs16(I a, I b) { return _mm256_packus_epi16(a, b); }
  // Within each 128-bit lane as Sse41::KeepRgb; then the lanes' 12 bytes joined into 24
  // (the upper lane's first for a flip).
  static I KeepRgb(bool flip) { return _mm256_broadcastsi128_si256(Sse41::KeepRgb(flip)); }
  static I JoinRgb(bool flip) {
    return flip ? _mm256_setr_epi32(4, 5, 6, 0, 1, 2, 3, 7)
                : _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  }
  static I SqueezeRgb(I bytes, I keep, I join) {
    return _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(bytes, keep), join);
  }
  static void StoreRgb(uint8_t* out, I rgb) {  // 24 bytes.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(rgb));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), _mm256_extracti128_si256(rgb, 1));
  }

  static I Set1i(int32_t v) { return _mm256_set1_epi32(v); }
  static I ZeroI() { return _mm256_setzero_si256(); }
  static I LoadBytes(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  // 16 bytes widened to int16 by the load (vpmovzxbw).
  static I LoadWidened(const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I UnpackLo8(I a, I b) { return _mm256_unpacklo_epi8(a, b); }
  static I UnpackHi8(I a, I b) { return _mm256_unpackhi_epi8(a, b); }
  static I UnpackLo16(I a, I b) { return _mm256_unpacklo_epi16(a, b); }
  static I UnpackHi16(I a, I b) { return _mm256_unpackhi_epi16(a, b); }
  static I Madd(I a, I b) { return _mm256_madd_epi16(a, b); }
  static I Add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static F IntToFloat(I v) { return _mm256_cvtepi32_ps(v); }
  // VerticalInterleaved's sums hold values [0-3 | 16-19], [4-7 | 20-23], [8-11 | 24-27],
  // [12-15 | 28-31]: four lane permutes put them in order.
  static void StoreSums(float* row, F f0, F f1, F f2, F f3) {
    Store(row, _mm256_permute2f128_ps(f0, f1, 0x20));
    Store(row + 8, _mm256_permute2f128_ps(f2, f3, 0x20));
    Store(row + 16, _mm256_permute2f128_ps(f0, f1, 0x31));
    Store(row + 24, _mm256_permute2f128_ps(f2, f3, 0x31));
  }
  // VerticalWidened's (16 values): [0-3 | 8-11] and [4-7 | 12-15].
  static void StoreSums(float* row, F f0, F f1) {
    Store(row, _mm256_permute2f128_ps(f0, f1, 0x20));
    Store(row + 8, _mm256_permute2f128_ps(f0, f1, 0x31));
  }
};
#endif  // __AVX2__

#if defined(__AVX512F__) && defined(__AVX512BW__)
// GCC 12's AVX-512 headers set the undefined upper lanes with `__m512 __Y = __Y;`, which
// -Wmaybe-uninitialized (-Wuninitialized under tsan's -fno-inline) reports in every
// caller (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// Avx512 (AVX-512F + BW) holds four pixels per register; its vertical step is
// VerticalWidened on 32 values.
struct Avx512 {
  using F = __m512;
  using I = __m512i;
  static constexpr int kPixels = 4;
  using Taps = TapAvx512;  // BuildAxisFilter's weight pass.
  static constexpr int kVerticalValues = 32;
  static constexpr bool kWidenOnLoad = true;
  using Narrow = Avx2;

  static F Set1(float v) { return _mm512_set1_ps(v); }
  static F Load(const float* p) { return _mm512_loadu_ps(p); }
  // Add and Mul are vaddps and vmulps that the compiler cannot fuse into an FMA (AVX-512F
  // has 512-bit FMA, and GCC contracts a multiply feeding an add by default): the
  // "current rounding mode" forms are builtins, not vector arithmetic. (The file is also
  // compiled with -ffp-contract=off.)
  static F Add(F a, F b) { return _mm512_add_round_ps(a, b, _MM_FROUND_CUR_DIRECTION); }
  static F Mul(F a, F b) { return _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION); }
  static F Floor(F v) {
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  static F Min(F a, F b) { return _mm512_min_ps(a, b); }
  static F Max(F a, F b) { return _mm512_max_ps(a, b); }
  static void Store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void Stream(float* p, F v) { _mm512_stream_ps(p, v); }
  static F LoadPixels(const float* row, const int* o, int i) {
    F v = _mm512_castps128_ps512(_mm_loadu_ps(row + o[0] + i));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(row + o[4] + i), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(row + o[8] + i), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps(row + o[12] + i), 3);
  }
  static F UnpackLo(F a, F b) { return _mm512_unpacklo_ps(a, b); }
  static F UnpackHi(F a, F b) { return _mm512_unpackhi_ps(a, b); }
  static F PairsLo(F a, F b) { return _mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)); }
  static F PairsHi(F a, F b) { return _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)); }
  static F Reverse(F v) {
    return _mm512_permutexvar_ps(
        _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), v);
  }

  static I ToInt(F v) { return _mm512_cvttps_epi32(v); }
  static I PackS32(I a, I b) { return _mm512_packs_epi32(a, b); }
  static I PackUs16(I a, I b) { return _mm512_packus_epi16(a, b); }
  // As Avx2's, on four lanes of 4 pixels each.
  static I KeepRgb(bool flip) { return _mm512_broadcast_i32x4(Sse41::KeepRgb(flip)); }
  static I JoinRgb(bool flip) {
    return flip ? _mm512_setr_epi32(12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, 3, 7, 11, 15)
                : _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 3, 7, 11, 15);
  }
  static I SqueezeRgb(I bytes, I keep, I join) {
    return _mm512_permutexvar_epi32(join, _mm512_shuffle_epi8(bytes, keep));
  }
  // 48 bytes as two plain stores, not one masked store: on Zen 5 a masked store to a line
  // that is not in cache costs 15% of the row (resize_bench, 64 slots).
  static void StoreRgb(uint8_t* out, I rgb) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(rgb));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm512_extracti32x4_epi32(rgb, 2));
  }

  static I Set1i(int32_t v) { return _mm512_set1_epi32(v); }
  static I ZeroI() { return _mm512_setzero_si512(); }
  // 32 bytes widened to int16 by the load (vpmovzxbw).
  static I LoadWidened(const uint8_t* p) {
    return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I UnpackLo16(I a, I b) { return _mm512_unpacklo_epi16(a, b); }
  static I UnpackHi16(I a, I b) { return _mm512_unpackhi_epi16(a, b); }
  static I Madd(I a, I b) { return _mm512_madd_epi16(a, b); }
  static I Add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static F IntToFloat(I v) { return _mm512_cvtepi32_ps(v); }
  // The sums hold values [0-3 | 8-11 | 16-19 | 24-27] and [4-7 | 12-15 | 20-23 | 28-31]:
  // two two-register permutes put them in order.
  static void StoreSums(float* row, F f0, F f1) {
    const I first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const I second =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    Store(row, _mm512_permutex2var_ps(f0, first, f1));
    Store(row + 16, _mm512_permutex2var_ps(f0, second, f1));
  }
};

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // __AVX512F__ && __AVX512BW__

// ---- The kernels, written once ---------------------------------------------------------

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

// VerticalInterleaved is one step of the vertical pass on 4 registers of int32 sums from
// value j (16 values with SSE4.1, 32 with AVX2), in units of 2^-14. Two source rows per
// pmaddwd: their bytes are interleaved, widened to int16 and multiplied by the
// (w[2p], w[2p+1]) pair, summing into int32. Interleaving works within 128-bit lanes;
// StoreSums puts the values back in order. kPairs > 0: the pair weights are the
// registers w[] (the caller keeps them in registers); kPairs == 0: they are broadcast
// from `pairs` here.
template <class Isa, int kPairs>
inline void VerticalInterleaved(const uint8_t* const* rows, const typename Isa::I* w,
                                const int32_t* pairs, int np, int j, float* row) {
  using I = typename Isa::I;
  const I zero = Isa::ZeroI();
  I acc0 = zero, acc1 = zero, acc2 = zero, acc3 = zero;
  for (int p = 0; p < np; ++p) {
    const I wp = kPairs > 0 ? w[p] : Isa::Set1i(pairs[p]);
    const I a = Isa::LoadBytes(rows[2 * p] + j);
    const I b = Isa::LoadBytes(rows[2 * p + 1] + j);
    const I ab_lo = Isa::UnpackLo8(a, b);
    const I ab_hi = Isa::UnpackHi8(a, b);
    acc0 = Isa::Add32(acc0, Isa::Madd(Isa::UnpackLo8(ab_lo, zero), wp));
    acc1 = Isa::Add32(acc1, Isa::Madd(Isa::UnpackHi8(ab_lo, zero), wp));
    acc2 = Isa::Add32(acc2, Isa::Madd(Isa::UnpackLo8(ab_hi, zero), wp));
    acc3 = Isa::Add32(acc3, Isa::Madd(Isa::UnpackHi8(ab_hi, zero), wp));
  }
  Isa::StoreSums(row + j, Isa::IntToFloat(acc0), Isa::IntToFloat(acc1),
                 Isa::IntToFloat(acc2), Isa::IntToFloat(acc3));
}

// VerticalWidened is VerticalInterleaved on 2 registers (16 values with AVX2, 32 with
// AVX-512): each source row's bytes are widened to int16 by the load, so one unpack per
// pair of rows and 128-bit lane gives the (a, b) pairs for pmaddwd.
template <class Isa, int kPairs>
inline void VerticalWidened(const uint8_t* const* rows, const typename Isa::I* w,
                            const int32_t* pairs, int np, int j, float* row) {
  using I = typename Isa::I;
  I acc0 = Isa::ZeroI(), acc1 = Isa::ZeroI();
  for (int p = 0; p < np; ++p) {
    const I wp = kPairs > 0 ? w[p] : Isa::Set1i(pairs[p]);
    const I a = Isa::LoadWidened(rows[2 * p] + j);
    const I b = Isa::LoadWidened(rows[2 * p + 1] + j);
    acc0 = Isa::Add32(acc0, Isa::Madd(Isa::UnpackLo16(a, b), wp));
    acc1 = Isa::Add32(acc1, Isa::Madd(Isa::UnpackHi16(a, b), wp));
  }
  Isa::StoreSums(row + j, Isa::IntToFloat(acc0), Isa::IntToFloat(acc1));
}

// VerticalSpan is a VerticalFn: Isa::kVerticalValues per step, then a last partial step
// redone as 16-value steps, the last one ending at n (exact integer sums: the overlap
// rewrites the same values). kPairs > 0 fixes the pair count so the weights stay in
// registers.
template <class Isa, int kPairs>
void VerticalSpan(const uint8_t* const* rows, const int32_t* pairs, int n_pairs, int n,
                  float* row) {
  const int np = kPairs > 0 ? kPairs : n_pairs;
  typename Isa::I w[kPairs > 0 ? kPairs : 1];
  if (kPairs > 0) {
    for (int p = 0; p < np; ++p) w[p] = Isa::Set1i(pairs[p]);
  }
  int j = 0;
  for (; j + Isa::kVerticalValues <= n; j += Isa::kVerticalValues) {
    if constexpr (Isa::kWidenOnLoad) {
      VerticalWidened<Isa, kPairs>(rows, w, pairs, np, j, row);
    } else {
      VerticalInterleaved<Isa, kPairs>(rows, w, pairs, np, j, row);
    }
  }
  for (; j < n; j += 16) {
    const int at = j < n - 16 ? j : n - 16;
    if constexpr (Isa::kVerticalValues == 16) {
      VerticalInterleaved<Isa, kPairs>(rows, w, pairs, np, at, row);
    } else {
      VerticalWidened<typename Isa::Narrow, 0>(rows, nullptr, pairs, np, at, row);
    }
  }
}

// Round half up, as Pillow's fixed point does ((v * 2^22 + 2^21) >> 22). Filter values
// stay within [0, 255] (non-negative weights summing to 1), so no clamp is needed.
template <class Isa>
inline typename Isa::F RoundHalfUp(typename Isa::F v) {
  return Isa::Floor(Isa::Add(v, Isa::Set1(0.5f)));
}

// Pixels is the horizontal pass for the Isa::kPixels output pixels whose first taps' R
// are at row + o[0], o[4], ...: R, G, B in lanes 0-2 of each 128-bit lane and a
// don't-care lane 3 (one 4-wide multiply-add per tap reads the pixel's 3 values plus the
// next pixel's R). Tap k's weights are at w[4 * kPixels * k] (LayoutHorizontal).
template <class Isa, int kTaps>
inline typename Isa::F Pixels(const float* row, const int* o, const float* w, int taps) {
  const int t = kTaps > 0 ? kTaps : taps;
  typename Isa::F acc = Isa::Mul(Isa::LoadPixels(row, o, 0), Isa::Load(w));
  for (int k = 1; k < t; ++k) {
    acc = Isa::Add(acc, Isa::Mul(Isa::LoadPixels(row, o, 3 * k),
                                 Isa::Load(w + 4 * Isa::kPixels * k)));
  }
  return acc;
}

// Group is one step of the horizontal pass, the 4 * kPixels output pixels from x as 4
// registers: p[q] holds pixels x + q, x + q + 4, ... (one per 128-bit lane).
template <class Isa>
struct Group {
  typename Isa::F p[4];
};

// PixelGroup fills a Group. Written out, not looped: GCC -O2 leaves a loop over g.p
// rolled, which puts the array on the stack (stores reloaded at once: a 25% slower row).
template <class Isa, int kTaps>
inline Group<Isa> PixelGroup(const float* row, const int* offset, const float* w, int taps) {
  const int w_step = 4 * Isa::kPixels * taps;  // Weights per register.
  Group<Isa> g;
  g.p[0] = Pixels<Isa, kTaps>(row, offset, w, taps);
  g.p[1] = Pixels<Isa, kTaps>(row, offset + 1, w + w_step, taps);
  g.p[2] = Pixels<Isa, kTaps>(row, offset + 2, w + 2 * w_step, taps);
  g.p[3] = Pixels<Isa, kTaps>(row, offset + 3, w + 3 * w_step, taps);
  return g;
}

// WritePlanes stores one step's reds, greens and blues (4 * kPixels pixels from x) into
// the three plane rows; a flip reverses the lanes and the step's position. `stream`: with
// non-temporal stores (Streams).
template <class Isa>
inline void WritePlanes(typename Isa::F r, typename Isa::F g, typename Isa::F b, int x,
                        int n, bool flip, bool stream, float* d0, float* d1, float* d2) {
  int xo = x;
  if (flip) {
    r = Isa::Reverse(r);
    g = Isa::Reverse(g);
    b = Isa::Reverse(b);
    xo = n - 4 * Isa::kPixels - x;
  }
  if (stream) {
    Isa::Stream(d0 + xo, r);
    Isa::Stream(d1 + xo, g);
    Isa::Stream(d2 + xo, b);
  } else {
    Isa::Store(d0 + xo, r);
    Isa::Store(d1 + xo, g);
    Isa::Store(d2 + xo, b);
  }
}

// Tail finishes a row from pixel x on with the SSE4.1 kernel: pixel x + i of the row is
// pixel i of a row of n - x pixels whose output starts at x (at 0 when flipped). The
// kernel is called through Sse41Kernels(), compiled without AVX: inlined into an AVX-512
// caller, GCC would fuse its scalar tail's multiply-add into an FMA (AVX-512F has scalar
// FMA), changing the rounding.
inline RowJob Tail(const RowJob& j, int x, const float* w) {
  RowJob t = j;
  t.offset = j.offset + x;
  t.wx4 = w;
  t.n = j.n - x;
  return t;
}

// HorizontalFloat writes one output row as 3 normalized float plane rows, 4 * kPixels
// pixels per step: each Group is transposed in registers (within 128-bit lanes) into
// reds, greens and blues in pixel order. The job's fields are copied to locals: the
// stores through float pointers would otherwise make the compiler reload them.
template <class Isa, int kTaps>
void HorizontalFloat(const RowJob& j, float* d0, float* d1, float* d2) {
  using F = typename Isa::F;
  constexpr int kStep = 4 * Isa::kPixels;
  const F s0 = Isa::Set1(j.scale[0]), s1 = Isa::Set1(j.scale[1]), s2 = Isa::Set1(j.scale[2]);
  const F o0 = Isa::Set1(j.offset_c[0]), o1 = Isa::Set1(j.offset_c[1]),
          o2 = Isa::Set1(j.offset_c[2]);
  const bool stream = Streams(d0, d1, d2, j.n, kStep);
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const float* w = j.wx4;
  int x = 0;
  for (; x + kStep <= n; x += kStep, w += 4 * kStep * taps) {
    const Group<Isa> q = PixelGroup<Isa, kTaps>(row, offset + x, w, taps);
    const F rg01 = Isa::UnpackLo(q.p[0], q.p[1]);  // r0 r1 g0 g1 (per 128-bit lane)
    const F rg23 = Isa::UnpackLo(q.p[2], q.p[3]);
    const F bx01 = Isa::UnpackHi(q.p[0], q.p[1]);  // b0 b1 .. ..
    const F bx23 = Isa::UnpackHi(q.p[2], q.p[3]);
    const F r = Isa::Add(Isa::Mul(RoundHalfUp<Isa>(Isa::PairsLo(rg01, rg23)), s0), o0);
    const F g = Isa::Add(Isa::Mul(RoundHalfUp<Isa>(Isa::PairsHi(rg01, rg23)), s1), o1);
    const F b = Isa::Add(Isa::Mul(RoundHalfUp<Isa>(Isa::PairsLo(bx01, bx23)), s2), o2);
    WritePlanes<Isa>(r, g, b, x, n, flip, stream, d0, d1, d2);
  }
  if constexpr (Isa::kPixels == 1) {
    for (; x < n; ++x, w += 4 * taps) {
      alignas(16) float v[4];
      Isa::Store(v, RoundHalfUp<Isa>(Pixels<Isa, kTaps>(row, offset + x, w, taps)));
      const int xo = flip ? n - 1 - x : x;
      d0[xo] = v[0] * j.scale[0] + j.offset_c[0];
      d1[xo] = v[1] * j.scale[1] + j.offset_c[1];
      d2[xo] = v[2] * j.scale[2] + j.offset_c[2];
    }
  } else if (x < n) {
    const int at = flip ? 0 : x;
    Sse41Kernels().horizontal(taps).to_float(Tail(j, x, w), d0 + at, d1 + at, d2 + at);
  }
}

// HorizontalUint8 writes one output row as packed RGB bytes, 4 * kPixels pixels (12 *
// kPixels bytes) per step.
template <class Isa, int kTaps>
void HorizontalUint8(const RowJob& j, uint8_t* d) {
  using I = typename Isa::I;
  constexpr int kStep = 4 * Isa::kPixels;
  const float* const row = j.row;
  const int* const offset = j.offset;
  const int taps = kTaps > 0 ? kTaps : j.taps;
  const int n = j.n;
  const bool flip = j.flip;
  const I keep = Isa::KeepRgb(flip);
  const I join = Isa::JoinRgb(flip);
  const float* w = j.wx4;
  int x = 0;
  for (; x + kStep <= n; x += kStep, w += 4 * kStep * taps) {
    const Group<Isa> q = PixelGroup<Isa, kTaps>(row, offset + x, w, taps);
    const I q0 = Isa::ToInt(RoundHalfUp<Isa>(q.p[0]));
    const I q1 = Isa::ToInt(RoundHalfUp<Isa>(q.p[1]));
    const I q2 = Isa::ToInt(RoundHalfUp<Isa>(q.p[2]));
    const I q3 = Isa::ToInt(RoundHalfUp<Isa>(q.p[3]));
    // 128-bit lane l: pixels 4l..4l+3 of the step as RGBx bytes.
    const I bytes = Isa::PackUs16(Isa::PackS32(q0, q1), Isa::PackS32(q2, q3));
    Isa::StoreRgb(d + 3 * (flip ? n - kStep - x : x), Isa::SqueezeRgb(bytes, keep, join));
  }
  if constexpr (Isa::kPixels == 1) {
    for (; x < n; ++x, w += 4 * taps) {
      alignas(16) float v[4];
      Isa::Store(v, RoundHalfUp<Isa>(Pixels<Isa, kTaps>(row, offset + x, w, taps)));
      uint8_t* out = d + 3 * (flip ? n - 1 - x : x);
      for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>(v[c] < 255.0f ? v[c] : 255.0f);
    }
  } else if (x < n) {
    Sse41Kernels().horizontal(taps).to_uint8(Tail(j, x, w), d + (flip ? 0 : 3 * x));
  }
}

// VerticalFor and HorizontalFor pick a set's kernel for a tap count: the common counts
// are unrolled (the weights then stay in registers), the rest take the generic loop.
template <class Isa>
VerticalFn VerticalFor(int pairs) {
  switch (pairs) {
    case 1: return VerticalSpan<Isa, 1>;
    case 2: return VerticalSpan<Isa, 2>;
    case 3: return VerticalSpan<Isa, 3>;
    case 4: return VerticalSpan<Isa, 4>;
    default: return VerticalSpan<Isa, 0>;
  }
}

template <class Isa, int kTaps>
constexpr HorizontalFns kHorizontal = {HorizontalFloat<Isa, kTaps>,
                                       HorizontalUint8<Isa, kTaps>};

template <class Isa>
HorizontalFns HorizontalFor(int taps) {
  switch (taps) {
    case 1: return kHorizontal<Isa, 1>;
    case 2: return kHorizontal<Isa, 2>;
    case 3: return kHorizontal<Isa, 3>;
    case 4: return kHorizontal<Isa, 4>;
    case 5: return kHorizontal<Isa, 5>;
    case 6: return kHorizontal<Isa, 6>;
    default: return kHorizontal<Isa, 0>;
  }
}

// kKernels is Isa's table (constant-initialized: no code runs to make it).
template <class Isa>
constexpr Kernels kKernels = {Isa::kPixels, VerticalFor<Isa>, HorizontalFor<Isa>,
                               TapsFor<typename Isa::Taps>};

}  // namespace
}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_KERNELS_H_
