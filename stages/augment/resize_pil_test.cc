// resize_pil_test: Apply's output against PIL running torchvision 0.14's exact calls.
//
// Each test writes synthetic images as raw RGB, runs testdata/pil_reference.py under
// /usr/bin/python3 (python3-pil), and requires every output byte within kMaxDiff of
// PIL's. A missing python or PIL makes the test fail, never skip: this is the check
// that the filter is torchvision's.
//
// Thread-safety: single-threaded tests.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stages/augment/testing/test_util.h"
#include "stages/augment/transform.h"

namespace flowloader::augment {
namespace {

using testing::ImageOf;
using testing::MakeTransform;
using testing::Options;

// Pillow rounds its 22-bit fixed-point horizontal pass to 8 bits before the vertical
// one; Apply stays in higher precision, so a value near a .5 boundary may round the
// other way: one level.
constexpr int kMaxDiff = 1;

// torchvision 0.14's Resize(int) output size and CenterCrop offsets, written out again
// here (not taken from the library) so the reference is independent of the code under test.
void TorchvisionResize(int w, int h, int size, int* new_w, int* new_h) {
  if (w <= h) {
    *new_w = size;
    *new_h = static_cast<int>(static_cast<double>(size) * h / w);
  } else {
    *new_h = size;
    *new_w = static_cast<int>(static_cast<double>(size) * w / h);
  }
}
int TorchvisionCenterOffset(int in, int out) {
  return static_cast<int>(std::nearbyint((in - out) / 2.0));
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ScriptPath() {
  // Bazel runs tests in the workspace's runfiles root; the script is a data dependency.
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return absl::StrCat(srcdir, "/", workspace, "/stages/augment/testdata/pil_reference.py");
  }
  return "stages/augment/testdata/pil_reference.py";
}

// Pattern picks what the synthetic image looks like; each stresses the filter
// differently (noise: every tap matters; edges: ringing-free exactness; ramps: rounding).
enum class Pattern { kNoise, kEdges, kRamps };

decode::DecodedImage MakeImage(int w, int h, Pattern pattern, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 1;
  return ImageOf(w, h, [pattern, &state](int x, int y, int c) {
    switch (pattern) {
      case Pattern::kNoise:
        state = state * 1664525u + 1013904223u;
        return static_cast<int>(state >> 24);
      case Pattern::kEdges:
        return (((x / (3 + c)) ^ (y / 5)) & 1) ? 250 : 5;
      case Pattern::kRamps:
        return (x * (c + 1) + y * 2) % 256;
    }
    return 0;
  });
}

void WriteRaw(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  ASSERT_TRUE(f.good()) << path;
}

std::vector<uint8_t> ReadRaw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// RunPil runs the job file through the reference script; fails the test on any error.
void RunPil(const std::string& jobs_path) {
  const std::string cmd =
      absl::StrCat("/usr/bin/python3 ", ScriptPath(), " ", jobs_path, " 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr) << "popen failed: " << cmd;
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof buf, p) != nullptr) output += buf;
  const int rc = pclose(p);
  ASSERT_EQ(rc, 0) << "reference script failed (is python3-pil installed?): " << cmd
                   << "\n" << output;
}

struct Diff {
  int max = 0;
  double mean = 0;
  size_t differing = 0;  // Bytes that are not equal.
};

Diff Compare(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& pil) {
  Diff d;
  if (ours.size() != pil.size()) {
    d.max = 256;
    return d;
  }
  double sum = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const int diff = std::abs(static_cast<int>(ours[i]) - static_cast<int>(pil[i]));
    d.max = std::max(d.max, diff);
    sum += diff;
    d.differing += diff != 0;
  }
  d.mean = sum / ours.size();
  return d;
}

// A case is one image and one plan; the job line and our output are stored until PIL
// has run.
struct Case {
  std::string name;
  std::vector<uint8_t> ours;
  std::string out_path;
};

class ResizePilTest : public ::testing::Test {
 protected:
  // Add writes `img` (once per image id), runs Apply and queues the PIL job.
  void Add(const std::string& name, const decode::DecodedImage& img, const Transform& t,
           const CropPlan& plan) {
    const std::string in_path = absl::StrCat(TempDir(), "/", name, ".in.raw");
    const std::string out_path = absl::StrCat(TempDir(), "/", name, ".pil.raw");
    WriteRaw(in_path, img.image.pixels.data(), img.image.pixels.size());
    Case c;
    c.name = name;
    c.out_path = out_path;
    c.ours.resize(t.OutputBytes());
    ASSERT_TRUE(t.Apply(img, plan, c.ours.data()).ok()) << name;
    const int w = img.image.width;
    const int h = img.image.height;
    const int n = t.options().image_size;
    if (t.options().mode == Mode::kTrain) {
      jobs_ += absl::StrCat("crop_resize ", in_path, " ", w, " ", h, " ",
                            static_cast<int>(plan.region.x), " ",
                            static_cast<int>(plan.region.y), " ",
                            static_cast<int>(plan.region.w), " ",
                            static_cast<int>(plan.region.h), " ", n, " ",
                            plan.flip ? 1 : 0, " ", out_path, "\n");
    } else {
      // The torchvision numbers, computed independently of Plan's fractional box.
      int new_w = 0;
      int new_h = 0;
      const int resize = t.options().resize_size;
      TorchvisionResize(w, h, resize, &new_w, &new_h);
      jobs_ += absl::StrCat("resize_crop ", in_path, " ", w, " ", h, " ", new_w, " ",
                            new_h, " ", TorchvisionCenterOffset(new_w, n), " ",
                            TorchvisionCenterOffset(new_h, n), " ", n, " ", out_path,
                            "\n");
    }
    cases_.push_back(std::move(c));
  }

  // RunAndCompare runs PIL on every queued case and checks each within kMaxDiff.
  void RunAndCompare() {
    const std::string jobs_path = absl::StrCat(TempDir(), "/jobs.txt");
    {
      std::ofstream f(jobs_path);
      f << jobs_;
    }
    RunPil(jobs_path);
    int worst = 0;
    size_t differing = 0;
    size_t total = 0;
    for (const Case& c : cases_) {
      const Diff d = Compare(c.ours, ReadRaw(c.out_path));
      EXPECT_LE(d.max, kMaxDiff) << c.name << " mean abs diff " << d.mean;
      worst = std::max(worst, d.max);
      differing += d.differing;
      total += c.ours.size();
    }
    std::printf("%zu cases: max abs diff vs PIL %d, %.3f%% of bytes differ\n",
                cases_.size(), worst, 100.0 * differing / std::max<size_t>(total, 1));
    ASSERT_FALSE(cases_.empty());
  }

  std::string jobs_;
  std::vector<Case> cases_;
};

// PilTransform makes the uint8 Transform the tests compare (PIL works on bytes).
std::unique_ptr<Transform> PilTransform(Mode mode, int image_size, int resize_size = 0) {
  return MakeTransform(Options(mode, Layout::kUint8HWC, image_size, resize_size));
}

TEST_F(ResizePilTest, TrainCropsMatchPilCropThenResize) {
  const auto t = PilTransform(Mode::kTrain, 224);
  const struct {
    int w, h;
    Pattern pattern;
  } images[] = {{450, 380, Pattern::kNoise}, {500, 375, Pattern::kEdges},
                {320, 480, Pattern::kRamps}, {1200, 900, Pattern::kNoise}};
  int id = 0;
  for (const auto& im : images) {
    const auto img = MakeImage(im.w, im.h, im.pattern, id);
    // Crops from tiny (upscaling) to whole-image (downscaling), flipped or not.
    for (int index = 0; index < 6; ++index) {
      SampleRng rng(42, 0, index);
      const CropPlan plan = t->Plan(im.w, im.h, rng);
      Add(absl::StrCat("train", id, "_", index), img, *t, plan);
    }
    ++id;
  }
  RunAndCompare();
}

TEST_F(ResizePilTest, TrainCropOfExactOutputSizeMatchesPil) {
  // A 224-pixel crop side is Pillow's skipped pass (scale 1): it must be a plain copy.
  const auto t = PilTransform(Mode::kTrain, 224);
  const auto img = MakeImage(450, 380, Pattern::kNoise, 9);
  CropPlan plan;
  plan.region = RectF{17, 31, 224, 300};
  Add("exact_w", img, *t, plan);
  plan.region = RectF{3, 2, 400, 224};
  plan.flip = true;
  Add("exact_h", img, *t, plan);
  plan.region = RectF{100, 100, 224, 224};
  Add("exact_both", img, *t, plan);
  RunAndCompare();
}

TEST_F(ResizePilTest, ExtremeDownscalesMatchPil) {
  // Scales of ~8 and ~36: long tap lists (the generic, non-unrolled loops) and more
  // than 64 vertical taps.
  const auto t = PilTransform(Mode::kTrain, 224);
  CropPlan plan;
  const auto wide = MakeImage(8000, 400, Pattern::kNoise, 21);
  plan.region = RectF{0, 0, 8000, 400};
  Add("wide", wide, *t, plan);
  const auto tall = MakeImage(300, 8000, Pattern::kEdges, 22);
  plan.region = RectF{10, 0, 290, 8000};
  plan.flip = true;
  Add("tall", tall, *t, plan);
  const auto eval = PilTransform(Mode::kEval, 224, 256);
  const auto big = MakeImage(2400, 1800, Pattern::kRamps, 23);
  SampleRng rng(1, 0, 0);
  Add("eval_big", big, *eval, eval->Plan(2400, 1800, rng));
  RunAndCompare();
}

TEST_F(ResizePilTest, EvalMatchesPilResizeThenCenterCrop) {
  const struct {
    int w, h;
    Pattern pattern;
    int image_size;
    int resize_size;
  } cases[] = {
      {500, 375, Pattern::kNoise, 224, 256},  // The ImageNet recipe, landscape.
      {375, 500, Pattern::kEdges, 224, 256},  // Portrait.
      {450, 380, Pattern::kRamps, 224, 256},
      {256, 300, Pattern::kNoise, 224, 256},  // Shorter side already 256: no resize.
      {100, 80, Pattern::kEdges, 224, 256},   // Upscaling.
      {1000, 120, Pattern::kNoise, 224, 256}, // Extreme aspect.
      {640, 480, Pattern::kNoise, 160, 182},
  };
  int id = 0;
  for (const auto& c : cases) {
    const auto t = PilTransform(Mode::kEval, c.image_size, c.resize_size);
    const auto img = MakeImage(c.w, c.h, c.pattern, 100 + id);
    SampleRng rng(1, 0, 0);
    Add(absl::StrCat("eval", id), img, *t, t->Plan(c.w, c.h, rng));
    ++id;
  }
  RunAndCompare();
}

}  // namespace
}  // namespace flowloader::augment
