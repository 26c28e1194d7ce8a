// brightness.cc: AdjustBrightness (float_ops.h), _blend(img, zeros_like(img), factor).
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void AdjustBrightness(const Chw<const T>& in, const Chw<T>& out, double factor) {
  const Blend<T> blend(factor);
  const size_t n = in.Size();
  for (size_t i = 0; i < n; ++i) out.data[i] = blend(in.data[i], T(0));
}

template void AdjustBrightness<float>(const Chw<const float>&, const Chw<float>&, double);
template void AdjustBrightness<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
