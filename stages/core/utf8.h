// utf8.h: reading one UTF-8 sequence, for the writers that escape user text (JSON in
// exporters, the SVG plot in runtime) and must not pass invalid bytes through.
//
// Thread-safety: a pure function.
#ifndef FLOWLOADER_STAGES_CORE_UTF8_H_
#define FLOWLOADER_STAGES_CORE_UTF8_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace flowloader {

// Utf8SequenceAt returns the length of the valid UTF-8 sequence that starts at s[i] and
// sets *code_point to its value, or returns 0 for an invalid one (a stray continuation
// byte, a cut sequence, an overlong form, a UTF-16 surrogate, past U+10FFFF).
inline size_t Utf8SequenceAt(absl::string_view s, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) {
    *code_point = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  *code_point = cp;
  return n;
}

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_UTF8_H_
