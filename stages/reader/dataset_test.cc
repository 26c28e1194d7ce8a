#include "stages/reader/dataset.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/ds_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ::mkdir(root_.c_str(), 0755);
  }
  void MakeDir(const std::string& rel) { ::mkdir((root_ + "/" + rel).c_str(), 0755); }
  void MakeFile(const std::string& rel, const std::string& body = "x") {
    std::ofstream(root_ + "/" + rel) << body;
  }
  std::string root_;
};

TEST_F(DatasetTest, ImageFolderLabelsClassesInSortedOrder) {
  for (const char* d : {"zebra", "ant", "Moose"}) MakeDir(d);
  MakeFile("zebra/b.jpg");
  MakeFile("zebra/a.JPEG");
  MakeFile("ant/1.png");
  MakeFile("Moose/x.jpg");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_});
  ASSERT_TRUE(ds.ok()) << ds.status();
  // Python's sorted(): uppercase before lowercase.
  EXPECT_EQ((*ds)->class_names(), (std::vector<std::string>{"Moose", "ant", "zebra"}));
  ASSERT_EQ((*ds)->size(), 4);
  EXPECT_EQ((*ds)->sample(0).key, "Moose/x.jpg");
  EXPECT_EQ((*ds)->sample(0).label, 0);
  EXPECT_EQ((*ds)->sample(1).key, "ant/1.png");
  EXPECT_EQ((*ds)->sample(1).label, 1);
  EXPECT_EQ((*ds)->sample(2).key, "zebra/a.JPEG");
  EXPECT_EQ((*ds)->sample(3).key, "zebra/b.jpg");
  EXPECT_EQ((*ds)->sample(3).label, 2);
}

TEST_F(DatasetTest, WalksNestedDirectoriesAndIgnoresNonImageExtensions) {
  MakeDir("cls");
  MakeDir("cls/sub");
  MakeDir("cls/folder.jpg");  // A directory named like an image is walked, not read.
  MakeFile("cls/z.jpg");
  MakeFile("cls/notes.txt");
  MakeFile("cls/sub/a.jpg");
  MakeFile("cls/folder.jpg/in.png");
  ASSERT_EQ(::symlink("/nonexistent/file.jpg", (root_ + "/cls/dangling.jpg").c_str()), 0);
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_});
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<std::string> keys;
  for (int64_t i = 0; i < (*ds)->size(); ++i) keys.push_back((*ds)->sample(i).key);
  // (directory, name) order as sorted(os.walk()); the dangling link is listed (and will
  // be skipped as not_found when read), the .txt file is not.
  EXPECT_EQ(keys, (std::vector<std::string>{"cls/dangling.jpg", "cls/z.jpg",
                                            "cls/folder.jpg/in.png", "cls/sub/a.jpg"}));
}

// OpenWithin is Dataset::Open, or the end of the test binary when it has not returned
// after `seconds` (a walk through /proc ran for minutes: it cannot be cancelled).
absl::StatusOr<std::unique_ptr<Dataset>> OpenWithin(const std::string& path, int seconds) {
  auto* opened = new std::future<absl::StatusOr<std::unique_ptr<Dataset>>>(
      std::async(std::launch::async, [path] { return Dataset::Open({path}); }));
  if (opened->wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: Dataset::Open(%s) still running after %d s\n", path.c_str(),
                 seconds);
    std::fflush(stderr);
    std::_Exit(1);  // The future's destructor would wait for the walk.
  }
  absl::StatusOr<std::unique_ptr<Dataset>> out = opened->get();
  delete opened;
  return out;
}

bool IsProcMounted() {
  struct statfs fs;
  return ::statfs("/proc", &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

// The kernel's pseudo-filesystems hold no images: a link to /proc (or to /sys, or a
// bind-mounted /proc) inside a class directory is not walked, whose links (/proc/*/cwd)
// led back to / for minutes; the real images beside it are listed.
TEST_F(DatasetTest, PseudoFilesystemsInsideTheTreeAreNotWalked) {
  if (!IsProcMounted()) GTEST_SKIP() << "no /proc here";
  MakeDir("cls");
  MakeDir("cls/sub");
  MakeFile("cls/a.jpg");
  MakeFile("cls/sub/b.png");
  ASSERT_EQ(::symlink("/proc", (root_ + "/cls/proc").c_str()), 0);
  ASSERT_EQ(::symlink("/proc/self", (root_ + "/cls/sub/self.jpg").c_str()), 0);
  ASSERT_EQ(::symlink("/sys", (root_ + "/cls/sys").c_str()), 0);
  absl::StatusOr<std::unique_ptr<Dataset>> ds = OpenWithin(root_, 20);
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<std::string> keys;
  for (int64_t i = 0; i < (*ds)->size(); ++i) keys.push_back((*ds)->sample(i).key);
  EXPECT_EQ(keys, (std::vector<std::string>{"cls/a.jpg", "cls/sub/b.png"}));
}

// --data=/proc is refused quickly, as a tree without images: its directories (one per
// process) are classes that list nothing.
TEST_F(DatasetTest, ProcAsTheDataIsRefusedQuickly) {
  if (!IsProcMounted()) GTEST_SKIP() << "no /proc here";
  absl::StatusOr<std::unique_ptr<Dataset>> ds = OpenWithin("/proc", 20);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("no image files found"), absl::string_view::npos)
      << ds.status();
}

TEST_F(DatasetTest, ReadsListFileRelativeToItsDirectory) {
  MakeFile("list.tsv", "# comment\na/1.jpg\t3\n\nb c/2 ü.jpg\t0\r\n");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_ + "/list.tsv"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 2);
  EXPECT_EQ((*ds)->root(), root_);
  EXPECT_EQ((*ds)->sample(0).key, "a/1.jpg");
  EXPECT_EQ((*ds)->sample(0).label, 3);
  EXPECT_EQ((*ds)->sample(1).key, "b c/2 ü.jpg");
  EXPECT_EQ((*ds)->FullPath(1), root_ + "/b c/2 ü.jpg");
}

TEST_F(DatasetTest, ListFileAbsolutePathsAreUsedAsIsAndKeptAsKeys) {
  // The list lives in one directory and names files in another, as a generated list does.
  MakeDir("lists");
  MakeDir("images");
  const std::string absolute = root_ + "/images/a.jpg";
  MakeFile("lists/list.tsv", absolute + "\t1\nlocal.jpg\t0\n");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_ + "/lists/list.tsv"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 2);
  EXPECT_EQ((*ds)->sample(0).key, absolute);
  EXPECT_EQ((*ds)->FullPath(0), absolute);
  EXPECT_EQ((*ds)->FullPath(1), root_ + "/lists/local.jpg");
}

TEST_F(DatasetTest, MalformedListLineIsNamedByLineNumber) {
  MakeFile("bad.tsv", "a.jpg\t1\nb.jpg 2\n");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_ + "/bad.tsv"});
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("bad.tsv:2"), std::string::npos) << ds.status();
}

TEST_F(DatasetTest, ListLineWithTwoTabsIsNamedByLineNumber) {
  MakeFile("tabs.tsv", "a.jpg\t1\nb.jpg\t2\t7\n");
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_ + "/tabs.tsv"});
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("tabs.tsv:2: more than one tab"), std::string::npos)
      << ds.status();
}

// A NUL byte inside a path (a hostile list file) named another file to the system calls
// and cut the skip's log line there: refused by line number, the NUL shown as ?.
TEST_F(DatasetTest, ListPathWithANulByteIsNamedByLineNumber) {
  MakeFile("nul.tsv", std::string("a.jpg\t1\nb\0.jpg\t2\n", 17));
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({root_ + "/nul.tsv"});
  ASSERT_FALSE(ds.ok());
  const std::string message(ds.status().message());
  EXPECT_NE(message.find("nul.tsv:2: the path holds a NUL byte"), std::string::npos) << message;
  EXPECT_NE(message.find("\"b?.jpg\""), std::string::npos) << message;
  EXPECT_EQ(message.find('\0'), std::string::npos);
}

TEST_F(DatasetTest, MissingOrEmptyDatasetsAreClearErrors) {
  EXPECT_EQ(Dataset::Open({root_ + "/missing"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Dataset::Open({root_}).status().code(), absl::StatusCode::kInvalidArgument);
  MakeDir("empty_class");
  EXPECT_EQ(Dataset::Open({root_}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DatasetOfSizeTest, KeysAreIndexesWithoutFilesAndEmptyIsRefused) {
  absl::StatusOr<std::unique_ptr<Dataset>> d = Dataset::OfSize(3, "dataset");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ((*d)->size(), 3);
  SampleSource scratch;
  EXPECT_EQ((*d)->SampleAt(2, &scratch).key, "2");
  EXPECT_EQ(&(*d)->SampleAt(2, &scratch), &scratch);  // Computed, not stored.
  EXPECT_EQ((*d)->SampleAt(2, &scratch).label, 0);
  EXPECT_EQ((*d)->label(2), 0);
  EXPECT_TRUE((*d)->members(2).empty());
  EXPECT_EQ((*d)->FullPath(1), "dataset/1");
  EXPECT_EQ((*d)->source_names(), std::vector<std::string>{"default"});
  EXPECT_EQ((*d)->source_size(0), 3);
  EXPECT_EQ(Dataset::OfSize(0, "dataset").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DatasetOfSizeTest, TwoToThe40SamplesTakeNoTable) {
  // It was 88 B a sample (a SampleSource each): 2^40 of them could not be made at all.
  absl::StatusOr<std::unique_ptr<Dataset>> d = Dataset::OfSize(int64_t{1} << 40, "dataset");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE((*d)->computed());
  EXPECT_EQ((*d)->table_bytes(), 0);
  SampleSource scratch;
  EXPECT_EQ((*d)->SampleAt((int64_t{1} << 40) - 1, &scratch).key, "1099511627775");
}

TEST_F(DatasetTest, TheTableBytesCountEntriesAndLongKeys) {
  MakeDir("a");
  MakeFile("a/short.jpg");
  MakeFile("a/" + std::string(100, 'k') + ".jpg");
  absl::StatusOr<std::unique_ptr<Dataset>> d = Dataset::Open({root_});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE((*d)->computed());
  const int64_t entries = 2 * static_cast<int64_t>(sizeof(SampleSource));
  // The 106-character key's heap buffer is counted; the short one sits inline.
  EXPECT_GE((*d)->table_bytes(), entries + 107);
  EXPECT_LE((*d)->table_bytes(), entries * 2 + 300);
}

}  // namespace
}  // namespace flowloader
