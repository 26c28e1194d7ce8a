// file_reader.h: reads one sample's bytes, retrying transient I/O errors with backoff.
//
// A flaky disk or network file system returns EIO now and then; one such error must not
// cost a sample. Transient errors (code kUnavailable, see env.h) are retried up to
// max_retries times with exponential backoff, then reported with the attempt count.
// Permanent errors (missing file, permission) are returned at once.
//
// Thread-safety: immutable after Create; Read may be called from many threads.
#ifndef FLOWLOADER_STAGES_READER_FILE_READER_H_
#define FLOWLOADER_STAGES_READER_FILE_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "stages/reader/env.h"

namespace flowloader {

struct FileReaderOptions {
  // Retries after the first failed attempt for transient errors; >= 0. Default 3.
  int max_retries = 3;
  // Wait before the first retry; doubled each retry. >= 0. Default 2 ms.
  absl::Duration initial_backoff = absl::Milliseconds(2);
  // Files larger than this are refused (reason read_error) instead of read; > 0.
  // Default 1 GiB: no training image is that large, a stray disk image may be.
  int64_t max_file_bytes = int64_t{1} << 30;
  // File-system access; nullptr means Env::Default(). Not owned.
  Env* env = nullptr;
};

class FileReader {
 public:
  static absl::StatusOr<std::unique_ptr<FileReader>> Create(const FileReaderOptions& options);

  // Read replaces *contents with the file at `path`. Errors carry a reason tag and name
  // the path.
  absl::Status Read(const std::string& path, std::string* contents) const;
  // Read with a tighter limit: a file over min(max_bytes, max_file_bytes) is refused as
  // one over max_file_bytes is, unread (the read stage's per-worker memory).
  absl::Status Read(const std::string& path, int64_t max_bytes, std::string* contents) const;
  int64_t max_file_bytes() const { return options_.max_file_bytes; }

  // ReadRange replaces *contents with the `length` bytes of `path` at `offset` (a member
  // of a tar shard), with the same retries. Fewer bytes than `length` (the shard was cut
  // or rewritten since it was indexed) is an error with reason truncated.
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) const;
  // ReadRangeWith is ReadRange with `read` (one attempt of the read into *contents)
  // instead of the Env's ReadRange: the same size limit, retries and truncation check
  // (the read stage's member reads past a block cache, StorageEnv::ReadMember).
  absl::Status ReadRangeWith(const std::string& path, int64_t offset, int64_t length,
                             std::string* contents,
                             const std::function<absl::Status()>& read) const;

 private:
  // Retry runs `attempt` until it succeeds, fails permanently or runs out of retries.
  absl::Status Retry(const std::function<absl::Status()>& attempt) const;

  explicit FileReader(const FileReaderOptions& options, Env* env)
      : options_(options), env_(env) {}
  const FileReaderOptions options_;
  Env* const env_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_FILE_READER_H_
