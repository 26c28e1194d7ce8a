// colour_kernels.h: ResampleYcc's last step, JFIF YCbCr -> RGB on one output row, fused
// with rounding to 8 bits, flip, normalization and the planar float layout, written once
// over resample_kernels.h's instruction-set traits. resample_ycc.cc compiles it for
// SSE4.1, resample_ycc_avx512.cc for AVX-512; both do the same operations in the same
// order per value, so they give the same bits.
//
// As resample_kernels.h: everything is in an unnamed namespace, each including file
// compiles its own copy with its own flags.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_COLOUR_KERNELS_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_COLOUR_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "stages/augment/internal/resample_kernels.h"

namespace flowloader::augment::internal {

// ColourJob is one output row of ResampleYcc: the filtered Y, Cb and Cr rows (n values
// each) and where the normalized R, G and B rows go.
struct ColourJob {
  const float* y;
  const float* cb;
  const float* cr;
  int n;
  bool flip;
  const float* scale;   // Normalization, per channel.
  const float* offset;
  float* d0;
  float* d1;
  float* d2;
};

// libjpeg's YCbCr -> RGB coefficients (jdcolor.c), as PIL decodes.
constexpr float kCrToR = 1.40200f;
constexpr float kCbToG = -0.34414f;
constexpr float kCrToG = -0.71414f;
constexpr float kCbToB = 1.77200f;

// ColourFloatAvx512 is ColourFloat<Avx512> (resample_ycc_avx512.cc); call it only where
// the CPU runs AVX-512.
int ColourFloatAvx512(const ColourJob& j);

// ColourUint8Avx512 is ColourRowToUint8's (resample_ycc.h) AVX-512 loop: it converts the
// row's pixels 16 at a time with ColourFloat's arithmetic, writes them as interleaved
// RGB bytes (mirrored when j.flip; j.scale, offset and d0..d2 unused), and returns how
// many it did (the rest, fewer than 16, are the caller's). Only where the CPU runs
// AVX-512.
int ColourUint8Avx512(const ColourJob& j, uint8_t* d);

namespace {

// kRgbInterleave: pshufb masks that interleave 16 pixels' R, G and B bytes (a register
// each) into 48 bytes; output register v takes byte i from channel c's register at
// pixel (16v + i) / 3 when (16v + i) % 3 == c, else zero (-128 = 0x80).
struct RgbInterleave {
  int8_t m[3][3][16];  // [v][c][i]
};
constexpr RgbInterleave MakeRgbInterleave() {
  RgbInterleave t{};
  for (int v = 0; v < 3; ++v) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 16; ++i) {
        const int k = 16 * v + i;
        t.m[v][c][i] = static_cast<int8_t>(k % 3 == c ? k / 3 : -128);
      }
    }
  }
  return t;
}
constexpr RgbInterleave kRgbInterleave = MakeRgbInterleave();

// StoreRgb16 writes pixels x .. x + 15 of an n-pixel row, given as R, G and B bytes, to
// interleaved RGB at d: mirrored (at n - 16 - x .. n - 1 - x, reversed) when flip.
inline void StoreRgb16(__m128i r, __m128i g, __m128i b, int x, int n, bool flip, uint8_t* d) {
  uint8_t* out = d + 3 * static_cast<size_t>(x);
  if (flip) {
    const __m128i reverse = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    r = _mm_shuffle_epi8(r, reverse);
    g = _mm_shuffle_epi8(g, reverse);
    b = _mm_shuffle_epi8(b, reverse);
    out = d + 3 * static_cast<size_t>(n - 16 - x);
  }
  for (int v = 0; v < 3; ++v) {
    const auto mask = [v](int c) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRgbInterleave.m[v][c]));
    };
    const __m128i o = _mm_or_si128(
        _mm_or_si128(_mm_shuffle_epi8(r, mask(0)), _mm_shuffle_epi8(g, mask(1))),
        _mm_shuffle_epi8(b, mask(2)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * v), o);
  }
}

// Quantize rounds half up and clamps to [0, 255].
template <class Isa>
inline typename Isa::F Quantize(typename Isa::F v) {
  const typename Isa::F q = Isa::Floor(Isa::Add(v, Isa::Set1(0.5f)));
  return Isa::Min(Isa::Max(q, Isa::Set1(0.0f)), Isa::Set1(255.0f));
}

// ColourFloat converts the row's pixels in whole registers and returns how many it did
// (the rest, fewer than one register, are the caller's). The "- 128" is an add of -128,
// and G sums Y, then the Cb term, then the Cr term.
template <class Isa>
int ColourFloat(const ColourJob& j) {
  using F = typename Isa::F;
  constexpr int kStep = 4 * Isa::kPixels;
  const F s0 = Isa::Set1(j.scale[0]), s1 = Isa::Set1(j.scale[1]), s2 = Isa::Set1(j.scale[2]);
  const F o0 = Isa::Set1(j.offset[0]), o1 = Isa::Set1(j.offset[1]),
          o2 = Isa::Set1(j.offset[2]);
  const F minus128 = Isa::Set1(-128.0f);
  const bool stream = Streams(j.d0, j.d1, j.d2, j.n, kStep);
  int x = 0;
  for (; x + kStep <= j.n; x += kStep) {
    const F y = Isa::Load(j.y + x);
    const F cb = Isa::Add(Isa::Load(j.cb + x), minus128);
    const F cr = Isa::Add(Isa::Load(j.cr + x), minus128);
    const F r = Quantize<Isa>(Isa::Add(y, Isa::Mul(cr, Isa::Set1(kCrToR))));
    const F g = Quantize<Isa>(Isa::Add(Isa::Add(y, Isa::Mul(cb, Isa::Set1(kCbToG))),
                                       Isa::Mul(cr, Isa::Set1(kCrToG))));
    const F b = Quantize<Isa>(Isa::Add(y, Isa::Mul(cb, Isa::Set1(kCbToB))));
    WritePlanes<Isa>(Isa::Add(Isa::Mul(r, s0), o0), Isa::Add(Isa::Mul(g, s1), o1),
                     Isa::Add(Isa::Mul(b, s2), o2), x, j.n, j.flip, stream, j.d0, j.d1,
                     j.d2);
  }
  return x;
}

}  // namespace
}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_COLOUR_KERNELS_H_
