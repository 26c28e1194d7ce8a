// resize.cc: torchvision's Resize(size, interpolation=bilinear, max_size=None): an
// integer size sets the shorter side (the longer one keeps the aspect ratio, truncated),
// [height, width] both. Followed by center_crop at the head of a list, the two are
// planned before decoding as one fused resize-and-crop (transform.h's eval mode).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/crop_math.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class Resize : public Op {
 public:
  Resize(int height, int width, int max_size, Interpolation interpolation, bool has_other,
         internal::PillowFilter other)
      : height_(height), width_(width), max_size_(max_size), interpolation_(interpolation),
        has_other_(has_other), other_(other) {}

  // With max_size the long side is at most max_size, so both are; without it a side grows
  // with the image's aspect ratio (no bound).
  OpSize OutputBound(OpSize in) const override {
    if (width_ > 0) return {width_, height_};
    if (max_size_ > 0) return {max_size_, max_size_};
    return {};
  }
  OpSize OutputSize(OpSize in) const override {
    if (width_ > 0) return {width_, height_};
    if (!in.Known()) return {};
    OpSize out;
    OutputFor(in.width, in.height, &out.width, &out.height);
    return out;
  }
  // PillowResample's horizontal pass: the output's width times the rows it reads (at
  // most the input's), beside the input and output (281 MiB for 12000² to 8192²).
  int64_t ScratchBytes(OpSize in) const override {
    const OpSize out = OutputSize(in);
    if (!in.Known() || !out.Known() || out.width == in.width) return 0;
    return int64_t{out.width} * in.height * 3;
  }

  // Targets: v2's resize (boxes scaled per axis, masks nearest).
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    int w = width_, h = height_;
    if (width_ == 0) OutputFor(targets->canvas_width, targets->canvas_height, &w, &h);
    return internal::MoveTargetsBy(detection::Geometry::Resize(h, w), targets);
  }

  absl::Status Apply(const OpParams&, OpImage& image) const override {
    const Image& src = *image.rgb;
    int w = width_, h = height_;
    if (width_ == 0) OutputFor(src.width, src.height, &w, &h);
    if (w < 1 || h < 1) return EmptyOutput(src.width, src.height, w, h);
    const RectF all{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)};
    if (has_other_) {
      internal::PillowResampleFilter(src.view(), all, w, h, other_, image.spare);
    } else {
      internal::PillowResample(src.view(), all, w, h, interpolation_, false, image.spare);
    }
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  bool ResizeTo(const OpParams&, int width, int height, OpSize* out,
                Interpolation* filter) const override {
    if (has_other_) return false;  // Box, hamming, lanczos: PillowResampleFilter's.
    out->width = width_;
    out->height = height_;
    if (width_ == 0) OutputFor(width, height, &out->width, &out->height);
    *filter = interpolation_;
    return out->width >= 1 && out->height >= 1;  // Else Apply refuses the sample.
  }

  // The label map is resized to the same size by nearest neighbour (F.resize(mask,
  // NEAREST) on a PIL mask), whatever the image's interpolation.
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    const Image& src = *plane.labels;
    int w = width_, h = height_;
    if (width_ == 0) OutputFor(src.width, src.height, &w, &h);
    if (w < 1 || h < 1) return EmptyOutput(src.width, src.height, w, h);
    kernels::LabelResizedCrop(src, 0, 0, src.height, src.width, h, w, plane.fill, plane.spare);
    std::swap(*plane.labels, *plane.spare);
    return absl::OkStatus();
  }

  bool PlanHead(const Op* next, double next_p, TransformOptions* o,
                bool* absorbed_next) const override {
    // Resize(shorter side) + CenterCrop(square, not larger): transform.h's eval pass.
    OpSize crop = next != nullptr && next->name() == "center_crop" && next_p == 1
                      ? next->OutputSize({})
                      : OpSize{};
    if (width_ != 0 || max_size_ > 0 || has_other_ || !crop.Known() ||
        crop.width != crop.height || crop.width > height_) {
      return false;
    }
    o->mode = Mode::kEval;
    o->image_size = crop.width;
    o->resize_size = height_;
    o->interpolation = interpolation_;
    *absorbed_next = true;
    return true;
  }

 private:
  // EmptyOutput refuses an image whose resized side would be 0 pixels (max_size on a
  // very long image: torchvision's PIL resize raises there too).
  absl::Status EmptyOutput(int w, int h, int out_w, int out_h) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", w, "x", h, " image would be ", out_w, "x", out_h, " (size ", height_,
        ", max_size ", max_size_, "): its aspect ratio is too long; raise max_size"));
  }
  // OutputFor is torchvision's _compute_resized_output_size for an integer size.
  void OutputFor(int w, int h, int* out_w, int* out_h) const {
    const int short_side = std::min(w, h), long_side = std::max(w, h);
    int new_short = height_;
    int new_long = static_cast<int>(static_cast<double>(height_) * long_side / short_side);
    if (max_size_ > 0 && new_long > max_size_) {
      new_short = static_cast<int>(static_cast<double>(max_size_) * new_short / new_long);
      new_long = max_size_;
    }
    *out_w = w <= h ? new_short : new_long;
    *out_h = w <= h ? new_long : new_short;
  }

  const int height_, width_;  // width_ 0: height_ is the shorter side.
  const int max_size_;
  const Interpolation interpolation_;
  const bool has_other_;  // other_ (box, hamming, lanczos) in place of interpolation_.
  const internal::PillowFilter other_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"resize",
              "resizes to size: an integer sets the shorter side, [height, width] both",
              {{"size", "256", "an integer or [height, width]", "output size"},
               {"interpolation", "bilinear",
                "bilinear, bicubic, nearest, box, hamming or lanczos",
                "the resize filter (PIL's)"},
               {"max_size", "null", "null or an integer > size",
                "caps the longer side (integer size only); above 16384, the largest side "
                "an op makes, it caps at 16384"},
               {"antialias", "null", "null, true or false",
                "accepted for torchvision's signature: PIL images are always antialiased"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "resize";
      int h = 0, w = 0;
      if (absl::Status s = ReadSize(op, args, "size", false, &h, &w); !s.ok()) return s;
      int max_size = 0;
      const OpValue& m = args.Get("max_size");
      if (!m.is_none) {
        if (w != 0) return ArgError(op, "max_size", "null when size is [height, width]", m);
        // torchvision takes any integer above size; one above 16384 can bind only on an
        // output no op makes, so it is 16384 (an int, and a bound the memory plan can hold).
        if (!(m.IsNumber() && m.numbers[0] > h && std::isfinite(m.numbers[0]) &&
              m.numbers[0] == std::floor(m.numbers[0]))) {
          return ArgError(op, "max_size", absl::StrCat("an integer > size=", h), m);
        }
        max_size = static_cast<int>(std::min(m.numbers[0], 16384.0));
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
      return std::unique_ptr<Op>(new Resize(h, w, max_size, interpolation, has_other, other));
    });

}  // namespace
}  // namespace flowloader::augment
