// grayscale.cc: torchvision's Grayscale(num_output_channels): PIL's RGB -> L
// conversion, written to all three channels (F.rgb_to_grayscale(img, 3)).
//
// num_output_channels=1 (torchvision's default) makes the view one channel: the ops
// after it still work on three equal channels (each keeps them equal, as PIL's ops on an
// L image), and the view keeps the first (ViewProgram::PlanChannels: [1, H, W] after
// normalize with one mean and std, [H, W, 1] without normalize). The default here stays 3,
// what op lists written before meant by `grayscale()`; flowloader.transforms writes it.
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
                                 "converts the image to grayscale (PIL's L): one channel, or "
                                 "three equal ones",
                                 {{"num_output_channels", "3", "1 or 3",
                                   "channels of the view: 1 (torchvision's default; the view "
                                   "is [1, H, W]) or 3 equal ones"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         const OpValue& v = args.Get("num_output_channels");
                         if (!v.IsNumber() || (v.numbers[0] != 3 && v.numbers[0] != 1)) {
                           return ArgError("grayscale", "num_output_channels", "1 or 3", v);
                         }
                         return std::unique_ptr<Op>(new Grayscale);
                       });

}  // namespace
}  // namespace flowloader::augment
