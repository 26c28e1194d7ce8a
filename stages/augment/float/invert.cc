// invert.cc: Invert (float_ops.h), torchvision's `bound - img` with bound 1.
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void Invert(const Chw<const T>& in, const Chw<T>& out) {
  const size_t n = in.Size();
  for (size_t i = 0; i < n; ++i) out.data[i] = T(1) - in.data[i];
}

template void Invert<float>(const Chw<const float>&, const Chw<float>&);
template void Invert<double>(const Chw<const double>&, const Chw<double>&);

}  // namespace flowloader::augment::floats
