// rng.h: a counter-based random number generator keyed by (seed, epoch, sample index).
//
// Every random draw a stage makes for a sample comes from a SampleRng built from that
// sample's key, so results never depend on thread count, scheduling or completion order:
// the same (seed, epoch, index) always yields the same crop, flip and shuffle position.
//
// Thread-safety: a SampleRng is a small value owned by one thread; construct one per use.
#ifndef FLOWLOADER_STAGES_CORE_RNG_H_
#define FLOWLOADER_STAGES_CORE_RNG_H_

#include <cstdint>

namespace flowloader {

// SplitMix64 finalizer: a bijective 64-bit mixer (Steele, Lea, Flood 2014).
uint64_t Mix64(uint64_t x);

// SampleRng yields a stream of draws that is a pure function of (key..., draw number).
class SampleRng {
 public:
  // stream separates independent uses of the same sample (e.g. crop vs. shuffle).
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream = 0);

  // NextU64 returns the next 64 random bits.
  uint64_t NextU64();
  // Uniform returns a double in [lo, hi).
  double Uniform(double lo, double hi);
  // UniformInt returns an integer in [lo, hi) (hi > lo), without modulo bias.
  int64_t UniformInt(int64_t lo, int64_t hi);
  // Bernoulli returns true with probability p.
  bool Bernoulli(double p);

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_RNG_H_
