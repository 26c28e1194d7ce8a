// random_crop.cc: torchvision's RandomCrop(size, padding=None, pad_if_needed=False, fill=0,
// padding_mode=constant). As RandomCrop.forward: pad by `padding` (F.pad), then, with
// pad_if_needed, pad left and right each by size_w - width where narrower, then top and
// bottom each by size_h - height where shorter; then crop at a position drawn uniformly
// (RandomCrop.get_params: top, left, height, width).
//
// Nothing is padded in memory: each output row and column is mapped back through the pads
// to a source index (or to the fill), reproducing np.pad's index pattern, which
// functional_pil.pad uses for edge/reflect/symmetric, including its iterated reflections
// where a pad is wider than the image.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/internal/numpy_pad.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using internal::GatherThroughMaps;
using internal::NumpyPad;
using internal::Padding;
using internal::PadMode;

class RandomCrop : public Op {
 public:
  RandomCrop(int height, int width, Padding padding, bool pad_if_needed,
             std::array<uint8_t, 3> fill, PadMode mode)
      : height_(height), width_(width), padding_(padding), pad_if_needed_(pad_if_needed),
        fill_(fill), mode_(mode) {}

  OpSize OutputSize(OpSize) const override { return {width_, height_}; }

  // Params: top, left, height, width (RandomCrop.get_params on the padded image).
  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const Axis x = XAxis(width), y = YAxis(height);
    int top = 0, left = 0;
    if (y.padded >= height_ && x.padded >= width_ &&
        !(x.padded == width_ && y.padded == height_)) {
      top = static_cast<int>(rng.UniformInt(0, y.padded - height_ + 1));
      left = static_cast<int>(rng.UniformInt(0, x.padded - width_ + 1));
    }
    params->Push(top);
    params->Push(left);
    params->Push(height_);
    params->Push(width_);
  }

  // Targets: v2's pad then crop: boxes shifted by the crop's origin in the unpadded
  // canvas and clamped; masks through the same maps as the pixels.
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    const Axis x = XAxis(targets->canvas_width), y = YAxis(targets->canvas_height);
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    thread_local std::vector<int> map_x, map_y, stage1, stage2;
    Map(targets->canvas_width, x, left, width_, &stage1, &stage2, &map_x);
    Map(targets->canvas_height, y, top, height_, &stage1, &stage2, &map_y);
    internal::PadTargets(top - y.before - y.extra, left - x.before - x.extra, map_x, map_y,
                         targets);
    return absl::OkStatus();
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const Image& src = *image.rgb;
    const Axis x = XAxis(src.width), y = YAxis(src.height);
    if (src.width + x.before + x.after <= 0 || src.height + y.before + y.after <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "padding [", padding_.left, ", ", padding_.top, ", ", padding_.right, ", ",
          padding_.bottom, "] crops away all of the ", src.width, "x", src.height, " image"));
    }
    if (x.padded < width_ || y.padded < height_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the image is ", x.padded, "x", y.padded, " after padding, smaller than size [",
          height_, ", ", width_, "] (set pad_if_needed=true or pad more)"));
    }
    thread_local GatherMaps maps;
    if (!Gather(p, src.width, src.height, &maps)) {
      return absl::InvalidArgumentError("crop position outside the padded image");
    }
    GatherThroughMaps(src, maps.x_src, maps.y_src, maps.fill, image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // The label map takes the same crop through the same pads; constant padding is
  // ignore_index there (the other modes repeat labels as they repeat pixels).
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams& p, LabelPlane& plane) const override {
    const Image& src = *plane.labels;
    const Axis x = XAxis(src.width), y = YAxis(src.height);
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    thread_local std::vector<int> map_x, map_y, stage1, stage2;
    Map(src.width, x, left, width_, &stage1, &stage2, &map_x);
    Map(src.height, y, top, height_, &stage1, &stage2, &map_y);
    kernels::LabelGather(src, map_x, map_y, plane.fill, plane.spare);
    std::swap(*plane.labels, *plane.spare);
    return absl::OkStatus();
  }

  // The crop's maps; false where the image is too small or the position is outside it.
  bool Gather(const OpParams& p, int width, int height, GatherMaps* maps) const override {
    const Axis x = XAxis(width), y = YAxis(height);
    const int top = p.n >= 2 ? static_cast<int>(p.v[0]) : -1;
    const int left = p.n >= 2 ? static_cast<int>(p.v[1]) : -1;
    if (x.padded < width_ || y.padded < height_ || top < 0 || left < 0 ||
        top > y.padded - height_ || left > x.padded - width_ ||
        width + x.before + x.after <= 0 || height + y.before + y.after <= 0) {
      return false;
    }
    thread_local std::vector<int> stage1, stage2;
    Map(width, x, left, width_, &stage1, &stage2, &maps->x_src);
    Map(height, y, top, height_, &stage1, &stage2, &maps->y_src);
    maps->fill = fill_;
    return true;
  }

 private:
  // Axis is one axis's two pads: `padding` (before, after), then pad_if_needed's
  // (extra, extra); `padded` the size after both.
  struct Axis {
    int before = 0, after = 0, extra = 0, padded = 0;
  };
  Axis XAxis(int width) const { return MakeAxis(width, padding_.left, padding_.right, width_); }
  Axis YAxis(int height) const {
    return MakeAxis(height, padding_.top, padding_.bottom, height_);
  }
  Axis MakeAxis(int n, int before, int after, int want) const {
    Axis a{before, after, 0, n + before + after};
    if (pad_if_needed_ && a.padded < want) a.extra = want - a.padded;
    a.padded += 2 * a.extra;
    return a;
  }
  // Map sets out[k] for k in [0, count) to the source index of padded coordinate
  // start + k along an axis of n pixels, or -1 for the fill.
  void Map(int n, const Axis& a, int start, int count, std::vector<int>* stage1,
           std::vector<int>* stage2, std::vector<int>* out) const {
    out->resize(count);
    if (n + a.before + a.after <= 0) {  // Negative padding left nothing (Apply refuses it).
      std::fill(out->begin(), out->end(), -1);
      return;
    }
    NumpyPad(n, a.before, a.after, mode_, stage1);
    NumpyPad(n + a.before + a.after, a.extra, a.extra, mode_, stage2);
    for (int k = 0; k < count; ++k) {
      const int c = (*stage2)[start + k];
      (*out)[k] = c < 0 ? -1 : (*stage1)[c];
    }
  }

  const int height_, width_;
  const Padding padding_;
  const bool pad_if_needed_;
  const std::array<uint8_t, 3> fill_;
  const PadMode mode_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_crop",
              "crops a box of size at a uniformly drawn position, after optional padding",
              {{"size", "224", "an integer or [height, width]",
                "output size (required in torchvision)"},
               {"padding", "null",
                "null, an integer, [left/right, top/bottom] or [left, top, right, bottom]",
                "pixels added on each border first"},
               {"pad_if_needed", "false", "true or false",
                "pad an image smaller than size (each side by the shortfall, as torchvision)"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the padding's colour in constant mode"},
               {"padding_mode", "constant", "constant, edge, reflect or symmetric",
                "how padding is filled (np.pad's modes)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_crop";
      int h = 0, w = 0;
      if (absl::Status s = ReadSize(op, args, "size", true, &h, &w); !s.ok()) return s;
      Padding padding;
      if (absl::Status s = internal::ReadPadding(op, args, "padding", &padding); !s.ok()) {
        return s;
      }
      bool pad_if_needed = false;
      if (absl::Status s = internal::ReadBool(op, args, "pad_if_needed", &pad_if_needed);
          !s.ok()) {
        return s;
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill(op, args, "fill", &fill); !s.ok()) return s;
      PadMode mode;
      if (absl::Status s = internal::ReadPadMode(op, args, "padding_mode", &mode); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new RandomCrop(h, w, padding, pad_if_needed, fill, mode));
    });

}  // namespace
}  // namespace flowloader::augment
