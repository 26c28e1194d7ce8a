// http_request.h: HttpEnv::Request, one logical read's state shared with libcurl's
// callbacks (internal to http_env.cc and the Envs built on it, s3_env.cc).
//
// Thread-safety: a Request belongs to the one thread running its read.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_HTTP_REQUEST_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_HTTP_REQUEST_H_

#include <curl/curl.h>

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "stages/reader/http_env.h"

namespace flowloader {

// Request is one logical read: a whole GET (offset < 0) or a byte range; or, with a
// method, one write request of an upload (S3Env's multipart upload).
struct HttpEnv::Request {
  // The path read (what errors name): an http(s):// URL, or e.g. s3://bucket/key.
  std::string url;
  // The URL sent, when it differs from `url` (an S3 listing, an s3:// key's endpoint
  // URL); empty = `url`. Set by HttpEnv::PrepareAttempt overrides.
  std::string target;
  int64_t offset = -1;  // -1: the whole resource.
  int64_t length = 0;   // Range length; for a whole GET, the most bytes accepted.
  // Where the body goes: *out, or when `into` is set, into[0, length) (a block cache
  // slot: written in place, never grown or copied again); `into_size` counts its bytes.
  // Read them through BodySize / AppendBody / ClearBody (http_env.cc).
  std::string* out = nullptr;
  char* into = nullptr;
  int64_t into_size = 0;
  // Or, when `run` is set, into the block cache's run of blocks (into_size counts the
  // attempt's bytes): each block cached as it completes; a retry resumes at the first
  // block not completed (ClearBody moves offset and length there).
  internal::BlockCache::Run* run = nullptr;
  // The method: empty = GET; "PUT" or "POST" send `body` (with its Content-Length),
  // "DELETE" none. A 200's body goes to `out` (up to `length` bytes), as a GET's.
  std::string method;
  absl::string_view body;
  // A cleanup request (aborting an upload after Stop or an error) is sent even once the
  // Env is cancelled, with at most 2 retries and a 5 s limit per attempt.
  bool cleanup = false;

  // Per attempt.
  long status = 0;  // NOLINT(runtime/int): curl's type.
  bool range_ignored = false;  // 200 to a range request: slice the body ourselves.
  int64_t skipped = 0;         // Bytes of such a body before the range.
  bool done_early = false;     // Aborted on purpose once the range was collected.
  bool too_long = false;       // More bytes than asked for.
  int64_t content_range_first = -1;  // From Content-Range: bytes FIRST-LAST/TOTAL.
  int64_t content_range_last = -1;
  int64_t content_range_total = -1;  // TOTAL, -1 when absent or "*".
  // A whole GET refused before its body because its Content-Length is over `length`:
  // that length (the object's size, for the TooLarge error); -1 otherwise.
  int64_t whole_size = -1;
  // The start of an error response's body (status >= 300), e.g. S3's <Error> document.
  std::string error_body;
  // The response's ETag header, quotes kept (an uploaded part's, for
  // CompleteMultipartUpload).
  std::string etag;
  // The server's Retry-After (seconds form), zero when it sent none.
  absl::Duration retry_after;
  CURL* curl = nullptr;
  // The socket of the attempt's connection (its handle's), for an early ACK.
  const curl_socket_t* socket = nullptr;
  const HttpEnv* env = nullptr;  // For cancelled().
  // Stall detection: when the byte count last moved.
  absl::Duration stall_timeout;
  int64_t last_bytes = -1;
  absl::Time last_progress;
  bool stalled = false;
  // Low-speed detection: the window's start and the byte count then; the bytes a window
  // must bring (min_bytes_per_second × stall_timeout).
  absl::Time window_start;
  int64_t window_bytes = 0;
  int64_t window_min_bytes = 0;
  bool slow = false;
  bool cancelled = false;
  // Whether the attempt sent a request, and libcurl's result for it (StorageStats).
  bool sent = false;
  CURLcode curl_code = CURLE_OK;
  char curl_error[CURL_ERROR_SIZE] = {};  // libcurl's detail, e.g. why a certificate failed.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_HTTP_REQUEST_H_
