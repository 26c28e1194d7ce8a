// label_plane.h: the geometry kernels for semantic label maps (one uint8 class index per
// pixel, Image with channels == 1). A label map moves with its image by nearest
// neighbour, never blended, as torchvision's segmentation references move a PIL mask
// (F.resize / F.resized_crop with InterpolationMode.NEAREST, F.hflip, F.pad): every
// output pixel is one source pixel, or `fill` (ignore_index) where the op uncovers it.
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_LABEL_PLANE_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_LABEL_PLANE_H_

#include <cstdint>
#include <vector>

#include "stages/core/image.h"

namespace flowloader::augment::kernels {

// LabelHorizontalFlip / LabelVerticalFlip mirror the map in place (F.hflip, F.vflip).
void LabelHorizontalFlip(Image& labels);
void LabelVerticalFlip(Image& labels);

// LabelGather writes dst[y][x] = src[map_y[y]][map_x[x]], or `fill` where either index
// is -1: a crop, pad or padded crop expressed as index maps (ops/internal/numpy_pad.h).
void LabelGather(const Image& src, const std::vector<int>& map_x, const std::vector<int>& map_y,
                 uint8_t fill, Image* dst);

// LabelResizedCrop is F.resized_crop(mask, top, left, height, width, [out_height,
// out_width], NEAREST) on a PIL mask: PIL's crop (pixels outside the map are `fill`),
// then Image.resize(NEAREST), which is ImagingScaleAffine: source column
// floor((x + 0.5) · width / out_width), accumulated in double from the crop's edge as PIL
// does. out == crop size is a plain crop. `mirror` also flips the result horizontally
// (F.hflip after it), in the same pass.
void LabelResizedCrop(const Image& src, int top, int left, int height, int width,
                      int out_height, int out_width, uint8_t fill, Image* dst,
                      bool mirror = false);

}  // namespace flowloader::augment::kernels

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_LABEL_PLANE_H_
