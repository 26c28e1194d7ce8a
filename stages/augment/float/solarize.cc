// solarize.cc: Solarize (float_ops.h), torch.where(img >= threshold, 1 - img, img), the
// threshold compared as T (a Python float against a T tensor).
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void Solarize(const Chw<const T>& in, const Chw<T>& out, double threshold) {
  const T t = static_cast<T>(threshold);
  const size_t n = in.Size();
  for (size_t i = 0; i < n; ++i) {
    const T v = in.data[i];
    out.data[i] = v >= t ? T(1) - v : v;
  }
}

template void Solarize<float>(const Chw<const float>&, const Chw<float>&, double);
template void Solarize<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
