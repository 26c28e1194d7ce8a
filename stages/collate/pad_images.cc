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

// MoveImage writes the compact image at `src` (rows of src.run bytes) into the padded
// layout at `dst`, zeroing the padding. Rows go from the last to the first: when dst
// starts at src (the first row of the batch) every destination lies at or after its
// source, so a row never overwrites a source row still to be moved.
void MoveImage(const uint8_t* src, const Layout& s, uint8_t* dst, const Layout& d) {
  for (int64_t p = d.planes; p-- > 0;) {
    uint8_t* plane = dst + static_cast<size_t>(p) * d.plane;
    for (int64_t y = d.rows; y-- > 0;) {
      uint8_t* row = plane + static_cast<size_t>(y) * d.pitch;
      if (y >= s.rows) {
        std::memset(row, 0, d.pitch);
        continue;
      }
      std::memmove(row, src + static_cast<size_t>(p) * s.plane + static_cast<size_t>(y) * s.pitch,
                   s.run);
      std::memset(row + s.run, 0, d.pitch - s.run);
    }
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
  // A row whose padded place overlaps its own slot but starts before it (rows after the
  // first, when the padded row is smaller than the slot) goes through a copy.
  thread_local std::vector<uint8_t> copy;
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
    uint8_t* src = base + static_cast<size_t>(r) * images.slot_bytes;
    uint8_t* dst = base + static_cast<size_t>(r) * row_bytes;
    if (dst == src && h == hb && w == wb) continue;  // Already in place: nothing to pad.
    if (dst != src) {
      const size_t bytes = static_cast<size_t>(h * w * c) * e;
      copy.resize(bytes);
      std::memcpy(copy.data(), src, bytes);
      src = copy.data();
    }
    MoveImage(src, s, dst, d);
  }
  if (images.chw) return {n, c, hb, wb};
  return {n, hb, wb, c};
}

}  // namespace flowloader
