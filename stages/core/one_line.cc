// one_line.cc: cutting a message to one bounded line.
#include "stages/core/one_line.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace flowloader {
namespace {

// Cut is `text` cut to `max` characters, saying how long it was. A value the message cut
// already ("'xxx...", a quote and "..." past `max`) is left: cut twice, it said two lengths.
std::string Cut(absl::string_view text, size_t max) {
  constexpr size_t kCutMarks = 8;  // Quotes, brackets and the "..." around a cut value.
  if (text.size() <= max) return std::string(text);
  if (text.size() <= max + kCutMarks && absl::StrContains(text.substr(max), "...")) {
    return std::string(text);
  }
  return absl::StrCat(text.substr(0, max), "... (", text.size(), " characters)");
}

}  // namespace

std::string RedactPasswords(absl::string_view text) {
  std::string out;
  size_t done = 0;
  for (size_t scheme = text.find("://"); scheme != absl::string_view::npos;
       scheme = text.find("://", scheme + 3)) {
    const size_t start = scheme + 3;
    if (start < done) continue;  // Inside a password already redacted.
    // The URL ends at whitespace or a quote or bracket around it; the password runs from
    // its first ':' to the next '@' (a secret may hold '/', as AWS keys do: then the
    // "URL" is not one, but its text is still a secret). A port followed by an '@' in the
    // path is redacted too: harmless.
    size_t end = start;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n' && text[end] != ',' &&
           text[end] != ')' && text[end] != '\'') {
      ++end;
    }
    const absl::string_view url = text.substr(start, end - start);
    const size_t colon = url.find(':');
    if (colon == absl::string_view::npos) continue;
    const size_t at = url.find('@', colon);
    if (at == absl::string_view::npos) continue;
    absl::StrAppend(&out, text.substr(done, start + colon + 1 - done), "***");
    done = start + at;
  }
  absl::StrAppend(&out, text.substr(done));
  return out;
}

std::string OneLine(absl::string_view message) {
  return OneLine(message, kMaxValueChars, kMaxMessageChars);
}

std::string OneLine(absl::string_view message, size_t max_value_chars, size_t max_line_chars) {
  const std::string joined = absl::StrReplaceAll(
      RedactPasswords(message), {{"\r\n", " "}, {"\n", " "}, {"\r", " "}});
  std::vector<std::string> words = absl::StrSplit(joined, ' ');
  for (std::string& word : words) word = Cut(word, max_value_chars);
  std::string line = absl::StrJoin(words, " ");
  if (line.size() <= max_line_chars) return line;
  const size_t keep = max_line_chars / 2;
  return absl::StrCat(absl::string_view(line).substr(0, keep), " ...(", line.size() - 2 * keep,
                      " characters cut)... ", absl::string_view(line).substr(line.size() - keep));
}

}  // namespace flowloader
