// pack_test: `flowloader pack` keeps the ImageFolder's labels readable whatever its class
// directories are called: classes.txt holds one escaped name a line, and ReadClassNames
// gives back the names by label.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/pack_command.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

TEST(PackTest, ClassNamesWithNewlinesTabsAndBackslashesRoundTrip) {
  const std::string root = testing::TempDirForTest("pack_");
  const std::string folder = root + "/folder";
  ASSERT_EQ(::mkdir(folder.c_str(), 0755), 0);
  // Sorted as the ImageFolder sorts them: these are the labels 0..3.
  const std::vector<std::string> names = {"a\nb", "back\\slash", "plain", "tab\there\r"};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string dir = folder + "/" + names[i];
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << names[i];
    testing::WriteFile(dir + "/img.jpg", testing::ValidJpeg(16, 16, i + 1));
  }
  PackOptions o;
  o.data = folder;
  o.out = root + "/shards";
  absl::StatusOr<PackResult> r = Pack(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->samples, 4);

  const std::string text = testing::ReadFile(o.out + "/classes.txt");
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines, (std::vector<std::string>{"a\\nb", "back\\\\slash", "plain",
                                             "tab\\there\\r"}));
  absl::StatusOr<std::vector<std::string>> read = ReadClassNames(o.out + "/classes.txt");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, names);

  testing::WriteFile(root + "/bad.txt", "ok\nbad\\x\n");
  read = ReadClassNames(root + "/bad.txt");
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("line 2"), std::string::npos) << read.status();
}

}  // namespace
}  // namespace flowloader
