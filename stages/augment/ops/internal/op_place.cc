// op_place.cc: a refusal of one op of a list, placed and said once.
#include "stages/augment/ops/internal/op_place.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace flowloader::augment::internal {

std::string OpPlace(size_t index, absl::string_view name, absl::string_view message) {
  const std::string place = absl::StrCat("op ", index + 1);
  if (absl::StartsWith(message, "unknown op ")) return absl::StrCat(place, ": ", message);
  constexpr size_t kMaxNameChars = 200;
  std::string shown(name.substr(0, kMaxNameChars));
  if (name.size() > kMaxNameChars) absl::StrAppend(&shown, "... (", name.size(), " characters)");
  // "NAME: ARG ..." and "NAME has no argument ...": the place already names the op.
  if (absl::ConsumePrefix(&message, absl::StrCat(name, ": "))) {
    return absl::StrCat(place, " (", shown, "): ", message);
  }
  if (absl::StartsWith(message, absl::StrCat(name, " "))) {
    return absl::StrCat(place, " (", shown, ")", message.substr(name.size()));
  }
  return absl::StrCat(place, " (", shown, "): ", message);
}

}  // namespace flowloader::augment::internal
