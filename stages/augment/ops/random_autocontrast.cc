// random_autocontrast.cc: torchvision's RandomAutocontrast(p=0.5):
// ImageOps.autocontrast (each channel stretched to 0..255), with probability p.
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomAutocontrast : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Autocontrast(*image.rgb);
    return absl::OkStatus();
  }
  bool PointTables(const OpParams&, int, int, const ValueCounts& histogram,
                   uint8_t (&luts)[3][256]) const override {
    Histogram h;
    histogram(h, /*extremes_only=*/true);
    kernels::AutocontrastTables(h, luts);
    return true;
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_autocontrast",
                                 "stretches each channel to 0..255 "
                                 "(ImageOps.autocontrast) with probability p",
                                 {},
                                 0.5}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomAutocontrast);
                       });

}  // namespace
}  // namespace flowloader::augment
