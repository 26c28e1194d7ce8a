// tar_writer.h: writes a tar archive that GNU tar, Python's tarfile and webdataset read.
//
// Members are regular files in POSIX ustar headers (mode 0644, mtime 0, so the same
// members give the same bytes); a name longer than ustar's 100 bytes gets a GNU
// `././@LongLink` record first, as GNU tar writes it. Close writes the two zero blocks
// that end an archive. Used by `flowloader pack` and by tests that build shards. The
// bytes go to an Env's WritableFile: a local file, or an s3:// object uploaded in parts
// as it is written (s3_upload.h); a writer dropped before Close leaves nothing. The
// writer also records the archive's index (tar_index_file.h), which `pack` writes beside
// the shard once it is closed.
//
// Thread-safety: not thread-safe; one writer per archive.
#ifndef FLOWLOADER_STAGES_READER_TAR_WRITER_H_
#define FLOWLOADER_STAGES_READER_TAR_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/reader/env.h"
#include "stages/reader/tar_index_file.h"

namespace flowloader {

class TarWriter {
 public:
  // Create opens local `path` for writing (truncating it).
  static absl::StatusOr<std::unique_ptr<TarWriter>> Create(const std::string& path);
  // Create opens `path` through `env` (not owned; e.g. a StorageEnv for s3://).
  static absl::StatusOr<std::unique_ptr<TarWriter>> Create(Env* env, const std::string& path);

  // Add appends a member named `name` holding `data`.
  absl::Status Add(absl::string_view name, absl::string_view data);
  // Close ends the archive and closes the file; the writer takes no more members.
  absl::Status Close();
  // Abort discards the archive (nothing is left under its path); a no-op after Close.
  absl::Status Abort();

  // bytes is the archive's size so far (headers, data, padding).
  int64_t bytes() const { return bytes_; }
  // index is the members written so far, each small non-image member with its bytes
  // (kIndexPayloadBytes); its bytes / end / tail are set by Close.
  const TarIndexFile& index() const { return index_; }

 private:
  explicit TarWriter(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {}
  absl::Status Write(absl::string_view data);
  absl::Status WriteHeader(absl::string_view name, int64_t size, char type);
  absl::Status Pad(int64_t size);

  std::unique_ptr<WritableFile> file_;  // Null once closed.
  int64_t bytes_ = 0;
  TarIndexFile index_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_TAR_WRITER_H_
