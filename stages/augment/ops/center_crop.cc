// center_crop.cc: torchvision's CenterCrop(size): the central box of size, the image
// padded with zeros first where it is smaller (F.center_crop).
#include <algorithm>
#include <cstring>

#include "stages/augment/internal/crop_math.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class CenterCrop : public Op {
 public:
  CenterCrop(int height, int width) : height_(height), width_(width) {}

  OpSize OutputSize(OpSize) const override { return {width_, height_}; }

  // Targets: v2's center_crop (boxes anchored at round((H - h) / 2), masks as the image).
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    return internal::MoveTargetsBy(detection::Geometry::CenterCrop(height_, width_), targets);
  }

  absl::Status Apply(const OpParams&, OpImage& image) const override {
    const Image& src = *image.rgb;
    // F.center_crop pads (ltrb: (cw - w) // 2, (ch - h) // 2, rounded up on the right
    // and bottom) when the crop is larger, then crops at round((h - ch) / 2).
    const int pad_left = std::max(0, (width_ - src.width) / 2);
    const int pad_top = std::max(0, (height_ - src.height) / 2);
    const int padded_w = std::max(src.width, width_);
    const int padded_h = std::max(src.height, height_);
    const int top = internal::CenterCropOffset(padded_h, height_) - pad_top;
    const int left = internal::CenterCropOffset(padded_w, width_) - pad_left;
    Image& dst = *image.spare;
    dst.Resize(width_, height_, 3);
    // Output columns [x0, x1) lie inside the source; the rest is the zero padding.
    const int x0 = std::clamp(-left, 0, width_);
    const int x1 = std::clamp(src.width - left, x0, width_);
    for (int y = 0; y < height_; ++y) {
      uint8_t* out = dst.Row(y);
      const int sy = top + y;
      if (sy < 0 || sy >= src.height) {
        std::memset(out, 0, dst.stride());
        continue;
      }
      std::memset(out, 0, 3 * static_cast<size_t>(x0));
      std::memcpy(out + 3 * x0,
                  src.pixels.data() + static_cast<size_t>(sy) * src.stride() + 3 * (left + x0),
                  3 * static_cast<size_t>(x1 - x0));
      std::memset(out + 3 * x1, 0, 3 * static_cast<size_t>(width_ - x1));
    }
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // The label map takes the same box; the padding is ignore_index there.
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    const Image& src = *plane.labels;
    const int pad_left = std::max(0, (width_ - src.width) / 2);
    const int pad_top = std::max(0, (height_ - src.height) / 2);
    const int top = internal::CenterCropOffset(std::max(src.height, height_), height_) - pad_top;
    const int left = internal::CenterCropOffset(std::max(src.width, width_), width_) - pad_left;
    kernels::LabelResizedCrop(src, top, left, height_, width_, height_, width_, plane.fill,
                              plane.spare);
    std::swap(*plane.labels, *plane.spare);
    return absl::OkStatus();
  }

  // The same box as maps: source column left + x (-1, the zero fill, outside the image).
  bool Gather(const OpParams&, int width, int height, GatherMaps* maps) const override {
    const int left = internal::CenterCropOffset(std::max(width, width_), width_) -
                     std::max(0, (width_ - width) / 2);
    const int top = internal::CenterCropOffset(std::max(height, height_), height_) -
                    std::max(0, (height_ - height) / 2);
    maps->x_src.resize(width_);
    for (int x = 0; x < width_; ++x) {
      maps->x_src[x] = left + x >= 0 && left + x < width ? left + x : -1;
    }
    maps->y_src.resize(height_);
    for (int y = 0; y < height_; ++y) {
      maps->y_src[y] = top + y >= 0 && top + y < height ? top + y : -1;
    }
    maps->fill = {0, 0, 0};
    return true;
  }

 private:
  const int height_, width_;
};

FLOWLOADER_REGISTER_OP((OpSchema{"center_crop",
                                 "crops the central box of size (zero-padded where larger)",
                                 {{"size", "224", "an integer or [height, width]",
                                   "output size"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         int h = 0, w = 0;
                         if (absl::Status s = ReadSize("center_crop", args, "size", true, &h, &w);
                             !s.ok()) {
                           return s;
                         }
                         return std::unique_ptr<Op>(new CenterCrop(h, w));
                       });

}  // namespace
}  // namespace flowloader::augment
