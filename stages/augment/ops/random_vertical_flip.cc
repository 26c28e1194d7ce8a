// random_vertical_flip.cc: torchvision's RandomVerticalFlip(p=0.5): F.vflip (PIL's
// FLIP_TOP_BOTTOM) with probability p, in place.
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/kernels/geometry.h"
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
