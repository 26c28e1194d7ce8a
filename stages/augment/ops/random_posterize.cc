// random_posterize.cc: torchvision's RandomPosterize(bits, p=0.5):
// ImageOps.posterize, keeping the top `bits` bits of each value, with
// probability p.
#include <cmath>
#include <cstring>

#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomPosterize : public Op {
 public:
  explicit RandomPosterize(int bits) : bits_(bits) {}
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::Posterize(*image.rgb, bits_);
    return absl::OkStatus();
  }
  bool PointTables(const OpParams&, int, int, const ValueCounts&,
                   uint8_t (&luts)[3][256]) const override {
    kernels::PosterizeTable(bits_, luts[0]);
    std::memcpy(luts[1], luts[0], 256);
    std::memcpy(luts[2], luts[0], 256);
    return true;
  }

 private:
  const int bits_;
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_posterize",
                                 "keeps the top bits of each value (ImageOps.posterize) with "
                                 "probability p",
                                 {{"bits", "4", "an integer in [0, 8]",
                                   "bits kept per channel (torchvision requires it; F.posterize's "
                                   "range 0..8)"}},
                                 0.5}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         const OpValue& v = args.Get("bits");
                         if (!v.IsNumber() || !(v.numbers[0] >= 0 && v.numbers[0] <= 8) ||
                             v.numbers[0] != std::floor(v.numbers[0])) {
                           return ArgError("random_posterize", "bits", "an integer in [0, 8]", v);
                         }
                         return std::unique_ptr<Op>(new RandomPosterize(args.Int("bits")));
                       });

}  // namespace
}  // namespace flowloader::augment
