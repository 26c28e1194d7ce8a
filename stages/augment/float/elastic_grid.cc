// elastic_grid.cc: ElasticGrid (float_ops.h), torchvision 0.14's ElasticTransform grid in
// float32: each noise plane r (torch.rand's) is r * 2 - 1, blurred by F.gaussian_blur
// with kernel int(8 sigma + 1) (made odd) and both sigmas [sigma_x, sigma_y] as
// get_params passes them, times alpha over size[0] for dx and size[1] for dy (height,
// then width: get_params' own indices), added to _create_identity_grid's linspaces.
#include <vector>

#include "stages/augment/float/float_ops.h"
#include "stages/augment/float/linspace.h"

namespace flowloader::augment::floats {
namespace {

// KernelOf is ElasticTransform's kernel size for sigma: int(8 sigma + 1), made odd.
int KernelOf(double sigma) {
  const int k = static_cast<int>(8 * sigma + 1);
  return k % 2 == 0 ? k + 1 : k;
}

}  // namespace

std::string ElasticGrid(const float* noise, int height, int width, const double alpha[2],
                        const double sigma[2], float* grid) {
  const size_t plane = static_cast<size_t>(height) * width;
  std::vector<float> d[2], blurred(plane);
  for (int axis = 0; axis < 2; ++axis) {
    d[axis].resize(plane);
    for (size_t i = 0; i < plane; ++i) d[axis][i] = noise[axis * plane + i] * 2.0f - 1.0f;
    if (sigma[axis] > 0.0) {
      const int k = KernelOf(sigma[axis]);
      std::string error = ReflectPadError(k, k, height, width);
      if (!error.empty()) return error;
      const Chw<const float> in{d[axis].data(), 1, height, width};
      GaussianBlur(in, Chw<float>{blurred.data(), 1, height, width}, k, k, sigma[0],
                   sigma[1]);
      d[axis].swap(blurred);
    }
    const float a = static_cast<float>(alpha[axis]);
    const float size = static_cast<float>(axis == 0 ? height : width);
    for (float& v : d[axis]) v = (v * a) / size;
  }
  const std::vector<float> xs = Linspace((-width + 1.0) / width, (width - 1.0) / width, width);
  const std::vector<float> ys =
      Linspace((-height + 1.0) / height, (height - 1.0) / height, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x, grid += 2) {
      const size_t i = static_cast<size_t>(y) * width + x;
      grid[0] = xs[x] + d[0][i];
      grid[1] = ys[y] + d[1][i];
    }
  }
  return "";
}

}  // namespace flowloader::augment::floats
