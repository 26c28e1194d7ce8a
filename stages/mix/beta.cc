// beta.cc: Normal, Gamma and Beta draws (see beta.h).
#include "stages/mix/beta.h"

#include <cmath>

namespace flowloader {
namespace mix {

double Normal(SampleRng& rng) {
  // 1 - U is in (0, 1], so the log is finite.
  const double u1 = 1.0 - rng.Uniform(0.0, 1.0);
  const double u2 = rng.Uniform(0.0, 1.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Gamma(double shape, SampleRng& rng) {
  if (shape < 1.0) {
    // Gamma(α) = Gamma(α + 1) · U^(1/α) (Marsaglia and Tsang, section 6).
    const double u = 1.0 - rng.Uniform(0.0, 1.0);
    return Gamma(shape + 1.0, rng) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = Normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.Uniform(0.0, 1.0);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double Beta(double a, double b, SampleRng& rng) {
  const double x = Gamma(a, rng);
  const double y = Gamma(b, rng);
  const double sum = x + y;
  // Both underflow only for tiny shapes; Beta(α, α) is then a coin between 0 and 1.
  if (sum <= 0.0) return rng.Bernoulli(a / (a + b)) ? 1.0 : 0.0;
  return x / sum;
}

}  // namespace mix
}  // namespace flowloader
