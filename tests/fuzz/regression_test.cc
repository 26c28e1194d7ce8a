// Replays every checked-in fuzz reproducer (regressions/, passed as arguments by Bazel)
// and the generated seed corpus through the fuzz body (fuzz_body.h), under whatever
// config the test is built with (normal, --config=asan). A broken contract aborts.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/testdata/format_fixtures.h"
#include "tests/fuzz/fuzz_body.h"
#include "tests/fuzz/seed_corpus.h"

namespace flowloader::fuzz {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Replay(const std::string& input) {
  RunOne(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(FuzzRegressionTest, EveryCheckedInReproducerRunsClean) {
  const std::vector<std::string> argv = ::testing::internal::GetArgvs();
  ASSERT_GE(argv.size(), 2u) << "BUILD passes every file of regressions/ as an argument";
  for (size_t i = 1; i < argv.size(); ++i) {
    std::ifstream probe(argv[i], std::ios::binary);
    ASSERT_TRUE(probe.good()) << argv[i];
    SCOPED_TRACE(argv[i]);
    Replay(Slurp(argv[i]));
  }
}

TEST(FuzzRegressionTest, EverySeedRunsClean) {
  const auto corpus = SeedCorpus();
  ASSERT_GE(corpus.size(), 100u);
  for (const auto& [name, input] : corpus) {
    SCOPED_TRACE(name);
    Replay(input);
  }
}

// The WebP/TIFF/GIF/BMP/PPM files the fuzzer also starts from (run_fuzz.sh makes them
// with the same script), good and broken, through the fuzz body's contracts.
TEST(FuzzRegressionTest, EveryFormatFixtureRunsClean) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/format_fixtures";
  auto fixtures = decode::testing::MakeFormatFixtures(
      "stages/decode/testdata/make_format_fixtures.py", dir);
  ASSERT_TRUE(fixtures.ok()) << fixtures.status();
  for (const decode::testing::FormatFixture& f : *fixtures) {
    SCOPED_TRACE(f.name);
    const std::string bytes = decode::testing::ReadBytes(f.path(dir));
    for (uint8_t options : {0x00, 0x3C, 0x47, 0x9A, 0xE5}) {  // Layouts, sizes, crops.
      Replay(WithHeader(options, /*seed=*/options * 977u, bytes));
    }
  }
}

// The seeds are what they claim to be (else the fuzzer would start from noise): the
// good ones decode with production limits, the broken ones fail with a reason.
TEST(FuzzRegressionTest, SeedsAreTheFilesTheyClaimToBe) {
  const auto decoder = *decode::Decoder::Create({});
  const char* kBroken[] = {"header_only", "half",   "no_eoi",     "soi_only",
                           "corrupt",     "bomb",   "zero_width", "truncated",
                           "signature",   "wide",   "empty",      "text",
                           "ff_d8",       "just_under"};
  int good = 0;
  int bad = 0;
  for (const auto& [name, bytes] : SeedImages()) {
    bool broken = false;
    for (const char* b : kBroken) broken |= absl::StrContains(name, b);
    decode::DecodedImage out;
    const absl::Status s = decoder->Decode(bytes, {}, nullptr, &out);
    if (broken) {
      ++bad;
      EXPECT_FALSE(s.ok()) << name;
      EXPECT_FALSE(ErrorReason(s).empty()) << name;
      if (absl::StrContains(name, "bomb")) {
        EXPECT_EQ(ErrorReason(s), "too_many_pixels") << name;
      }
    } else {
      ++good;
      EXPECT_TRUE(s.ok()) << name << ": " << s;
    }
  }
  EXPECT_GE(good, 30);
  EXPECT_GE(bad, 15);
}

}  // namespace
}  // namespace flowloader::fuzz
