// random_resized_crop.cc: torchvision's RandomResizedCrop(size, scale=(0.08, 1.0),
// ratio=(3/4, 4/3), interpolation=bilinear). At the head of a list it is planned before
// decoding (the fused crop-and-resize of transform.h, absorbing a following
// random_horizontal_flip); elsewhere it crops and resizes the pixels it is given.
#include <cmath>

#include "stages/augment/internal/crop_math.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/internal/flip.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomResizedCrop : public Op {
 public:
  RandomResizedCrop(int height, int width, std::pair<double, double> scale,
                    std::pair<double, double> ratio, Interpolation interpolation,
                    bool has_other, internal::PillowFilter other)
      : height_(height), width_(width), scale_(scale), ratio_(ratio),
        interpolation_(interpolation), has_other_(has_other), other_(other) {}

  OpSize OutputSize(OpSize) const override { return {width_, height_}; }
  // PillowResample's horizontal pass over the crop's rows (at most the input's), beside
  // the input and output, when the op runs after others (not fused into the decode).
  int64_t ScratchBytes(OpSize in) const override {
    return in.Known() ? int64_t{width_} * in.height * 3 : 0;
  }

  // Targets: v2's resized_crop with the drawn box (top, left, height, width).
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    return internal::MoveTargetsBy(
        detection::Geometry::ResizedCrop(static_cast<int>(p.v[0]), static_cast<int>(p.v[1]),
                                         static_cast<int>(p.v[2]), static_cast<int>(p.v[3]),
                                         height_, width_),
        targets);
  }

  // Params: top, left, height, width (RandomResizedCrop.get_params).
  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const internal::IntBox box = internal::RandomResizedCropBox(
        width, height, scale_.first, scale_.second, ratio_.first, ratio_.second, rng);
    params->Push(box.top);
    params->Push(box.left);
    params->Push(box.height);
    params->Push(box.width);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const Image& src = *image.rgb;
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    const int h = static_cast<int>(p.v[2]), w = static_cast<int>(p.v[3]);
    if (top < 0 || left < 0 || h <= 0 || w <= 0 || top + h > src.height ||
        left + w > src.width) {
      return absl::InvalidArgumentError("crop box outside the image");
    }
    // F.resized_crop: crop, then resize the crop alone.
    const ImageView crop{src.pixels.data() + top * src.stride() + left * 3, w, h, 3,
                         src.stride()};
    const RectF all{0, 0, static_cast<double>(w), static_cast<double>(h)};
    if (has_other_) {
      internal::PillowResampleFilter(crop, all, width_, height_, other_, image.spare);
    } else {
      internal::PillowResample(crop, all, width_, height_, interpolation_, false, image.spare);
    }
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // The label map takes the same box, resized by nearest neighbour (F.resized_crop(mask,
  // ..., NEAREST) on a PIL mask).
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams& p, LabelPlane& plane) const override {
    kernels::LabelResizedCrop(*plane.labels, static_cast<int>(p.v[0]), static_cast<int>(p.v[1]),
                              static_cast<int>(p.v[2]), static_cast<int>(p.v[3]), height_,
                              width_, plane.fill, plane.spare);
    std::swap(*plane.labels, *plane.spare);
    return absl::OkStatus();
  }

  bool PlanHead(const Op* next, double next_p, TransformOptions* o,
                bool* absorbed_next) const override {
    // The fused head makes square outputs, with the loader's three filters, from a scale
    // within (0, 1] (torchvision's other scales, 0 or above 1, run unfused: a box of no
    // area or larger than the image is drawn again, then the central fallback).
    if (height_ != width_ || has_other_ || !(scale_.first > 0 && scale_.second <= 1)) {
      return false;
    }
    o->mode = Mode::kTrain;
    o->image_size = width_;
    o->scale_min = scale_.first;
    o->scale_max = scale_.second;
    o->ratio_min = ratio_.first;
    o->ratio_max = ratio_.second;
    o->interpolation = interpolation_;
    *absorbed_next = next != nullptr && next->name() == "random_horizontal_flip" &&
                     !internal::SwapsKeypoints(*next);
    o->flip_p = *absorbed_next ? next_p : 0.0;
    return true;
  }

 private:
  const int height_, width_;
  const std::pair<double, double> scale_, ratio_;
  const Interpolation interpolation_;
  const bool has_other_;  // other_ (box, hamming, lanczos) in place of interpolation_.
  const internal::PillowFilter other_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_resized_crop",
              "crops a random box (area fraction in scale, aspect ratio in ratio) and resizes "
              "it to size",
              {{"size", "224", "an integer or [height, width]", "output size"},
               {"scale", "[0.08, 1.0]", "[min, max], 0 <= min <= max",
                "area fraction of the box (a draw of no area or over 1 is drawn again, as "
                "torchvision)"},
               {"ratio", "[0.75, 1.3333333333333333]", "[min, max], 0 < min <= max",
                "aspect ratio (width / height) of the box, drawn log-uniformly"},
               {"interpolation", "bilinear",
                "bilinear, bicubic, nearest, box, hamming or lanczos",
                "the resize filter (PIL's)"},
               {"antialias", "null", "null, true or false",
                "accepted for torchvision's signature: PIL images are always antialiased"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_resized_crop";
      int h = 0, w = 0;
      if (absl::Status s = ReadSize(op, args, "size", true, &h, &w); !s.ok()) return s;
      const OpValue& scale = args.Get("scale");
      // torchvision takes any [min, max] its uniform_ draws from: 0 <= min <= max.
      if (!(scale.numbers.size() == 2 && scale.numbers[0] >= 0 &&
            scale.numbers[0] <= scale.numbers[1] && std::isfinite(scale.numbers[1]))) {
        return ArgError(op, "scale", "[min, max] with 0 <= min <= max", scale);
      }
      const OpValue& ratio = args.Get("ratio");
      if (!(ratio.numbers.size() == 2 && ratio.numbers[0] > 0 &&
            ratio.numbers[0] <= ratio.numbers[1])) {
        return ArgError(op, "ratio", "[min, max] with 0 < min <= max", ratio);
      }
      Interpolation interpolation;
      bool has_other = false;
      internal::PillowFilter other{};
      if (absl::Status s = internal::ReadResizeFilter(op, args, "interpolation", &interpolation,
                                                      &has_other, &other);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = internal::CheckAntialias(op, args); !s.ok()) return s;
      return std::unique_ptr<Op>(new RandomResizedCrop(
          h, w, {scale.numbers[0], scale.numbers[1]}, {ratio.numbers[0], ratio.numbers[1]},
          interpolation, has_other, other));
    });

}  // namespace
}  // namespace flowloader::augment
