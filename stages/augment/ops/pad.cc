// pad.cc: torchvision's Pad(padding, fill=0, padding_mode=constant): F.pad on a PIL image,
// each side by its pad, filled with `fill` (constant) or np.pad's edge, reflect or
// symmetric pattern (internal/numpy_pad.h), exact. The output is larger than the input by
// the pads, so a list with pad needs a fixed-size op after it or a fixed size before it.
#include <array>
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

class Pad : public Op {
 public:
  Pad(Padding padding, std::array<uint8_t, 3> fill, PadMode mode)
      : padding_(padding), fill_(fill), mode_(mode) {}

  OpSize OutputBound(OpSize in) const override { return OutputSize(in); }  // Grows with in.
  OpSize OutputSize(OpSize in) const override {
    if (!in.Known() || Empty(in.width, in.height)) return {};
    return {in.width + padding_.left + padding_.right, in.height + padding_.top + padding_.bottom};
  }

  // Targets: v2's pad (boxes shifted and clamped, masks padded as the image is).
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    thread_local std::vector<int> map_x, map_y;
    NumpyPad(targets->canvas_width, padding_.left, padding_.right, mode_, &map_x);
    NumpyPad(targets->canvas_height, padding_.top, padding_.bottom, mode_, &map_y);
    internal::PadTargets(-padding_.top, -padding_.left, map_x, map_y, targets);
    return absl::OkStatus();
  }

  absl::Status Apply(const OpParams&, OpImage& image) const override {
    if (Empty(image.rgb->width, image.rgb->height)) return Nothing(*image.rgb);
    thread_local GatherMaps maps;
    Gather(OpParams{}, image.rgb->width, image.rgb->height, &maps);
    GatherThroughMaps(*image.rgb, maps.x_src, maps.y_src, maps.fill, image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // The label map is padded alike; constant padding is ignore_index there.
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    const Image& src = *plane.labels;
    if (Empty(src.width, src.height)) return Nothing(src);
    thread_local std::vector<int> map_x, map_y;
    NumpyPad(src.width, padding_.left, padding_.right, mode_, &map_x);
    NumpyPad(src.height, padding_.top, padding_.bottom, mode_, &map_y);
    kernels::LabelGather(src, map_x, map_y, plane.fill, plane.spare);
    std::swap(*plane.labels, *plane.spare);
    return absl::OkStatus();
  }

  bool Gather(const OpParams&, int width, int height, GatherMaps* maps) const override {
    if (Empty(width, height)) return false;
    NumpyPad(width, padding_.left, padding_.right, mode_, &maps->x_src);
    NumpyPad(height, padding_.top, padding_.bottom, mode_, &maps->y_src);
    maps->fill = fill_;
    return true;
  }

 private:
  // Empty: negative padding (a crop, as F.pad) leaves no pixel of a width x height image.
  bool Empty(int width, int height) const {
    return width + padding_.left + padding_.right <= 0 ||
           height + padding_.top + padding_.bottom <= 0;
  }
  absl::Status Nothing(const Image& src) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "padding [", padding_.left, ", ", padding_.top, ", ", padding_.right, ", ",
        padding_.bottom, "] crops away all of the ", src.width, "x", src.height, " image"));
  }

  const Padding padding_;
  const std::array<uint8_t, 3> fill_;
  const PadMode mode_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"pad",
              "pads each border: a fill colour or np.pad's edge, reflect or symmetric pattern",
              {{"padding", "0", "an integer, [left/right, top/bottom] or [left, top, right, "
                                "bottom], each in [-16384, 16384]",
                "pixels added on each border (a negative one crops it, as F.pad)"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the padding's colour in constant mode"},
               {"padding_mode", "constant", "constant, edge, reflect or symmetric",
                "how padding is filled (np.pad's modes)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "pad";
      Padding padding;
      if (absl::Status s = internal::ReadPadding(op, args, "padding", &padding); !s.ok()) {
        return s;
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill(op, args, "fill", &fill); !s.ok()) return s;
      PadMode mode;
      if (absl::Status s = internal::ReadPadMode(op, args, "padding_mode", &mode); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new Pad(padding, fill, mode));
    });

}  // namespace
}  // namespace flowloader::augment
