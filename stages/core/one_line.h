// one_line.h: a message as the one line a user reads, of bounded length, shared by the
// command line's refusals and the Python module's exceptions.
//
// Thread-safety: pure function.
#ifndef FLOWLOADER_STAGES_CORE_ONE_LINE_H_
#define FLOWLOADER_STAGES_CORE_ONE_LINE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace flowloader {

// Values a message quotes are cut to this many characters.
inline constexpr size_t kMaxValueChars = 200;
// A message longer than this (after the cuts) keeps its start and end.
inline constexpr size_t kMaxMessageChars = 1000;

// RedactPasswords is `text` with the password of every URL's user:password@ part
// replaced by "***" (http://user:secret@host -> http://user:***@host): an endpoint or data
// URL written with credentials is echoed by messages and logs, its secret never.
std::string RedactPasswords(absl::string_view text);

// OneLine is `message` on one line (passwords in URLs redacted): line breaks become spaces, every word (a value the
// message quotes: a path, a flag's text, a spec's string) is cut to kMaxValueChars with
// its length, and a message still over kMaxMessageChars keeps its start and end.
std::string OneLine(absl::string_view message);

// Log lines cut only what no path reaches (PATH_MAX): a log names the files it is about in
// full, and a megabyte-long value (a file name a COCO file made up) still ends up short.
inline constexpr size_t kMaxLoggedValueChars = 4096;
inline constexpr size_t kMaxLoggedLineChars = 16384;
// OneLine with other limits: each word cut to max_value_chars, the line to max_line_chars.
std::string OneLine(absl::string_view message, size_t max_value_chars, size_t max_line_chars);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_ONE_LINE_H_
