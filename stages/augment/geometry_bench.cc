// geometry_bench: per-image time of the geometry kernels on one core, at the sizes the
// recipes use (224² global crops, 176² v2 crops, 96² local crops):
//   bazel run //stages/augment:geometry_bench -- [rounds] [name substring]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/core/image.h"

namespace flowloader::augment {
namespace {

Image Noise(int w, int h) {
  Image img;
  img.Resize(w, h, 3);
  uint32_t s = 1;
  for (uint8_t& v : img.pixels) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(s >> 24);
  }
  return img;
}

const char* g_only = nullptr;  // Runs only the cases whose name contains it.

void Time(const char* name, int rounds, const std::function<void(int)>& body) {
  if (g_only != nullptr && std::strstr(name, g_only) == nullptr) return;
  body(0);  // Warm: scratch sized.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) body(i);
  const double us = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start).count() / rounds;
  std::printf("%-44s %8.1f us/image\n", name, us);
}

}  // namespace
}  // namespace flowloader::augment

int main(int argc, char** argv) {
  using namespace flowloader;
  using namespace flowloader::augment;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 500;
  if (argc > 2) g_only = argv[2];
  const Image big = Noise(224, 224), small = Noise(96, 96);
  Image out;
  const std::array<uint8_t, 3> fill{0, 0, 0};
  Time("gaussian_blur 224x224 k=23", rounds, [&](int i) {
    kernels::GaussianBlur(big, 23, 23, 0.1 + (i % 19) * 0.1, 0.1 + (i % 19) * 0.1, &out);
  });
  Time("gaussian_blur 96x96 k=23", rounds, [&](int i) {
    kernels::GaussianBlur(small, 23, 23, 0.1 + (i % 19) * 0.1, 0.1 + (i % 19) * 0.1, &out);
  });
  Time("pil_gaussian_blur 224x224 radius 0.1-2.0", rounds, [&](int i) {
    kernels::PilGaussianBlur(big, 0.1f + (i % 19) * 0.1f, &out);
  });
  Time("pil_gaussian_blur 96x96 radius 0.1-2.0", rounds, [&](int i) {
    kernels::PilGaussianBlur(small, 0.1f + (i % 19) * 0.1f, &out);
  });
  kernels::internal::SetPilBlurNoAvx512ForTesting(true);
  Time("pil_gaussian_blur 224x224, AVX2 path", rounds, [&](int i) {
    kernels::PilGaussianBlur(big, 0.1f + (i % 19) * 0.1f, &out);
  });
  kernels::internal::SetPilBlurNoAvx512ForTesting(false);
  Time("affine 224x224 nearest (rotate+shear)", rounds, [&](int i) {
    kernels::Affine(big, 10 + i % 7, 3, -2, 1.1, 5, 0, Interpolation::kNearest, fill, &out);
  });
  Time("affine 224x224 bilinear", rounds, [&](int i) {
    kernels::Affine(big, 10 + i % 7, 3, -2, 1.1, 5, 0, Interpolation::kBilinear, fill, &out);
  });
  kernels::internal::SetPortableForTesting(true);
  Time("affine 224x224 bilinear, portable path", rounds, [&](int i) {
    kernels::Affine(big, 10 + i % 7, 3, -2, 1.1, 5, 0, Interpolation::kBilinear, fill, &out);
  });
  Time("affine 224x224 bicubic, portable path", rounds, [&](int i) {
    kernels::Affine(big, 10 + i % 7, 3, -2, 1.1, 5, 0, Interpolation::kBicubic, fill, &out);
  });
  kernels::internal::SetPortableForTesting(false);
  Time("affine 224x224 bicubic", rounds, [&](int i) {
    kernels::Affine(big, 10 + i % 7, 3, -2, 1.1, 5, 0, Interpolation::kBicubic, fill, &out);
  });
  // The policies' one-axis warps (policy_ops' Shear about the top-left, timm's fractional
  // and torchvision's whole-pixel translations).
  const double shear_tx = -std::tan(0.3) * 112;
  Time("affine 224x224 bicubic, shear x", rounds, [&](int i) {
    kernels::Affine(big, 0, shear_tx, 0, 1, 17.19 + i % 3, 0, Interpolation::kBicubic, fill, &out);
  });
  Time("affine 224x224 bicubic, translate y 10.3 px", rounds, [&](int i) {
    kernels::Affine(big, 0, 0, 10.3 + i % 3, 1, 0, 0, Interpolation::kBicubic, fill, &out);
  });
  Time("affine 224x224 bilinear, shear x", rounds, [&](int i) {
    kernels::Affine(big, 0, shear_tx, 0, 1, 17.19 + i % 3, 0, Interpolation::kBilinear, fill, &out);
  });
  Time("affine 224x224 bilinear, translate x 12 px", rounds, [&](int i) {
    kernels::Affine(big, 0, 12 + i % 3, 0, 1, 0, 0, Interpolation::kBilinear, fill, &out);
  });
  // TrivialAugmentWide's bilinear warps in the v2 recipe (176² crops; translations there
  // are whole pixels, ShiftCopy, so the fractional one here is timm-like).
  const Image mid = Noise(176, 176);
  const double shear_tx176 = -std::tan(0.3) * 88;
  Time("rotate 176x176 bilinear", rounds, [&](int i) {
    kernels::Rotate(mid, 13 + i % 7, Interpolation::kBilinear, false, fill, &out);
  });
  Time("affine 176x176 bilinear, shear x", rounds, [&](int i) {
    kernels::Affine(mid, 0, shear_tx176, 0, 1, 17.19 + i % 3, 0, Interpolation::kBilinear, fill,
                    &out);
  });
  Time("affine 176x176 bilinear, shear y", rounds, [&](int i) {
    kernels::Affine(mid, 0, 0, shear_tx176, 1, 0, 17.19 + i % 3, Interpolation::kBilinear, fill,
                    &out);
  });
  Time("affine 176x176 bilinear, translate y 10.3 px", rounds, [&](int i) {
    kernels::Affine(mid, 0, 0, 10.3 + i % 3, 1, 0, 0, Interpolation::kBilinear, fill, &out);
  });
  Time("rotate 224x224 nearest", rounds, [&](int i) {
    kernels::Rotate(big, 13 + i % 7, Interpolation::kNearest, false, fill, &out);
  });
  Time("rotate 224x224 bilinear, expand", rounds, [&](int i) {
    kernels::Rotate(big, 13 + i % 7, Interpolation::kBilinear, true, fill, &out);
  });
  Image flip = big;
  Time("vflip 224x224", rounds, [&](int) { kernels::VerticalFlip(flip); });
  return 0;
}
