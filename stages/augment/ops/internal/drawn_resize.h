// drawn_resize.h: the pixels and targets of an op whose draw is a new size (scale_jitter,
// random_shortest_size): params (new_height, new_width), PIL's resize of the whole image.
//
// Thread-safety: pure functions on the caller's image and targets.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_DRAWN_RESIZE_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_DRAWN_RESIZE_H_

#include "absl/status/status.h"
#include "stages/augment/ops/op.h"
#include "stages/detection/targets.h"

namespace flowloader::augment::internal {

// ResizeToDrawnSize resizes *image.rgb to p = (new_height, new_width) with
// `interpolation` (PIL's resize); a size outside 1..16384 a side is an error naming it.
absl::Status ResizeToDrawnSize(const OpParams& p, Interpolation interpolation,
                               OpImage& image);

// DrawnSize is ResizeTo for these ops: the drawn size when it is valid (as
// ResizeToDrawnSize checks it), else false.
bool DrawnSize(const OpParams& p, OpSize* out);

// MoveTargetsToDrawnSize scales the targets as ResizeToDrawnSize scaled the pixels:
// boxes per axis, masks nearest (v2's F.resize(mode=nearest)).
absl::Status MoveTargetsToDrawnSize(const OpParams& p, detection::Targets* targets);

// DrawnResizeOp is such an op but for its draw: Apply, ResizeTo and MoveTargets are the
// functions above with the op's interpolation; the op draws the size (Draw) and bounds it
// (OutputSize, OutputBound).
class DrawnResizeOp : public Op {
 public:
  explicit DrawnResizeOp(Interpolation interpolation) : interpolation_(interpolation) {}

  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  // The drawn size, so that the memory check counts the output (and DrawnResizeBytes'
  // horizontal pass) before Apply allocates it: scale_jitter's target_size 16000 made a
  // 16000x12000 image from a 320x240 one, counted as 320x240.
  OpSize WorkingSize(const OpParams& p, OpSize in) const override {
    OpSize out;
    return DrawnSize(p, &out) ? out : in;
  }
  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    return ResizeToDrawnSize(p, interpolation_, image);
  }
  bool ResizeTo(const OpParams& p, int, int, OpSize* out,
                Interpolation* filter) const override {
    *filter = interpolation_;
    return DrawnSize(p, out);
  }
  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    return MoveTargetsToDrawnSize(p, targets);
  }

 private:
  const Interpolation interpolation_;
};

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_DRAWN_RESIZE_H_
