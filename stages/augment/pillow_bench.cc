// pillow_bench: PillowResample's time per crop (thread CPU time), plain passes against
// the AVX2 ones and the best the CPU has, for DINO's bicubic heads (a 366² crop to 224²,
// a 207² crop to 96²) and timm's (a 300x280 crop to 224²):
//   bazel run -c opt //stages/augment:pillow_bench -- [rounds [simd]]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"

namespace flowloader::augment {
namespace {

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void Time(const Image& img, int side_w, int side_h, int n, int rounds, bool simd_only) {
  const ImageView crop{img.pixels.data() + 20 * img.stride() + 30 * 3, side_w, side_h, 3,
                       img.stride()};
  const RectF box{0, 0, static_cast<double>(side_w), static_cast<double>(side_h)};
  Image out;
  // Plain passes, AVX2 only, VNNI's vpdpwssd kernels, and the best this CPU has (the
  // vpdpbusd kernel where present).
  const char* names[] = {"plain", "AVX2", "dpwssd", "best"};
  for (int mode = simd_only ? 1 : 0; mode < 4; ++mode) {
    internal::SetPillowScalarForTesting(mode == 0);
    internal::SetPillowNoVnniForTesting(mode == 1);
    internal::SetPillowNoBusdForTesting(mode == 2);
    internal::PillowResample(crop, box, n, n, Interpolation::kBicubic, true, &out);
    const double t0 = ThreadSeconds();
    for (int r = 0; r < rounds; ++r) {
      internal::PillowResample(crop, box, n, n, Interpolation::kBicubic, r % 2, &out);
    }
    std::printf("%dx%d -> %d² bicubic, %-6s %8.1f us\n", side_w, side_h, n, names[mode],
                (ThreadSeconds() - t0) * 1e6 / rounds);
  }
  internal::SetPillowNoVnniForTesting(false);
  internal::SetPillowNoBusdForTesting(false);
  internal::SetPillowScalarForTesting(false);
}

}  // namespace
}  // namespace flowloader::augment

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  // A second argument "simd" skips the plain passes (for perf).
  const bool simd_only = argc > 2 && std::string(argv[2]) == "simd";
  flowloader::Image img;
  img.Resize(500, 420, 3);
  std::mt19937 rng(1);
  for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(rng());
  flowloader::augment::Time(img, 366, 366, 224, rounds, simd_only);
  flowloader::augment::Time(img, 207, 207, 96, rounds, simd_only);
  flowloader::augment::Time(img, 300, 280, 224, rounds, simd_only);
  return 0;
}
