// chw.h: a [C, H, W] tensor of floating-point values, C-contiguous, as the float kernels
// of this directory read and write it (torchvision 0.14's tensor images after ToTensor:
// one plane per channel, values in [0, 1] for the colour kernels).
//
// Thread-safety: a view; the kernels are pure functions of their arguments.
#ifndef FLOWLOADER_STAGES_AUGMENT_FLOAT_CHW_H_
#define FLOWLOADER_STAGES_AUGMENT_FLOAT_CHW_H_

#include <cstddef>

namespace flowloader::augment::floats {

// Chw views channels × height × width values of T (float or double), plane by plane.
// row_stride / plane_stride (in values; 0: dense) let Resize read a crop of a larger
// image in place; every other kernel takes dense planes.
template <typename T>
struct Chw {
  T* data = nullptr;
  int channels = 0;
  int height = 0;
  int width = 0;
  size_t row_stride = 0;
  size_t plane_stride = 0;

  size_t Plane() const { return static_cast<size_t>(height) * width; }
  size_t Size() const { return Plane() * channels; }
  T* Channel(int c) const { return data + (plane_stride ? plane_stride : Plane()) * c; }
  T* Row(int c, int y) const {
    return Channel(c) + (row_stride ? row_stride : static_cast<size_t>(width)) * y;
  }
};

// Clamp01 is torch's clamp(v, 0, 1) (the blends' and the colour ops' last step).
template <typename T>
inline T Clamp01(T v) {
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}

// Blend is torchvision's _blend on floats: ratio * a + (1 - ratio) * b, clamped to
// [0, 1], each step rounded to T as torch computes it (the factors are Python floats:
// `ratio` as T, `1.0 - ratio` computed in double, then as T).
template <typename T>
struct Blend {
  explicit Blend(double ratio) : r(static_cast<T>(ratio)), s(static_cast<T>(1.0 - ratio)) {}
  T operator()(T a, T b) const { return Clamp01(T(r * a) + T(s * b)); }
  T r, s;
};

}  // namespace flowloader::augment::floats

#endif  // FLOWLOADER_STAGES_AUGMENT_FLOAT_CHW_H_
