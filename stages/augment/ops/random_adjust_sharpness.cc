// random_adjust_sharpness.cc: torchvision's
// RandomAdjustSharpness(sharpness_factor, p=0.5): ImageEnhance.Sharpness, a
// blend with PIL's SMOOTH-filtered image (0 blurs, 1 keeps, 2 sharpens), with
// probability p.
#include <limits>

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomAdjustSharpness : public Op {
 public:
  explicit RandomAdjustSharpness(double factor) : factor_(factor) {}
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::AdjustSharpness(*image.rgb, factor_);
    return absl::OkStatus();
  }

 private:
  const double factor_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_adjust_sharpness",
              "sharpens (factor > 1) or blurs (< 1) as ImageEnhance.Sharpness, with "
              "probability p",
              {{"sharpness_factor", "2", "a number",
                "0 gives the SMOOTH-filtered image, 1 the original, 2 twice as sharp "
                "(torchvision requires it; below 0 extrapolates past the SMOOTH image and "
                "clamps, as ImageEnhance.Sharpness, which torchvision uses on PIL images)"}},
              0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      if (absl::Status s = CheckNumberIn("random_adjust_sharpness", args, "sharpness_factor",
                                         -std::numeric_limits<double>::infinity(),
                                         std::numeric_limits<double>::infinity());
          !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new RandomAdjustSharpness(args.Number("sharpness_factor")));
    });

}  // namespace
}  // namespace flowloader::augment
