// bounded_read.cc: ReadBounded (see bounded_read.h).
#include "stages/core/bounded_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flowloader {

BoundedRead ReadBounded(const std::string& path, int64_t max_bytes, std::string* text) {
  text->clear();
  BoundedRead result;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.outcome = BoundedRead::Outcome::kCannotOpen;
    result.error = errno;
    return result;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      result.outcome = BoundedRead::Outcome::kDirectory;
    } else if (S_ISREG(st.st_mode) && st.st_size > max_bytes) {
      result.outcome = BoundedRead::Outcome::kTooLarge;
      result.size = st.st_size;
    } else if (S_ISREG(st.st_mode)) {
      text->reserve(static_cast<size_t>(st.st_size));
    }
  }
  char chunk[1 << 16];
  while (result.ok()) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.outcome = BoundedRead::Outcome::kCannotRead;
      result.error = errno;
    }
    if (n <= 0) break;
    text->append(chunk, static_cast<size_t>(n));
    if (static_cast<int64_t>(text->size()) > max_bytes) {
      result.outcome = BoundedRead::Outcome::kTooLarge;
    }
  }
  ::close(fd);
  if (!result.ok()) text->clear();
  return result;
}

}  // namespace flowloader
