// random_invert.cc: torchvision's RandomInvert(p=0.5): ImageOps.invert (255 -
// value), with probability p.
#include <cstring>

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomInvert : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Invert(*image.rgb);
    return absl::OkStatus();
  }
  bool PointTables(const OpParams&, int, int, const ValueCounts&,
                   uint8_t (&luts)[3][256]) const override {
    kernels::InvertTable(luts[0]);
    std::memcpy(luts[1], luts[0], 256);
    std::memcpy(luts[2], luts[0], 256);
    return true;
  }
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_invert", "inverts the colours (255 - value) with probability p", {}, 0.5}),
    [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
      return std::unique_ptr<Op>(new RandomInvert);
    });

}  // namespace
}  // namespace flowloader::augment
