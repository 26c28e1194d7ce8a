// s3_upload.cc: S3Upload, one PUT or a multipart upload (see s3_upload.h).
#include "stages/reader/s3_upload.h"

#include <openssl/evp.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "stages/reader/internal/s3_xml.h"
#include "stages/reader/s3_env.h"

namespace flowloader {

using s3_internal::UriEncode;

namespace {

// MultipartETag is the ETag S3 gives an object completed from parts with `part_etags`
// (quoted hex MD5s): the MD5 of the parts' binary MD5s, "-", the part count, quoted.
// Empty when a part's ETag is not a plain MD5 (SSE-KMS, some stores): nothing to check.
std::string MultipartETag(const std::vector<std::string>& part_etags) {
  std::string digests;
  for (const std::string& quoted : part_etags) {
    const absl::string_view hex = absl::StripPrefix(absl::StripSuffix(quoted, "\""), "\"");
    if (hex.size() != 32) return "";
    for (const char c : hex) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return "";
    }
    digests += absl::HexStringToBytes(hex);
  }
  unsigned char md5[EVP_MAX_MD_SIZE];
  unsigned int md5_size = 0;
  if (EVP_Digest(digests.data(), digests.size(), md5, &md5_size, EVP_md5(), nullptr) != 1) {
    return "";
  }
  return absl::StrCat("\"",
                      absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(md5),
                                                               md5_size)),
                      "-", part_etags.size(), "\"");
}

}  // namespace

S3Upload::S3Upload(S3Env* env, std::string path, int64_t part_bytes)
    : env_(env), path_(std::move(path)), part_bytes_(part_bytes) {}

S3Upload::~S3Upload() { Abort().IgnoreError(); }

absl::Status S3Upload::Append(absl::string_view data) {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, ": upload closed"));
  buffer_.append(data.data(), data.size());
  if (static_cast<int64_t>(buffer_.size()) < part_bytes_) return absl::OkStatus();
  return SendPart();
}

absl::Status S3Upload::Start() {
  std::string answer;
  if (absl::Status s = env_->WriteRequest("POST", path_, "uploads=", "", false, &answer, nullptr);
      !s.ok()) {
    return s;
  }
  upload_id_ = s3_internal::XmlText(answer, "UploadId");
  if (upload_id_.empty()) {
    return absl::InternalError(absl::StrCat(
        path_, ": CreateMultipartUpload answered without an UploadId: \"", answer.substr(0, 120),
        "\""));
  }
  return absl::OkStatus();
}

absl::Status S3Upload::SendPart() {
  if (upload_id_.empty()) {
    if (absl::Status s = Start(); !s.ok()) return Fail(s);
  }
  const int number = parts() + 1;
  // Sorted parameters: curl 7.88 signs the query as written.
  const std::string query =
      absl::StrCat("partNumber=", number, "&uploadId=", UriEncode(upload_id_, false));
  std::string etag;
  if (absl::Status s = env_->WriteRequest("PUT", path_, query, buffer_, false, nullptr, &etag);
      !s.ok()) {
    return Fail(s);
  }
  if (etag.empty()) {
    return Fail(absl::InternalError(
        absl::StrCat(path_, ": part ", number, " was answered without an ETag")));
  }
  etags_.push_back(std::move(etag));
  buffer_.clear();  // Keeps its capacity: the next part reuses it.
  return absl::OkStatus();
}

absl::Status S3Upload::Complete() {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags_.size(); ++i) {
    absl::StrAppend(&body, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>", etags_[i],
                    "</ETag></Part>");
  }
  absl::StrAppend(&body, "</CompleteMultipartUpload>");
  absl::Status s = env_->WriteRequest(
      "POST", path_, absl::StrCat("uploadId=", UriEncode(upload_id_, false)), body, false,
      nullptr, nullptr);
  if (s.ok() || !absl::StrContains(s.message(), " NoSuchUpload")) return s;
  return CheckCompletedObject(s);
}

absl::Status S3Upload::CheckCompletedObject(const absl::Status& no_such_upload) {
  // A retried Complete whose first answer was lost finds no upload where the store
  // forgets finished ones: the object under the key tells whether it was this upload.
  const std::string expected = MultipartETag(etags_);
  if (expected.empty()) return no_such_upload;
  absl::StatusOr<std::string> found = env_->ObjectETag(path_);
  if (found.ok() && absl::EqualsIgnoreCase(*found, expected)) return absl::OkStatus();
  absl::Status explained(
      no_such_upload.code(),
      absl::StrCat(no_such_upload.message(), "; the object there is not this upload's (ETag ",
                   found.ok() ? *found : std::string(found.status().message()),
                   ", expected ", expected, ")"));
  no_such_upload.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    explained.SetPayload(url, payload);  // The reason it is counted under.
  });
  return explained;
}

absl::Status S3Upload::Close() {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, ": upload closed"));
  if (upload_id_.empty()) {  // Small: one PUT of the whole object.
    absl::Status s = env_->WriteRequest("PUT", path_, "", buffer_, false, nullptr, nullptr);
    finished_ = true;
    std::string().swap(buffer_);
    return s;
  }
  if (!buffer_.empty()) {
    if (absl::Status s = SendPart(); !s.ok()) return s;
  }
  if (absl::Status s = Complete(); !s.ok()) return Fail(s);
  finished_ = true;
  return absl::OkStatus();
}

absl::Status S3Upload::Fail(absl::Status error) {
  Abort().IgnoreError();  // The error that made it fail is the one worth reporting.
  return error;
}

absl::Status S3Upload::Abort() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  std::string().swap(buffer_);
  if (upload_id_.empty()) return absl::OkStatus();  // Nothing was sent yet.
  return env_->WriteRequest("DELETE", path_, absl::StrCat("uploadId=", UriEncode(upload_id_, false)),
                            "", /*cleanup=*/true, nullptr, nullptr);
}

}  // namespace flowloader
