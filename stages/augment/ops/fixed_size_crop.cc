// fixed_size_crop.cc: torchvision's detection reference FixedSizeCrop(size, fill=0,
// padding_mode=constant) (references/detection/transforms.py at v0.14.0; v2's
// FixedSizeCrop), the Mask R-CNN large-scale-jitter recipe's crop: a random crop of at
// most size, then padding on the right and bottom up to size, so every output is size.
//
// Params: top, left (the crop's corner; 0, 0 when the image fits), as forward() draws
// them: one u for both, top = int(max(H − h, 0) · u), left = int(max(W − w, 0) · u).
// Targets, as the reference's _crop and _pad: boxes shifted and clamped to the crop, the
// boxes left with no width or height dropped with their labels, masks, iscrowd and area
// (only when it crops); masks cropped, then padded with 0 (whatever padding_mode is).
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/internal/numpy_pad.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using internal::NumpyPad;
using internal::PadMode;

class FixedSizeCrop : public Op {
 public:
  FixedSizeCrop(int height, int width, std::array<uint8_t, 3> fill, PadMode mode)
      : height_(height), width_(width), fill_(fill), mode_(mode) {}

  OpSize OutputSize(OpSize) const override { return {width_, height_}; }
  TargetEffect Targets() const override { return TargetEffect::kMoves; }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    int top = 0, left = 0;
    if (std::min(height, height_) != height || std::min(width, width_) != width) {
      const double u = rng.Uniform(0, 1);
      top = static_cast<int>(std::max(height - height_, 0) * u);
      left = static_cast<int>(std::max(width - width_, 0) * u);
    }
    params->Push(top);
    params->Push(left);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const Image& src = *image.rgb;
    if (absl::Status s = Check(p, src.width, src.height); !s.ok()) return s;
    thread_local std::vector<int> map_x, map_y;
    Map(src.width, width_, static_cast<int>(p.v[1]), mode_, &map_x);
    Map(src.height, height_, static_cast<int>(p.v[0]), mode_, &map_y);
    internal::GatherThroughMaps(src, map_x, map_y, fill_, image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // Gather: the crop-and-pad maps. Only in constant mode, where the masks (cropped, then
  // padded with 0) follow the same maps; the other modes repeat pixels, not masks.
  bool GatherMovesMasks() const override { return true; }
  bool Gather(const OpParams& p, int width, int height, GatherMaps* maps) const override {
    if (mode_ != PadMode::kConstant || !Check(p, width, height).ok()) return false;
    Map(width, width_, static_cast<int>(p.v[1]), mode_, &maps->x_src);
    Map(height, height_, static_cast<int>(p.v[0]), mode_, &maps->y_src);
    maps->fill = fill_;
    return true;
  }

  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    const int w = targets->canvas_width, h = targets->canvas_height;
    if (absl::Status s = Check(p, w, h); !s.ok()) return s;
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    // Crop then pad right and bottom with 0 is one crop window reaching past the image
    // (masks: row copies, zeros outside; boxes: shifted, clamped to the crop, which is
    // the reference's clamp to min(size, image) since the boxes lie inside the image).
    if (absl::Status s = internal::MoveTargetsBy(
            detection::Geometry::Crop(top, left, height_, width_), targets);
        !s.ok()) {
      return s;
    }
    if (std::min(h, height_) != h || std::min(w, width_) != w) {  // _crop's is_valid.
      std::vector<float> b = targets->boxes;
      detection::ConvertBoxes(targets->format, detection::BoxFormat::kXYXY, &b);
      std::vector<bool> valid(static_cast<size_t>(targets->size()));
      for (size_t k = 0; k < valid.size(); ++k) {
        valid[k] = b[4 * k] < b[4 * k + 2] && b[4 * k + 1] < b[4 * k + 3];
      }
      targets->Keep(valid);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Check(const OpParams& p, int width, int height) const {
    if (p.n != 2 || !(p.v[0] >= 0 && p.v[1] >= 0 && p.v[0] <= std::max(height - height_, 0) &&
                      p.v[1] <= std::max(width - width_, 0))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "needs params top, left within the ", width, "x", height, " image, got ", p.n > 0 ? p.v[0] : -1,
          ", ", p.n > 1 ? p.v[1] : -1));
    }
    return absl::OkStatus();
  }

  // Map: out[k] for k in [0, size) is the source index along an axis of n pixels of the
  // crop from `start` (min(n, size) long) padded after to size, or -1 for the fill.
  static void Map(int n, int size, int start, PadMode mode, std::vector<int>* out) {
    const int kept = std::min(n, size);
    NumpyPad(kept, 0, size - kept, mode, out);
    for (int& c : *out) c = c < 0 ? -1 : start + c;
  }

  const int height_, width_;
  const std::array<uint8_t, 3> fill_;
  const PadMode mode_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"fixed_size_crop",
              "crops a random box of at most size, then pads right and bottom to size "
              "(boxes and masks follow; emptied boxes are dropped)",
              {{"size", "[1024, 1024]", "an integer or [height, width]", "output size"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the padding's colour in constant mode"},
               {"padding_mode", "constant", "constant, edge, reflect or symmetric",
                "how padding is filled (np.pad's modes)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "fixed_size_crop";
      int h = 0, w = 0;
      if (absl::Status s = ReadSize(op, args, "size", true, &h, &w); !s.ok()) return s;
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill(op, args, "fill", &fill); !s.ok()) return s;
      PadMode mode;
      if (absl::Status s = internal::ReadPadMode(op, args, "padding_mode", &mode); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new FixedSizeCrop(h, w, fill, mode));
    });

}  // namespace
}  // namespace flowloader::augment
