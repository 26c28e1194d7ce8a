// label_plane.cc: nearest-neighbour moves of semantic label maps (label_plane.h).
#include "stages/augment/ops/kernels/label_plane.h"

#include <algorithm>
#include <cstring>

namespace flowloader::augment::kernels {
namespace {

// ScaleAxis fills out[k] (k < out_size) with the source index ImagingScaleAffine picks
// for output k when `in_size` pixels become `out_size`, shifted by `offset`, or -1 where
// it falls outside [0, limit). PIL accumulates xo += a0 from a0 / 2 in double and
// truncates (COORD); repeated addition is kept so the rounding is PIL's.
void ScaleAxis(int in_size, int out_size, int offset, int limit, std::vector<int>* out) {
  out->resize(static_cast<size_t>(out_size));
  const double a = static_cast<double>(in_size) / out_size;
  double o = a * 0.5;
  for (int k = 0; k < out_size; ++k) {
    int i = o < 0.0 ? -1 : static_cast<int>(o);
    // Inside the crop (PIL clips to the crop's own size), then into the map.
    i = i >= 0 && i < in_size ? i + offset : -1;
    (*out)[k] = i >= 0 && i < limit ? i : -1;
    o += a;
  }
}

}  // namespace

void LabelHorizontalFlip(Image& labels) {
  for (int y = 0; y < labels.height; ++y) {
    uint8_t* row = labels.Row(y);
    std::reverse(row, row + labels.width);
  }
}

void LabelVerticalFlip(Image& labels) {
  const size_t stride = labels.stride();
  for (int top = 0, bottom = labels.height - 1; top < bottom; ++top, --bottom) {
    std::swap_ranges(labels.Row(top), labels.Row(top) + stride, labels.Row(bottom));
  }
}

void LabelGather(const Image& src, const std::vector<int>& map_x, const std::vector<int>& map_y,
                 uint8_t fill, Image* dst) {
  const int width = static_cast<int>(map_x.size());
  const int height = static_cast<int>(map_y.size());
  dst->Resize(width, height, 1);
  for (int oy = 0; oy < height; ++oy) {
    uint8_t* out = dst->Row(oy);
    const int sy = map_y[oy];
    if (sy < 0) {
      std::memset(out, fill, static_cast<size_t>(width));
      continue;
    }
    // An enlarging resize repeats source rows: a repeated row is the one above it,
    // copied (the segmentation recipe's 512 px crops repeat about half their rows;
    // perf put this gather at 7% of that recipe's time before).
    if (oy > 0 && sy == map_y[oy - 1]) {
      std::memcpy(out, dst->Row(oy - 1), static_cast<size_t>(width));
      continue;
    }
    const uint8_t* in = src.pixels.data() + static_cast<size_t>(sy) * src.stride();
    for (int ox = 0; ox < width; ++ox) out[ox] = map_x[ox] >= 0 ? in[map_x[ox]] : fill;
  }
}

void LabelResizedCrop(const Image& src, int top, int left, int height, int width,
                      int out_height, int out_width, uint8_t fill, Image* dst, bool mirror) {
  thread_local std::vector<int> map_x, map_y;
  ScaleAxis(width, out_width, left, src.width, &map_x);
  if (mirror) std::reverse(map_x.begin(), map_x.end());
  ScaleAxis(height, out_height, top, src.height, &map_y);
  LabelGather(src, map_x, map_y, fill, dst);
}

}  // namespace flowloader::augment::kernels
