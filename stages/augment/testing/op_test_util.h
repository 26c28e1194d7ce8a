// op_test_util.h: a checked factory for one op from its op-list text, shared by the op
// tests (stages/augment/ops/*_test.cc).
//
// Thread-safety: stateless; call it from any thread.
#ifndef FLOWLOADER_STAGES_AUGMENT_TESTING_OP_TEST_UTIL_H_
#define FLOWLOADER_STAGES_AUGMENT_TESTING_OP_TEST_UTIL_H_

#include <memory>
#include <string>

#include "stages/augment/ops/op.h"

namespace flowloader::augment::testing {

// MakeOp creates the first op of `text` (op-list text, e.g. "solarize(threshold=128)")
// from the global registry; if parsing or Create fails it fails the current test
// (EXPECT, with the text and the status) and returns nullptr.
std::unique_ptr<Op> MakeOp(const std::string& text);

}  // namespace flowloader::augment::testing

#endif  // FLOWLOADER_STAGES_AUGMENT_TESTING_OP_TEST_UTIL_H_
