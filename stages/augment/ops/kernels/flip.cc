// flip.cc: F.hflip on interleaved RGB (PIL's FLIP_LEFT_RIGHT), in place: each row's
// 3-byte pixels reversed.
//
// Speed: blocks of 16 pixels (48 bytes, three 16-byte registers) are reversed with
// pshufb, taken pairwise from both ends of the row; SSSE3 is in the build's baseline
// (x86-64-v2), so no dispatch. What is left in the middle (< 16 pixels) is swapped a
// pixel at a time.
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "stages/augment/ops/kernels/geometry.h"

#if defined(__SSSE3__)
#include <tmmintrin.h>
#endif

namespace flowloader::augment::kernels {
namespace {

// SwapPixels reverses pixels [l, r] of `row` one pixel at a time.
void SwapPixels(uint8_t* row, int l, int r) {
  for (; l < r; ++l, --r) {
    std::swap(row[3 * l], row[3 * r]);
    std::swap(row[3 * l + 1], row[3 * r + 1]);
    std::swap(row[3 * l + 2], row[3 * r + 2]);
  }
}

#if defined(__SSSE3__)
constexpr int kBlockPixels = 16;

// ReverseMask is the pshufb mask that moves into output register `out` (bytes 16 * out
// ... of the reversed block) the bytes that input register `in` holds; other lanes are
// zeroed (0x80) and come from the other registers.
constexpr std::array<int8_t, 16> ReverseMask(int out, int in) {
  std::array<int8_t, 16> mask{};
  for (int j = 0; j < 16; ++j) {
    const int byte = 16 * out + j;  // In the reversed block.
    const int from = 3 * (kBlockPixels - 1 - byte / 3) + byte % 3;
    mask[j] = from / 16 == in ? static_cast<int8_t>(from % 16) : static_cast<int8_t>(0x80);
  }
  return mask;
}

// kMasks[out][in] for the three output and three input registers of a block.
constexpr std::array<std::array<std::array<int8_t, 16>, 3>, 3> kMasks = {{
    {ReverseMask(0, 0), ReverseMask(0, 1), ReverseMask(0, 2)},
    {ReverseMask(1, 0), ReverseMask(1, 1), ReverseMask(1, 2)},
    {ReverseMask(2, 0), ReverseMask(2, 1), ReverseMask(2, 2)},
}};

// Block is 16 pixels in three registers.
struct Block {
  __m128i v[3];
};

// LoadBlock reads the 16 pixels at p.
Block LoadBlock(const uint8_t* p) {
  return {{_mm_loadu_si128(reinterpret_cast<const __m128i* >(p)),
           _mm_loadu_si128(reinterpret_cast<const __m128i* >(p + 16)),
           _mm_loadu_si128(reinterpret_cast<const __m128i* >(p + 32))}};
}

// Takes: whether output register `out` of a reversed block has bytes from input register
// `in` (out 0 from in 1 and 2, out 1 from all three, out 2 from in 0 and 1).
constexpr bool Takes(int out, int in) {
  for (int8_t m : kMasks[out][in]) {
    if (m >= 0) return true;
  }
  return false;
}
static_assert(!Takes(0, 0) && !Takes(2, 2), "StoreReversed skips these pairs");

// Pick is input register `in`'s share of output register `out`.
__m128i Pick(const Block& b, int out, int in) {
  const __m128i mask = _mm_loadu_si128(reinterpret_cast<const __m128i* >(kMasks[out][in].data()));
  return _mm_shuffle_epi8(b.v[in], mask);
}

// StoreReversed writes block `b` with its pixel order reversed at `p`: each output
// register is the OR of the shuffles of the input registers it takes bytes from.
void StoreReversed(const Block& b, uint8_t* p) {
  const __m128i out0 = _mm_or_si128(Pick(b, 0, 1), Pick(b, 0, 2));
  const __m128i out1 = _mm_or_si128(_mm_or_si128(Pick(b, 1, 0), Pick(b, 1, 1)), Pick(b, 1, 2));
  const __m128i out2 = _mm_or_si128(Pick(b, 2, 0), Pick(b, 2, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i* >(p), out0);
  _mm_storeu_si128(reinterpret_cast<__m128i* >(p + 16), out1);
  _mm_storeu_si128(reinterpret_cast<__m128i* >(p + 32), out2);
}

// SwapBlocks puts the first 16 pixels of [l, r) reversed at its end and the last 16
// reversed at its start; both are loaded before either is stored, so the two may
// overlap (16 <= r - l < 32: the overlap gets the same bytes from each).
void SwapBlocks(uint8_t* row, int l, int r) {
  const Block left = LoadBlock(row + 3 * l);
  const Block right = LoadBlock(row + 3 * (r - kBlockPixels));
  StoreReversed(right, row + 3 * l);
  StoreReversed(left, row + 3 * (r - kBlockPixels));
}

// ReverseBlocks reverses what it can of pixels [l, r) with whole blocks, from both ends
// inwards, and returns the [l, r) still to reverse (< 16 pixels).
std::pair<int, int> ReverseBlocks(uint8_t* row, int l, int r) {
  for (; r - l >= 2 * kBlockPixels; l += kBlockPixels, r -= kBlockPixels) {
    SwapBlocks(row, l, r);
  }
  if (r - l >= kBlockPixels) {
    SwapBlocks(row, l, r);
    return {l, l};
  }
  return {l, r};
}
#endif

}  // namespace

void HorizontalFlip(Image& img) {
  for (int y = 0; y < img.height; ++y) {
    uint8_t* row = img.Row(y);
    int l = 0, r = img.width;
#if defined(__SSSE3__)
    std::tie(l, r) = ReverseBlocks(row, l, r);
#endif
    SwapPixels(row, l, r - 1);
  }
}

}  // namespace flowloader::augment::kernels
