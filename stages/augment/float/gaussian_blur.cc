// gaussian_blur.cc: GaussianBlur (float_ops.h). The kernel is torchvision's
// _get_gaussian_kernel1d, always in float32 (linspace, exp(-0.5 (x / sigma)^2), over its
// sum), then as T; the image is reflect-padded by half a kernel (torch's "reflect": the
// edge pixel not repeated) and convolved, here as a width pass then a height pass of
// the 1-D kernels (the 2-D kernel is their outer product; sums differ from conv2d's only
// in rounding).
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

std::vector<float> Kernel1d(int size, double sigma) {
  std::vector<float> k(size);
  const float half = static_cast<float>((size - 1) * 0.5);
  const float s = static_cast<float>(sigma);
  float sum = 0;
  for (int i = 0; i < size; ++i) {
    const float x = size == 1 ? -half : (i < size / 2 ? -half + static_cast<float>(i)
                                                      : half - static_cast<float>(size - i - 1));
    const float r = x / s;
    k[i] = std::exp(-0.5f * (r * r));
    sum += k[i];
  }
  for (float& v : k) v /= sum;
  return k;
}

// Reflect is torch's reflect padding's source index for i in [-pad, n + pad).
int Reflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

}  // namespace

std::string ReflectPadError(int kernel_x, int kernel_y, int height, int width) {
  if (kernel_x / 2 < width && kernel_y / 2 < height) return "";
  return absl::StrCat("gaussian_blur: kernel_size [", kernel_x, ", ", kernel_y,
                      "] reflect-pads ", kernel_x / 2, " x ", kernel_y / 2,
                      " pixels, which must be less than the image's width and height (",
                      width, " x ", height, "), as torch's reflect padding requires");
}

template <typename T>
void GaussianBlur(const Chw<const T>& in, const Chw<T>& out, int kernel_x, int kernel_y,
                  double sigma_x, double sigma_y) {
  const std::vector<float> kx32 = Kernel1d(kernel_x, sigma_x);
  const std::vector<float> ky32 = Kernel1d(kernel_y, sigma_y);
  const std::vector<T> kx(kx32.begin(), kx32.end()), ky(ky32.begin(), ky32.end());
  const int w = in.width, h = in.height, rx = kernel_x / 2, ry = kernel_y / 2;
  // The width pass into `mid` (a padded row read through Reflect), then the height pass.
  std::vector<T> mid(in.Plane()), padded(static_cast<size_t>(w) + 2 * rx);
  std::vector<const T*> rows(static_cast<size_t>(kernel_y));
  for (int c = 0; c < in.channels; ++c) {
    for (int y = 0; y < h; ++y) {
      const T* row = in.Row(c, y);
      for (int x = -rx; x < w + rx; ++x) padded[x + rx] = row[Reflect(x, w)];
      T* dst = mid.data() + static_cast<size_t>(y) * w;
      for (int x = 0; x < w; ++x) {
        T v = T(0);
        for (int k = 0; k < kernel_x; ++k) v += padded[x + k] * kx[k];
        dst[x] = v;
      }
    }
    for (int y = 0; y < h; ++y) {
      for (int k = 0; k < kernel_y; ++k) {
        rows[k] = mid.data() + static_cast<size_t>(Reflect(y - ry + k, h)) * w;
      }
      T* dst = out.Row(c, y);
      for (int x = 0; x < w; ++x) dst[x] = rows[0][x] * ky[0];
      for (int k = 1; k < kernel_y; ++k) {
        for (int x = 0; x < w; ++x) dst[x] += rows[k][x] * ky[k];
      }
    }
  }
}

template void GaussianBlur<float>(const Chw<const float>&, const Chw<float>&, int, int, double,
                                  double);
template void GaussianBlur<double>(const Chw<const double>&, const Chw<double>&, int, int,
                                   double, double);

}  // namespace flowloader::augment::floats
