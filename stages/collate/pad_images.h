// pad_images.h: a padded batch of images of different sizes (torchvision's
// GeneralizedRCNNTransform.batch_images, Detectron2's ImageList.from_tensors).
//
// Each sample writes its image compactly at the start of its batch slot (a slot sized
// for the op list's largest image); collate then lays the rows out as one tensor
// [N, C, Hb, Wb] (float32, after normalize) or [N, Hb, Wb, C] (uint8), each image at the
// top left of its row, the bottom and right padded with 0, Hb and Wb the batch's largest
// height and width rounded up to a multiple of size_divisibility.
//
// Thread-safety: pure functions on the caller's buffer.
#ifndef FLOWLOADER_STAGES_COLLATE_PAD_IMAGES_H_
#define FLOWLOADER_STAGES_COLLATE_PAD_IMAGES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowloader {

// PaddedImages describes the rows to pad: `sizes` holds each row's (height, width), row r
// written compactly at data + r × slot_bytes ([channels, h, w] when chw, else
// [h, w, channels]), of elements of elem_bytes.
struct PaddedImages {
  void* data = nullptr;
  size_t slot_bytes = 0;
  std::vector<int64_t> sizes;  // N × 2: height, width.
  int64_t channels = 3;
  size_t elem_bytes = 4;
  bool chw = true;
};

// PaddedSide is the largest of `sides` rounded up to a multiple of `divisibility`
// (0: not rounded); 0 for no side.
int64_t PaddedSide(const std::vector<int64_t>& sides, int64_t divisibility);

// PadImages lays out the rows of `images` as one padded tensor from images.data: row r
// at r × C × Hb × Wb elements, zeros around each image. Hb × Wb × C × elem_bytes must
// not exceed slot_bytes (the slot was sized for the rounded bound), so each row's new
// place never passes its old slot's end. Returns the batch tensor's shape: [N, C, Hb, Wb]
// (chw) or [N, Hb, Wb, C].
std::vector<int64_t> PadImages(const PaddedImages& images, int64_t divisibility);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_COLLATE_PAD_IMAGES_H_
