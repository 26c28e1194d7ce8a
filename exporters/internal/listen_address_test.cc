// listen_address_test.cc: which addresses MetricsServer accepts and how it reads them.
#include "exporters/internal/listen_address.h"

#include "gtest/gtest.h"

namespace flowloader {
namespace exporters_internal {
namespace {

struct ParseCase {
  const char* input;
  const char* normalised;  // nullptr: must be rejected.
};

class ParseListenAddressTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseListenAddressTest, NormalisesOrRejects) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress(GetParam().input);
  if (GetParam().normalised == nullptr) {
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << GetParam().input;
  } else {
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->ToString(), GetParam().normalised);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Addresses, ParseListenAddressTest,
    ::testing::Values(ParseCase{"127.0.0.1:9464", "127.0.0.1:9464"},
                      ParseCase{"9464", "127.0.0.1:9464"},  // Bare port: loopback.
                      ParseCase{"0", "127.0.0.1:0"},
                      ParseCase{"localhost:80", "127.0.0.1:80"},
                      ParseCase{"0.0.0.0:9464", "0.0.0.0:9464"},
                      ParseCase{"[::1]:9464", "[::1]:9464"},
                      ParseCase{"", nullptr}, ParseCase{":9464", nullptr},
                      ParseCase{"127.0.0.1:", nullptr}, ParseCase{"127.0.0.1:65536", nullptr},
                      ParseCase{"127.0.0.1:-1", nullptr}, ParseCase{"[::1:9464", nullptr},
                      ParseCase{"example.com:9464", nullptr},
                      ParseCase{"127.0.0.1:9464r", nullptr}));

TEST(ListenAddressTest, WithPortKeepsTheHost) {
  absl::StatusOr<ListenAddress> a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ipv6);
  EXPECT_EQ(a->WithPort(4321), "[::1]:4321");
}

}  // namespace
}  // namespace exporters_internal
}  // namespace flowloader
