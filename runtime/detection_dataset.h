// detection_dataset.h: generates a synthetic COCO-style detection and instance
// segmentation dataset: real JPEGs with drawn shapes, and their exact annotations.
//
// `flowloader make-dataset --task=detection --out=DIR` writes DIR/images/img_NNNNN.jpg and
// DIR/annotations/instances.json (COCO instances format). Each image is a photo-like
// background (SynthesizeImage) with 0..max_instances flat-coloured polygons, each in its
// own cell of a 3 × 3 grid so none occludes another. A shape's pixels are exactly its
// COCO mask (the polygon rasterised by COCO's rules, stages/detection/rle.h), so the
// annotations are exact: bbox is the mask's tight box, area its pixel count. Categories
// have non-contiguous ids (1 triangle, 3 quadrilateral, 7 pentagon, 12 hexagon) so the
// label map is exercised. Segmentations come in all three COCO forms: polygons, compressed
// RLE strings (every third instance) and uncompressed RLE lists with iscrowd 1 (every
// fifth). Every tenth image has no instance (for skip_empty). With `keypoints`, each
// annotation also has COCO keypoints (see the option). Everything is a pure
// function of the seed.
//
// Thread-safety: GenerateDetectionDataset may run concurrently for different roots.
#ifndef FLOWLOADER_RUNTIME_DETECTION_DATASET_H_
#define FLOWLOADER_RUNTIME_DETECTION_DATASET_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace flowloader {

struct DetectionDatasetOptions {
  std::string root;  // Directory to create. Required.
  int images = 100;  // JPEG files; >= 1.
  // Image sides are drawn in [min_side, max_side] pixels; 64 <= min_side <= max_side.
  int min_side = 256;
  int max_side = 512;
  int max_instances = 6;  // Shapes per image, 1..9 (one per grid cell).
  int quality = 90;       // JPEG quality, 1..100.
  double noise = 7.0;     // Background noise (SynthesizeImage).
  uint64_t seed = 0;
  bool overwrite = false;  // Write into a non-empty root.
  // Annotate COCO keypoints, 3 per shape: its polygon's first vertex (v = 2), its box's
  // centre (v = 1: labelled, not visible) and an unlabelled one (0, 0, v = 0), as COCO
  // writes an unannotated joint; the categories name them (`keypoints`).
  bool keypoints = false;
};

// GenerateDetectionDataset writes the dataset; as GenerateSampleDataset, a root already
// holding one made with the same options is left as is.
absl::Status GenerateDetectionDataset(const DetectionDatasetOptions& options);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_DETECTION_DATASET_H_
