// random_solarize.cc: torchvision's RandomSolarize(threshold, p=0.5):
// ImageOps.solarize, every value >= threshold inverted, with probability p.
#include <cstring>

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomSolarize : public Op {
 public:
  explicit RandomSolarize(double threshold) : threshold_(threshold) {}
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Solarize(*image.rgb, threshold_);
    return absl::OkStatus();
  }
  bool PointTables(const OpParams&, int, int, const ValueCounts&,
                   uint8_t (&luts)[3][256]) const override {
    kernels::SolarizeTable(threshold_, luts[0]);
    std::memcpy(luts[1], luts[0], 256);
    std::memcpy(luts[2], luts[0], 256);
    return true;
  }

 private:
  const double threshold_;
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_solarize",
                                 "inverts every value >= threshold (ImageOps.solarize) with "
                                 "probability p",
                                 {{"threshold", "128", "a number",
                                   "values at or above it are inverted (torchvision requires it; "
                                   "the default is ImageOps.solarize's; 0 or less inverts "
                                   "everything, above 255 nothing, as ImageOps.solarize)"}},
                                 0.5}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         if (absl::Status s =
                                 CheckNumberIn("random_solarize", args, "threshold", -1e300, 1e300);
                             !s.ok()) {
                           return s;
                         }
                         return std::unique_ptr<Op>(new RandomSolarize(args.Number("threshold")));
                       });

}  // namespace
}  // namespace flowloader::augment
