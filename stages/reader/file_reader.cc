#include "stages/reader/file_reader.h"

#include <algorithm>

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
  return Retry([&] { return env_->ReadFile(path, options_.max_file_bytes, contents); });
}

absl::Status FileReader::Read(const std::string& path, int64_t max_bytes,
                              std::string* contents) const {
  const int64_t limit = std::min(max_bytes, options_.max_file_bytes);
  return Retry([&] { return env_->ReadFile(path, limit, contents); });
}

absl::Status FileReader::ReadRange(const std::string& path, int64_t offset, int64_t length,
                                   std::string* contents) const {
  return ReadRangeWith(path, offset, length, contents,
                       [&] { return env_->ReadRange(path, offset, length, contents); });
}

absl::Status FileReader::ReadRangeWith(const std::string& path, int64_t offset, int64_t length,
                                       std::string* contents,
                                       const std::function<absl::Status()>& read) const {
  if (length > options_.max_file_bytes) return TooLarge(path, length, options_.max_file_bytes);
  absl::Status status = Retry(read);
  if (status.ok() && static_cast<int64_t>(contents->size()) < length) {
    return SampleError(absl::StatusCode::kDataLoss, reason::kTruncated,
                       absl::StrCat(path, ": the member at byte ", offset, " ends after ",
                                    contents->size(), " of its ", length,
                                    " bytes (the shard changed since it was indexed)"));
  }
  return status;
}

absl::Status FileReader::Retry(const std::function<absl::Status()>& attempt_once) const {
  absl::Duration backoff = options_.initial_backoff;
  absl::Status status;
  for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
    if (attempt > 0) {
      absl::SleepFor(backoff);
      backoff *= 2;
    }
    status = attempt_once();
    if (!IsTransient(status)) break;
  }
  if (IsTransient(status) && options_.max_retries > 0) {
    return WithContext(status, absl::StrCat("after ", options_.max_retries + 1, " attempts"));
  }
  return status;
}

}  // namespace flowloader
