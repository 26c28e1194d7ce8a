// one_line_test: messages as one bounded line, URL passwords redacted.
#include "stages/core/one_line.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stages/core/log.h"

namespace flowloader {
namespace {

TEST(OneLineTest, CutsEachQuotedValueAndJoinsLines) {
  const std::string line = OneLine("bad path /" + std::string(5000, 'x') + "\nsecond line");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_LT(line.size(), 300u);
  EXPECT_NE(line.find("... (5001 characters) second line"), std::string::npos) << line;
  EXPECT_LE(OneLine(std::string(100000, 'a') + " " + std::string(100000, 'b')).size(), 1100u);
}

TEST(OneLineTest, RedactsTheOnlyPasswordsOfUrls) {
  EXPECT_EQ(RedactPasswords("endpoint http://user:s3cr3t@127.0.0.1:1, path-style"),
            "endpoint http://user:***@127.0.0.1:1, path-style");
  EXPECT_EQ(RedactPasswords("s3://AK:SK/x@bucket/train/ and https://a:b@h/p?q=1"),
            "s3://AK:***@bucket/train/ and https://a:***@h/p?q=1");
  EXPECT_EQ(RedactPasswords("'http://u:p@h/x.tar': no sample"), "'http://u:***@h/x.tar': no sample");
  // No password, no change: users alone, '@' in paths, plain text.
  for (const char* same : {"http://user@host/x", "s3://bucket/a@b:c", "weight 3: ok", "://",
                           "http://h:80/x"}) {
    EXPECT_EQ(RedactPasswords(same), same);
  }
  EXPECT_EQ(OneLine("after 4 attempts: http://u:topsecret@h:1/x.tar"),
            "after 4 attempts: http://u:***@h:1/x.tar");
}

TEST(OneLineTest, LogLinesNeverShowAUrlsPassword) {
  std::vector<std::string> lines;
  SetLogSink([&lines](LogLevel, absl::string_view line) { lines.emplace_back(line); });
  LogInfo("s3: endpoint http://ak:topsecret@127.0.0.1:7480, path-style");
  LogWarning("plain line without a URL");
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "s3: endpoint http://ak:***@127.0.0.1:7480, path-style");
  EXPECT_EQ(lines[1], "plain line without a URL");
}

// A logged line quotes values too (a skipped sample's key is its file name, which a COCO
// file may make a megabyte long): one line, each value cut past any real path's length (a
// 3 MB "skipped ..." warning was printed whole); a real path stays whole.
TEST(OneLineTest, LogLinesAreOneBoundedLine) {
  std::vector<std::string> lines;
  SetLogSink([&lines](LogLevel, absl::string_view line) { lines.emplace_back(line); });
  LogWarning("skipped " + std::string(3000000, 'x') + ".jpg (not_found): gone\nand more");
  const std::string path = "/" + std::string(300, 'p') + "/a.jpg";
  LogWarning("skipped " + path + " (corrupt)");
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_LT(lines[0].size(), kMaxLoggedValueChars + 100) << lines[0].substr(0, 300);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
  EXPECT_NE(lines[0].find("(3000004 characters) (not_found): gone and more"), std::string::npos)
      << lines[0].substr(0, 300);
  EXPECT_EQ(lines[1], "skipped " + path + " (corrupt)");
}

}  // namespace
}  // namespace flowloader
