// ten_crop.cc: torchvision's TenCrop(size, vertical_flip=False): FiveCrop of the image,
// then of its horizontal (or vertical) flip; in a view's list the view becomes the ten
// stacked, each running the ops after it on its own (internal/multi_crop.h).
#include "stages/augment/ops/internal/multi_crop.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

FLOWLOADER_REGISTER_OP((OpSchema{"ten_crop",
                                 "five_crop of the image and of its flip: the view is the 10 "
                                 "stacked ([10, C, H, W]); the ops after it run on each",
                                 {{"size", "224", "an integer or [height, width]",
                                   "each crop's size (at most the image's)"},
                                  {"vertical_flip", "false", "true or false",
                                   "flip top-bottom instead of left-right"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return internal::MultiCrop::Create("ten_crop", args, 10);
                       });

}  // namespace
}  // namespace flowloader::augment
