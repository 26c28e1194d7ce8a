// beta.h: Gamma and Beta draws from a SampleRng, for MixUp/CutMix's λ ~ Beta(α, α).
//
// numpy's np.random.beta (what timm calls) draws Gamma(a) / (Gamma(a) + Gamma(b)); the
// Gamma draws here are Marsaglia and Tsang's method (ACM TOMS 26(3), 2000), with the
// α < 1 boost Gamma(α) = Gamma(α + 1) · U^(1/α). Same distribution, not numpy's stream.
//
// Thread-safety: pure functions of the generator passed in.
#ifndef FLOWLOADER_STAGES_MIX_BETA_H_
#define FLOWLOADER_STAGES_MIX_BETA_H_

#include "stages/core/rng.h"

namespace flowloader {
namespace mix {

// Normal is a standard normal draw (Box–Muller, one of the pair).
double Normal(SampleRng& rng);
// Gamma is a Gamma(shape, 1) draw; shape > 0.
double Gamma(double shape, SampleRng& rng);
// Beta is a Beta(a, b) draw in [0, 1]; a, b > 0.
double Beta(double a, double b, SampleRng& rng);

}  // namespace mix
}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_MIX_BETA_H_
