// resize_bench: times Transform::Plan + Apply on a synthetic 450×380 decoded image (the
// ImageNet-like size in shared/FIELD-NOTES.md), for train and eval, float CHW and uint8
// HWC, as RGB and as 4:2:0 Y, Cb, Cr planes (ResampleYcc), with each kernel set this CPU runs (SSE4.1, AVX2, AVX-512; * marks the default),
// and prints microseconds per image. Not a test: run it by hand on a quiet machine.
//   bazel run //stages/augment:resize_bench -- [images_per_round] [rounds] [slots]
// `slots` 64-byte aligned output buffers are written in turn: the default 64 is a batch
// of slots, as the loader writes them (out of cache); 1 keeps the output in cache.
//
// Thread-safety: single-threaded program.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "stages/augment/internal/resample.h"
#include "stages/augment/transform.h"

namespace {

using flowloader::SampleRng;
using flowloader::augment::Layout;
using flowloader::augment::Mode;
using flowloader::augment::Transform;
using flowloader::augment::TransformOptions;
using flowloader::augment::internal::ResampleIsa;
using flowloader::augment::internal::ResampleIsaSupported;
using flowloader::augment::internal::SetResampleIsaForTesting;

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

// MakePlanes is MakeImage as 4:2:0 Y, Cb, Cr planes (decode::PixelFormat::kYcc), what
// the decoder hands over where Plan asks for it.
flowloader::decode::DecodedImage MakePlanes(int w, int h) {
  flowloader::decode::DecodedImage d = MakeImage(w, h);
  d.format = flowloader::decode::PixelFormat::kYcc;
  d.chroma.step_x = 2;
  d.chroma.step_y = 2;
  d.chroma.width = (w + 1) / 2;
  d.chroma.height = (h + 1) / 2;
  d.image.channels = 1;
  d.image.pixels.resize(static_cast<size_t>(w) * h +
                        2 * static_cast<size_t>(d.chroma.width) * d.chroma.height);
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
// crops every round) per kernel set in `isas`, the sets taking turns round by round so
// that noise hits them alike, and returns per set the per-image CPU time of the fastest
// and the median round: the minimum is the cost, the median shows the noise.
std::vector<Timing> TimeOne(Mode mode, Layout layout, int iterations, int repeats,
                            int slots, const std::vector<ResampleIsa>& isas,
                            const flowloader::decode::DecodedImage& img) {
  TransformOptions o;
  o.mode = mode;
  o.layout = layout;
  auto t = Transform::Create(o);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    std::exit(1);
  }
  const size_t bytes = (*t)->OutputBytes();
  // 64-byte aligned, as the loader's batch buffers are (and each slot, when bytes is).
  const size_t total = (bytes * slots + 63) / 64 * 64;
  std::unique_ptr<unsigned char, decltype(&std::free)> buffer(
      static_cast<unsigned char*>(std::aligned_alloc(64, total)), &std::free);
  unsigned char* const out = buffer.get();
  std::memset(out, 0, total);
  std::vector<std::vector<double>> rounds(isas.size());
  for (int r = -1; r < repeats; ++r) {  // Round -1 warms up (scratch, page faults).
    for (size_t i = 0; i < isas.size(); ++i) {
      SetResampleIsaForTesting(isas[i]);
      const double start = ThreadSeconds();
      for (int k = 0; k < iterations; ++k) {
        SampleRng rng(7, 0, k);
        auto plan = (*t)->Plan(img.image.width, img.image.height, rng);
        const absl::Status s = (*t)->Apply(img, plan, out + bytes * (k % slots));
        if (!s.ok()) {
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
          std::exit(1);
        }
      }
      if (r >= 0) rounds[i].push_back((ThreadSeconds() - start) * 1e6 / iterations);
    }
  }
  std::vector<Timing> timings;
  for (auto& v : rounds) {
    std::sort(v.begin(), v.end());
    timings.push_back(Timing{v.front(), v[v.size() / 2]});
  }
  return timings;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  const int slots = argc > 3 ? std::max(1, std::atoi(argv[3])) : 64;
  std::vector<ResampleIsa> isas;
  std::vector<const char*> names;
  for (const auto& [isa, name] : {std::pair{ResampleIsa::kSse41, "SSE4.1"},
                                  std::pair{ResampleIsa::kAvx2, "AVX2"},
                                  std::pair{ResampleIsa::kAvx512, "AVX-512"}}) {
    if (!ResampleIsaSupported(isa)) continue;
    isas.push_back(isa);
    names.push_back(name);
  }
  const ResampleIsa detected = flowloader::augment::internal::DetectedResampleIsa();
  const auto img = MakeImage(450, 380);
  std::printf("450x380 -> 224x224 (Plan + Apply), thread CPU time, %d rounds of %d images, "
              "%d output slot(s)\n",
              repeats, iterations, slots);
  std::printf("%-38s", "min / median µs");
  for (size_t i = 0; i < isas.size(); ++i) {
    std::printf(" %14s%s", names[i], isas[i] == detected ? "*" : " ");
  }
  std::printf("\n");
  // A dataset stored pre-resized to a 256-pixel shorter side makes eval a pure crop.
  const auto small = MakeImage(341, 256);
  struct Case {
    const char* name;
    Mode mode;
    Layout layout;
    const flowloader::decode::DecodedImage* img;
  };
  const auto planes = MakePlanes(450, 380);
  const Case cases[] = {{"train float CHW", Mode::kTrain, Layout::kFloatCHW, &img},
                        {"train float CHW, 4:2:0 planes", Mode::kTrain, Layout::kFloatCHW,
                         &planes},
                        {"eval  float CHW, 4:2:0 planes", Mode::kEval, Layout::kFloatCHW,
                         &planes},
                        {"train uint8 HWC", Mode::kTrain, Layout::kUint8HWC, &img},
                        {"eval  float CHW", Mode::kEval, Layout::kFloatCHW, &img},
                        {"eval  uint8 HWC", Mode::kEval, Layout::kUint8HWC, &img},
                        {"eval  float CHW 341x256 (no resize)", Mode::kEval,
                         Layout::kFloatCHW, &small}};
  for (const Case& c : cases) {
    const std::vector<Timing> t =
        TimeOne(c.mode, c.layout, iterations, repeats, slots, isas, *c.img);
    std::printf("%-38s", c.name);
    for (const Timing& ti : t) std::printf("    %5.1f / %5.1f", ti.min_us, ti.median_us);
    std::printf("\n");
  }
  std::printf("* the default on this CPU\n");
  return 0;
}
