// schemes.h: the one home of storage schemes. Every place that opens data asks here
// whether a path is remote (http://, https://, s3://) instead of testing prefixes itself,
// and StorageEnv (storage_env.h) makes each scheme's Env from this table. A new scheme
// (gs://) is one Env file and one line in Schemes() (schemes.cc).
//
// Thread-safety: constant tables and pure functions.
#ifndef FLOWLOADER_STAGES_READER_SCHEMES_H_
#define FLOWLOADER_STAGES_READER_SCHEMES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stages/reader/cache_options.h"
#include "stages/reader/http_env.h"
#include "stages/reader/s3_options.h"

namespace flowloader {

// StorageOptions are every remote scheme's settings, from the one key table (spec keys
// http_*, s3_*; runtime/spec.cc).
struct StorageOptions {
  HttpOptions http;  // Also the transport settings (timeouts, retries, cache) of s3://.
  S3Options s3;
  DiskCacheOptions cache;  // The on-disk cache in front of every remote scheme (cache_*).
};

// Scheme is one remote scheme. Every remote Env is an HttpEnv (libcurl transport, block
// cache for admitted shards, Cancel).
struct Scheme {
  const char* name;    // "s3": paths start with "s3://" (any case).
  const char* family;  // Schemes of one family share one Env ("http" for http and https).
  // Whether a path can be listed as a directory (an ImageFolder prefix, a directory of
  // shards, a list file read from it); a plain web server cannot.
  bool can_list;
  absl::StatusOr<std::unique_ptr<HttpEnv>> (*create)(Env* base, const StorageOptions& options);
};

// Schemes is the table of remote schemes.
absl::Span<const Scheme> Schemes();

// SchemeOf is the remote scheme of `path`, or nullptr for a local path.
const Scheme* SchemeOf(absl::string_view path);

// IsRemotePath reports whether `path` names data behind a remote scheme.
inline bool IsRemotePath(absl::string_view path) { return SchemeOf(path) != nullptr; }

// IsListablePath reports whether `path` is local or a remote path that can be listed.
inline bool IsListablePath(absl::string_view path) {
  const Scheme* scheme = SchemeOf(path);
  return scheme == nullptr || scheme->can_list;
}

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_SCHEMES_H_
