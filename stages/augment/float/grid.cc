// grid.cc: AffineGrid and PerspectiveGrid (float_ops.h), torchvision's _gen_affine_grid
// and _perspective_grid: a base grid of pixel centres (torch.linspace in float32, then
// as T), times the matrix rescaled to [-1, 1], in T.
#include <vector>

#include "stages/augment/float/float_ops.h"
#include "stages/augment/float/linspace.h"

namespace flowloader::augment::floats {

template <typename T>
void AffineGrid(const double theta[6], int w, int h, int ow, int oh, T* grid) {
  const std::vector<float> xs = Linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, ow);
  const std::vector<float> ys = Linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, oh);
  const T sw = static_cast<T>(0.5 * w), sh = static_cast<T>(0.5 * h);
  const T a = static_cast<T>(theta[0]) / sw, b = static_cast<T>(theta[1]) / sw,
          c = static_cast<T>(theta[2]) / sw;
  const T d = static_cast<T>(theta[3]) / sh, e = static_cast<T>(theta[4]) / sh,
          f = static_cast<T>(theta[5]) / sh;
  for (int y = 0; y < oh; ++y) {
    const T yv = static_cast<T>(ys[y]);
    for (int x = 0; x < ow; ++x, grid += 2) {
      const T xv = static_cast<T>(xs[x]);
      grid[0] = T(T(xv * a) + T(yv * b)) + c;
      grid[1] = T(T(xv * d) + T(yv * e)) + f;
    }
  }
}

template <typename T>
void PerspectiveGrid(const double coeffs[8], int ow, int oh, T* grid) {
  const std::vector<float> xs = Linspace(0.5, ow * 1.0 + 0.5 - 1.0, ow);
  const std::vector<float> ys = Linspace(0.5, oh * 1.0 + 0.5 - 1.0, oh);
  const T sw = static_cast<T>(0.5 * ow), sh = static_cast<T>(0.5 * oh);
  T k[8];
  for (int i = 0; i < 8; ++i) k[i] = static_cast<T>(coeffs[i]);
  const T a = k[0] / sw, b = k[1] / sw, c = k[2] / sw;
  const T d = k[3] / sh, e = k[4] / sh, f = k[5] / sh;
  for (int y = 0; y < oh; ++y) {
    const T yv = static_cast<T>(ys[y]);
    for (int x = 0; x < ow; ++x, grid += 2) {
      const T xv = static_cast<T>(xs[x]);
      const T den = T(T(xv * k[6]) + T(yv * k[7])) + T(1);
      grid[0] = T(T(T(xv * a) + T(yv * b)) + c) / den - T(1);
      grid[1] = T(T(T(xv * d) + T(yv * e)) + f) / den - T(1);
    }
  }
}

template void AffineGrid<float>(const double[6], int, int, int, int, float*);
template void AffineGrid<double>(const double[6], int, int, int, int, double*);
template void PerspectiveGrid<float>(const double[8], int, int, float*);
template void PerspectiveGrid<double>(const double[8], int, int, double*);

}  // namespace flowloader::augment::floats
