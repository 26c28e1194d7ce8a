// five_crop.cc: torchvision's FiveCrop(size): the four corner crops and the centre crop
// of the image; in a view's list the view becomes the five stacked, each running the ops
// after it on its own (internal/multi_crop.h).
#include "stages/augment/ops/internal/multi_crop.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

FLOWLOADER_REGISTER_OP((OpSchema{"five_crop",
                                 "the four corner crops and the centre crop of size: the view "
                                 "is the 5 stacked ([5, C, H, W]); the ops after it run on "
                                 "each",
                                 {{"size", "224", "an integer or [height, width]",
                                   "each crop's size (at most the image's)"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         return internal::MultiCrop::Create("five_crop", args, 5);
                       });

}  // namespace
}  // namespace flowloader::augment
