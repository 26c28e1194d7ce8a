// pad_images.cc: laying out a batch of differently sized images as one padded tensor.
#include "stages/collate/pad_images.h"

#include <algorithm>
#include <cstring>

namespace flowloader {

int64_t PaddedSide(const std::vector<int64_t>& sides, int64_t divisibility) {
  int64_t largest = 0;
  for (int64_t s : sides) largest = std::max(largest, s);
  if (divisibility <= 1 || largest == 0) return largest;
  return (largest + divisibility - 1) / divisibility * divisibility;
}

namespace {

// Layout is one image's rows: `rows` runs of `run` bytes, `pitch` bytes apart, in
// `planes` planes of `plane` bytes (CHW: a plane per channel; HWC: one plane).
struct Layout {
  int64_t planes, rows;
  size_t run, pitch, plane;
};

// MoveImage writes the compact image at `src` (its rows of s.run bytes) into the padded
// layout at `dst` in place, without a copy, zeroing the padding. Row k's shift
// (dst_k - src_k) never decreases with k (each padded row and plane is at least as long
// as the compact one), so the rows that move up (dst_k <= src_k) are a prefix: they go
// first to last, the rest last to first, and no row overwrites a source still to be
// moved; the rows below the image are zeroed once every row has moved.
void MoveImage(uint8_t* src, const Layout& s, uint8_t* dst, const Layout& d) {
  const int64_t rows = s.planes * s.rows;  // Row k is plane k / s.rows, row k % s.rows.
  const auto src_at = [&](int64_t k) {
    return src + static_cast<size_t>(k / s.rows) * s.plane +
           static_cast<size_t>(k % s.rows) * s.pitch;
  };
  const auto dst_at = [&](int64_t k) {
    return dst + static_cast<size_t>(k / s.rows) * d.plane +
           static_cast<size_t>(k % s.rows) * d.pitch;
  };
  const auto move = [&](int64_t k) {
    uint8_t* to = dst_at(k);
    if (to != src_at(k)) std::memmove(to, src_at(k), s.run);
    std::memset(to + s.run, 0, d.pitch - s.run);
  };
  int64_t up = 0;
  while (up < rows && dst_at(up) <= src_at(up)) ++up;
  for (int64_t k = rows; k-- > up;) move(k);
  for (int64_t k = 0; k < up; ++k) move(k);
  for (int64_t p = 0; p < d.planes; ++p) {
    std::memset(
        dst + static_cast<size_t>(p) * d.plane + static_cast<size_t>(s.rows) * d.pitch, 0,
        static_cast<size_t>(d.rows - s.rows) * d.pitch);
  }
}

}  // namespace

std::vector<int64_t> PadImages(const PaddedImages& images, int64_t divisibility) {
  const int64_t n = static_cast<int64_t>(images.sizes.size() / 2);
  std::vector<int64_t> heights, widths;
  for (int64_t r = 0; r < n; ++r) {
    heights.push_back(images.sizes[2 * r]);
    widths.push_back(images.sizes[2 * r + 1]);
  }
  const int64_t hb = PaddedSide(heights, divisibility), wb = PaddedSide(widths, divisibility);
  const int64_t c = images.channels;
  const size_t e = images.elem_bytes;
  const size_t row_bytes = static_cast<size_t>(hb * wb * c) * e;
  auto* base = static_cast<uint8_t*>(images.data);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t h = heights[r], w = widths[r];
    Layout s, d;
    if (images.chw) {
      s = {c, h, static_cast<size_t>(w) * e, static_cast<size_t>(w) * e,
           static_cast<size_t>(h * w) * e};
      d = {c, hb, s.run, static_cast<size_t>(wb) * e, static_cast<size_t>(hb * wb) * e};
    } else {
      s = {1, h, static_cast<size_t>(w * c) * e, static_cast<size_t>(w * c) * e, 0};
      d = {1, hb, s.run, static_cast<size_t>(wb * c) * e, 0};
    }
    // Row r's padded place ends before row r + 1's slot starts (row_bytes <= slot_bytes),
    // so only its own source can lie under it.
    uint8_t* src = base + static_cast<size_t>(r) * images.slot_bytes;
    uint8_t* dst = base + static_cast<size_t>(r) * row_bytes;
    if (dst == src && h == hb && w == wb) continue;  // Already in place: nothing to pad.
    MoveImage(src, s, dst, d);
  }
  if (images.chw) return {n, c, hb, wb};
  return {n, hb, wb, c};
}

}  // namespace flowloader
