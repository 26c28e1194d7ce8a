// bool_text.h: the one spelling of a boolean in specs, stage options and flags.
//
// YAML 1.2's core schema: true/True/TRUE and false/False/FALSE. yes/no/on/off/1/0 are
// refused rather than guessed at, so `shuffle: yes` and `fast_idct: yes` are the same
// error, wherever they are written.
//
// Thread-safety: a pure function.
#ifndef FLOWLOADER_STAGES_CORE_BOOL_TEXT_H_
#define FLOWLOADER_STAGES_CORE_BOOL_TEXT_H_

#include "absl/strings/string_view.h"

namespace flowloader {

// ParseBoolText sets *out from `text` and returns true, or returns false for any other
// spelling.
inline bool ParseBoolText(absl::string_view text, bool* out) {
  if (text == "true" || text == "True" || text == "TRUE") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_BOOL_TEXT_H_
