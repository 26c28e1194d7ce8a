#include "stages/core/rng.h"

namespace flowloader {

uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

SampleRng::SampleRng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream) {
  // Chain the mixer so that each component changes every bit of the key.
  key_ = Mix64(Mix64(Mix64(Mix64(seed) ^ epoch) ^ index) ^ stream);
}

uint64_t SampleRng::NextU64() {
  // Counter mode: draw n is Mix64(key + n * golden), a pure function of (key, n).
  ++counter_;
  return Mix64(key_ + counter_ * 0xD1B54A32D192ED03ULL);
}

double SampleRng::Uniform(double lo, double hi) {
  // 53 random bits give every representable double in [0, 1) with a fixed step.
  const double unit = static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * unit;
}

int64_t SampleRng::UniformInt(int64_t lo, int64_t hi) {
  const uint64_t range = static_cast<uint64_t>(hi - lo);
  // Rejection sampling: discard the top partial copy of the range to avoid modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t r = NextU64();
  while (r >= limit) r = NextU64();
  return lo + static_cast<int64_t>(r % range);
}

bool SampleRng::Bernoulli(double p) { return Uniform(0.0, 1.0) < p; }

}  // namespace flowloader
