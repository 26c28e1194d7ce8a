// random_vertical_flip.cc: torchvision's RandomVerticalFlip(p=0.5): F.vflip (PIL's
// FLIP_TOP_BOTTOM) with probability p, in place.
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomVerticalFlip : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::VerticalFlip(*image.rgb);
    return absl::OkStatus();
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    kernels::LabelVerticalFlip(*plane.labels);
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
