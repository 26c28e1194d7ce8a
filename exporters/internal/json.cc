// json.cc: JSON string escaping and number formatting.
#include "exporters/internal/json.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "stages/core/utf8.h"

namespace flowloader {
namespace exporters_internal {
namespace {

// Utf8Length returns the length of the valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8Length(absl::string_view s, size_t i) {
  uint32_t code_point = 0;
  return Utf8SequenceAt(s, i, &code_point);
}

}  // namespace

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
      ++i;
      continue;
    }
    const size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  out += '"';
  return out;
}

std::string JsonFloat(double v) {
  if (!std::isfinite(v)) return "0.0";
  std::string out = absl::StrFormat("%.10g", v);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

}  // namespace exporters_internal
}  // namespace flowloader
