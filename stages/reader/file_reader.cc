#include "stages/reader/file_reader.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "stages/core/sample_error.h"

namespace flowloader {

absl::StatusOr<std::unique_ptr<FileReader>> FileReader::Create(
    const FileReaderOptions& options) {
  if (options.max_retries < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_retries must be >= 0, got ", options.max_retries));
  }
  if (options.initial_backoff < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("initial_backoff must be >= 0");
  }
  if (options.max_file_bytes <= 0) {
    return absl::InvalidArgumentError("max_file_bytes must be > 0");
  }
  Env* env = options.env != nullptr ? options.env : Env::Default();
  return std::unique_ptr<FileReader>(new FileReader(options, env));
}

absl::Status FileReader::Read(const std::string& path, std::string* contents) const {
  absl::Duration backoff = options_.initial_backoff;
  absl::Status status;
  for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
    if (attempt > 0) {
      absl::SleepFor(backoff);
      backoff *= 2;
    }
    status = env_->ReadFile(path, options_.max_file_bytes, contents);
    if (!IsTransient(status)) break;
  }
  if (IsTransient(status) && options_.max_retries > 0) {
    return WithContext(status, absl::StrCat("after ", options_.max_retries + 1, " attempts"));
  }
  return status;
}

}  // namespace flowloader
