// policies_bench: microseconds per sample of the augment policies (Draw + Apply on a
// uint8 RGB image), of random_erasing (on the float tensor) and of normalize (into the
// slots of four 64-sample batches, so that its writes reach memory as the pipeline's
// do), at the sizes recipes use (176², 224²; normalize at 96² too), one thread. Each
// sample starts from the same textured image (the copy is timed apart). Times are the
// thread's CPU time, so other load inflates them less (caches and SMT siblings still do).
// Not a test: run it by hand on a quiet machine.
//   bazel run //stages/augment:policies_bench -- [samples]
//
// Thread-safety: single-threaded program.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader::augment {
namespace {

double Now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);  // CPU time: the machine is shared.
  return t.tv_sec + t.tv_nsec * 1e-9;
}

std::unique_ptr<Op> Make(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  absl::StatusOr<std::unique_ptr<Op>> op =
      OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
  if (!op.ok()) {
    std::fprintf(stderr, "%s: %s\n", text.c_str(), std::string(op.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(op);
}

Image Texture(int n) {
  Image img;
  img.Resize(n, n, 3);
  uint32_t state = 12345;
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < 3 * n; ++x) {
      state = state * 1664525u + 1013904223u;
      // A smooth gradient with noise: equalize and autocontrast see a real histogram.
      img.Row(y)[x] = static_cast<uint8_t>((x / 3 + y + (x % 3) * 60) / 2 + (state >> 28));
    }
  }
  return img;
}

// PixelOp times Draw + Apply of a uint8 op over `samples` samples.
void PixelOp(const std::string& text, int n, int samples) {
  const std::unique_ptr<Op> op = Make(text);
  const Image source = Texture(n);
  Image rgb = source, spare;
  OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  double copy = 0, total = 0;
  for (int i = 0; i < samples; ++i) {
    const double t0 = Now();
    rgb.Resize(n, n, 3);
    std::memcpy(rgb.pixels.data(), source.pixels.data(), source.pixels.size());
    const double t1 = Now();
    SampleRng rng(1, 0, static_cast<uint64_t>(i), 7);
    OpParams params;
    if (ShouldApply(*op, rng)) {
      op->Draw(n, n, rng, &params);
      if (!op->Apply(params, image).ok()) std::exit(1);
    }
    const double t2 = Now();
    copy += t1 - t0;
    total += t2 - t1;
  }
  std::printf("%-90s %4d²  %7.1f us/sample (copy %.1f apart)\n", text.c_str(), n,
              total / samples * 1e6, copy / samples * 1e6);
}

// SubOps times each sub-op of `text` (a policy whose params are [op, level, negate,
// ...]) alone: op k at `level`, not negated, `extra` params after.
void SubOps(const std::string& text, int ops, double level, std::vector<double> extra, int n,
            int samples) {
  const std::unique_ptr<Op> op = Make(text);
  const Image source = Texture(n);
  Image rgb = source, spare;
  OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  std::printf("%s at %d², level %g, per sub-op (us):", text.c_str(), n, level);
  for (int k = 0; k < ops; ++k) {
    OpParams params;
    params.Push(k);
    params.Push(level);
    params.Push(0);
    for (double v : extra) params.Push(v);
    double total = 0;
    for (int i = 0; i < samples; ++i) {
      rgb.Resize(n, n, 3);
      std::memcpy(rgb.pixels.data(), source.pixels.data(), source.pixels.size());
      const double t0 = Now();
      if (!op->Apply(params, image).ok()) std::exit(1);
      total += Now() - t0;
    }
    std::printf(" %d:%.1f", k, total / samples * 1e6);
  }
  std::printf("\n");
}

// TensorOp times Draw + Apply of a float op on a 3 x n x n tensor.
void TensorOp(const std::string& text, int n, int samples) {
  const std::unique_ptr<Op> op = Make(text);
  std::vector<float> chw(3 * n * n, 0.5f);
  OpImage image;
  image.chw = chw.data();
  image.width = n;
  image.height = n;
  const double t0 = Now();
  for (int i = 0; i < samples; ++i) {
    SampleRng rng(1, 0, static_cast<uint64_t>(i), 7);
    OpParams params;
    if (ShouldApply(*op, rng)) {
      op->Draw(n, n, rng, &params);
      if (!op->Apply(params, image).ok()) std::exit(1);
    }
  }
  std::printf("%-90s %4d²  %7.1f us/sample\n", text.c_str(), n, (Now() - t0) / samples * 1e6);
}

// NormalizeOp times normalize() on its fastest path and with the AVX-512 VBMI one off
// (the AVX2 path), alternating batches of 64 samples; each batch fills the next of four
// batch buffers (4 x 64 x 3 x n² floats), which outgrow the caches.
void NormalizeOp(int n, int samples) {
  const std::unique_ptr<Op> op = Make("normalize()");
  Image rgb = Texture(n);
  const size_t slot = 3 * static_cast<size_t>(n) * n;
  const size_t slot_floats = (slot + 15) & ~static_cast<size_t>(15);  // 64-byte slots.
  constexpr int kBatch = 64, kBuffers = 4;
  float* buffers = static_cast<float*>(
      std::aligned_alloc(64, kBuffers * kBatch * slot_floats * sizeof(float)));
  std::memset(buffers, 0, kBuffers * kBatch * slot_floats * sizeof(float));
  OpImage image;
  image.rgb = &rgb;
  image.width = n;
  image.height = n;
  double total[2] = {0, 0};
  const int batches = (samples + kBatch - 1) / kBatch;
  for (int b = 0; b < 2 * batches; ++b) {
    const int no_vbmi = b % 2;
    kernels::internal::SetNoVbmiForTesting(no_vbmi != 0);
    float* batch = buffers + (b % kBuffers) * kBatch * slot_floats;
    const double t0 = Now();
    for (int i = 0; i < kBatch; ++i) {
      image.chw = batch + i * slot_floats;
      if (!op->Apply(OpParams(), image).ok()) std::exit(1);
    }
    total[no_vbmi] += Now() - t0;
  }
  kernels::internal::SetNoVbmiForTesting(false);
  std::free(buffers);
  const double per = 1e6 / (batches * kBatch);
  std::printf("%-90s %4d²  %7.1f us/sample (%.1f with VBMI off)\n", "normalize()", n,
              total[0] * per, total[1] * per);
}

}  // namespace
}  // namespace flowloader::augment

int main(int argc, char** argv) {
  using flowloader::augment::NormalizeOp;
  using flowloader::augment::PixelOp;
  using flowloader::augment::TensorOp;
  const int samples = argc > 1 ? std::atoi(argv[1]) : 2000;
  for (int n : {96, 176, 224}) NormalizeOp(n, samples);
  for (int n : {176, 224}) {
    PixelOp("trivial_augment_wide()", n, samples);
    PixelOp("rand_augment()", n, samples);
    PixelOp("rand_augment(magnitude=9, num_magnitude_bins=11, magnitude_std=0.5, "
            "increasing=true, op_p=0.5, interpolation=bicubic, fill=[124, 116, 104])",
            n, samples);
    PixelOp("auto_augment()", n, samples);
    TensorOp("random_erasing(p=1)", n, samples);
    TensorOp("random_erasing(p=1, value=random)", n, samples);
  }
  using flowloader::augment::SubOps;
  SubOps("trivial_augment_wide()", 14, 20, {}, 224, samples / 4);
  for (const char* filter : {"bilinear", "bicubic"}) {
    SubOps(std::string("rand_augment(num_ops=1, increasing=true, num_magnitude_bins=11, "
                       "interpolation=") + filter + ")",
           15, 9, {1}, 224, samples / 4);
  }
  return 0;
}
