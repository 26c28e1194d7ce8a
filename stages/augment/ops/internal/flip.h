// flip.h: what other ops need to know of random_horizontal_flip (random_horizontal_flip.cc).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_FLIP_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_FLIP_H_

#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

// SwapsKeypoints is true for a random_horizontal_flip with a `keypoint_flip`: a fused
// head (random_resized_crop's) must not absorb it, since the head mirrors points without
// reordering them.
bool SwapsKeypoints(const Op& op);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_FLIP_H_
