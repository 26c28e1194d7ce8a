// sample_error.h: errors about one sample, carried as absl::Status with a reason tag.
//
// A sample's status travels with it through the graph (oneTBB has no error channel). The
// reason is a short stable identifier ("truncated", "too_many_pixels", ...) stored as a
// Status payload: metrics and the summary JSON count skips by it, so it must stay
// low-cardinality. The message names the file and says what is wrong in words.
//
// Thread-safety: free functions on values.
#ifndef FLOWLOADER_STAGES_CORE_SAMPLE_ERROR_H_
#define FLOWLOADER_STAGES_CORE_SAMPLE_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace flowloader {

// Reasons used by the built-in stages. User stages may add their own.
namespace reason {
inline constexpr absl::string_view kEmptyFile = "empty_file";
inline constexpr absl::string_view kReadError = "read_error";
inline constexpr absl::string_view kNotFound = "not_found";
inline constexpr absl::string_view kPermissionDenied = "permission_denied";
inline constexpr absl::string_view kNotAFile = "not_a_file";
inline constexpr absl::string_view kUnknownFormat = "unknown_format";
inline constexpr absl::string_view kTruncated = "truncated";
inline constexpr absl::string_view kCorrupt = "corrupt";
inline constexpr absl::string_view kTooManyPixels = "too_many_pixels";
// A valid image whose codec needs more working memory than the per-decode budget
// (max_decode_mb), read from its header: a progressive or multi-scan JPEG's
// coefficients, a lossless WebP's ARGB image; or whose decoded pixels would need more
// than one worker may hold for one sample (worker_memory.h).
inline constexpr absl::string_view kDecodeMemory = "decode_memory";
// A valid image whose decoded pixels (decode_memory too), or an op's intermediate image
// (a resize of the shorter side, a rotation with expand, a whole image copied into an op
// list), would need more than one worker may hold for one sample (worker_memory.h): the
// sample is skipped before the image is allocated.
inline constexpr absl::string_view kOpMemory = "op_memory";
inline constexpr absl::string_view kUnsupported = "unsupported";
inline constexpr absl::string_view kStageError = "stage_error";
inline constexpr absl::string_view kCudaError = "cuda_error";  // Upload to the device failed.
// Tar shards (stages/reader/dataset.h): a sample without an image member, or without a
// label (.cls, or the .json field named by label_key).
inline constexpr absl::string_view kMissingImage = "missing_image";
inline constexpr absl::string_view kMissingLabel = "missing_label";
// Tar shards with the columns option: a sample without a member of a named column, or
// with one larger than column_max_bytes.
inline constexpr absl::string_view kMissingColumn = "missing_column";
inline constexpr absl::string_view kColumnTooLarge = "column_too_large";
// A shard member repeats the extension of the sample before it under the same key
// (`dup.jpg dup.cls dup.jpg dup.cls`): the second sample is skipped as this.
inline constexpr absl::string_view kDuplicateKey = "duplicate_key";
// Shards over HTTP (stages/reader/http_env.h), after the bounded retries.
inline constexpr absl::string_view kHttp404 = "http_404";
inline constexpr absl::string_view kHttp4xx = "http_4xx";  // Any other 4xx status.
inline constexpr absl::string_view kHttp5xx = "http_5xx";
inline constexpr absl::string_view kTimeout = "timeout";  // Connect, stall or request limit.
inline constexpr absl::string_view kConnectionError = "connection_error";
// A body shorter than its Content-Length or Content-Range (the connection closed early).
inline constexpr absl::string_view kHttpPartial = "http_partial";
// A response that does not answer the request (wrong range, longer than asked).
inline constexpr absl::string_view kHttpBadResponse = "http_bad_response";
// https:// whose certificate does not verify (unknown CA, wrong host, expired) or a CA
// file libcurl cannot use; not retried, the next attempt would fail the same way.
inline constexpr absl::string_view kTls = "tls";
// A label outside [0, num_classes) where soft targets are made (graph/batch_stage.h): a
// one-hot row for it would be wrong, so the sample is skipped.
inline constexpr absl::string_view kLabelOutOfRange = "label_out_of_range";
// An image whose decoded size is not the size its annotations give (COCO's width and
// height): its boxes and masks would land in the wrong place, so it is skipped.
inline constexpr absl::string_view kSizeMismatch = "size_mismatch";

// kBuiltin is every reason above, the known set: exporters publish each one at 0 for every
// stage from the first scrape, so a clean run's error panels read 0 instead of "no data"
// and increase() sees the first error. Add a new reason here as well as above.
inline constexpr absl::string_view kBuiltin[] = {
    kEmptyFile, kReadError, kNotFound,      kPermissionDenied, kNotAFile,   kUnknownFormat,
    kTruncated, kCorrupt,   kTooManyPixels, kDecodeMemory, kOpMemory, kUnsupported,      kStageError, kCudaError,
    kMissingImage, kMissingLabel, kMissingColumn, kColumnTooLarge, kDuplicateKey, kHttp404, kHttp4xx, kHttp5xx, kTimeout, kConnectionError,
    kHttpPartial, kHttpBadResponse, kTls, kLabelOutOfRange, kSizeMismatch,
};
}  // namespace reason

// SampleError builds a Status with `code`, `message` and the reason tag attached.
absl::Status SampleError(absl::StatusCode code, absl::string_view reason,
                         absl::string_view message);

// ErrorReason returns the reason tag of `status`, or one derived from its code when the
// status carries none (e.g. "internal", "not_found"). Empty for an OK status.
std::string ErrorReason(const absl::Status& status);

// IsTransient reports whether retrying the same operation may succeed (EIO, EINTR, ...).
bool IsTransient(const absl::Status& status);

// WithContext prefixes the message of `status` with `context` (e.g. the file name),
// keeping its code and payloads.
absl::Status WithContext(const absl::Status& status, absl::string_view context);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_SAMPLE_ERROR_H_
