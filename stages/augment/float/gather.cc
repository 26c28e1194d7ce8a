// gather.cc: GatherPlanes (float_ops.h), the pixel moves of any dtype.
#include <cstring>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

// Contiguous: whether x_src is one run of consecutive source columns (a crop's row).
bool Contiguous(const int* x_src, int n) {
  if (x_src[0] < 0) return false;
  for (int x = 1; x < n; ++x) {
    if (x_src[x] != x_src[0] + x) return false;
  }
  return true;
}

// PaddedRun: whether x_src is `lead` fills (-1), one run of consecutive source columns,
// then fills to the end (a crop of a constant-padded image); *lead and *count say where.
bool PaddedRun(const int* x_src, int n, int* lead, int* count) {
  int a = 0;
  while (a < n && x_src[a] < 0) ++a;
  int b = n;
  while (b > a && x_src[b - 1] < 0) --b;
  if (b == a || (a == 0 && b == n)) return false;  // All fills, or no fill at all.
  if (!Contiguous(x_src + a, b - a)) return false;
  *lead = a;
  *count = b - a;
  return true;
}

// Reversed: whether x_src is one run of consecutive source columns backwards (a flip).
bool Reversed(const int* x_src, int n) {
  if (x_src[0] < 0 || x_src[0] - (n - 1) < 0) return false;
  for (int x = 1; x < n; ++x) {
    if (x_src[x] != x_src[0] - x) return false;
  }
  return true;
}

// GatherTyped moves elements of type E (the dtype's size: float is uint32_t's).
template <typename E>
void GatherTyped(const E* in, int channels, int in_h, int in_w, const int* x_src, int out_w,
                 const int* y_src, int out_h, const E* fill, E* out) {
  const bool run = Contiguous(x_src, out_w);
  const bool flip = !run && Reversed(x_src, out_w);
  bool fills = false;
  for (int x = 0; x < out_w; ++x) fills = fills || x_src[x] < 0;
  // A constant pad's rows: fills, one copy, fills (was a per-element select: a padded
  // 224² RandomCrop(200, padding=4) 0.95x torchvision's pad-then-view).
  int lead = 0, count = 0;
  const bool padded = !run && !flip && fills && PaddedRun(x_src, out_w, &lead, &count);
  const size_t in_plane = static_cast<size_t>(in_h) * in_w;
  for (int c = 0; c < channels; ++c) {
    const E* plane = in + in_plane * c;
    for (int y = 0; y < out_h; ++y, out += out_w) {
      if (y_src[y] < 0) {
        for (int x = 0; x < out_w; ++x) out[x] = fill[c];
        continue;
      }
      const E* row = plane + static_cast<size_t>(y_src[y]) * in_w;
      if (run) {
        std::memcpy(out, row + x_src[0], sizeof(E) * out_w);
        continue;
      }
      if (padded) {
        for (int x = 0; x < lead; ++x) out[x] = fill[c];
        std::memcpy(out + lead, row + x_src[lead], sizeof(E) * count);
        for (int x = lead + count; x < out_w; ++x) out[x] = fill[c];
        continue;
      }
      if (flip) {
        const E* end = row + x_src[0];
        for (int x = 0; x < out_w; ++x) out[x] = end[-x];
      } else if (!fills) {
        for (int x = 0; x < out_w; ++x) out[x] = row[x_src[x]];
      } else {
        for (int x = 0; x < out_w; ++x) out[x] = x_src[x] < 0 ? fill[c] : row[x_src[x]];
      }
    }
  }
}

}  // namespace

void GatherPlanes(const void* in, int channels, int in_h, int in_w, size_t elem_size,
                  const int* x_src, int out_w, const int* y_src, int out_h, const void* fill,
                  void* out) {
  if (out_w < 1 || out_h < 1) return;
  switch (elem_size) {
    case 1:
      return GatherTyped(static_cast<const uint8_t*>(in), channels, in_h, in_w, x_src, out_w,
                         y_src, out_h, static_cast<const uint8_t*>(fill),
                         static_cast<uint8_t*>(out));
    case 2:
      return GatherTyped(static_cast<const uint16_t*>(in), channels, in_h, in_w, x_src, out_w,
                         y_src, out_h, static_cast<const uint16_t*>(fill),
                         static_cast<uint16_t*>(out));
    case 4:
      return GatherTyped(static_cast<const uint32_t*>(in), channels, in_h, in_w, x_src, out_w,
                         y_src, out_h, static_cast<const uint32_t*>(fill),
                         static_cast<uint32_t*>(out));
    default:  // 8: the caller passes 1, 2, 4 or 8 only.
      return GatherTyped(static_cast<const uint64_t*>(in), channels, in_h, in_w, x_src, out_w,
                         y_src, out_h, static_cast<const uint64_t*>(fill),
                         static_cast<uint64_t*>(out));
  }
}

}  // namespace flowloader::augment::floats
