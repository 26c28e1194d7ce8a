// scale_jitter.cc: torchvision's detection reference ScaleJitter(target_size,
// scale_range=(0.1, 2.0), interpolation=bilinear) (references/detection/transforms.py at
// v0.14.0; v2's ScaleJitter), large-scale jitter (Mask R-CNN / Copy-Paste recipes): the
// image is resized by a random scale of the factor that fits it in target_size.
//
// Params: new_height, new_width, computed as forward() does:
//   scale = scale_range[0] + u · (scale_range[1] − scale_range[0]);
//   r = min(target_size[1] / height, target_size[0] / width) · scale;
//   new = int(size · r)   (at least 1 here; torchvision would fail on a 0-pixel side).
// (The reference pairs target_size[1] with the height and [0] with the width; flowloader
// keeps that pairing, the same for the square sizes the recipes use.) Pixels: PIL's
// resize; boxes scaled per axis, masks nearest (F.resize(mode=nearest)). The size depends
// on the draw: follow it with fixed_size_crop (or a resize to [h, w]) for a batch tensor.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/internal/drawn_resize.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class ScaleJitter : public internal::DrawnResizeOp {
 public:
  ScaleJitter(int target_a, int target_b, double lo, double hi, Interpolation interpolation)
      : DrawnResizeOp(interpolation), target_a_(target_a), target_b_(target_b), lo_(lo),
        hi_(hi) {}

  OpSize OutputSize(OpSize) const override { return {}; }  // Depends on the draw.
  // int(size · r) with r ≤ target / size · scale_range[1]: at most target × the largest
  // scale (one more for the rounding of the division).
  OpSize OutputBound(OpSize) const override {
    const double s = std::max(lo_, hi_);
    return {static_cast<int>(std::ceil(target_a_ * s)) + 1,
            static_cast<int>(std::ceil(target_b_ * s)) + 1};
  }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const double scale = lo_ + rng.Uniform(0, 1) * (hi_ - lo_);
    const double r = std::min(static_cast<double>(target_b_) / height,
                              static_cast<double>(target_a_) / width) *
                     scale;
    params->Push(std::max(1, static_cast<int>(height * r)));
    params->Push(std::max(1, static_cast<int>(width * r)));
  }

 private:
  const int target_a_, target_b_;  // target_size[0], target_size[1].
  const double lo_, hi_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"scale_jitter",
              "resizes by a random scale of the factor fitting the image in target_size "
              "(large-scale jitter; boxes and masks follow)",
              {{"target_size", "[1024, 1024]", "an integer or [height, width]",
                "the size the scale range refers to"},
               {"scale_range", "[0.1, 2.0]", "[min, max] with 0 < min <= max <= 100",
                "the scale's range"},
               {"interpolation", "bilinear", "bilinear, bicubic or nearest",
                "the resize filter (PIL's)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "scale_jitter";
      int h = 0, w = 0;
      if (absl::Status s = ReadSize(op, args, "target_size", true, &h, &w); !s.ok()) return s;
      const OpValue& range = args.Get("scale_range");
      if (!(range.is_list && range.numbers.size() == 2 && range.numbers[0] > 0 &&
            range.numbers[0] <= range.numbers[1] && range.numbers[1] <= 100)) {
        return ArgError(op, "scale_range", "[min, max] with 0 < min <= max <= 100", range);
      }
      Interpolation interpolation;
      if (absl::Status s = ReadInterpolation(op, args, "interpolation", &interpolation);
          !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(
          new ScaleJitter(h, w, range.numbers[0], range.numbers[1], interpolation));
    });

}  // namespace
}  // namespace flowloader::augment
