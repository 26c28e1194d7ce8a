#include "stages/reader/http_env.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "stages/core/sample_error.h"
#include "stages/reader/internal/http_request.h"

namespace flowloader {

namespace {

// The block read-ahead fetches up to this many bytes of consecutive blocks with one
// request (a run; BlockCache::Run caches each block as it completes). A shuffled epoch
// needs nearly every block of a shard early, so the blocks after the one asked for are
// wanted soon too. Measured (s3_bench.py's shard rows, 110 blocks of 1 MiB an epoch):
// runs of 4 MiB cut the gateway's and the 20 ms proxy's CPU an epoch from 0.17 to 0.13 s
// (direct) and 0.25 to 0.21 s (proxy) with 44 block requests instead of 110, but radosgw
// reads a range's whole 4 MiB RADOS chunks before its first byte (time to first byte on
// loopback: 1 and 2 MiB ranges ~2 ms, 4 MiB ~4 ms), and the workers waited for blocks
// twice as long from the gateway (read busy 0.25 against 0.11 s an epoch); runs of 8 MiB
// were slower still through the proxy, whose relay moves each connection's bytes at
// ~150-250 MB/s here. 2 MiB: the first byte as early as a block alone, half the requests.
constexpr int64_t kRunBytes = int64_t{2} << 20;

// Error bodies are kept up to this many bytes (an S3 <Error> document is a few hundred).
constexpr size_t kErrorBodyBytes = 16384;

// BodySize, AppendBody and ClearBody read and write a request's body wherever it goes
// (Request::out, or the fixed buffer Request::into).
int64_t BodySize(const HttpEnv::Request& r) {
  return r.into != nullptr || r.run != nullptr ? r.into_size : static_cast<int64_t>(r.out->size());
}

void AppendBody(HttpEnv::Request* r, const char* data, size_t n) {
  if (r->run != nullptr) {  // Straight into the blocks' slots, as with `into`.
    r->run->Write(data, n);
    r->into_size += static_cast<int64_t>(n);
    return;
  }
  if (r->into == nullptr) {
    r->out->append(data, n);
    return;
  }
  // WriteBody never passes more than length - BodySize bytes: the buffer's room.
  std::memcpy(r->into + r->into_size, data, n);
  r->into_size += static_cast<int64_t>(n);
}

void ClearBody(HttpEnv::Request* r) {
  if (r->run != nullptr) {
    // A new attempt asks for the blocks the run has not completed (none: length 0).
    r->run->Rewind();
    r->offset = r->run->resume_offset();
    r->length = r->run->remaining_bytes();
    r->into_size = 0;
  } else if (r->into != nullptr) {
    r->into_size = 0;
  } else {
    r->out->clear();
  }
}

// ReserveBody sizes r->out once, before the first byte of the body, for the body's
// Content-Length (at most `room`, what was asked for). Growing the string chunk by chunk
// instead reallocated and copied it ~log2(size / 256 KiB) times: perf on a shard run
// from radosgw (1 MiB index windows and blocks) put 29% of the client's CPU in those
// appends and their page faults, against 8% for the one copy left.
void ReserveBody(HttpEnv::Request* r, int64_t room) {
  if (r->into != nullptr || r->run != nullptr) return;  // A fixed buffer of `length` bytes already.
  curl_off_t length = -1;
  if (curl_easy_getinfo(r->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) != CURLE_OK ||
      length <= 0) {
    return;
  }
  r->out->reserve(static_cast<size_t>(std::min<int64_t>(length, room)));
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<HttpEnv::Request*>(user);
  absl::string_view chunk(data, size * count);
  if (r->status == 0) curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->status);
  if (r->status >= 300) {  // An error page: its start is kept (an S3 error's <Code>).
    const size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, r->error_body.size());
    r->error_body.append(chunk.data(), std::min(room, chunk.size()));
    return chunk.size();
  }
  if (r->offset >= 0 && r->status == 200) {
    // The server ignored Range: skip to the range, keep `length` bytes, then stop.
    r->range_ignored = true;
    const int64_t skip = std::min<int64_t>(r->offset - r->skipped, chunk.size());
    r->skipped += skip;
    chunk.remove_prefix(static_cast<size_t>(skip));
  }
  const int64_t room = r->length - BodySize(*r);
  if (BodySize(*r) == 0 && r->offset < 0 && r->status == 200 && r->run == nullptr &&
      r->into == nullptr) {
    // A whole GET whose Content-Length (or Content-Range total) is over what was asked
    // for: refused with its size before a byte of it is kept (it read up to the limit and
    // said only "limit + 1 bytes").
    curl_off_t length = -1;
    if (curl_easy_getinfo(r->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) != CURLE_OK) {
      length = -1;
    }
    const int64_t size = std::max<int64_t>(length, r->content_range_total);
    if (size > r->length) {
      r->whole_size = size;
      r->too_long = true;
      return 0;  // Abort the transfer.
    }
  }
  if (BodySize(*r) == 0) ReserveBody(r, room);
  if (static_cast<int64_t>(chunk.size()) > room) {
    AppendBody(r, chunk.data(), static_cast<size_t>(std::max<int64_t>(room, 0)));
    if (r->range_ignored) {
      r->done_early = true;
    } else {
      r->too_long = true;
    }
    return 0;  // Abort the transfer.
  }
  AppendBody(r, chunk.data(), chunk.size());
  return size * count;
}

// AckNow sends the ACK the kernel is holding back for the bytes just read (TCP_QUICKACK
// sends a pending delayed ACK at once). A server that writes its headers and its body in
// two writes with Nagle on (radosgw does) sends the body only once the headers are
// ACKed: without this, every response waits out the 40 ms delayed-ACK timer.
void AckNow(const curl_socket_t* socket) {
  if (socket == nullptr || *socket == CURL_SOCKET_BAD) return;
  const int on = 1;
  setsockopt(*socket, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof(on));
}

// RecordSocket keeps the socket of each new connection in `clientp` (the handle's), for
// AckNow; libcurl's CURLINFO_ACTIVESOCKET is only set once a transfer has ended.
int RecordSocket(void* clientp, curl_socket_t fd, curlsocktype) {
  *static_cast<curl_socket_t*>(clientp) = fd;
  return CURL_SOCKOPT_OK;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<HttpEnv::Request*>(user);
  absl::string_view line(data, size * count);
  if (line == "\r\n" || line == "\n") AckNow(r->socket);  // The end of the headers.
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    int seconds = 0;  // The delta-seconds form (S3 and most servers); a date is ignored.
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(12)), &seconds) && seconds >= 0) {
      r->retry_after = absl::Seconds(seconds);
    }
  }
  if (absl::StartsWithIgnoreCase(line, "etag:")) {
    r->etag = std::string(absl::StripAsciiWhitespace(line.substr(5)));
  }
  if (absl::StartsWithIgnoreCase(line, "content-range:")) {
    line.remove_prefix(14);
    line = absl::StripAsciiWhitespace(line);
    long long first = -1;  // NOLINT(runtime/int): sscanf's type.
    long long last = -1;   // NOLINT(runtime/int)
    long long total = -1;  // NOLINT(runtime/int)
    const int fields =
        absl::StartsWith(line, "bytes ")
            ? std::sscanf(std::string(line.substr(6)).c_str(), "%lld-%lld/%lld", &first, &last,
                          &total)
            : 0;
    if (fields >= 2) {
      r->content_range_first = first;
      r->content_range_last = last;
      r->content_range_total = fields == 3 && total >= 0 ? total : -1;
    }
  }
  return size * count;
}

// Progress aborts a transfer that was cancelled, received no byte for stall_timeout, or
// fewer than window_min_bytes in a stall_timeout window (a drip). Perform runs libcurl at
// least every 100 ms, and libcurl calls this each time, so each limit is noticed within
// about 100 ms.
int Progress(void* user, curl_off_t, curl_off_t now_down, curl_off_t, curl_off_t now_up) {
  auto* r = static_cast<HttpEnv::Request*>(user);
  if (r->env->CancelledFor(*r)) {
    r->cancelled = true;
    return 1;  // Abort: CURLE_ABORTED_BY_CALLBACK.
  }
  const absl::Time now = absl::Now();
  const int64_t moved = static_cast<int64_t>(now_down + now_up);
  if (now - r->window_start >= r->stall_timeout) {
    if (moved - r->window_bytes < r->window_min_bytes) {
      r->slow = true;
      return 1;
    }
    r->window_start = now;
    r->window_bytes = moved;
  }
  if (moved != r->last_bytes) {
    r->last_bytes = moved;
    r->last_progress = now;
    return 0;
  }
  if (now - r->last_progress < r->stall_timeout) return 0;
  r->stalled = true;
  return 1;
}

// Perform runs `easy` on its own `multi` handle to the end, polling at most 100 ms at a
// time so a cancel is seen within that whatever the network does (curl_easy_perform
// waits up to a second between progress calls). The multi handle's connection cache is
// what keeps connections alive between requests.
CURLcode Perform(CURLM* multi, CURL* easy, HttpEnv::Request& r) {
  if (curl_multi_add_handle(multi, easy) != CURLM_OK) return CURLE_FAILED_INIT;
  CURLcode rc = CURLE_OK;
  int running = 1;
  while (true) {
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      rc = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy) rc = msg->data.result;
      }
      break;
    }
    if (r.env->CancelledFor(r)) {  // Between progress calls (e.g. while resolving).
      r.cancelled = true;
      rc = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  curl_multi_remove_handle(multi, easy);
  return rc;
}

absl::Status HttpError(absl::string_view reason, const std::string& url,
                       absl::string_view what) {
  // Permanent codes: the retries are done here, FileReader must not repeat them.
  const absl::StatusCode code =
      reason == reason::kHttp404 ? absl::StatusCode::kNotFound : absl::StatusCode::kInternal;
  return SampleError(code, reason, absl::StrCat(url, ": ", what));
}

bool Retryable(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kCancelled) return false;
  const std::string r = ErrorReason(s);
  return r == reason::kHttp5xx || r == reason::kTimeout || r == reason::kConnectionError ||
         r == reason::kHttpPartial;
}

// IsTlsFailure: the certificate did not verify, or the CA file was unusable. Not a
// handshake cut short (CURLE_SSL_CONNECT_ERROR), which may be transient.
bool IsTlsFailure(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
         rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR ||
         rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH || rc == CURLE_SSL_INVALIDCERTSTATUS;
}

// ReadBundle reads up to 16 MiB of the CA bundle `path` (a real one is far smaller; the
// bound keeps a wrong path such as /dev/zero from costing more); returns 0 or the errno.
int ReadBundle(const std::string& path, std::string* text) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return errno;
  char chunk[1 << 16];
  size_t got = 0;
  while (text->size() < (16u << 20) && (got = std::fread(chunk, 1, sizeof(chunk), f)) > 0) {
    text->append(chunk, got);
  }
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  return error;
}

// CheckRange refuses a range no read could mean.
absl::Status CheckRange(const std::string& path, int64_t offset, int64_t length) {
  if (offset >= 0 && length >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": bad range ", offset, "+", length));
}

// A cleanup request's limit per attempt (Request::cleanup): Ctrl-C must end soon.
constexpr absl::Duration kCleanupTimeout = absl::Seconds(5);

// SetMethod makes `curl` send r.method, with r.body as the body of a PUT or POST (not
// copied: r outlives the attempt).
void SetMethod(const HttpEnv::Request& r, CURL* curl, curl_slist** headers) {
  if (r.method == "PUT" || r.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
    *headers = curl_slist_append(*headers, "Content-Type: application/octet-stream");
  }
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
}

// ErrorBodyCode is the <Code> of an S3-style error document in `body` when it is a short
// word (SlowDown, NoSuchKey), else "": a label must stay in a small alphabet.
std::string ErrorBodyCode(const std::string& body) {
  const size_t open = body.find("<Code>");
  if (open == std::string::npos) return "";
  const size_t start = open + 6;
  const size_t end = body.find("</Code>", start);
  if (end == std::string::npos || end == start || end - start > 40) return "";
  const std::string code = body.substr(start, end - start);
  for (const char c : code) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) return "";
  }
  return code;
}

// AttemptErrorCode is the metrics' code of a failed attempt: the server's S3 code or
// HTTP status, else what the transport saw.
std::string AttemptErrorCode(const HttpEnv::Request& r, const absl::Status& status) {
  if (r.cancelled || status.code() == absl::StatusCode::kCancelled) return "cancelled";
  if (r.curl_code == CURLE_OK && r.status >= 400) {
    const std::string code = ErrorBodyCode(r.error_body);
    return code.empty() ? absl::StrCat("http_", r.status) : code;
  }
  switch (r.curl_code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_ABORTED_BY_CALLBACK:  // A stall or a drip (Progress).
      return "timeout";
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      return "connection_reset";
    case CURLE_GOT_NOTHING:
      return "connection_closed";
    case CURLE_COULDNT_CONNECT:
      return "connection_refused";
    case CURLE_COULDNT_RESOLVE_HOST:
      return "dns";
    case CURLE_PARTIAL_FILE:
      return "truncated_body";
    default:
      break;
  }
  if (IsTlsFailure(r.curl_code)) return "tls";
  const std::string reason = ErrorReason(status);  // http_bad_response, ...
  return reason.empty() ? "other" : reason;
}

long Millis(absl::Duration d) {  // NOLINT(runtime/int): curl's type.
  return static_cast<long>(absl::ToInt64Milliseconds(d));  // NOLINT(runtime/int)
}

}  // namespace

bool IsUrl(const std::string& path) {
  return absl::StartsWithIgnoreCase(path, "http://") ||
         absl::StartsWithIgnoreCase(path, "https://");
}

absl::Status CheckCaFile(const std::string& ca_file) {
  if (ca_file.empty()) return absl::OkStatus();
  std::string text;
  if (const int error = ReadBundle(ca_file, &text); error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("http_ca_file '", ca_file, "' cannot be read: ", std::strerror(error)));
  }
  if (!absl::StrContains(text, "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http_ca_file '", ca_file, "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpEnv>> HttpEnv::Create(Env* base,
                                                         const HttpOptions& options) {
  HttpOptions resolved = options;
  if (resolved.max_retries == HttpOptions::kSchemeRetries) resolved.max_retries = 3;
  if (absl::Status s = CheckOptions(resolved); !s.ok()) return s;
  return std::unique_ptr<HttpEnv>(new HttpEnv(base != nullptr ? base : Env::Default(), resolved));
}

absl::Status HttpEnv::CheckOptions(const HttpOptions& options) {
  if (absl::Status s = CheckCaFile(options.ca_file); !s.ok()) return s;
  if (options.connect_timeout <= absl::ZeroDuration() ||
      options.request_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("http connect_timeout and request_timeout must be > 0");
  }
  if (options.stall_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http stall_timeout must be > 0, got ", absl::FormatDuration(options.stall_timeout)));
  }
  if (options.min_bytes_per_second < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http min_bytes_per_second must be >= 0, got ", options.min_bytes_per_second));
  }
  if (options.max_retries < 0 || options.initial_backoff < absl::ZeroDuration() ||
      options.failure_limit < 1 || options.max_backoff < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "http max_retries, initial_backoff and max_backoff must be >= 0, failure_limit >= 1");
  }
  if (!(options.jitter >= 0 && options.jitter <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("http jitter must be in [0, 1], got ", options.jitter));
  }
  if (options.cache_bytes < 0 || options.block_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http cache_bytes must be >= 0 and block_bytes > 0, got cache_bytes=",
        options.cache_bytes, " block_bytes=", options.block_bytes));
  }
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) {
    return absl::InternalError(absl::StrCat("libcurl init failed: ", curl_easy_strerror(init)));
  }
  return absl::OkStatus();
}

struct HttpEnv::Handle {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_socket_t socket = CURL_SOCKET_BAD;  // Of its connection (RecordSocket).
  ~Handle() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }
};

HttpEnv::~HttpEnv() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Handle* h : idle_handles_) delete h;
}

HttpEnv::Handle* HttpEnv::AcquireHandle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
    if (!idle_handles_.empty()) {
      Handle* h = idle_handles_.back();
      idle_handles_.pop_back();
      return h;
    }
  }
  auto h = std::make_unique<Handle>();
  h->easy = curl_easy_init();
  h->multi = curl_multi_init();
  return h->easy != nullptr && h->multi != nullptr ? h.release() : nullptr;
}

bool HttpEnv::SleepUnlessCancelled(absl::Duration d) const {
  const absl::Time end = absl::Now() + d;
  for (absl::Time now = absl::Now(); now < end && !cancelled(); now = absl::Now()) {
    absl::SleepFor(std::min(end - now, absl::Milliseconds(20)));
  }
  return !cancelled();
}

void HttpEnv::ReleaseHandle(Handle* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_handles_.push_back(handle);
}

int64_t HttpEnv::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

bool HttpEnv::Failing(const std::string& url) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = consecutive_failures_.find(url);
  return it != consecutive_failures_.end() && it->second >= options_.failure_limit;
}

bool HttpEnv::RecordResult(const std::string& url, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ok) {
    consecutive_failures_.erase(url);
    return false;
  }
  return ++consecutive_failures_[url] >= options_.failure_limit;
}

bool HttpEnv::CancelledFor(const Request& r) const { return !r.cleanup && cancelled(); }

absl::Status HttpEnv::Attempt(Request& r) {
  r.sent = false;
  if (CancelledFor(r)) return absl::CancelledError(absl::StrCat(r.url, ": read cancelled (Stop)"));
  Handle* handle = AcquireHandle();
  if (handle == nullptr) return HttpError(reason::kConnectionError, r.url, "curl_easy_init failed");
  CURL* curl = handle->easy;
  // reset keeps the handle's live connections: that is the connection reuse.
  curl_easy_reset(curl);
  ClearBody(&r);
  r.status = 0;
  r.range_ignored = r.done_early = r.too_long = false;
  r.skipped = 0;
  r.content_range_first = r.content_range_last = r.content_range_total = -1;
  r.whole_size = -1;
  r.error_body.clear();
  r.etag.clear();
  r.retry_after = absl::ZeroDuration();
  r.curl = curl;
  const std::string range =
      r.offset >= 0 ? absl::StrCat(r.offset, "-", r.offset + r.length - 1) : std::string();
  // An Env built on this one (S3) sets the URL sent, its headers and its signing here.
  curl_slist* headers = nullptr;
  PrepareAttempt(r, curl, &headers);
  curl_easy_setopt(curl, CURLOPT_URL, r.target.empty() ? r.url.c_str() : r.target.c_str());
  if (!r.method.empty()) SetMethod(r, curl, &headers);
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // A 256 KiB receive buffer takes a typical member in one or two reads and callbacks
  // (curl's default 16 KiB costs a syscall and a callback per 16 KiB).
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L * 1024);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  // Verification is always on (libcurl's default, set here so no reset or build can drop
  // it); ca_file replaces the system's CAs, for servers signed by a private CA.
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  r.curl_error[0] = '\0';
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, r.curl_error);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, Millis(options_.connect_timeout));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   Millis(r.cleanup ? std::min(options_.request_timeout, kCleanupTimeout)
                                    : options_.request_timeout));
  r.env = this;
  r.stall_timeout = options_.stall_timeout;
  r.last_bytes = -1;
  r.last_progress = r.window_start = absl::Now();
  r.window_bytes = 0;
  r.window_min_bytes = static_cast<int64_t>(static_cast<double>(options_.min_bytes_per_second) *
                                            absl::ToDoubleSeconds(options_.stall_timeout));
  r.stalled = r.slow = r.cancelled = false;
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &r);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(curl, CURLOPT_SOCKOPTFUNCTION, RecordSocket);
  curl_easy_setopt(curl, CURLOPT_SOCKOPTDATA, &handle->socket);
  r.socket = &handle->socket;
  if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = r.length == 0 ? CURLE_OK : Perform(handle->multi, curl, r);
  r.sent = r.length != 0;
  r.curl_code = rc;
  if (r.status == 0) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.status > 0) answered_.store(true, std::memory_order_relaxed);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // r dies before the handle does.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  ReleaseHandle(handle);
  if (r.length == 0) return absl::OkStatus();
  if (r.cancelled) return absl::CancelledError(absl::StrCat(r.url, ": read cancelled (Stop)"));
  // A transport error, with where the request went (an S3 endpoint and credentials).
  auto error = [this, &r](absl::string_view reason, const std::string& url,
                          absl::string_view what) {
    return HttpError(reason, url, absl::StrCat(what, ErrorContext(r)));
  };

  if (rc == CURLE_WRITE_ERROR && r.done_early) return absl::OkStatus();
  if (r.too_long) {
    return error(reason::kHttpBadResponse, r.url,
                     absl::StrCat("the response is longer than the ", r.length,
                                  " bytes asked for (range ", range, ")"));
  }
  switch (rc) {
    case CURLE_OK:
      break;
    case CURLE_OPERATION_TIMEDOUT:
      return error(reason::kTimeout, r.url,
                       absl::StrCat(curl_easy_strerror(rc), " (http connect_timeout ",
                                    absl::FormatDuration(options_.connect_timeout),
                                    ", request_timeout ",
                                    absl::FormatDuration(options_.request_timeout), ")"));
    case CURLE_ABORTED_BY_CALLBACK:
      if (r.slow) {
        return error(
            reason::kTimeout, r.url,
            absl::StrCat("under http min_bytes_per_second ", options_.min_bytes_per_second,
                         " for ", absl::FormatDuration(options_.stall_timeout),
                         " (the stall_timeout window), after ", BodySize(r), " bytes"));
      }
      return error(reason::kTimeout, r.url,
                       absl::StrCat("no byte received for ",
                                    absl::FormatDuration(options_.stall_timeout),
                                    " (the stall_timeout), after ", BodySize(r), " bytes"));
    case CURLE_PARTIAL_FILE:
      return error(reason::kHttpPartial, r.url,
                       absl::StrCat("the body ended after ", BodySize(r),
                                    " bytes, before its Content-Length"));
    default:
      if (IsTlsFailure(rc)) {
        return error(reason::kTls, r.url,
                         r.curl_error[0] != '\0' ? r.curl_error : curl_easy_strerror(rc));
      }
      return error(reason::kConnectionError, r.url, curl_easy_strerror(rc));
  }
  if (r.status == 416 && r.offset >= 0) {
    ClearBody(&r);  // The range starts at or past the end: nothing there.
    return absl::OkStatus();
  }
  if (r.status >= 400) return ResponseError(r);
  // 204: an upload's DELETE (AbortMultipartUpload) answers No Content.
  if (r.status != 200 && r.status != 206 && !(r.status == 204 && !r.method.empty())) {
    return error(reason::kHttpBadResponse, r.url, absl::StrCat("HTTP ", r.status));
  }
  if (r.status == 206 && r.content_range_first != r.offset) {
    return error(reason::kHttpBadResponse, r.url,
                     absl::StrCat("asked for bytes ", range, ", got a range starting at ",
                                  r.content_range_first));
  }
  const int64_t promised = r.content_range_last - r.content_range_first + 1;
  if (r.status == 206 && BodySize(r) != promised) {
    // Content-Length and Content-Range disagree: the server lied about one of them.
    return error(reason::kHttpPartial, r.url,
                     absl::StrCat("Content-Range promised ", promised, " bytes, the body has ",
                                  BodySize(r)));
  }
  return absl::OkStatus();
}

void HttpEnv::PrepareAttempt(Request&, CURL*, curl_slist**) const {}

std::string HttpEnv::ErrorContext(const Request&) const { return ""; }

absl::Status HttpEnv::ResponseError(const Request& r) const {
  if (r.status == 404) return HttpError(reason::kHttp404, r.url, "HTTP 404 Not Found");
  if (r.status >= 500) return HttpError(reason::kHttp5xx, r.url, absl::StrCat("HTTP ", r.status));
  return HttpError(reason::kHttp4xx, r.url, absl::StrCat("HTTP ", r.status));
}

absl::Duration HttpEnv::RetryWait(absl::Duration backoff, absl::Duration retry_after) const {
  absl::Duration wait = backoff;
  if (options_.jitter > 0) {
    // Jitter (AWS's "Exponential Backoff and Jitter"): uniform in [backoff × (1 - jitter),
    // backoff], so many readers that failed together do not come back together.
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_real_distribution<double> share(0.0, 1.0);
    wait = backoff * (1.0 - options_.jitter * share(rng));
  }
  // The server said when to come back: not earlier, but never past max_backoff.
  return std::min(std::max(wait, retry_after), options_.max_backoff);
}

absl::Status HttpEnv::Fetch(Request& r) {
  // A URL that keeps failing gets one attempt per read: its samples fail fast.
  int retries = Failing(r.url) ? 0 : RetriesFor(r);
  if (r.cleanup) retries = std::min(retries, 2);
  absl::Duration backoff = options_.initial_backoff;
  absl::Status status;
  for (int attempt = 0; attempt <= retries; ++attempt) {
    if (attempt > 0) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      if (!SleepUnlessCancelled(RetryWait(backoff, r.retry_after)) && !r.cleanup) break;
      backoff *= 2;
    }
    const absl::Time start = absl::Now();
    status = Attempt(r);
    if (r.sent) CountAttempt(r, status, absl::Now() - start, attempt > 0);
    if (status.ok() || !Retryable(status)) break;
  }
  // A 404 is a fact about the URL, not a failing server: it does not count.
  if (CancelledFor(r)) return absl::CancelledError(absl::StrCat(r.url, ": read cancelled (Stop)"));
  if (status.ok() || ErrorReason(status) != reason::kHttp404) RecordResult(r.url, status.ok());
  if (!status.ok() && retries > 0 && Retryable(status)) {
    return WithContext(status, absl::StrCat("after ", retries + 1, " attempts"));
  }
  return status;
}

void HttpEnv::CountAttempt(const Request& r, const absl::Status& status, absl::Duration took,
                           bool retry) const {
  if (stats_ == nullptr) return;
  const std::string code = status.ok() ? std::string() : AttemptErrorCode(r, status);
  stats_->Record(StorageStats::SchemeLabel(r.url), absl::ToInt64Nanoseconds(took),
                 status.ok() ? BodySize(r) : 0, code, retry);
}

absl::Status HttpEnv::ReadFile(const std::string& path, int64_t max_bytes,
                               std::string* contents) {
  if (!Handles(path)) return base_->ReadFile(path, max_bytes, contents);
  Request r;
  r.url = path;
  r.length = max_bytes;
  r.out = contents;
  absl::Status s = Fetch(r);
  if (!s.ok() && ErrorReason(s) == reason::kHttpBadResponse && r.whole_size > max_bytes) {
    contents->clear();
    return TooLarge(path, r.whole_size, max_bytes);  // The size the server gave.
  }
  if (!s.ok() && ErrorReason(s) == reason::kHttpBadResponse &&
      static_cast<int64_t>(contents->size()) >= max_bytes) {
    // No size in the headers (a chunked body): only that it is longer.
    contents->clear();
    return TooLarge(path, max_bytes + 1, max_bytes);
  }
  return s;
}

absl::Status HttpEnv::ReadRange(const std::string& path, int64_t offset, int64_t length,
                                std::string* contents) {
  if (!Handles(path)) return base_->ReadRange(path, offset, length, contents);
  if (absl::Status s = CheckRange(path, offset, length); !s.ok()) return s;
  const int64_t shard_bytes = AdmittedSize(path);
  return shard_bytes >= 0 ? ReadCached(path, shard_bytes, offset, length, contents)
                          : ReadUncached(path, offset, length, contents);
}

namespace {

// UncachedUrlFile reads one URL's ranges with a request each (the tar index's reads).
class UncachedUrlFile : public RandomAccessFile {
 public:
  using ReadFn = std::function<absl::Status(int64_t, int64_t, std::string*)>;
  explicit UncachedUrlFile(ReadFn read) : read_(std::move(read)) {}
  absl::Status Read(int64_t offset, int64_t length, std::string* contents) override {
    return read_(offset, length, contents);
  }

 private:
  ReadFn read_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RandomAccessFile>> HttpEnv::NewRandomAccessFile(
    const std::string& path) {
  if (!Handles(path)) return base_->NewRandomAccessFile(path);
  return std::unique_ptr<RandomAccessFile>(
      new UncachedUrlFile([this, path](int64_t offset, int64_t length, std::string* out) {
        if (absl::Status s = CheckRange(path, offset, length); !s.ok()) return s;
        return ReadUncached(path, offset, length, out);
      }));
}

int64_t HttpEnv::AdmitShards(const std::vector<ShardSize>& shards) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ShardSize& shard : shards) {
    if (admitted_bytes_ + shard.bytes > options_.cache_bytes) break;
    if (admitted_.emplace(shard.url, shard.bytes).second) admitted_bytes_ += shard.bytes;
  }
  return admitted_bytes_;
}

int64_t HttpEnv::SeedBlock(const std::string& url, int64_t offset, std::string bytes) {
  const int64_t shard_bytes = AdmittedSize(url);
  const int64_t block_bytes = options_.block_bytes;
  if (shard_bytes < 0 || offset % block_bytes != 0 || offset >= shard_bytes) return 0;
  // What a fetch of this block would hold: block_bytes, cut at the admitted size.
  const int64_t want = std::min(shard_bytes - offset, block_bytes);
  if (static_cast<int64_t>(bytes.size()) < want) return 0;  // Not a whole block.
  bytes.resize(static_cast<size_t>(want));
  return cache_.Put({url, offset / block_bytes}, std::move(bytes)) ? want : 0;
}

int64_t HttpEnv::AdmittedSize(const std::string& url) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = admitted_.find(url);
  return it == admitted_.end() ? -1 : it->second;
}

std::vector<HttpEnv::ShardSize> HttpEnv::admitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ShardSize> shards;
  for (const auto& [url, bytes] : admitted_) shards.push_back({url, bytes});
  return shards;
}

int64_t HttpEnv::admitted_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_bytes_;
}

int HttpEnv::admitted_shards() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(admitted_.size());
}

absl::Status HttpEnv::ReadUncached(const std::string& url, int64_t offset, int64_t length,
                                   std::string* contents) {
  Request r;
  r.url = url;
  r.offset = offset;
  r.length = length;
  r.out = contents;
  return Fetch(r);
}

absl::StatusOr<int64_t> HttpEnv::FetchBlock(const std::string& url, int64_t shard_bytes,
                                            int64_t block_start, char* into) {
  Request r;
  r.url = url;
  r.offset = block_start;
  // Clipped to the admitted size: the cache never holds more than was admitted.
  r.length = std::clamp<int64_t>(shard_bytes - block_start, 0, options_.block_bytes);
  r.into = into;  // The body is written straight into the cache's slot.
  if (absl::Status s = Fetch(r); !s.ok()) return s;
  return r.into_size;
}

bool HttpEnv::ClaimBlocks(const std::string& url, int64_t offset, int64_t length) {
  const int64_t shard_bytes = AdmittedSize(url);
  if (shard_bytes < 0 || offset < 0 || length <= 0) return false;
  const int64_t block_bytes = options_.block_bytes;
  const int64_t end = std::min(offset + length, shard_bytes);
  bool claimed = false;
  for (int64_t index = offset / block_bytes; index * block_bytes < end; ++index) {
    claimed |= cache_.Claim({url, index});
  }
  return claimed;
}

absl::StatusOr<internal::BlockCache::Block> HttpEnv::CachedBlock(const std::string& url,
                                                                 int64_t shard_bytes,
                                                                 int64_t index) {
  const int64_t block_start = index * options_.block_bytes;
  return cache_.Get({url, index}, [&](char* into) -> absl::StatusOr<int64_t> {
    return FetchBlock(url, shard_bytes, block_start, into);
  });
}

absl::StatusOr<bool> HttpEnv::FetchBlocks(const std::string& url, int64_t offset,
                                          int64_t length) {
  const int64_t shard_bytes = AdmittedSize(url);
  if (shard_bytes < 0) return false;  // Not cached: nothing to fetch ahead.
  if (absl::Status s = CheckRange(url, offset, length); !s.ok()) return s;
  const int64_t block_bytes = options_.block_bytes;
  const int64_t end = std::min(offset + length, shard_bytes);
  // The member's blocks and those after it, up to kRunBytes, with one request (a run);
  // a block cached already, or being fetched by another run, is not waited for: its
  // reader waits for it in the cache (and this read-ahead thread starts the next run).
  const int64_t run_blocks = std::max<int64_t>(1, kRunBytes / block_bytes);
  bool requested = false;
  for (int64_t index = offset / block_bytes; index * block_bytes < end; ++index) {
    std::unique_ptr<internal::BlockCache::Run> run =
        cache_.BeginRun(url, index, run_blocks, shard_bytes);
    if (run == nullptr) continue;
    Request r;
    r.url = url;
    r.run = run.get();
    r.offset = run->resume_offset();
    r.length = run->remaining_bytes();
    absl::Status status = Fetch(r);
    if (!status.ok()) {
      run->Fail(status);
      return status;
    }
    requested = true;
    index = run->first() + run->count() - 1;  // Every block of the run is cached.
  }
  return requested;
}

bool HttpEnv::BlocksCached(const std::string& url, int64_t offset, int64_t length) const {
  const int64_t shard_bytes = AdmittedSize(url);
  if (shard_bytes < 0 || offset < 0 || length < 0) return false;
  const int64_t block_bytes = options_.block_bytes;
  const int64_t end = std::min(offset + length, shard_bytes);
  for (int64_t index = offset / block_bytes; index * block_bytes < end; ++index) {
    if (!cache_.Contains({url, index})) return false;
  }
  return true;
}

absl::Status HttpEnv::ReadMember(const std::string& url, int64_t offset, int64_t length,
                                 std::string* contents) {
  if (!Handles(url)) return base_->ReadRange(url, offset, length, contents);
  if (absl::Status s = CheckRange(url, offset, length); !s.ok()) return s;
  member_reads_.fetch_add(1, std::memory_order_relaxed);
  return ReadUncached(url, offset, length, contents);
}

absl::Status HttpEnv::ReadCached(const std::string& url, int64_t shard_bytes, int64_t offset,
                                 int64_t length, std::string* contents) {
  contents->clear();
  const int64_t block_bytes = options_.block_bytes;
  const int64_t end = offset + length;
  // One allocation for the member (the blocks' bytes are appended to it).
  contents->reserve(static_cast<size_t>(std::min<int64_t>(length, shard_bytes)));
  for (int64_t index = offset / block_bytes; index * block_bytes < end; ++index) {
    absl::StatusOr<internal::BlockCache::Block> block = CachedBlock(url, shard_bytes, index);
    if (!block.ok()) return block.status();
    const int64_t block_start = index * block_bytes;
    const absl::string_view data = **block;
    const int64_t from = std::max(offset, block_start) - block_start;
    const int64_t to = std::min<int64_t>(end - block_start, data.size());
    if (to > from) {
      contents->append(data.data() + from, static_cast<size_t>(to - from));
    }
    // A short block is the end of the resource: nothing follows it.
    if (static_cast<int64_t>(data.size()) < block_bytes) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DirEntry>> HttpEnv::ListDirectory(const std::string& path) {
  if (!Handles(path)) return base_->ListDirectory(path);
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": an HTTP URL cannot be listed; name the shards (train-{000000..000009}.tar)"));
}

absl::StatusOr<bool> HttpEnv::IsDirectory(const std::string& path) {
  if (!Handles(path)) return base_->IsDirectory(path);
  return false;
}

absl::StatusOr<std::unique_ptr<WritableFile>> HttpEnv::NewWritableFile(const std::string& path) {
  if (!Handles(path)) return base_->NewWritableFile(path);
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": an HTTP URL cannot be written; write to a directory or to s3://BUCKET/PREFIX"));
}

absl::StatusOr<std::string> HttpEnv::CanonicalPath(const std::string& path) {
  if (!Handles(path)) return base_->CanonicalPath(path);
  return path;
}

}  // namespace flowloader
