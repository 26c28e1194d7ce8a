// env.h: the file-system interface every file access goes through.
//
// As in LevelDB's Env, the pipeline never calls the OS directly: tests inject faults (EIO,
// short reads, slow reads, vanishing files) through their own Env, and production uses
// Env::Default(), which maps errno to Status codes with a reason tag:
//   ENOENT → not_found, EACCES/EPERM → permission_denied, EISDIR → not_a_file,
//   EIO/EINTR/EAGAIN → read_error with code kUnavailable (transient, so it is retried).
//
// Thread-safety: implementations must be safe to call from many threads at once.
#ifndef FLOWLOADER_STAGES_READER_ENV_H_
#define FLOWLOADER_STAGES_READER_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace flowloader {

struct DirEntry {
  std::string name;
  bool is_directory = false;  // After following symbolic links.
};

// RandomAccessFile reads ranges of one open file (LevelDB's RandomAccessFile): indexing a
// tar shard's thousands of headers then costs one positioned read each, not an open,
// fstat and close per header.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Read is Env::ReadRange on this file.
  virtual absl::Status Read(int64_t offset, int64_t length, std::string* contents) = 0;
};

// WritableFile is a file being written from its start (LevelDB's WritableFile): Append
// adds bytes in order, Close makes the whole file visible under its path. A file dropped
// before Close (an error, Ctrl-C) leaves nothing behind: a local file is removed, an S3
// multipart upload aborted (s3_upload.h), so no reader ever sees half an object.
class WritableFile {
 public:
  // The destructor discards an unclosed file (as Abort, ignoring its error).
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // Close finishes the file; after it (failed or not) the file takes no more bytes, and a
  // failed Close has discarded it.
  virtual absl::Status Close() = 0;
  // Abort discards what was written; a no-op after Close.
  virtual absl::Status Abort() = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // Default returns the process-wide POSIX Env (never destroyed).
  static Env* Default();

  // ReadFile replaces *contents with the whole file at `path`. The string's capacity is
  // reused, so a caller that keeps one buffer per worker does not allocate per file.
  // A file larger than `max_bytes` is refused (kResourceExhausted, reason read_error)
  // before it is read.
  virtual absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                                std::string* contents) = 0;

  // ReadRange replaces *contents with the `length` bytes of `path` starting at `offset`,
  // fewer only where the file ends (none at or past its end): one positioned read, for a
  // member of a tar shard. The default reads the whole file and keeps the range (slow, but
  // an Env that overrides only ReadFile works); PosixEnv uses pread.
  virtual absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                                 std::string* contents);

  // NewRandomAccessFile opens `path` for many ReadRange-like reads. The default reads
  // through ReadRange on every call (so an Env's faults apply to each read); PosixEnv
  // keeps one descriptor open (refusing a non-regular file as ReadRange does).
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path);

  // ListDirectory returns the entries of directory `path` (no "." or ".."), unsorted.
  // A dangling symbolic link is listed as a non-directory.
  virtual absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) = 0;

  // IsDirectory reports whether `path` exists and is a directory (following links).
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;

  // CanonicalPath resolves links and "." / ".." (realpath(3) by default), so that the
  // dataset walk can recognise a link back to a directory it is already inside.
  virtual absl::StatusOr<std::string> CanonicalPath(const std::string& path);

  // NewWritableFile starts writing `path` (replacing what is there once closed). The
  // default refuses (kUnimplemented); PosixEnv writes the file, S3Env uploads the object.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path);
};

// ForwardingEnv passes every call to `base`: an Env that changes one behaviour (a fault, a
// hook before a read) derives from it and overrides only that.
class ForwardingEnv : public Env {
 public:
  explicit ForwardingEnv(Env* base) : base_(base) {}

  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override {
    return base_->ReadFile(path, max_bytes, contents);
  }
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override {
    return base_->ReadRange(path, offset, length, contents);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override {
    return base_->ListDirectory(path);
  }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return base_->IsDirectory(path);
  }
  absl::StatusOr<std::string> CanonicalPath(const std::string& path) override {
    return base_->CanonicalPath(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    return base_->NewWritableFile(path);
  }

 protected:
  Env* base() const { return base_; }

 private:
  Env* const base_;
};

// TooLarge is the error for a file of `size` bytes over the `max_bytes` limit.
absl::Status TooLarge(const std::string& path, int64_t size, int64_t max_bytes);
// TooLargeSize is the file size a TooLarge error carries (a payload, so callers need not
// parse its message), or -1 for any other status.
int64_t TooLargeSize(const absl::Status& status);

// StatusFromErrno turns an errno from an operation on `path` into a Status with a reason.
absl::Status StatusFromErrno(int error_number, const std::string& path);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_ENV_H_
