// grayscale.cc: Grayscale (float_ops.h), rgb_to_grayscale's
// (0.2989 * r + 0.587 * g + 0.114 * b) with each product and sum rounded to T.
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {

template <typename T>
void Grayscale(const Chw<const T>& in, T* out) {
  const T* r = in.Channel(0);
  const T* g = in.Channel(1);
  const T* b = in.Channel(2);
  const T kr = static_cast<T>(0.2989), kg = static_cast<T>(0.587), kb = static_cast<T>(0.114);
  const size_t n = in.Plane();
  for (size_t i = 0; i < n; ++i) out[i] = T(T(kr * r[i]) + T(kg * g[i])) + T(kb * b[i]);
}

template void Grayscale<float>(const Chw<const float>&, float*);
template void Grayscale<double>(const Chw<const double>&, double*);

}  // namespace flowloader::augment::floats
