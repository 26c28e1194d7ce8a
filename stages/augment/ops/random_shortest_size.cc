// random_shortest_size.cc: torchvision's detection reference RandomShortestSize(min_size,
// max_size, interpolation=bilinear) (references/detection/transforms.py at v0.14.0; v2's
// RandomShortestSize), multi-scale training: the shorter side is resized to one of
// min_size (drawn uniformly), the longer side capped at max_size.
//
// Params: new_height, new_width, as forward() computes them:
//   m = min_size[randint(len(min_size))];
//   r = min(m / min(height, width), max_size / max(height, width));
//   new = int(size · r)   (at least 1 here).
// Pixels: PIL's resize; boxes scaled per axis, masks nearest. The size depends on the
// image: follow it with fixed_size_crop (or a resize to [h, w]) for a batch tensor.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/internal/drawn_resize.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomShortestSize : public internal::DrawnResizeOp {
 public:
  RandomShortestSize(std::vector<int> min_sizes, int max_size, Interpolation interpolation)
      : DrawnResizeOp(interpolation), min_sizes_(std::move(min_sizes)), max_size_(max_size) {}

  OpSize OutputSize(OpSize) const override { return {}; }  // Depends on the image.
  // r ≤ max_size / long side: neither side passes max_size (one more for the rounding).
  OpSize OutputBound(OpSize) const override { return {max_size_ + 1, max_size_ + 1}; }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const int m = min_sizes_[static_cast<size_t>(
        rng.UniformInt(0, static_cast<int64_t>(min_sizes_.size())))];
    const double r = std::min(static_cast<double>(m) / std::min(height, width),
                              static_cast<double>(max_size_) / std::max(height, width));
    params->Push(std::max(1, static_cast<int>(height * r)));
    params->Push(std::max(1, static_cast<int>(width * r)));
  }

 private:
  const std::vector<int> min_sizes_;
  const int max_size_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_shortest_size",
              "resizes the shorter side to one of min_size (random), the longer side at most "
              "max_size (multi-scale training; boxes and masks follow)",
              {{"min_size", "[480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800]",
                "an integer or a list of integers in [1, 16384]", "shorter sides drawn from"},
               {"max_size", "1333", "an integer in [1, 16384]", "cap on the longer side"},
               {"interpolation", "bilinear", "bilinear, bicubic or nearest",
                "the resize filter (PIL's)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_shortest_size";
      const OpValue& min_size = args.Get("min_size");
      std::vector<int> sizes;
      bool ok = !min_size.numbers.empty() && min_size.word.empty() && !min_size.is_none;
      for (double v : min_size.numbers) {
        ok = ok && v >= 1 && v <= 16384 && v == std::floor(v);
        sizes.push_back(static_cast<int>(v));
      }
      if (!ok) return ArgError(op, "min_size", "an integer or a list of integers in [1, 16384]",
                               min_size);
      const OpValue& max_size = args.Get("max_size");
      if (!(max_size.IsNumber() && max_size.numbers[0] >= 1 && max_size.numbers[0] <= 16384 &&
            max_size.numbers[0] == std::floor(max_size.numbers[0]))) {
        return ArgError(op, "max_size", "an integer in [1, 16384]", max_size);
      }
      Interpolation interpolation;
      if (absl::Status s = ReadInterpolation(op, args, "interpolation", &interpolation);
          !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new RandomShortestSize(
          std::move(sizes), static_cast<int>(max_size.numbers[0]), interpolation));
    });

}  // namespace
}  // namespace flowloader::augment
