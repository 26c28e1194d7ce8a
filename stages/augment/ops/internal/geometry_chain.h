// geometry_chain.h: a run of geometric ops executed as one pass, with the bytes the ops
// write one by one.
//
// Detection recipes chain ops that only move pixels (flips, crops, pads: Op::Gather) around
// at most one resize of the whole image (Op::ResizeTo): the Mask R-CNN large-scale jitter
// is scale_jitter (up to 2x the image), flip, fixed_size_crop 512; SSD is zoom out (a
// canvas up to 4x), IoU crop, flip, resize 300. Run op by op they build the large
// intermediate images and move every instance mask through each. Run as a chain:
// - the gathers before the resize compose into one map per axis (each output pixel's
//   source pixel, or the fill of the op that made it), so the canvas is never built, only
//   what the resize reads;
// - the gathers after the resize compose likewise, and the resize computes only the window
//   of its output they read (PillowResampleWindow: the same taps, so the same bytes);
// - instance masks go from their first canvas to the last in one gather per plane (the
//   composed maps through the nearest resize, 0 where a fill is), the boxes op by op
//   (each op's MoveTargets on the boxes alone), so instances are dropped as each op drops
//   them.
// The ops draw as they would one by one (the caller's draw, in order, each op seeing the
// size and boxes the ops before it made), so the chain changes no draw and no byte.
//
// Thread-safety: pure functions of their arguments; working images are thread-local.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_CHAIN_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_CHAIN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/augment/ops/op.h"
#include "stages/detection/targets.h"

namespace flowloader::augment::internal {

// DrawOp draws op `i` for a width × height image carrying `targets` (null: none), as the
// op list would (its p, then Draw or DrawWithTargets from the op's own stream); returns
// whether the op applies.
using DrawOp = std::function<bool(size_t i, int width, int height,
                                  const detection::Targets* targets, OpParams* params)>;

// CheckStep is asked, before any pixel moves, whether op `i` drawn with `params` may run on
// a width × height image (the per-worker memory budget: the chain needs no more than the
// ops one by one, so the same check keeps the same refusals); a non-OK status ends the
// chain with it.
using CheckStep = std::function<absl::Status(size_t i, const OpParams& params, int width,
                                             int height)>;

// CheckDraw is asked before op `i` is drawn for a width × height image whether what it
// holds before its draw fits (internal/op_memory.h's BeforeDraw: a draw may allocate by
// the image's size, elastic_transform's noise planes); a non-OK status ends the chain
// before that op, which the caller then refuses one by one as it would without a chain.
using CheckDraw = std::function<absl::Status(size_t i, int width, int height)>;

// CheckMasks is asked, before any pixel moves and only where the sample has instance
// masks, whether the masks may move once from the chain's w × h input canvas to its
// out_w × out_h output (the chain builds no canvas between: a zoom-out then a resize
// moves K planes of the input's size to K of the resize's).
using CheckMasks = std::function<absl::Status(int w, int h, int out_w, int out_h)>;

// RunGeometryChain runs ops [begin, end) from `begin` as one chain as far as they form one
// (uint8 ops that apply as a gather or as the one resize, or do not apply) and returns how
// many ops it covered, their positions that applied in *applied; 0 (nothing done) when
// fewer than two ops apply in the chain. `targets` (null: none) move as the ops move them.
absl::StatusOr<size_t> RunGeometryChain(const std::vector<std::unique_ptr<Op>>& ops,
                                        size_t begin, size_t end, const DrawOp& draw,
                                        const CheckDraw& check_draw, const CheckStep& check,
                                        const CheckMasks& check_masks, OpImage& image,
                                        detection::Targets* targets,
                                        std::vector<size_t>* applied);

// SetGeometryChainForTesting(false) makes RunGeometryChain do nothing (return 0), so a
// test can run the same list op by op and compare; true goes back.
void SetGeometryChainForTesting(bool enabled);
// GeometryChainsRunForTesting counts the chains run so far (all threads), so a test can
// tell that a list ran as a chain.
int64_t GeometryChainsRunForTesting();

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_CHAIN_H_
