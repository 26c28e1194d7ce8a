// pipeline_families_test.cc: label-name sanitising for build_info keys.
#include "exporters/internal/pipeline_families.h"

#include "gtest/gtest.h"

namespace flowloader {
namespace exporters_internal {
namespace {

struct SanitizeCase {
  const char* key;
  const char* want;
};

class SanitizeLabelNameTest : public ::testing::TestWithParam<SanitizeCase> {};

TEST_P(SanitizeLabelNameTest, MapsToPrometheusLabelAlphabet) {
  EXPECT_EQ(SanitizeLabelName(GetParam().key), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(Keys, SanitizeLabelNameTest,
                         ::testing::Values(SanitizeCase{"version", "version"},
                                           SanitizeCase{"cuda-version", "cuda_version"},
                                           SanitizeCase{"tbb.version", "tbb_version"},
                                           SanitizeCase{"9lives", "_9lives"},
                                           SanitizeCase{"Git_SHA", "Git_SHA"},
                                           SanitizeCase{"", ""},
                                           SanitizeCase{"__name__", ""},
                                           SanitizeCase{"--x", ""}));

TEST(NewFamiliesTest, EveryFamilyHasNameHelpAndNoSeries) {
  for (const auto& f : NewFamilies()) {
    EXPECT_FALSE(f.name.empty());
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_TRUE(f.metric.empty()) << f.name;
  }
}

}  // namespace
}  // namespace exporters_internal
}  // namespace flowloader
