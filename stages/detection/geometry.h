// geometry.h: how a geometric op moves an image's targets, with torchvision.transforms.v2's
// semantics (torchvision/transforms/v2/functional/_geometry.py and _misc.py).
//
// An op decides its geometry once per sample (a Geometry: flip, crop, pad, resize,
// resized crop or center crop, from the parameters its Draw drew); the same Geometry is
// then applied to the pixels (the op's own kernel), the boxes (ApplyToBoxes) and the
// instance masks (ApplyToMasks), so every target moves exactly as the image does.
//   boxes: flips mirror the coordinates (x → W − x); crop and pad shift them and clamp
//     them to the new canvas; resize scales them by new/old per axis (float32), no clamp;
//   keypoints: as v2's KeyPoints (ApplyToKeypoints);
//   masks: flips mirror the planes; crop and pad keep the covered pixels and fill 0
//     elsewhere; resize is nearest neighbour as torch.nn.functional.interpolate(mode=
//     "nearest") computes it (source index floor(dst · in/out) in float), never blended.
// center_crop anchors boxes at round((H − h) / 2) (Python's round, half to even) and masks
// as v2's center_crop_image does (pad first when the crop is larger), the same unless the
// crop is larger than the image by an odd amount: then v2 itself puts the mask one pixel
// away from the boxes, and flowloader follows v2 for each.
//
// Thread-safety: pure functions on the caller's Targets.
#ifndef FLOWLOADER_STAGES_DETECTION_GEOMETRY_H_
#define FLOWLOADER_STAGES_DETECTION_GEOMETRY_H_

#include <cstdint>

#include "stages/detection/targets.h"

namespace flowloader::detection {

struct Geometry {
  enum class Kind {
    kNone,
    kHorizontalFlip,
    kVerticalFlip,
    kCrop,         // top, left, height, width (may reach outside: that part is padding).
    kPad,          // pad_left, pad_top, pad_right, pad_bottom.
    kResize,       // out_height, out_width.
    kResizedCrop,  // Crop, then resize to out_height × out_width.
    kCenterCrop,   // height, width.
  };
  Kind kind = Kind::kNone;
  int top = 0, left = 0, height = 0, width = 0;
  int pad_left = 0, pad_top = 0, pad_right = 0, pad_bottom = 0;
  int out_height = 0, out_width = 0;

  static Geometry HorizontalFlip() { return {Kind::kHorizontalFlip}; }
  static Geometry VerticalFlip() { return {Kind::kVerticalFlip}; }
  static Geometry Crop(int top, int left, int height, int width);
  static Geometry Pad(int left, int top, int right, int bottom);
  static Geometry Resize(int height, int width);
  static Geometry ResizedCrop(int top, int left, int height, int width, int out_height,
                              int out_width);
  static Geometry CenterCrop(int height, int width);
};

// Apply moves every target (boxes, then masks) and sets the new canvas size.
void Apply(const Geometry& geometry, Targets* targets);
// ApplyToBoxes moves the boxes only, on a canvas of canvas_width × canvas_height, and
// writes the canvas after the op.
void ApplyToBoxes(const Geometry& geometry, BoxFormat format, int* canvas_width,
                  int* canvas_height, float* boxes, int64_t count);
// ApplyToKeypoints moves `count` points (x, y at points[i * stride], points[i * stride +
// 1]) on a canvas_width × canvas_height canvas as v2's *_keypoints kernels do: flips
// mirror about the last pixel (x → W − 1 − x, v2's horizontal_flip_keypoints), crops and
// pads shift, resize scales by new/old in float32; nothing is clamped, so points may
// leave the canvas (v2 keeps their coordinates). Other fields of a point (COCO's
// visibility) are left as they are.
void ApplyToKeypoints(const Geometry& geometry, int canvas_width, int canvas_height,
                      float* points, int64_t count, int64_t stride);
// ApplyToMasks moves `count` planes of *height × *width bytes from `in` into `out`
// (resized by the caller to count × the new size) and writes the new size.
void ApplyToMasks(const Geometry& geometry, const uint8_t* in, int64_t count, int* width,
                  int* height, std::vector<uint8_t>* out);

// NearestIndex is the source index of output `dst` when a mask axis of `in` pixels is
// resized to `out` by nearest neighbour: ATen's nearest_idx (UpSample.h), identity at the
// same size, halving at twice the size, else min(floor(dst · (in / out)), in − 1) in float.
int64_t NearestIndex(int64_t dst, int64_t in, int64_t out);

// SanitizeOptions are sanitize_bounding_boxes' thresholds (torchvision's defaults).
struct SanitizeOptions {
  double min_size = 1.0;  // A box narrower or lower than this (pixels) is dropped.
  double min_area = 1.0;  // A box of less area (pixels²) is dropped.
};

// SanitizeKeep marks the boxes torchvision's sanitize_bounding_boxes keeps: width and
// height >= min_size, area >= min_area, every coordinate >= 0 and inside the canvas.
std::vector<bool> SanitizeKeep(const Targets& targets, const SanitizeOptions& options);
// Sanitize drops the other instances from every field; returns how many it dropped.
int64_t Sanitize(const SanitizeOptions& options, Targets* targets);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_GEOMETRY_H_
