// affine_targets.h: how random_affine and random_rotation move a sample's targets and
// label map with the parameters they drew for the pixels.
//
// Boxes follow torchvision.transforms.v2 (functional/_geometry.py,
// _affine_bounding_boxes_with_expand, v0.16): each box's four corners go through the
// forward affine matrix (_get_inverse_affine_matrix(..., inverted=False) about the canvas
// centre), the box becomes their enclosing box; with expand (rotation only) the boxes
// shift by the rotated canvas corners' minimum; then they are clamped to the new canvas.
// Keypoints go through the same matrix and shift (v2's _affine_keypoints_with_expand),
// unclamped, their visibility kept.
// Masks and label maps move by nearest neighbour with the image's own inverse map
// (kernels::AffinePlane / RotatePlane), filled with 0 (instance masks) or ignore_index
// (label maps) where the image is uncovered. The canvas after the op is the image's size
// (PIL's; v2's _compute_affine_output_size gives the same but for extents within 1e-4 of
// an integer, where PIL rounds outward and v2 does not).
// With a centre (center=[x, y]) boxes and keypoints go through the pixels' own map, the
// inverse of the kernel's (PIL's expand re-centres by half the growth whatever the centre,
// where v2's boxes would shift by the rotated corners: they would leave the pixels), and
// masks and label maps through the same map about that centre.
//
// Thread-safety: pure functions on the caller's targets.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_AFFINE_TARGETS_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_AFFINE_TARGETS_H_

#include "absl/status/status.h"
#include "stages/augment/ops/op.h"
#include "stages/detection/targets.h"

namespace flowloader::augment::internal {

// AffineMove is one drawn affine map: F.affine's arguments, or F.rotate's (rotate: the
// angle counter-clockwise, and expand).
struct AffineMove {
  bool rotate = false;
  double angle = 0;
  double translate_x = 0, translate_y = 0;
  double scale = 1;
  double shear_x = 0, shear_y = 0;
  bool expand = false;
  bool has_center = false;  // center=[x, y] in pixels; otherwise the canvas centre.
  double center[2] = {0, 0};
};

// AffineTargets moves the boxes, keypoints and instance masks of `targets` and sets its
// canvas.
absl::Status AffineTargets(const AffineMove& move, detection::Targets* targets);
// AffineLabels moves a label map riding with the image (LabelPlane).
absl::Status AffineLabels(const AffineMove& move, LabelPlane& plane);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_AFFINE_TARGETS_H_
