// random_grayscale.cc: torchvision's RandomGrayscale(p=0.1): PIL's RGB -> L
// conversion in all three channels (F.rgb_to_grayscale(img, 3)), with
// probability p.
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomGrayscale : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Grayscale(*image.rgb);
    return absl::OkStatus();
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_grayscale",
                                 "converts the image to grayscale (three equal "
                                 "channels) with probability p",
                                 {},
                                 0.1}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomGrayscale);
                       });

}  // namespace
}  // namespace flowloader::augment
