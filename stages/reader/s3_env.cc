// s3_env.cc: S3Env, s3:// over HttpEnv's machinery (see s3_env.h).
#include "stages/reader/s3_env.h"

#include <curl/curl.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "stages/core/sample_error.h"
#include "stages/reader/internal/http_request.h"
#include "stages/reader/internal/s3_config.h"
#include "stages/reader/internal/s3_xml.h"
#include "stages/reader/s3_upload.h"

namespace flowloader {
namespace {

using s3_internal::UriEncode;

// A listing page is at most 1000 keys of at most 1 KiB each, plus markup.
constexpr int64_t kMaxListBytes = int64_t{16} << 20;

// SplitS3 splits s3://BUCKET/KEY; false when there is no bucket.
bool SplitS3(const std::string& path, std::string* bucket, std::string* key) {
  if (!IsS3Path(path)) return false;
  const std::string rest = path.substr(5);
  const size_t slash = rest.find('/');
  *bucket = rest.substr(0, slash);
  *key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  return !bucket->empty();
}

absl::Status BadPath(const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not s3://BUCKET/KEY (the bucket is missing)"));
}

// S3's part sizes: at least 5 MiB (all but the last part), at most 5 GiB.
constexpr int64_t kMinPartBytes = int64_t{5} << 20;
constexpr int64_t kMaxPartBytes = int64_t{5} << 30;
// The most of an upload request's answer kept (an XML document of a few hundred bytes).
constexpr int64_t kMaxWriteAnswerBytes = int64_t{1} << 20;

// Retries of an S3 request unless HttpOptions::max_retries says otherwise.
constexpr int kS3Retries = 8;
// Retries before the endpoint has answered once (a wrong endpoint fails fast).
constexpr int kFirstContactRetries = 3;

}  // namespace

bool IsS3Path(const std::string& path) { return absl::StartsWithIgnoreCase(path, "s3://"); }

absl::StatusOr<std::unique_ptr<S3Env>> S3Env::Create(Env* base, const HttpOptions& http,
                                                     const S3Options& s3) {
  return CreateWith(base, http, s3, s3_internal::ProcessEnv());
}

absl::StatusOr<std::unique_ptr<S3Env>> S3Env::CreateWith(Env* base, const HttpOptions& http,
                                                         const S3Options& s3,
                                                         const EnvLookup& env) {
  HttpOptions options = http;
  // Many readers meeting one SlowDown must not retry in step; yet every retry waits at
  // least half its backoff, so the default 8 retries span >= 12.75 s: a gateway that
  // restarts (a few seconds) loses no read.
  options.jitter = 0.5;
  if (options.max_retries == HttpOptions::kSchemeRetries) options.max_retries = kS3Retries;
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (s3.upload_part_bytes < kMinPartBytes || s3.upload_part_bytes > kMaxPartBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the s3 upload part size (pack --part_size) must be 5MiB..5GiB (S3's limits), got ", s3.upload_part_bytes,
        " bytes"));
  }
  absl::StatusOr<s3_internal::S3Config> config = s3_internal::ResolveS3Config(s3, env);
  if (!config.ok()) return config.status();
  return std::unique_ptr<S3Env>(
      new S3Env(base != nullptr ? base : Env::Default(), options,
                std::make_unique<const s3_internal::S3Config>(std::move(*config)),
                s3.list_page_keys, s3.upload_part_bytes));
}

S3Env::S3Env(Env* base, const HttpOptions& http,
             std::unique_ptr<const s3_internal::S3Config> config, int list_page_keys,
             int64_t upload_part_bytes)
    : HttpEnv(base, http),
      config_(std::move(config)),
      list_page_keys_(list_page_keys),
      upload_part_bytes_(upload_part_bytes) {}

S3Env::~S3Env() = default;

const std::string& S3Env::credential_source() const { return config_->credential_source; }
const std::string& S3Env::endpoint() const { return config_->endpoint; }
const std::string& S3Env::endpoint_source() const { return config_->endpoint_source; }
const std::string& S3Env::region() const { return config_->region; }
bool S3Env::path_style() const { return config_->path_style; }

std::string S3Env::ObjectUrl(const std::string& bucket, const std::string& key) const {
  const std::string path = UriEncode(key, /*keep_slash=*/true);
  if (config_->path_style) {
    return key.empty() ? absl::StrCat(config_->endpoint, "/", bucket)
                       : absl::StrCat(config_->endpoint, "/", bucket, "/", path);
  }
  const size_t host = config_->endpoint.find("://") + 3;
  return absl::StrCat(config_->endpoint.substr(0, host), bucket, ".",
                      config_->endpoint.substr(host), "/", path);
}

std::string S3Env::Context(const std::string& bucket) const {
  return absl::StrCat(" (bucket ", bucket, ", endpoint ", config_->endpoint, ", ",
                      config_->path_style ? "path" : "virtual", "-style, credentials from ",
                      config_->credential_source, ")");
}

std::string S3Env::ErrorContext(const Request& r) const {
  std::string bucket, key;
  SplitS3(r.url, &bucket, &key);
  return Context(bucket);
}

void S3Env::PrepareAttempt(Request& r, CURL* curl, curl_slist** headers) const {
  if (r.target.empty()) {
    std::string bucket, key;
    if (SplitS3(r.url, &bucket, &key)) r.target = ObjectUrl(bucket, key);
  }
  // curl 7.88 signs without sending the payload hash; S3 (and radosgw) want it.
  *headers = curl_slist_append(*headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (config_->anonymous) return;
  const std::string sigv4 = absl::StrCat("aws:amz:", config_->region, ":s3");
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());  // libcurl copies strings.
  curl_easy_setopt(curl, CURLOPT_USERNAME, config_->access_key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, config_->secret_access_key.c_str());
  if (!config_->session_token.empty()) {
    *headers = curl_slist_append(
        *headers, absl::StrCat("x-amz-security-token: ", config_->session_token).c_str());
  }
}

absl::Status S3Env::ResponseError(const Request& r) const {
  std::string bucket, key;
  SplitS3(r.url, &bucket, &key);
  const std::string code = s3_internal::ErrorCode(r.error_body);
  const std::string message = s3_internal::ErrorMessage(r.error_body);
  const std::string what = absl::StrCat(r.url, ": HTTP ", r.status, code.empty() ? "" : " ", code,
                                        message.empty() ? "" : ": ", message);
  const std::string context = Context(bucket);
  // Permanent codes (kInternal, kNotFound, kPermissionDenied): the retries are done here.
  if (code == "NoSuchKey" || (r.status == 404 && code.empty())) {
    return SampleError(absl::StatusCode::kNotFound, reason::kNotFound,
                       absl::StrCat(what, " (no such key)", context));
  }
  if (code == "NoSuchBucket") {
    return SampleError(absl::StatusCode::kNotFound, reason::kHttp4xx,
                       absl::StrCat(what, " (the bucket does not exist there)", context));
  }
  if (code == "SignatureDoesNotMatch" || code == "RequestTimeTooSkewed") {
    return SampleError(
        absl::StatusCode::kPermissionDenied, reason::kPermissionDenied,
        absl::StrCat(what, " (the usual causes: a wrong secret key for access key ",
                     config_->access_key_id, ", or this machine's clock off by minutes)", context));
  }
  if (code == "InvalidAccessKeyId") {
    return SampleError(absl::StatusCode::kPermissionDenied, reason::kPermissionDenied,
                       absl::StrCat(what, " (the store does not know access key ",
                                    config_->access_key_id, ")", context));
  }
  if (code == "AccessDenied" || r.status == 403) {
    return SampleError(absl::StatusCode::kPermissionDenied, reason::kPermissionDenied,
                       absl::StrCat(what, r.method.empty() ? " (these credentials may not read it)"
                                                           : " (these credentials may not write it)",
                                    context));
  }
  if (code == "RequestTimeout") {  // A 400 that S3 asks to retry.
    return SampleError(absl::StatusCode::kInternal, reason::kTimeout,
                       absl::StrCat(what, context));
  }
  if (r.status >= 500) {  // SlowDown, InternalError, ServiceUnavailable: retried.
    return SampleError(absl::StatusCode::kInternal, reason::kHttp5xx, absl::StrCat(what, context));
  }
  return SampleError(absl::StatusCode::kInternal, reason::kHttp4xx, absl::StrCat(what, context));
}

absl::Status S3Env::ReadListPage(const std::string& bucket, const std::string& prefix,
                             const std::string& delimiter, int max_keys,
                             const std::string& token, s3_internal::ListPage* page) {
  // Query parameters sorted by name: curl 7.88 signs the query as written, and Signature
  // V4's canonical query is sorted.
  std::string query;
  if (!token.empty()) absl::StrAppend(&query, "continuation-token=", UriEncode(token, false), "&");
  if (!delimiter.empty()) absl::StrAppend(&query, "delimiter=", UriEncode(delimiter, false), "&");
  absl::StrAppend(&query, "list-type=2&max-keys=", max_keys, "&prefix=", UriEncode(prefix, false));
  std::string body;
  Request r;
  r.url = absl::StrCat("s3://", bucket, "/", prefix);
  r.target = absl::StrCat(ObjectUrl(bucket, ""), "?", query);
  r.length = kMaxListBytes;
  r.out = &body;
  list_pages_.fetch_add(1);
  if (absl::Status s = Fetch(r); !s.ok()) return s;
  if (!s3_internal::ParseListPage(body, page)) {
    return SampleError(absl::StatusCode::kInternal, reason::kHttpBadResponse,
                       absl::StrCat(r.url, ": the listing's answer is not a ListBucketResult: \"",
                                    body.substr(0, 120), "\"", Context(bucket)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> S3Env::ListKeys(const std::string& bucket,
                                                         const std::string& prefix) {
  std::vector<std::string> keys;
  std::string token;
  do {
    s3_internal::ListPage page;
    if (absl::Status s = ReadListPage(bucket, prefix, "", list_page_keys_, token, &page); !s.ok()) {
      return s;
    }
    for (auto& object : page.objects) keys.push_back(std::move(object.key));
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  return keys;
}

absl::StatusOr<std::vector<DirEntry>> S3Env::ListDirectory(const std::string& path) {
  if (!Handles(path)) return base_env()->ListDirectory(path);
  std::string bucket, key;
  if (!SplitS3(path, &bucket, &key)) return BadPath(path);
  while (absl::EndsWith(key, "/")) key.pop_back();
  const std::string prefix = key.empty() ? "" : key + "/";
  std::vector<DirEntry> entries;
  std::string token;
  do {
    s3_internal::ListPage page;
    if (absl::Status s = ReadListPage(bucket, prefix, "/", list_page_keys_, token, &page); !s.ok()) {
      return s;
    }
    for (const auto& object : page.objects) {
      // A "directory marker" (the prefix itself, made by consoles) is no entry.
      if (object.key.size() > prefix.size()) {
        entries.push_back(DirEntry{object.key.substr(prefix.size()), false});
      }
    }
    for (const std::string& common : page.common_prefixes) {
      std::string name = common.substr(std::min(prefix.size(), common.size()));
      while (absl::EndsWith(name, "/")) name.pop_back();
      if (!name.empty()) entries.push_back(DirEntry{std::move(name), true});
    }
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  if (entries.empty()) {
    return SampleError(absl::StatusCode::kNotFound, reason::kNotFound,
                       absl::StrCat(path, ": no key under prefix '", prefix, "'", Context(bucket)));
  }
  return entries;
}

absl::StatusOr<bool> S3Env::IsDirectory(const std::string& path) {
  if (!Handles(path)) return base_env()->IsDirectory(path);
  std::string bucket, key;
  if (!SplitS3(path, &bucket, &key)) return BadPath(path);
  while (absl::EndsWith(key, "/")) key.pop_back();
  const std::string prefix = key.empty() ? "" : key + "/";
  s3_internal::ListPage page;
  if (absl::Status s = ReadListPage(bucket, prefix, "/", 1, "", &page); !s.ok()) return s;
  if (!page.objects.empty() || !page.common_prefixes.empty()) return true;
  if (key.empty()) {
    return SampleError(absl::StatusCode::kNotFound, reason::kNotFound,
                       absl::StrCat(path, ": the bucket is empty", Context(bucket)));
  }
  // No key below it: an object of that name, or nothing.
  std::string probe;
  absl::Status object = ReadRange(path, 0, 1, &probe);
  if (object.ok()) return false;
  if (ErrorReason(object) == reason::kNotFound) {
    return SampleError(absl::StatusCode::kNotFound, reason::kNotFound,
                       absl::StrCat(path, ": no such key, and no key under prefix '", prefix,
                                    "'", Context(bucket)));
  }
  return object;
}

absl::StatusOr<std::string> S3Env::CanonicalPath(const std::string& path) {
  if (!Handles(path)) return base_env()->CanonicalPath(path);
  std::string canonical = path;
  while (absl::EndsWith(canonical, "/") && canonical.size() > 5) canonical.pop_back();
  return canonical;
}

absl::StatusOr<std::unique_ptr<WritableFile>> S3Env::NewWritableFile(const std::string& path) {
  if (!Handles(path)) return base_env()->NewWritableFile(path);
  std::string bucket, key;
  if (!SplitS3(path, &bucket, &key) || key.empty() || absl::EndsWith(key, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not s3://BUCKET/KEY (an object to write needs a key)"));
  }
  return std::unique_ptr<WritableFile>(new S3Upload(this, path, upload_part_bytes_));
}

absl::Status S3Env::WriteRequest(const std::string& method, const std::string& path,
                                 const std::string& query, absl::string_view body, bool cleanup,
                                 std::string* response, std::string* etag) {
  std::string bucket, key;
  if (!SplitS3(path, &bucket, &key)) return BadPath(path);
  std::string answer;
  Request r;
  r.url = path;
  r.target = query.empty() ? ObjectUrl(bucket, key) : absl::StrCat(ObjectUrl(bucket, key), "?", query);
  r.method = method;
  r.body = body;
  r.cleanup = cleanup;
  r.length = kMaxWriteAnswerBytes;
  r.out = &answer;
  if (absl::Status s = Fetch(r); !s.ok()) return s;
  // CompleteMultipartUpload may answer 200 with an <Error> document (S3's documented
  // quirk): that is a failure.
  if (const std::string code = s3_internal::ErrorCode(answer); !code.empty()) {
    return SampleError(absl::StatusCode::kInternal, reason::kHttp5xx,
                       absl::StrCat(path, ": ", method, " answered 200 with error ", code, ": ",
                                    s3_internal::ErrorMessage(answer), Context(bucket)));
  }
  if (response != nullptr) *response = std::move(answer);
  if (etag != nullptr) *etag = r.etag;
  return absl::OkStatus();
}

absl::StatusOr<std::string> S3Env::ObjectETag(const std::string& path) {
  std::string bucket, key;
  if (!SplitS3(path, &bucket, &key)) return BadPath(path);
  std::string first_byte;
  Request r;
  r.url = path;
  r.offset = 0;
  r.length = 1;
  r.out = &first_byte;
  if (absl::Status s = Fetch(r); !s.ok()) return s;
  return r.etag;
}

int S3Env::RetriesFor(const Request& r) const {
  const int retries = HttpEnv::RetriesFor(r);
  return answered() ? retries : std::min(retries, kFirstContactRetries);
}

}  // namespace flowloader
