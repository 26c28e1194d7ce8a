#include "stages/core/sample_error.h"

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace flowloader {
namespace {
constexpr absl::string_view kReasonUrl = "flowloader/reason";
}  // namespace

absl::Status SampleError(absl::StatusCode code, absl::string_view reason,
                         absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kReasonUrl, absl::Cord(reason));
  return status;
}

std::string ErrorReason(const absl::Status& status) {
  if (status.ok()) return "";
  if (auto payload = status.GetPayload(kReasonUrl)) return std::string(*payload);
  return absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
}

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsAborted(status);
}

absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace flowloader
