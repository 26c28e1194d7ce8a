// json_test.cc: JSON string escaping and float formatting.
#include "exporters/internal/json.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace flowloader {
namespace exporters_internal {
namespace {

struct EscapeCase {
  std::string in;
  std::string want;
};

class JsonStringTest : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(JsonStringTest, Escapes) { EXPECT_EQ(JsonString(GetParam().in), GetParam().want); }

INSTANTIATE_TEST_SUITE_P(
    Strings, JsonStringTest,
    ::testing::Values(EscapeCase{"decode", "\"decode\""},
                      EscapeCase{"say \"hi\"", "\"say \\\"hi\\\"\""},
                      EscapeCase{"a\\b", "\"a\\\\b\""},
                      EscapeCase{"l1\nl2\tx\r", "\"l1\\nl2\\tx\\r\""},
                      EscapeCase{std::string("\x01\x1f\x7f", 3), "\"\\u0001\\u001f\\u007f\""},
                      EscapeCase{std::string("nul\0x", 5), "\"nul\\u0000x\""},
                      EscapeCase{"caf\xc3\xa9 \xe2\x80\x94", "\"caf\xc3\xa9 \xe2\x80\x94\""},
                      EscapeCase{"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
                      EscapeCase{"bad\xff", "\"bad\\ufffd\""},
                      EscapeCase{"\xc3", "\"\\ufffd\""},           // Truncated sequence.
                      EscapeCase{"\xc0\xaf", "\"\\ufffd\\ufffd\""},  // Overlong.
                      EscapeCase{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}));  // Surrogate.

TEST(JsonFloatTest, AlwaysReadsAsAFloat) {
  EXPECT_EQ(JsonFloat(0), "0.0");
  EXPECT_EQ(JsonFloat(12), "12.0");
  EXPECT_EQ(JsonFloat(1.5), "1.5");
  EXPECT_EQ(JsonFloat(1234.5678), "1234.5678");
  EXPECT_EQ(JsonFloat(1e20), "1e+20");
  EXPECT_EQ(JsonFloat(std::numeric_limits<double>::quiet_NaN()), "0.0");
  EXPECT_EQ(JsonFloat(std::numeric_limits<double>::infinity()), "0.0");
}

}  // namespace
}  // namespace exporters_internal
}  // namespace flowloader
