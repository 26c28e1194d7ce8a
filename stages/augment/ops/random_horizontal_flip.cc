// random_horizontal_flip.cc: torchvision's RandomHorizontalFlip(p=0.5): F.hflip (PIL's
// FLIP_LEFT_RIGHT) with probability p, in place.
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomHorizontalFlip : public Op {
 public:
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    return internal::MoveTargetsBy(detection::Geometry::HorizontalFlip(), targets);
  }
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::HorizontalFlip(*image.rgb);
    return absl::OkStatus();
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_horizontal_flip",
                                 "mirrors the image left-right with probability p",
                                 {},
                                 0.5}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomHorizontalFlip);
                       });

}  // namespace
}  // namespace flowloader::augment
