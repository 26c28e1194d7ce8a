// colour_bench: time per 224 x 224 image of each colour kernel (kernels/colour.h) and of
// color_jitter with DINO's arguments, single-threaded (thread CPU time), on a photo-like synthetic
// image:
//   bazel run //stages/augment:colour_bench -- [rounds]
// Compare with PIL: stages/augment/ops/testdata/colour_bench_pil.py does the same calls.
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/kernels/colour_hue.h"
#include "stages/augment/ops/op.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"

namespace flowloader::augment {
namespace {

Image Photo(int w, int h) {
  Image img;
  img.Resize(w, h, 3);
  uint64_t state = 7;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const int noise = static_cast<int>(state >> 59) - 16;
      const double v[3] = {127 + 120 * std::sin(x / 9.0 + y / 23.0), 127 + 120 * std::cos(y / 7.0),
                           std::fmod(x * 255.0 / w + y * 60.0 / h, 256.0)};
      for (int c = 0; c < 3; ++c) {
        const int q = static_cast<int>(v[c]) + noise;
        img.Row(y)[3 * x + c] = static_cast<uint8_t>(q < 0 ? 0 : q > 255 ? 255 : q);
      }
    }
  }
  return img;
}

// ThreadSeconds is this thread's CPU time: on a shared machine it counts only the time
// the kernel ran, not the time other processes had the core.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void Time(const std::string& name, int rounds, const std::function<void(Image&)>& fn) {
  const Image src = Photo(224, 224);
  Image img = src;
  fn(img);  // Warm: tables, row buffers.
  double total = 0;
  for (int r = 0; r < rounds; ++r) {
    img.pixels = src.pixels;  // Same size: no allocation.
    const double t0 = ThreadSeconds();
    fn(img);
    total += (ThreadSeconds() - t0) * 1e6;
  }
  std::printf("%-32s %8.1f us\n", name.c_str(), total / rounds);
}

}  // namespace
}  // namespace flowloader::augment

int main(int argc, char** argv) {
  using namespace flowloader::augment;
  using flowloader::Image;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
  Time("adjust_brightness(1.3)", rounds, [](Image& i) { kernels::AdjustBrightness(i, 1.3); });
  Time("adjust_contrast(0.7)", rounds, [](Image& i) { kernels::AdjustContrast(i, 0.7); });
  Time("adjust_saturation(1.15)", rounds, [](Image& i) { kernels::AdjustSaturation(i, 1.15); });
  Time("adjust_hue(0.08)", rounds, [](Image& i) { kernels::AdjustHue(i, 0.08); });
  // Each of adjust_hue's paths that this CPU runs (AdjustHue takes the widest).
  using kernels::internal::HuePath;
  for (const auto& [path, name] :
       {std::pair{HuePath::kAvx512, "avx512"}, std::pair{HuePath::kAvx2, "avx2"},
        std::pair{HuePath::kPortable, "portable"}}) {
    if (!kernels::internal::HuePathRuns(path)) continue;
    Time(std::string("  adjust_hue(0.08), ") + name, rounds,
         [path = path](Image& i) { kernels::internal::AdjustHueOn(path, i, 0.08); });
  }
  Time("adjust_sharpness(2)", rounds, [](Image& i) { kernels::AdjustSharpness(i, 2.0); });
  Time("grayscale", rounds, [](Image& i) { kernels::Grayscale(i); });
  Time("posterize(4)", rounds, [](Image& i) { kernels::Posterize(i, 4); });
  Time("solarize(128)", rounds, [](Image& i) { kernels::Solarize(i, 128); });
  Time("autocontrast", rounds, [](Image& i) { kernels::Autocontrast(i); });
  Time("equalize", rounds, [](Image& i) { kernels::Equalize(i); });
  Time("invert", rounds, [](Image& i) { kernels::Invert(i); });
  // color_jitter as DINO configures it, a fresh draw per round (Draw + Apply).
  auto op = OpRegistry::Global().Create(
      "color_jitter",
      {{"brightness", "0.4"}, {"contrast", "0.4"}, {"saturation", "0.2"}, {"hue", "0.1"}});
  if (!op.ok()) return 1;
  uint64_t index = 0;
  Image spare;
  Time("color_jitter(0.4, 0.4, 0.2, 0.1)", rounds, [&](Image& i) {
    flowloader::SampleRng rng(1, 0, index++, 3);
    OpParams params;
    (*op)->Draw(i.width, i.height, rng, &params);
    OpImage image;
    image.rgb = &i;
    image.spare = &spare;
    (void)(*op)->Apply(params, image);
  });
  return 0;
}
