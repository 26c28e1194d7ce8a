// op_memory.cc: WorkingOf (see op_memory.h).
#include "stages/augment/ops/internal/op_memory.h"

namespace flowloader::augment::internal {

OpWorking WorkingOf(const Op& op, const OpParams& params, int w, int h) {
  OpWorking working;
  working.out = op.WorkingSize(params, OpSize{w, h});
  working.bytes = 3 * (int64_t{w} * h + int64_t{working.out.width} * working.out.height) +
                  op.ScratchBytes(OpSize{w, h});
  return working;
}

OpWorking BeforeDraw(const Op& op, int w, int h) {
  OpWorking working;
  working.out = OpSize{w, h};
  working.bytes = 3 * int64_t{w} * h + op.ScratchBytes(OpSize{w, h});
  return working;
}

}  // namespace flowloader::augment::internal
