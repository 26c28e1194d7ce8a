// targets.h: one image's detection and instance-segmentation targets, the fields
// torchvision's detection models take in their target dict.
//
// boxes are float32 [K, 4] in `format` on a canvas of canvas_width × canvas_height pixels;
// labels int64 [K]; iscrowd int64 [K] (0 or 1); area float32 [K]; masks uint8 [K, H, W]
// (H × W the canvas, one 0/1 plane per instance) when the sample carries masks; keypoints
// float32 [K, P, 3] when the annotations have them. Every
// per-instance vector has K entries, so dropping instance k (sanitize) drops it from all.
//
// Thread-safety: a plain value, owned by one sample at a time.
#ifndef FLOWLOADER_STAGES_DETECTION_TARGETS_H_
#define FLOWLOADER_STAGES_DETECTION_TARGETS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace flowloader::detection {

// BoxFormat is torchvision's BoundingBoxFormat: corners, corner + size, centre + size.
enum class BoxFormat { kXYXY, kXYWH, kCXCYWH };

// BoxFormatName is "xyxy", "xywh" or "cxcywh"; ParseBoxFormat reads one of them.
const char* BoxFormatName(BoxFormat format);
absl::StatusOr<BoxFormat> ParseBoxFormat(const std::string& text);

// ConvertBoxes rewrites `boxes` (K × 4 floats) from format `from` to format `to`, as
// torchvision's convert_bounding_box_format does.
void ConvertBoxes(BoxFormat from, BoxFormat to, std::vector<float>* boxes);

struct Targets {
  int64_t image_id = 0;
  int canvas_width = 0;   // The image's size the boxes and masks refer to.
  int canvas_height = 0;
  BoxFormat format = BoxFormat::kXYXY;
  std::vector<float> boxes;      // K × 4.
  std::vector<int64_t> labels;   // K.
  std::vector<int64_t> iscrowd;  // K.
  std::vector<float> area;       // K.
  bool has_masks = false;        // masks holds K planes of canvas_height × canvas_width.
  std::vector<uint8_t> masks;
  // Windowed masks (masks_windowed, with has_masks): instance k's plane is 0 outside the
  // rectangle mask_windows[4k .. 4k+3] = x, y, width, height of the canvas, and `masks`
  // holds only the windows' bytes, row-major, one window after another. The annotations
  // stage writes them and the geometry chain moves them, so the Mask R-CNN recipe never
  // builds (and faults in) K full planes per sample until collate writes the batch: an
  // instance covers a small part of its canvas. Every other reader calls ExpandMasks()
  // first, which makes the K full planes (the same bytes).
  bool masks_windowed = false;
  std::vector<int32_t> mask_windows;
  // Keypoints (COCO `keypoints`): num_keypoints (P) points per instance, each (x, y,
  // visibility), K × P × 3 floats, when the annotations carry them. Geometric ops move
  // (x, y) as torchvision v2 moves KeyPoints and keep the visibility; points may leave the
  // canvas (v2 neither clamps nor drops them).
  bool has_keypoints = false;
  int num_keypoints = 0;
  std::vector<float> keypoints;
  // Semantic segmentation: one label map of canvas_height × canvas_width class indices
  // (the field `masks` as [H, W]), written by the label_map stage; geometric ops move it
  // by nearest neighbour and fill what they uncover with ignore_index.
  bool has_semantic = false;
  std::vector<uint8_t> semantic;
  uint8_t ignore_index = 255;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // keypoint_stride is the floats per instance in `keypoints` (P × 3).
  size_t keypoint_stride() const { return static_cast<size_t>(num_keypoints) * 3; }
  size_t mask_plane() const {
    return static_cast<size_t>(canvas_width) * static_cast<size_t>(canvas_height);
  }
  // Clear empties every field, keeping capacity (reused across samples).
  void Clear();
  // Keep keeps the instances whose keep[k] is true, in order, in every per-instance
  // field (boxes, labels, iscrowd, area, masks, keypoints). Returns how many were dropped.
  int64_t Keep(const std::vector<bool>& keep);
  // ExpandMasks turns windowed masks into K full planes (nothing when not windowed).
  void ExpandMasks();
  // WriteMaskPlanes writes the K full planes (windowed or not) to `out`, K × mask_plane()
  // bytes.
  void WriteMaskPlanes(uint8_t* out) const;
  // MaskPlaneBytes is K × mask_plane() when the sample has masks (windowed or not), else 0.
  size_t MaskPlaneBytes() const { return has_masks ? mask_plane() * labels.size() : 0; }
  // Bytes is what the targets hold (for the memory plan and the bytes metric).
  size_t Bytes() const;
};

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_TARGETS_H_
