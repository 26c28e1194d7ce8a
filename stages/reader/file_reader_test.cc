#include "stages/reader/file_reader.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/reader/fault_env.h"

namespace flowloader {
namespace {

class FileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(std::getenv("TEST_TMPDIR")) + "/file.bin";
    std::ofstream(path_) << "0123456789";
  }
  std::unique_ptr<FileReader> Reader(int retries, int64_t max_bytes = 1 << 20) {
    FileReaderOptions o;
    o.max_retries = retries;
    o.initial_backoff = absl::Microseconds(100);
    o.max_file_bytes = max_bytes;
    o.env = &env_;
    return *FileReader::Create(o);
  }
  std::string path_;
  FaultEnv env_{Env::Default()};
};

TEST_F(FileReaderTest, ReadsWholeFile) {
  std::string bytes;
  ASSERT_TRUE(Reader(0)->Read(path_, &bytes).ok());
  EXPECT_EQ(bytes, "0123456789");
}

TEST_F(FileReaderTest, RetriesTransientEioThenSucceeds) {
  env_.Inject("file.bin", Fault{EIO, 2});
  std::string bytes;
  ASSERT_TRUE(Reader(3)->Read(path_, &bytes).ok());
  EXPECT_EQ(bytes, "0123456789");
  EXPECT_EQ(env_.Attempts("file.bin"), 3);
}

TEST_F(FileReaderTest, GivesUpAfterMaxRetriesWithReadErrorReason) {
  env_.Inject("file.bin", Fault{EIO, -1});
  std::string bytes;
  const absl::Status s = Reader(2)->Read(path_, &bytes);
  EXPECT_EQ(ErrorReason(s), "read_error");
  EXPECT_NE(s.message().find("after 3 attempts"), std::string::npos) << s;
  EXPECT_NE(s.message().find("file.bin"), std::string::npos) << s;
  EXPECT_EQ(env_.Attempts("file.bin"), 3);
}

TEST_F(FileReaderTest, PermanentErrorsAreNotRetried) {
  env_.Inject("file.bin", Fault{EACCES, -1});
  std::string bytes;
  EXPECT_EQ(ErrorReason(Reader(3)->Read(path_, &bytes)), "permission_denied");
  EXPECT_EQ(env_.Attempts("file.bin"), 1);
  EXPECT_EQ(ErrorReason(Reader(3)->Read(std::string(std::getenv("TEST_TMPDIR")) + "/gone.jpg", &bytes)), "not_found");
}

TEST_F(FileReaderTest, ShortReadReturnsWhatWasRead) {
  env_.Inject("file.bin", Fault{0, 0, 4});
  std::string bytes;
  ASSERT_TRUE(Reader(0)->Read(path_, &bytes).ok());
  EXPECT_EQ(bytes, "0123");
}

TEST_F(FileReaderTest, RefusesFilesOverTheSizeLimitBeforeReading) {
  std::string bytes;
  const absl::Status s = Reader(0, 5)->Read(path_, &bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrorReason(s), "read_error");
}

TEST_F(FileReaderTest, DirectoryIsNotAFile) {
  std::string bytes;
  EXPECT_EQ(ErrorReason(Reader(0)->Read(std::getenv("TEST_TMPDIR"), &bytes)), "not_a_file");
}

}  // namespace
}  // namespace flowloader
