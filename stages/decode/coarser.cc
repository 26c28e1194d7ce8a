// coarser.cc: see coarser.h.
#include "stages/decode/coarser.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace flowloader::decode {
namespace {

// SumRows writes top[i] + bottom[i] for i < n: 16 at a time (GCC's -O2 cost model
// leaves the plain loop scalar), the rest one at a time.
void SumRows(const uint8_t* top, const uint8_t* bottom, size_t n, uint16_t* sums) {
  const __m128i zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(top + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bottom + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(sums + i),
                     _mm_add_epi16(_mm_unpacklo_epi8(t, zero), _mm_unpacklo_epi8(b, zero)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(sums + i + 8),
                     _mm_add_epi16(_mm_unpackhi_epi8(t, zero), _mm_unpackhi_epi8(b, zero)));
  }
  for (; i < n; ++i) sums[i] = static_cast<uint16_t>(top[i] + bottom[i]);
}

// PairColumns writes one output row: byte 3x + c is (sums[6x + c] + sums[6x + 3 + c] + 2)
// / 4, the 2×2 block's rounded mean. Four pixels per SSE register (measured: 3× the
// one-byte-at-a-time loop, which GCC leaves scalar), the last w % 4 one at a time.
void PairColumns(const uint16_t* sums, int w, uint8_t* dst) {
  const __m128i two = _mm_set1_epi16(2);
  // Sums of columns j and j + 3 for j = 0, 1, 2, 6, 7, 8 in PA; 12, 13, 14 (from the
  // second register) also in PA; 18, 19, 20 in PC: pick them in output order.
  const __m128i pick_a = _mm_setr_epi8(0, 1, 2, 6, 7, 8, 12, 13, 14, -1, -1, -1, -1, -1, -1, -1);
  const __m128i pick_c = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 4, -1, -1, -1, -1);
  int x = 0;
  for (; x + 4 <= w; x += 4, sums += 24, dst += 12) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sums));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sums + 8));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sums + 16));
    const auto mean = [two](__m128i v) { return _mm_srli_epi16(_mm_add_epi16(v, two), 2); };
    const __m128i ta = mean(_mm_add_epi16(a, _mm_alignr_epi8(b, a, 6)));
    const __m128i tb = mean(_mm_add_epi16(b, _mm_alignr_epi8(c, b, 6)));
    const __m128i tc = mean(_mm_add_epi16(c, _mm_srli_si128(c, 6)));
    const __m128i bytes_ab = _mm_packus_epi16(ta, tb);  // Means of columns 0..15.
    const __m128i bytes_c = _mm_packus_epi16(tc, tc);   // Means of columns 16..23.
    const __m128i rgb = _mm_or_si128(_mm_shuffle_epi8(bytes_ab, pick_a),
                                     _mm_shuffle_epi8(bytes_c, pick_c));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), rgb);
    const int last4 = _mm_cvtsi128_si32(_mm_srli_si128(rgb, 8));
    std::memcpy(dst + 8, &last4, 4);
  }
  for (; x < w; ++x, sums += 6, dst += 3) {
    for (int c = 0; c < 3; ++c) dst[c] = static_cast<uint8_t>((sums[c] + sums[c + 3] + 2) >> 2);
  }
}

}  // namespace

int HalvingsFor(const DecodedImage& decoded, const RegionRequest& request) {
  if (decoded.format != PixelFormat::kRgb || decoded.image.channels != 3) return 0;
  if (request.target_width <= 0 || request.target_height <= 0) return 0;
  const double decoded_w = request.region.w * decoded.scale_x;
  const double decoded_h = request.region.h * decoded.scale_y;
  int halvings = 0;
  while (halvings < kMaxHalvings &&
         decoded_w / (2 << halvings) >= request.target_width &&
         decoded_h / (2 << halvings) >= request.target_height &&
         decoded.image.width >> (halvings + 1) >= 1 &&
         decoded.image.height >> (halvings + 1) >= 1) {
    ++halvings;
  }
  return halvings;
}

void HalveDecoded(const DecodedImage& in, DecodedImage* out) {
  const int in_w = in.image.width, in_h = in.image.height;
  const int w = (in_w + 1) / 2;
  const int h = (in_h + 1) / 2;
  out->image.Resize(w, h, 3);
  // Column sums of a row pair first, then each
  // output byte adds its two neighbouring pixels' sums for its channel. An odd last row
  // or column pairs with itself.
  thread_local std::vector<uint16_t> sums;
  sums.resize(static_cast<size_t>(6) * w);
  const size_t row_bytes = static_cast<size_t>(3) * in_w;
  for (int y = 0; y < h; ++y) {
    const uint8_t* top = in.image.pixels.data() + static_cast<size_t>(2 * y) * in.image.stride();
    const uint8_t* bottom = 2 * y + 1 < in_h ? top + in.image.stride() : top;
    SumRows(top, bottom, row_bytes, sums.data());
    if (in_w % 2 != 0) {
      for (int c = 0; c < 3; ++c) sums[row_bytes + c] = sums[row_bytes - 3 + c];
    }
    PairColumns(sums.data(), w, out->image.Row(y));
  }
  out->format = PixelFormat::kRgb;
  out->chroma = {};
  out->scale_x = in.scale_x / 2;
  out->scale_y = in.scale_y / 2;
  out->covered = RectF{in.covered.x, in.covered.y, w / out->scale_x, h / out->scale_y};
}

}  // namespace flowloader::decode
