// crop_math.cc: see crop_math.h. Each function cites the torchvision 0.14 line it mirrors.
//
// Thread-safety: pure functions.
#include "stages/augment/internal/crop_math.h"

#include <algorithm>
#include <cmath>

namespace flowloader::augment::internal {

namespace {

// Results beyond this are clamped: Python's ints do not overflow, C++'s would (UB), and
// no real image side comes near it.
constexpr double kMaxSide = 1 << 30;

// ToInt converts an integral double, saturating to [-kMaxSide, kMaxSide].
int ToInt(double x) {
  if (!(x < kMaxSide)) return static_cast<int>(kMaxSide);  // Also catches NaN.
  if (x < -kMaxSide) return -static_cast<int>(kMaxSide);
  return static_cast<int>(x);
}

}  // namespace

int PyRound(double x) {
  // nearbyint uses the current rounding mode, round-to-nearest-even unless someone
  // changed it; Python's round() is exactly that.
  return ToInt(std::nearbyint(x));
}

IntBox RandomResizedCropBox(int width, int height, double scale_min, double scale_max,
                            double ratio_min, double ratio_max, SampleRng& rng) {
  // area = height * width (an int in Python: no overflow there, so use double here).
  const double area = static_cast<double>(width) * static_cast<double>(height);
  const double log_ratio_min = std::log(ratio_min);
  const double log_ratio_max = std::log(ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.Uniform(scale_min, scale_max);
    const double aspect_ratio = std::exp(rng.Uniform(log_ratio_min, log_ratio_max));
    // w = int(round(math.sqrt(target_area * aspect_ratio))), h likewise with division.
    const int w = PyRound(std::sqrt(target_area * aspect_ratio));
    const int h = PyRound(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      // torch.randint(0, height - h + 1) draws from [0, height - h].
      IntBox box;
      box.top = static_cast<int>(rng.UniformInt(0, height - h + 1));
      box.left = static_cast<int>(rng.UniformInt(0, width - w + 1));
      box.height = h;
      box.width = w;
      return box;
    }
  }
  // Fallback to central crop, with the aspect ratio clamped into [ratio_min, ratio_max].
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int w = width;
  int h = height;
  if (in_ratio < ratio_min) {
    w = width;
    h = PyRound(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    h = height;
    w = PyRound(h * ratio_max);
  }
  // torchvision would go on to fail on an empty crop (only possible with an extreme
  // ratio range on a 1-pixel-wide image); keep at least one pixel instead.
  w = std::max(w, 1);
  h = std::max(h, 1);
  // Python's // floors; both operands are >= 0 here, so C++'s / agrees.
  IntBox box;
  box.top = (height - h) / 2;
  box.left = (width - w) / 2;
  box.height = h;
  box.width = w;
  return box;
}

void ResizeShorterSide(int width, int height, int size, int* new_width, int* new_height) {
  // _compute_resized_output_size: short, long = (w, h) if w <= h else (h, w);
  // new_long = int(size * long / short), a true division then truncation.
  const bool width_is_short = width <= height;
  const int short_side = width_is_short ? width : height;
  const int long_side = width_is_short ? height : width;
  const int new_long = ToInt(std::trunc(static_cast<double>(size) *
                                        static_cast<double>(long_side) / short_side));
  *new_width = width_is_short ? size : new_long;
  *new_height = width_is_short ? new_long : size;
}

int CenterCropOffset(int in_size, int out_size) {
  return PyRound((in_size - out_size) / 2.0);
}

}  // namespace flowloader::augment::internal
