// random_equalize.cc: torchvision's RandomEqualize(p=0.5): ImageOps.equalize
// (each channel's histogram equalized), with probability p.
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomEqualize : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Equalize(*image.rgb);
    return absl::OkStatus();
  }
  bool PointTables(const OpParams&, int, int, const ValueCounts& histogram,
                   uint8_t (&luts)[3][256]) const override {
    Histogram h;
    histogram(h, /*extremes_only=*/false);
    kernels::EqualizeTables(h, luts);
    return true;
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_equalize",
                                 "equalizes each channel's histogram "
                                 "(ImageOps.equalize) with probability p",
                                 {},
                                 0.5}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomEqualize);
                       });

}  // namespace
}  // namespace flowloader::augment
