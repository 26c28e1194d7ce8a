// bounded_read_test: ReadBounded on files, directories, a FIFO and a device, each made
// here (or the system's /dev/zero).
#include "stages/core/bounded_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = TempDir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr) << path;
  if (f != nullptr) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  return path;
}

TEST(BoundedReadTest, ReadsAFileUpToTheLimitAndRefusesALargerOneBySize) {
  const std::string bytes(100000, 'j');  // More than one read's chunk.
  const std::string path = WriteFile("f.json", bytes);
  std::string text = "left over";
  EXPECT_TRUE(ReadBounded(path, 100000, &text).ok());
  EXPECT_EQ(text, bytes);
  const BoundedRead over = ReadBounded(path, 99999, &text);
  EXPECT_EQ(over.outcome, BoundedRead::Outcome::kTooLarge);
  EXPECT_EQ(over.size, 100000);
  EXPECT_TRUE(text.empty());
  EXPECT_TRUE(ReadBounded(WriteFile("empty", ""), 0, &text).ok());
  EXPECT_TRUE(text.empty());
}

TEST(BoundedReadTest, NamesAMissingPathAndADirectory) {
  std::string text;
  const BoundedRead missing = ReadBounded(TempDir() + "/missing.json", 10, &text);
  EXPECT_EQ(missing.outcome, BoundedRead::Outcome::kCannotOpen);
  EXPECT_EQ(missing.error, ENOENT);
  EXPECT_EQ(ReadBounded(TempDir(), 1 << 20, &text).outcome, BoundedRead::Outcome::kDirectory);
}

TEST(BoundedReadTest, ADeviceWithoutASizeIsReadToTheLimitOnly) {
  std::string text;
  const BoundedRead zero = ReadBounded("/dev/zero", 1 << 20, &text);
  EXPECT_EQ(zero.outcome, BoundedRead::Outcome::kTooLarge);
  EXPECT_EQ(zero.size, -1);
  EXPECT_TRUE(text.empty());
}

TEST(BoundedReadTest, ReadsAFifoToItsEnd) {
  const std::string path = TempDir() + "/fifo";
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << errno;
  const std::string bytes(200000, 'p');  // More than a pipe's buffer: read while written.
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY);  // Waits for the reader's open.
    size_t done = 0;
    while (fd >= 0 && done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (fd >= 0) ::close(fd);
  });
  std::string text;
  const BoundedRead read = ReadBounded(path, 1 << 20, &text);
  writer.join();
  EXPECT_TRUE(read.ok());
  EXPECT_EQ(text, bytes);
}

}  // namespace
}  // namespace flowloader
