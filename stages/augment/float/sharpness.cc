// sharpness.cc: AdjustSharpness (float_ops.h): the degenerate image is the input with
// its inside replaced by the 3x3 smoothing (kernel ones with 5 at the centre, divided by
// its sum 13, in T), then _blend(img, degenerate, factor) over every pixel.
#include <cstring>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void AdjustSharpness(const Chw<const T>& in, const Chw<T>& out, double factor) {
  if (in.height <= 2 || in.width <= 2) {
    std::memcpy(out.data, in.data, sizeof(T) * in.Size());
    return;
  }
  const T k1 = T(1) / T(13), k5 = T(5) / T(13);
  const Blend<T> blend(factor);
  const int w = in.width;
  for (int c = 0; c < in.channels; ++c) {
    for (int y = 0; y < in.height; ++y) {
      const T* row = in.Row(c, y);
      T* dst = out.Row(c, y);
      if (y == 0 || y == in.height - 1) {
        for (int x = 0; x < w; ++x) dst[x] = blend(row[x], row[x]);
        continue;
      }
      const T* up = row - w;
      const T* down = row + w;
      dst[0] = blend(row[0], row[0]);
      dst[w - 1] = blend(row[w - 1], row[w - 1]);
      for (int x = 1; x < w - 1; ++x) {
        const T around = up[x - 1] + up[x] + up[x + 1] + row[x - 1] + row[x + 1] + down[x - 1] +
                         down[x] + down[x + 1];
        dst[x] = blend(row[x], T(around * k1) + T(row[x] * k5));
      }
    }
  }
}

template void AdjustSharpness<float>(const Chw<const float>&, const Chw<float>&, double);
template void AdjustSharpness<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
