// List files with a `#columns:` header: the extra columns' names and values, and the
// one-line errors for a bad header or a line with the wrong number of fields.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/reader/dataset.h"

namespace flowloader {
namespace {

class ListColumnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/cols_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ::mkdir(root_.c_str(), 0755);
  }
  absl::StatusOr<std::unique_ptr<Dataset>> OpenList(const std::string& text) {
    std::ofstream(root_ + "/list.tsv") << text;
    return Dataset::Open({root_ + "/list.tsv"});
  }
  std::string root_;
};

TEST_F(ListColumnsTest, HeaderNamesTheColumnsAfterTheLabel) {
  auto ds = OpenList("# a comment\n#columns: path label caption id\na.jpg\t3\ta dog\t17\n"
                     "\nb.jpg\t0\t\tx y\n");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->column_names(), (std::vector<std::string>{"caption", "id"}));
  ASSERT_EQ((*ds)->size(), 2);
  EXPECT_EQ((*ds)->sample(0).label, 3);
  EXPECT_EQ((*ds)->column(0, 0), "a dog");
  EXPECT_EQ((*ds)->column(0, 1), "17");
  EXPECT_EQ((*ds)->column(1, 0), "");
  EXPECT_EQ((*ds)->column(1, 1), "x y");
}

TEST_F(ListColumnsTest, WithoutAHeaderAThirdColumnIsRefusedNamingTheHeader) {
  auto ds = OpenList("a.jpg\t3\tcaption\n");
  ASSERT_FALSE(ds.ok());
  EXPECT_TRUE(absl::StrContains(ds.status().message(), "#columns: path label NAME..."))
      << ds.status();
}

TEST_F(ListColumnsTest, ALineWithTheWrongFieldCountIsOneLine) {
  auto ds = OpenList("#columns: path label caption\na.jpg\t3\tok\nb.jpg\t1\n");
  ASSERT_FALSE(ds.ok());
  EXPECT_TRUE(absl::StrContains(ds.status().message(),
                                "list.tsv:3: expected 3 tab-separated fields (path, label >= 0, "
                                "caption) as the #columns: header says, got \"b.jpg\t1\""))
      << ds.status();
}

TEST_F(ListColumnsTest, BadHeadersAreRefused) {
  for (const char* header : {"#columns: label path x", "#columns: path label",
                             "#columns: path label 9x", "#columns: path label a a"}) {
    auto ds = OpenList(std::string(header) + "\na.jpg\t0\tv\tw\n");
    ASSERT_FALSE(ds.ok()) << header;
    EXPECT_TRUE(absl::StrContains(ds.status().message(), "list.tsv:1: ")) << ds.status();
  }
}

}  // namespace
}  // namespace flowloader
