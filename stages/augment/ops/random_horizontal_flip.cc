// random_horizontal_flip.cc: torchvision's RandomHorizontalFlip(p=0.5).
#include <utility>

#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomHorizontalFlip : public Op {
 public:
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    Image& img = *image.rgb;
    for (int y = 0; y < img.height; ++y) {
      uint8_t* row = img.Row(y);
      for (int l = 0, r = img.width - 1; l < r; ++l, --r) {
        std::swap(row[3 * l], row[3 * r]);
        std::swap(row[3 * l + 1], row[3 * r + 1]);
        std::swap(row[3 * l + 2], row[3 * r + 2]);
      }
    }
    return absl::OkStatus();
  }
};

FLOWLOADER_REGISTER_OP((OpSchema{"random_horizontal_flip",
                                 "mirrors the image left-right with probability p",
                                 {},
                                 0.5}),
                       [](const OpArgs&) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return std::unique_ptr<Op>(new RandomHorizontalFlip);
                       });

}  // namespace
}  // namespace flowloader::augment
