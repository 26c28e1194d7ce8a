// op_memory.cc: WorkingOf (see op_memory.h).
#include "stages/augment/ops/internal/op_memory.h"

#include <algorithm>
#include <cstdint>

namespace flowloader::augment::internal {

OpWorking WorkingOf(const Op& op, const OpParams& params, int w, int h) {
  OpWorking working;
  working.out = op.WorkingSize(params, OpSize{w, h});
  int64_t scratch = op.ScratchBytes(OpSize{w, h});
  // A resize to a drawn size (scale_jitter, random_shortest_size) has PillowResample's
  // horizontal pass too, as resize's ScratchBytes counts it: the output's width times
  // the input's rows.
  OpSize resized;
  Interpolation filter;
  if (op.ResizeTo(params, w, h, &resized, &filter) && resized.width != w) {
    scratch = std::max(scratch, int64_t{resized.width} * h * 3);
  }
  working.bytes = 3 * (int64_t{w} * h + int64_t{working.out.width} * working.out.height) +
                  scratch;
  return working;
}

OpWorking BeforeDraw(const Op& op, int w, int h) {
  OpWorking working;
  working.out = OpSize{w, h};
  working.bytes = 3 * int64_t{w} * h + op.ScratchBytes(OpSize{w, h});
  return working;
}

}  // namespace flowloader::augment::internal
