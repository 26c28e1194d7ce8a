// grayscale.cc: torchvision's Grayscale(num_output_channels): PIL's RGB -> L
// conversion, written to all three channels (F.rgb_to_grayscale(img, 3)).
//
// A view's pixels stay RGB, so only num_output_channels=3 is accepted;
// torchvision's default is 1 (a one-channel image), which is refused with that
// reason, hence the default here is 3.
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class Grayscale : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Grayscale(*image.rgb);
    return absl::OkStatus();
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"grayscale",
                                 "converts the image to grayscale (PIL's L), kept in three equal "
                                 "channels",
                                 {{"num_output_channels", "3", "3",
                                   "channels of the output; a view stays RGB, so 3 (torchvision's "
                                   "default 1 is "
                                   "not supported)"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         const OpValue& v = args.Get("num_output_channels");
                         if (!v.IsNumber() || v.numbers[0] != 3) {
                           return ArgError(
                               "grayscale", "num_output_channels",
                               "3 (a view's pixels stay RGB: one-channel output is not supported)",
                               v);
                         }
                         return std::unique_ptr<Op>(new Grayscale);
                       });

}  // namespace
}  // namespace flowloader::augment
