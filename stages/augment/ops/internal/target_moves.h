// target_moves.h: how the geometric ops move a sample's detection targets
// (stages/detection/geometry.h) as their pixels move, shared by the op files.
//
// Thread-safety: pure functions on the caller's Targets.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_TARGET_MOVES_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_TARGET_MOVES_H_

#include <vector>

#include "absl/status/status.h"
#include "stages/detection/geometry.h"
#include "stages/detection/targets.h"

namespace flowloader::augment::internal {

// MoveTargetsBy applies `geometry` to every target (boxes, masks, canvas).
absl::Status MoveTargetsBy(const detection::Geometry& geometry, detection::Targets* targets);

// PadTargets moves the targets through a pad (and crop) whose pixels came through the
// np.pad maps map_x / map_y (numpy_pad.h): the output, map_y.size() × map_x.size(),
// starts at (top, left) of the input canvas (negative inside the padding). Boxes shift
// by (-left, -top) and are clamped to the new canvas (v2's pad, then crop), keypoints
// shift the same way without the clamp; masks are
// gathered through the same maps, 0 where the fill is (v2's pad_mask pads with the
// image's padding_mode, so a reflected image has reflected masks).
void PadTargets(int top, int left, const std::vector<int>& map_x,
                const std::vector<int>& map_y, detection::Targets* targets);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_TARGET_MOVES_H_
