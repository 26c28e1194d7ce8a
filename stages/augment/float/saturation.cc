// saturation.cc: AdjustSaturation (float_ops.h): _blend(img, rgb_to_grayscale(img)),
// the grayscale plane broadcast over the three channels.
#include <vector>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void AdjustSaturation(const Chw<const T>& in, const Chw<T>& out, double factor) {
  const size_t plane = in.Plane();
  std::vector<T> gray(plane);
  Grayscale(in, gray.data());
  const Blend<T> blend(factor);
  for (int c = 0; c < in.channels; ++c) {
    const T* src = in.Channel(c);
    T* dst = out.Channel(c);
    for (size_t i = 0; i < plane; ++i) dst[i] = blend(src[i], gray[i]);
  }
}

template void AdjustSaturation<float>(const Chw<const float>&, const Chw<float>&, double);
template void AdjustSaturation<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
