// gamma.cc: AdjustGamma (float_ops.h), (gain * img ** gamma).clamp(0, 1): torch's pow of
// a tensor by a scalar takes the exact forms for 0.5, 2, 3, -0.5, -1 and -2 (sqrt,
// products, reciprocals), std::pow otherwise.
#include <cmath>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

template <typename T>
T Pow(T x, double e) {
  if (e == 2) return x * x;
  if (e == 3) return x * x * x;
  if (e == 0.5) return std::sqrt(x);
  if (e == -0.5) return T(1) / std::sqrt(x);
  if (e == -1) return T(1) / x;
  if (e == -2) return T(1) / (x * x);
  return std::pow(x, static_cast<T>(e));
}

}  // namespace

template <typename T>
void AdjustGamma(const Chw<const T>& in, const Chw<T>& out, double gamma, double gain) {
  const T g = static_cast<T>(gain);
  const size_t n = in.Size();
  for (size_t i = 0; i < n; ++i) out.data[i] = Clamp01(T(g * Pow(in.data[i], gamma)));
}

template void AdjustGamma<float>(const Chw<const float>&, const Chw<float>&, double, double);
template void AdjustGamma<double>(const Chw<const double>&, const Chw<double>&, double, double);

}  // namespace flowloader::augment::floats
