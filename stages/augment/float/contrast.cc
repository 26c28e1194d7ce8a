// contrast.cc: AdjustContrast (float_ops.h): _blend(img, mean), the mean of
// rgb_to_grayscale(img) for 3 channels, of img itself for 1 (summed in double, then T).
#include <vector>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void AdjustContrast(const Chw<const T>& in, const Chw<T>& out, double factor) {
  const size_t plane = in.Plane();
  double sum = 0;
  if (in.channels == 3) {
    std::vector<T> gray(plane);
    Grayscale(in, gray.data());
    for (T v : gray) sum += v;
  } else {
    for (size_t i = 0; i < in.Size(); ++i) sum += in.data[i];
  }
  const T mean = static_cast<T>(sum / static_cast<double>(in.channels == 3 ? plane : in.Size()));
  const Blend<T> blend(factor);
  const size_t n = in.Size();
  for (size_t i = 0; i < n; ++i) out.data[i] = blend(in.data[i], mean);
}

template void AdjustContrast<float>(const Chw<const float>&, const Chw<float>&, double);
template void AdjustContrast<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
