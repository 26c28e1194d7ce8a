// op_test_util.cc: see op_test_util.h.
#include "stages/augment/testing/op_test_util.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader::augment::testing {

std::unique_ptr<Op> MakeOp(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  EXPECT_TRUE(ops.ok() && !ops->empty()) << text << ": " << ops.status();
  if (!ops.ok() || ops->empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<Op>> op =
      OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
  EXPECT_TRUE(op.ok()) << text << ": " << op.status();
  return op.ok() ? *std::move(op) : nullptr;
}

}  // namespace flowloader::augment::testing
