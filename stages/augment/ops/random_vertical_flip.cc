// random_vertical_flip.cc: torchvision's RandomVerticalFlip(p=0.5): F.vflip (PIL's
// FLIP_TOP_BOTTOM) with probability p, in place.
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomVerticalFlip : public Op {
 public:
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    return internal::MoveTargetsBy(detection::Geometry::VerticalFlip(), targets);
  }
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::VerticalFlip(*image.rgb);
    return absl::OkStatus();
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    kernels::LabelVerticalFlip(*plane.labels);
    return absl::OkStatus();
  }

  bool GatherMovesMasks() const override { return true; }
  bool Gather(const OpParams&, int width, int height, GatherMaps* maps) const override {
    maps->x_src.resize(width);
    for (int x = 0; x < width; ++x) maps->x_src[x] = x;
    maps->y_src.resize(height);
    for (int y = 0; y < height; ++y) maps->y_src[y] = height - 1 - y;
    return true;
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_vertical_flip",
                                 "mirrors the image top-bottom with probability p",
                                 {},
                                 0.5}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomVerticalFlip);
                       });

}  // namespace
}  // namespace flowloader::augment
