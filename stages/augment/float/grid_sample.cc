// grid_sample.cc: GridSample (float_ops.h), ATen 1.13's CPU grid_sampler_2d with
// padding_mode zeros and align_corners=False (x = (gx + 1) * W / 2 - 0.5; bilinear
// weights from the floor's distances, the four neighbours summed nw, ne, sw, se with
// those outside the image as 0; nearest: round half to even), then torchvision's
// _apply_grid_transform fill: the sampled mask of ones (the in-image weight), nearest
// mask < 0.5 takes the fill, bilinear img * mask + (1 - mask) * fill.
#include <cmath>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

template <typename T>
T At(const T* plane, int w, int h, T x, T y) {
  if (!(x > T(-1) && x < static_cast<T>(w) && y > T(-1) && y < static_cast<T>(h))) return T(0);
  return plane[static_cast<size_t>(y) * w + static_cast<size_t>(x)];
}

}  // namespace

template <typename T>
void GridSample(const Chw<const T>& in, const Chw<T>& out, const T* grid, Mode mode,
                const double* fill) {
  const T half_w = static_cast<T>(in.width) / T(2), half_h = static_cast<T>(in.height) / T(2);
  const int w = in.width, h = in.height;
  const size_t n = out.Plane();
  for (size_t i = 0; i < n; ++i) {
    const T x = (grid[2 * i] + T(1)) * half_w - T(0.5);
    const T y = (grid[2 * i + 1] + T(1)) * half_h - T(0.5);
    if (mode == Mode::kNearest) {
      const T xn = std::nearbyint(x), yn = std::nearbyint(y);
      const bool inside = xn > T(-1) && xn < static_cast<T>(w) && yn > T(-1) &&
                          yn < static_cast<T>(h);
      for (int c = 0; c < out.channels; ++c) {
        T v = inside ? in.Channel(c)[static_cast<size_t>(yn) * w + static_cast<size_t>(xn)]
                     : T(0);
        if (fill != nullptr && !inside) v = static_cast<T>(fill[c]);  // mask 0 < 0.5.
        out.Channel(c)[i] = v;
      }
      continue;
    }
    const T xw = std::floor(x), yn = std::floor(y);
    const T we = x - xw, ea = T(1) - we;
    const T no = y - yn, so = T(1) - no;
    const T nw = so * ea, ne = so * we, sw = no * ea, se = no * we;
    const T xe = xw + T(1), ys = yn + T(1);
    // The in-image weight: the ones plane sampled the same way.
    auto one = [&](T px, T py) {
      return px > T(-1) && px < static_cast<T>(w) && py > T(-1) && py < static_cast<T>(h)
                 ? T(1) : T(0);
    };
    const T m = T(T(T(one(xw, yn) * nw) + T(one(xe, yn) * ne)) + T(one(xw, ys) * sw)) +
                T(one(xe, ys) * se);
    for (int c = 0; c < out.channels; ++c) {
      const T* p = in.Channel(c);
      T v = T(T(T(At(p, w, h, xw, yn) * nw) + T(At(p, w, h, xe, yn) * ne)) +
              T(At(p, w, h, xw, ys) * sw)) + T(At(p, w, h, xe, ys) * se);
      if (fill != nullptr) v = T(v * m) + T(T(T(1) - m) * static_cast<T>(fill[c]));
      out.Channel(c)[i] = v;
    }
  }
}

template void GridSample<float>(const Chw<const float>&, const Chw<float>&, const float*, Mode,
                                const double*);
template void GridSample<double>(const Chw<const double>&, const Chw<double>&, const double*,
                                 Mode, const double*);

}  // namespace flowloader::augment::floats
