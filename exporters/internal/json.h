// json.h: the few JSON writing helpers the report needs (no parser, no DOM).
//
// Thread-safety: free functions on values.
#ifndef FLOWLOADER_EXPORTERS_INTERNAL_JSON_H_
#define FLOWLOADER_EXPORTERS_INTERNAL_JSON_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace flowloader {
namespace exporters_internal {

// JsonString quotes and escapes `s` as a JSON string. Bytes that are not valid UTF-8
// become U+FFFD, so the output is valid JSON whatever a stage name or reason holds.
std::string JsonString(absl::string_view s);

// JsonFloat writes `v` with up to 10 significant digits, always with a '.' or an
// exponent (so parsers read a float), and 0.0 for NaN and infinities (JSON has neither).
std::string JsonFloat(double v);

}  // namespace exporters_internal
}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_INTERNAL_JSON_H_
