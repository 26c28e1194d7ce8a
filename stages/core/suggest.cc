// suggest.cc: edit distance and the suggestion it picks.
#include "stages/core/suggest.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flowloader {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string Suggestion(absl::string_view name, const std::vector<std::string>& known) {
  if (known.empty()) return "(there are none)";
  // A likely typo: a few edits away (case aside), or a known name containing it
  // ("workers" for num_workers). Fewest edits wins.
  const std::string lower = absl::AsciiStrToLower(name);
  const size_t max_edits = lower.size() <= 4 ? 1 : 2;
  const std::string* best = nullptr;
  size_t best_score = std::numeric_limits<size_t>::max();
  for (const std::string& k : known) {
    const std::string candidate = absl::AsciiStrToLower(k);
    // Lengths further apart than max_edits are more edits apart: no need to count them
    // (a megabyte-long unknown name took seconds of edit distance per known name).
    const size_t apart = lower.size() > candidate.size() ? lower.size() - candidate.size()
                                                         : candidate.size() - lower.size();
    size_t score = apart > max_edits ? max_edits + 1 : EditDistance(lower, candidate);
    if (score > max_edits) {
      if (lower.size() < 4 || !absl::StrContains(candidate, lower)) continue;
      score = max_edits + 1;
    }
    if (score < best_score) {
      best_score = score;
      best = &k;
    }
  }
  if (best != nullptr) return absl::StrCat("(did you mean '", *best, "'?)");
  // A long list (40 ops: 600 characters) is cut, saying how many there are, so the
  // message stays a line; callers that know where the list is printed say so instead.
  constexpr size_t kMaxListChars = 160;
  std::string list;
  size_t shown = 0;
  for (const std::string& k : known) {
    if (shown > 0 && list.size() + 2 + k.size() > kMaxListChars) break;
    absl::StrAppend(&list, shown > 0 ? ", " : "", k);
    ++shown;
  }
  if (shown == known.size()) return absl::StrCat("(known: ", list, ")");
  return absl::StrCat("(known: ", list, ", ... ", known.size() - shown, " more)");
}

}  // namespace flowloader
