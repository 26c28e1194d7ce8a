// multi_crop.h: the ops that make several images of one: torchvision's FiveCrop (the four
// corner crops and the centre crop) and TenCrop (those five, then the five of the image
// flipped horizontally, or vertically with vertical_flip).
//
// In a view's list such an op splits it: the ops before it run once, then every crop
// runs the ops after it on its own (each with its own random stream), and the view is
// the crops stacked: [crops, C, H, W] after normalize, else [crops, H, W, C]
// (view_program.cc). torchvision gives a tuple of images that a Lambda then stacks; the
// loader's batch tensor is that stack, [B, crops, ...].
//
// Apply(params) writes crop params[0] (0 .. crops-1, in torchvision's order: top-left,
// top-right, bottom-left, bottom-right, centre; TenCrop's next five the same of the
// flipped image), as F.five_crop(img, size)[c] / F.ten_crop(img, size, vflip)[c]: exact.
// A crop larger than the image is refused, as torchvision raises.
//
// Thread-safety: immutable after Create.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_MULTI_CROP_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_MULTI_CROP_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

// CropBox is where crop c of a multi-crop op lies in its input, and how it is mirrored.
struct CropBox {
  int top = 0;
  int left = 0;
  bool mirror_x = false;  // TenCrop's second five: the box of the flipped image.
  bool mirror_y = false;
};

class MultiCrop : public Op {
 public:
  // Create reads `size` (torchvision's: an int or [h, w]) and, for ten_crop,
  // `vertical_flip`; `crops` is 5 or 10.
  static absl::StatusOr<std::unique_ptr<Op>> Create(const std::string& op, const OpArgs& args,
                                                    int crops);

  // crops is how many images the op makes (5 or 10).
  int crops() const { return crops_; }
  OpSize OutputSize(OpSize) const override { return {width_, height_}; }
  absl::Status Apply(const OpParams& params, OpImage& image) const override;

  // Box is crop c's box in a width × height input (which holds it: CheckFits).
  CropBox Box(int c, int width, int height) const;
  // CheckFits refuses an input smaller than the crop, in torchvision's words.
  absl::Status CheckFits(int width, int height) const;

 private:
  MultiCrop(int height, int width, int crops, bool vertical_flip)
      : height_(height), width_(width), crops_(crops), vertical_flip_(vertical_flip) {}

  const int height_, width_;
  const int crops_;
  const bool vertical_flip_;
};

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_MULTI_CROP_H_
