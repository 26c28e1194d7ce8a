#include "stages/reader/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>  // NOLINT(build/c++11): the skipped mounts' log set.
#include <set>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "stages/core/log.h"
#include "stages/core/sample_error.h"

namespace flowloader {

absl::StatusOr<std::string> Env::CanonicalPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return StatusFromErrno(errno, path);
  std::string out(resolved);
  std::free(resolved);
  return out;
}

absl::StatusOr<std::unique_ptr<WritableFile>> Env::NewWritableFile(const std::string& path) {
  return absl::UnimplementedError(absl::StrCat(path, ": this storage cannot be written"));
}

absl::Status Env::ReadRange(const std::string& path, int64_t offset, int64_t length,
                            std::string* contents) {
  if (offset < 0 || length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": bad range ", offset, "+", length));
  }
  if (absl::Status s = ReadFile(path, std::numeric_limits<int64_t>::max(), contents); !s.ok()) {
    return s;
  }
  const auto size = static_cast<int64_t>(contents->size());
  const int64_t begin = std::min(offset, size);
  const int64_t end = std::min(size, begin + std::min(length, size - begin));
  contents->erase(static_cast<size_t>(end));
  contents->erase(0, static_cast<size_t>(begin));
  return absl::OkStatus();
}

namespace {

// RangeFile reads through Env::ReadRange (the default NewRandomAccessFile).
class RangeFile : public RandomAccessFile {
 public:
  RangeFile(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  absl::Status Read(int64_t offset, int64_t length, std::string* contents) override {
    return env_->ReadRange(path_, offset, length, contents);
  }

 private:
  Env* const env_;
  const std::string path_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RandomAccessFile>> Env::NewRandomAccessFile(
    const std::string& path) {
  return std::unique_ptr<RandomAccessFile>(new RangeFile(this, path));
}

absl::Status StatusFromErrno(int error_number, const std::string& path) {
  const std::string message = absl::StrCat(path, ": ", std::strerror(error_number));
  switch (error_number) {
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
      return SampleError(absl::StatusCode::kNotFound, reason::kNotFound, message);
    case EACCES:
    case EPERM:
      return SampleError(absl::StatusCode::kPermissionDenied, reason::kPermissionDenied,
                         message);
    case EISDIR:
      return SampleError(absl::StatusCode::kFailedPrecondition, reason::kNotAFile, message);
    case EIO:
    case EINTR:
    case EAGAIN:
    case ETIMEDOUT:
    case ESTALE:
      return SampleError(absl::StatusCode::kUnavailable, reason::kReadError, message);
    default:
      return SampleError(absl::StatusCode::kInternal, reason::kReadError, message);
  }
}

constexpr char kFileSizeUrl[] = "flowloader/file_size";

absl::Status TooLarge(const std::string& path, int64_t size, int64_t max_bytes) {
  absl::Status status =
      SampleError(absl::StatusCode::kResourceExhausted, reason::kReadError,
                  absl::StrCat(path, ": ", size, " bytes is over the limit of ", max_bytes));
  status.SetPayload(kFileSizeUrl, absl::Cord(absl::StrCat(size)));
  return status;
}

int64_t TooLargeSize(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kFileSizeUrl);
  int64_t size = -1;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &size)) return -1;
  return size;
}

namespace {

// PosixWritableFile writes a local file through stdio's buffer; dropped before Close, the
// partial file is removed.
class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  ~PosixWritableFile() override { Abort().IgnoreError(); }

  absl::Status Append(absl::string_view data) override {
    if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
    if (!data.empty() && std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
      return StatusFromErrno(errno, path_);
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (file_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc == 0) return absl::OkStatus();
    const absl::Status error = StatusFromErrno(errno, path_);
    ::unlink(path_.c_str());
    return error;
  }

  absl::Status Abort() override {
    if (file_ == nullptr) return absl::OkStatus();
    std::fclose(file_);
    file_ = nullptr;
    if (::unlink(path_.c_str()) != 0) return StatusFromErrno(errno, path_);
    return absl::OkStatus();
  }

 private:
  std::FILE* file_;
  const std::string path_;
};

namespace {

// PseudoFilesystem names the kernel pseudo-filesystem `path` is on (proc, sysfs, ...; by
// statfs's f_type, <linux/magic.h>), or is nullptr: such a tree holds kernel state, never
// images, and proc's links (/proc/*/cwd, /proc/*/root) lead back to / again and again, so
// a walk through one ran for minutes. devtmpfs reports tmpfs's magic: it is the tmpfs
// mount of /dev itself (same device as /dev), not /dev/shm or any other tmpfs.
// `device` is the directory's st_dev, which tells one mount from another.
const char* PseudoFilesystem(const std::string& path, dev_t* device) {
  struct statfs fs;
  struct stat st;
  if (::statfs(path.c_str(), &fs) != 0 || ::stat(path.c_str(), &st) != 0) return nullptr;
  *device = st.st_dev;
  constexpr int64_t kConfigfsMagic = 0x62656570;  // Not in every <linux/magic.h>.
  constexpr int64_t kMqueueMagic = 0x19800202;
  static constexpr struct {
    int64_t magic;
    const char* name;
  } kPseudo[] = {
      {PROC_SUPER_MAGIC, "proc"},      {SYSFS_MAGIC, "sysfs"},
      {DEVPTS_SUPER_MAGIC, "devpts"},  {CGROUP_SUPER_MAGIC, "cgroup"},
      {CGROUP2_SUPER_MAGIC, "cgroup2"}, {DEBUGFS_MAGIC, "debugfs"},
      {TRACEFS_MAGIC, "tracefs"},      {SECURITYFS_MAGIC, "securityfs"},
      {PSTOREFS_MAGIC, "pstore"},      {BPF_FS_MAGIC, "bpf"},
      {kConfigfsMagic, "configfs"},    {kMqueueMagic, "mqueue"},
      {BINFMTFS_MAGIC, "binfmt_misc"}, {NSFS_MAGIC, "nsfs"},
  };
  const auto type = static_cast<int64_t>(static_cast<uint32_t>(fs.f_type));
  for (const auto& p : kPseudo) {
    if (p.magic == type) return p.name;
  }
  struct stat dev;
  if (type == TMPFS_MAGIC && ::stat("/dev", &dev) == 0 && dev.st_dev == st.st_dev) {
    return "devtmpfs";
  }
  return nullptr;
}

// LogSkippedOnce logs a directory left unlisted on a pseudo-filesystem, once per mount
// in the process (a walk of /proc meets thousands of its directories).
void LogSkippedOnce(const std::string& path, const char* filesystem, dev_t device) {
  static std::mutex* const mu = new std::mutex;
  static std::set<dev_t>* const logged = new std::set<dev_t>;
  {
    std::lock_guard<std::mutex> lock(*mu);
    if (!logged->insert(device).second) return;
  }
  LogWarning(absl::StrCat("not listing ", path, ": it is on a ", filesystem,
                          " filesystem, which holds kernel state, not images (its other "
                          "directories are skipped too)"));
}

}  // namespace

class PosixEnv : public Env {
 public:
  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override {
    // O_NONBLOCK: opening a FIFO named like an image must not wait for a writer (the
    // S_ISREG check below then refuses it); it changes nothing for regular files.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return StatusFromErrno(errno, path);
    absl::Status status = ReadAll(fd, path, max_bytes, contents);
    ::close(fd);
    return status;
  }

  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override {
    if (offset < 0 || length < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": bad range ", offset, "+", length));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return StatusFromErrno(errno, path);
    absl::Status status = PreadRange(fd, path, offset, length, contents);
    ::close(fd);
    return status;
  }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return StatusFromErrno(errno, path);
    std::string probe;
    // A zero-byte read runs PreadRange's checks (a FIFO or directory is refused here).
    if (absl::Status s = PreadRange(fd, path, 0, 0, &probe); !s.ok()) {
      ::close(fd);
      return s;
    }
    return std::unique_ptr<RandomAccessFile>(new PosixFile(fd, path));
  }

  // ListDirectory leaves the kernel's pseudo-filesystems (PseudoFilesystem) out of a
  // walk: a directory on one inside a real tree (a link to /proc, a bind-mounted /sys) is
  // not listed as an entry, and a directory below the top of one (/proc/1, the classes of
  // --data=/proc) lists as empty, so a walk never descends into them. The top itself
  // (--data=/proc) lists its directories, which then list nothing.
  absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override {
    dev_t device = 0, parent_device = 0;
    const char* pseudo = PseudoFilesystem(path, &device);
    if (pseudo != nullptr && PseudoFilesystem(path + "/..", &parent_device) != nullptr) {
      LogSkippedOnce(path, pseudo, device);
      return std::vector<DirEntry>();
    }
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return StatusFromErrno(errno, path);
    std::vector<DirEntry> entries;
    while (struct dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      const std::string child = absl::StrCat(path, "/", name);
      if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
        struct stat st;  // Follow the link; a dangling one stays a non-directory.
        is_dir = ::stat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir && pseudo == nullptr) {
        dev_t child_device = 0;
        if (const char* fs = PseudoFilesystem(child, &child_device); fs != nullptr) {
          LogSkippedOnce(child, fs, child_device);
          continue;
        }
      }
      entries.push_back(DirEntry{name, is_dir});
    }
    ::closedir(dir);
    return entries;
  }

  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return StatusFromErrno(errno, path);
    return S_ISDIR(st.st_mode);
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    std::FILE* file = std::fopen(path.c_str(), "wbe");  // e: O_CLOEXEC.
    if (file == nullptr) return StatusFromErrno(errno, path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(file, path));
  }

 private:
  // PosixFile holds one descriptor for many positioned reads.
  class PosixFile : public RandomAccessFile {
   public:
    PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    ~PosixFile() override { ::close(fd_); }
    absl::Status Read(int64_t offset, int64_t length, std::string* contents) override {
      if (offset < 0 || length < 0) {
        return absl::InvalidArgumentError(absl::StrCat(path_, ": bad range ", offset, "+", length));
      }
      return PreadRange(fd_, path_, offset, length, contents);
    }

   private:
    const int fd_;
    const std::string path_;
  };

  // PreadRange reads [offset, offset + length) clipped to the file's size, sized from
  // fstat so that a range past the end allocates nothing.
  static absl::Status PreadRange(int fd, const std::string& path, int64_t offset,
                                 int64_t length, std::string* contents) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return StatusFromErrno(errno, path);
    if (S_ISDIR(st.st_mode)) return StatusFromErrno(EISDIR, path);
    if (!S_ISREG(st.st_mode)) {
      return SampleError(absl::StatusCode::kFailedPrecondition, reason::kNotAFile,
                         absl::StrCat(path, ": not a regular file"));
    }
    const int64_t available = std::max<int64_t>(0, st.st_size - offset);
    contents->resize(static_cast<size_t>(std::min(length, available)));
    size_t used = 0;
    while (used < contents->size()) {
      const ssize_t n = ::pread(fd, contents->data() + used, contents->size() - used,
                                static_cast<off_t>(offset + static_cast<int64_t>(used)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return StatusFromErrno(errno, path);
      }
      if (n == 0) break;  // The file shrank since fstat.
      used += static_cast<size_t>(n);
    }
    contents->resize(used);
    return absl::OkStatus();
  }

  // ReadAll reads the file in one read() where possible: fstat gives the size, so a
  // typical file costs open + fstat + read + close and no reallocation.
  static absl::Status ReadAll(int fd, const std::string& path, int64_t max_bytes,
                              std::string* contents) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return StatusFromErrno(errno, path);
    if (S_ISDIR(st.st_mode)) return StatusFromErrno(EISDIR, path);
    if (!S_ISREG(st.st_mode)) {
      return SampleError(absl::StatusCode::kFailedPrecondition, reason::kNotAFile,
                         absl::StrCat(path, ": not a regular file"));
    }
    if (st.st_size > max_bytes) return TooLarge(path, st.st_size, max_bytes);
    // Sized from fstat, plus one byte so that a file that grew is noticed by the loop.
    size_t capacity = static_cast<size_t>(st.st_size) + 1;
    contents->resize(capacity);
    size_t used = 0;
    while (true) {
      if (used == contents->size()) contents->resize(contents->size() * 2);
      const ssize_t n = ::read(fd, contents->data() + used, contents->size() - used);
      if (n < 0) {
        if (errno == EINTR) continue;
        return StatusFromErrno(errno, path);
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
      if (static_cast<int64_t>(used) > max_bytes) return TooLarge(path, used, max_bytes);
    }
    contents->resize(used);
    return absl::OkStatus();
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace flowloader
