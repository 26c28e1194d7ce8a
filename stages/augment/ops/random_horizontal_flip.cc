// random_horizontal_flip.cc: torchvision's RandomHorizontalFlip(p=0.5): F.hflip (PIL's
// FLIP_LEFT_RIGHT) with probability p, in place.
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomHorizontalFlip : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::HorizontalFlip(*image.rgb);
    return absl::OkStatus();
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    kernels::LabelHorizontalFlip(*plane.labels);
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
