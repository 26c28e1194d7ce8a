// op_memory.h: what one op holds while it runs, for the per-worker memory checks of a
// view's ops (ViewProgram::CheckOpMemory) and of the sub-ops of compose, random_choice
// and random_order (SubOps::Run).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_MEMORY_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_MEMORY_H_

#include <cstdint>

#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

// OpWorking is an op's largest intermediate image (`out`) and the bytes it holds while it
// runs on a w × h uint8 RGB input: the input, that image, and its own scratch (float
// planes, a copy of the input: Op::ScratchBytes).
struct OpWorking {
  OpSize out;
  int64_t bytes = 0;
};
OpWorking WorkingOf(const Op& op, const OpParams& params, int w, int h);

// BeforeDraw is what the op is known to hold before its parameters are drawn: the input
// and its scratch (WorkingOf's bytes without the output, so never more than them). Checked
// before Draw, which itself may allocate by the image's size: elastic_transform's two
// noise planes of a 13000² image are 1.3 GB.
OpWorking BeforeDraw(const Op& op, int w, int h);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_MEMORY_H_
