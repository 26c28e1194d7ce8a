#include "stages/core/sample_error.h"

#include "gtest/gtest.h"

namespace flowloader {
namespace {

TEST(SampleErrorTest, ReasonSurvivesContext) {
  const absl::Status s = SampleError(absl::StatusCode::kDataLoss, reason::kTruncated,
                                     "JPEG ends after 10 bytes");
  const absl::Status named = WithContext(s, "cats/1.jpg");
  EXPECT_EQ(ErrorReason(named), "truncated");
  EXPECT_EQ(named.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(named.message(), "cats/1.jpg: JPEG ends after 10 bytes");
}

TEST(SampleErrorTest, ReasonFallsBackToCode) {
  EXPECT_EQ(ErrorReason(absl::NotFoundError("x")), "not_found");
  EXPECT_EQ(ErrorReason(absl::OkStatus()), "");
}

TEST(SampleErrorTest, TransientCodes) {
  EXPECT_TRUE(IsTransient(absl::UnavailableError("EIO")));
  EXPECT_FALSE(IsTransient(absl::DataLossError("bad")));
}

}  // namespace
}  // namespace flowloader
