// resize_bench: times Transform::Plan + Apply on a synthetic 450×380 decoded image (the
// ImageNet-like size in shared/FIELD-NOTES.md), for train and eval, float CHW and uint8
// HWC, and prints microseconds per image. Not a test: run it by hand on a quiet machine.
//   bazel run //stages/augment:resize_bench -- [images_per_round] [rounds]
//
// Thread-safety: single-threaded program.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "stages/augment/transform.h"

namespace {

using flowloader::SampleRng;
using flowloader::augment::Layout;
using flowloader::augment::Mode;
using flowloader::augment::Transform;
using flowloader::augment::TransformOptions;

flowloader::decode::DecodedImage MakeImage(int w, int h) {
  flowloader::decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  // A deterministic texture; pixel values do not change the work done.
  uint32_t state = 12345;
  for (auto& p : d.image.pixels) {
    state = state * 1664525u + 1013904223u;
    p = static_cast<uint8_t>(state >> 24);
  }
  d.covered = flowloader::RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

// ThreadSeconds is this thread's CPU time: on a shared machine, unlike wall time, it
// leaves out the time other processes hold the core.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double min_us;
  double median_us;
};

// TimeOne runs `repeats` rounds of `iterations` images (a different crop each, the same
// crops every round) and returns the per-image CPU time of the fastest and the median
// round: the minimum is the cost, the median shows the noise.
Timing TimeOne(Mode mode, Layout layout, int iterations, int repeats,
               const flowloader::decode::DecodedImage& img) {
  TransformOptions o;
  o.mode = mode;
  o.layout = layout;
  auto t = Transform::Create(o);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<unsigned char> out((*t)->OutputBytes());
  // Warm-up: thread-local scratch reaches its final size.
  for (int i = 0; i < 50; ++i) {
    SampleRng rng(1, 0, i);
    auto plan = (*t)->Plan(img.image.width, img.image.height, rng);
    (void)(*t)->Apply(img, plan, out.data());
  }
  std::vector<double> rounds;
  for (int r = 0; r < repeats; ++r) {
    const double start = ThreadSeconds();
    for (int i = 0; i < iterations; ++i) {
      SampleRng rng(7, 0, i);
      auto plan = (*t)->Plan(img.image.width, img.image.height, rng);
      const absl::Status s = (*t)->Apply(img, plan, out.data());
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        std::exit(1);
      }
    }
    rounds.push_back((ThreadSeconds() - start) * 1e6 / iterations);
  }
  std::sort(rounds.begin(), rounds.end());
  return Timing{rounds.front(), rounds[rounds.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  const auto img = MakeImage(450, 380);
  std::printf("450x380 -> 224x224 (Plan + Apply), thread CPU time, %d rounds of %d images\n",
              repeats, iterations);
  std::printf("%-36s %10s %10s\n", "", "min µs", "median µs");
  // A dataset stored pre-resized to a 256-pixel shorter side makes eval a pure crop.
  const auto small = MakeImage(341, 256);
  struct Case {
    const char* name;
    Mode mode;
    Layout layout;
    const flowloader::decode::DecodedImage* img;
  };
  const Case cases[] = {{"train float CHW", Mode::kTrain, Layout::kFloatCHW, &img},
                        {"train uint8 HWC", Mode::kTrain, Layout::kUint8HWC, &img},
                        {"eval  float CHW", Mode::kEval, Layout::kFloatCHW, &img},
                        {"eval  uint8 HWC", Mode::kEval, Layout::kUint8HWC, &img},
                        {"eval  float CHW 341x256 (no resize)", Mode::kEval,
                         Layout::kFloatCHW, &small}};
  for (const Case& c : cases) {
    const Timing t = TimeOne(c.mode, c.layout, iterations, repeats, *c.img);
    std::printf("%-36s %10.1f %10.1f\n", c.name, t.min_us, t.median_us);
  }
  return 0;
}
