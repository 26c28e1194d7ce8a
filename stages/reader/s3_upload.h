// s3_upload.h: S3Upload, an s3:// object written as it is produced (S3Env::NewWritableFile;
// `flowloader pack --out=s3://...` writes its shards through it).
//
// Bytes are gathered up to `part_bytes` (8 MiB by default: the memory an upload holds,
// plus the last Append). An object no larger than that is sent with one PUT at Close.
// Past it, a multipart upload starts (CreateMultipartUpload), each full buffer goes as one
// UploadPart, and Close sends the rest and CompleteMultipartUpload with the parts' ETags.
// Every request is signed and retried as S3Env's reads are (SlowDown, 5xx, resets). A
// Complete whose answer was lost and whose retry finds no upload succeeds when the object
// under the key carries this upload's multipart ETag (the MD5 of the parts' MD5s).
//
// Nothing half written is ever visible under the key: S3 shows a multipart object only once
// completed, and an upload that fails, or is dropped before Close (an error elsewhere,
// Ctrl-C cancelling the Env), is aborted (AbortMultipartUpload, sent even after Cancel, so
// its parts are freed too).
//
// Thread-safety: not thread-safe; one writer per object.
#ifndef FLOWLOADER_STAGES_READER_S3_UPLOAD_H_
#define FLOWLOADER_STAGES_READER_S3_UPLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stages/reader/env.h"

namespace flowloader {

class S3Env;

class S3Upload : public WritableFile {
 public:
  // `env` (not owned) sends the requests; `path` is s3://BUCKET/KEY.
  S3Upload(S3Env* env, std::string path, int64_t part_bytes);
  ~S3Upload() override;

  absl::Status Append(absl::string_view data) override;
  absl::Status Close() override;
  absl::Status Abort() override;

  // parts is how many parts were uploaded (0: no multipart upload, or not yet).
  int parts() const { return static_cast<int>(etags_.size()); }

 private:
  // SendPart uploads buffer_ as the next part (starting the multipart upload first).
  absl::Status SendPart();
  absl::Status Start();
  absl::Status Complete();
  // CheckCompletedObject answers a Complete refused as NoSuchUpload: OK when the object
  // under the key is this upload's (its multipart ETag), else `no_such_upload`, explained.
  absl::Status CheckCompletedObject(const absl::Status& no_such_upload);
  // Fail aborts the upload and returns `error` (what made it fail).
  absl::Status Fail(absl::Status error);

  S3Env* const env_;
  const std::string path_;
  const int64_t part_bytes_;
  std::string buffer_;
  std::string upload_id_;           // Set once the multipart upload has started.
  std::vector<std::string> etags_;  // Of parts 1..N, in order.
  bool finished_ = false;           // Closed or aborted: no more bytes.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_S3_UPLOAD_H_
