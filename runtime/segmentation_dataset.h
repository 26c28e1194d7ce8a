// segmentation_dataset.h: generates a synthetic semantic segmentation dataset: real JPEGs
// with drawn shapes, and their exact PNG label maps (VOC's layout).
//
// `flowloader make-dataset --task=segmentation --out=DIR` writes DIR/images/img_NNNNN.jpg,
// DIR/label_maps/img_NNNNN.png (8-bit grayscale PNGs, as ADE20K's: each pixel's value
// is its class) and DIR/train.txt (`images/img_NNNNN.jpg
// label_maps/img_NNNNN.png` lines, the list-file form). Each image is a photo-like
// background (class 0) with 1..max_shapes flat-coloured polygons, each in its own cell
// of a 3 × 3 grid; a shape's class is 1 + its kind (triangle, quadrilateral, pentagon,
// hexagon) and its pixels are exactly the polygon's COCO rasterisation, so the label map
// is exact. A one-pixel ring around every shape is 255 (VOC's "void" border, the
// ignore_index). Everything is a pure function of the seed.
//
// Thread-safety: GenerateSegmentationDataset may run concurrently for different roots.
#ifndef FLOWLOADER_RUNTIME_SEGMENTATION_DATASET_H_
#define FLOWLOADER_RUNTIME_SEGMENTATION_DATASET_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace flowloader {

struct SegmentationDatasetOptions {
  std::string root;  // Directory to create. Required.
  int images = 100;  // JPEG files; >= 1.
  // Image sides are drawn in [min_side, max_side] pixels; 64 <= min_side <= max_side.
  int min_side = 256;
  int max_side = 512;
  int max_shapes = 6;  // Shapes per image, 1..9 (one per grid cell).
  int quality = 90;    // JPEG quality, 1..100.
  double noise = 7.0;  // Background noise (SynthesizeImage).
  uint64_t seed = 0;
  bool overwrite = false;  // Write into a non-empty root.
};

// GenerateSegmentationDataset writes the dataset; a root already holding one made with
// the same options is left as is.
absl::Status GenerateSegmentationDataset(const SegmentationDatasetOptions& options);

// kSegmentationClasses is the number of classes the generator draws (background + 4).
inline constexpr int kSegmentationClasses = 5;

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_SEGMENTATION_DATASET_H_
