// autocontrast.cc: Autocontrast (float_ops.h): per channel, scale = 1 / (max - min); a
// channel whose scale is not finite (flat) gets min 0 and scale 1; then
// ((img - min) * scale).clamp(0, 1).
#include <algorithm>
#include <cmath>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void Autocontrast(const Chw<const T>& in, const Chw<T>& out) {
  const size_t plane = in.Plane();
  for (int c = 0; c < in.channels; ++c) {
    const T* src = in.Channel(c);
    T* dst = out.Channel(c);
    T lo = src[0], hi = src[0];
    for (size_t i = 1; i < plane; ++i) {
      lo = std::min(lo, src[i]);
      hi = std::max(hi, src[i]);
    }
    T scale = T(1) / T(hi - lo);
    if (!std::isfinite(scale)) {
      lo = T(0);
      scale = T(1);
    }
    for (size_t i = 0; i < plane; ++i) dst[i] = Clamp01(T(T(src[i] - lo) * scale));
  }
}

template void Autocontrast<float>(const Chw<const float>&, const Chw<float>&);
template void Autocontrast<double>(const Chw<const double>&, const Chw<double>&);

}  // namespace flowloader::augment::floats
