#include "stages/reader/internal/shard_names.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace flowloader {
namespace shard_internal {
namespace {

// MatchingBrace returns the index of the '}' closing the '{' at `open`, or npos.
size_t MatchingBrace(absl::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return absl::string_view::npos;
}

// TopLevelCommas splits a brace body at the commas outside nested braces.
std::vector<std::string> TopLevelCommas(absl::string_view body) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '{') ++depth;
    if (body[i] == '}') --depth;
    if (body[i] == ',' && depth == 0) {
      parts.emplace_back(body.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.emplace_back(body.substr(start));
  return parts;
}

bool HasLeadingZero(absl::string_view n) {
  absl::ConsumePrefix(&n, "-");
  return n.size() > 1 && n[0] == '0';
}

// Range expands `A..B` or `A..B..STEP` (integers or single letters); false if not one.
// A numeric range of more than `max_names` values is not expanded: *count says how many
// it names (counted before anything is allocated), so {000000..999999999} is refused in
// microseconds instead of after 10 M strings.
bool Range(absl::string_view body, size_t max_names, std::vector<std::string>* out,
           uint64_t* count) {
  std::vector<absl::string_view> parts = absl::StrSplit(body, "..");
  if (parts.size() != 2 && parts.size() != 3) return false;
  int64_t step = 1;
  if (parts.size() == 3 && (!absl::SimpleAtoi(parts[2], &step) || step == 0 ||
                              step == std::numeric_limits<int64_t>::min())) {
    return false;
  }
  step = std::llabs(step);
  int64_t a = 0;
  int64_t b = 0;
  if (absl::SimpleAtoi(parts[0], &a) && absl::SimpleAtoi(parts[1], &b)) {
    const int width = (HasLeadingZero(parts[0]) || HasLeadingZero(parts[1]))
                          ? static_cast<int>(std::max(parts[0].size(), parts[1].size()))
                          : 0;
    const uint64_t span = a <= b ? static_cast<uint64_t>(b) - static_cast<uint64_t>(a)
                                 : static_cast<uint64_t>(a) - static_cast<uint64_t>(b);
    // The count of [INT64_MIN, INT64_MAX] is 2^64: saturated, not wrapped to 0.
    *count = span / static_cast<uint64_t>(step);
    if (*count < std::numeric_limits<uint64_t>::max()) ++*count;
    if (*count > max_names) return true;
    const int64_t dir = a <= b ? step : -step;
    for (uint64_t i = 0; i < *count; ++i) {
      out->push_back(absl::StrFormat("%0*d", width, a + static_cast<int64_t>(i) * dir));
    }
    return true;
  }
  if (parts[0].size() == 1 && parts[1].size() == 1 && absl::ascii_isalpha(parts[0][0]) &&
      absl::ascii_isalpha(parts[1][0])) {
    const int x = parts[0][0];
    const int y = parts[1][0];
    const int dir = x <= y ? static_cast<int>(step) : -static_cast<int>(step);
    for (int c = x; dir > 0 ? c <= y : c >= y; c += dir) out->push_back(std::string(1, c));
    return true;
  }
  return false;
}

absl::Status Expand(const std::string& s, size_t max_names, std::vector<std::string>* out) {
  for (size_t open = s.find('{'); open != std::string::npos; open = s.find('{', open + 1)) {
    const size_t close = MatchingBrace(s, open);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("unmatched '{' in \"", s, "\""));
    }
    const absl::string_view body = absl::string_view(s).substr(open + 1, close - open - 1);
    std::vector<std::string> alternatives;
    uint64_t count = 0;
    const bool range = Range(body, max_names, &alternatives, &count);
    if (count > max_names) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the brace range {", body, "} in \"", s, "\" names ", count,
          " shards, over the limit of ", max_names,
          "; name fewer in data, or list the shards in a file (one a line)"));
    }
    if (!range) {
      alternatives = TopLevelCommas(body);
      if (alternatives.size() < 2) continue;  // "{x}" stays literal, as in braceexpand.
    }
    const std::string prefix = s.substr(0, open);
    const std::string rest = s.substr(close + 1);
    for (const std::string& alternative : alternatives) {
      std::vector<std::string> tails;
      if (absl::Status st = Expand(alternative + rest, max_names, &tails); !st.ok()) return st;
      for (std::string& tail : tails) {
        out->push_back(prefix + tail);
        if (out->size() > max_names) {
          return absl::InvalidArgumentError(
              absl::StrCat("\"", s, "\" expands to more than ", max_names, " names"));
        }
      }
    }
    return absl::OkStatus();
  }
  out->push_back(s);
  return absl::OkStatus();
}

// SkipJsonString advances *i (at a '"') past the string's closing quote.
bool SkipJsonString(absl::string_view j, size_t* i) {
  for (++*i; *i < j.size(); ++*i) {
    if (j[*i] == '\\') {
      ++*i;
    } else if (j[*i] == '"') {
      ++*i;
      return true;
    }
  }
  return false;
}

void SkipSpace(absl::string_view j, size_t* i) {
  while (*i < j.size() && absl::ascii_isspace(static_cast<unsigned char>(j[*i]))) ++*i;
}

}  // namespace

bool HasBraces(absl::string_view pattern) {
  const size_t open = pattern.find('{');
  return open != absl::string_view::npos && pattern.find('}', open) != absl::string_view::npos;
}

absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern,
                                                      size_t max_names) {
  std::vector<std::string> out;
  if (absl::Status s = Expand(std::string(pattern), max_names, &out); !s.ok()) return s;
  return out;
}

bool SplitKey(const std::string& name, std::string* key, std::string* extension) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string::npos) return false;  // The basename has no dot: no extension.
  if (dot == base) {
    // A basename starting with a dot: base_plus_ext's `[^.]+` backtracks over the slash
    // before it, so the key is the whole directory part ("a/.x.jpg": "a/", "x.jpg") when
    // the directory's last part has no dot; with no directory (".hidden") it is no match.
    if (base == 0) return false;
    const size_t parent = base >= 2 ? name.rfind('/', base - 2) : std::string::npos;
    const size_t parent_begin = parent == std::string::npos ? 0 : parent + 1;
    if (name.find('.', parent_begin) < base) return false;
  }
  // The regex's greedy `.*/` takes the last slash and `[^.]+` the basename's first part.
  *key = name.substr(0, dot);
  *extension = name.substr(dot + 1);
  return true;
}

bool IsMetaMember(absl::string_view name) {
  // `__[^/]*__($|/)` matched at the start: a first path part "__x__" (the name itself,
  // or a directory). "__key__.json" is not one: webdataset reads it as key "__key__".
  if (!absl::StartsWith(name, "__")) return false;
  const absl::string_view part = name.substr(0, name.find('/'));
  return part.size() >= 4 && absl::EndsWith(part, "__");
}

bool JsonIntField(absl::string_view j, absl::string_view field, int64_t* value) {
  size_t i = 0;
  SkipSpace(j, &i);
  if (i >= j.size() || j[i] != '{') return false;
  int depth = 0;
  bool expect_key = false;
  while (i < j.size()) {
    const char c = j[i];
    if (c == '"') {
      const size_t start = i + 1;
      if (!SkipJsonString(j, &i)) return false;
      const absl::string_view text = j.substr(start, i - 1 - start);
      size_t after = i;
      SkipSpace(j, &after);
      if (depth == 1 && expect_key && after < j.size() && j[after] == ':' && text == field) {
        ++after;
        SkipSpace(j, &after);
        size_t end = after;
        const bool quoted = end < j.size() && j[end] == '"';
        if (quoted) ++end;
        const size_t digits = end;
        if (end < j.size() && j[end] == '-') ++end;
        while (end < j.size() && absl::ascii_isdigit(static_cast<unsigned char>(j[end]))) ++end;
        if (quoted && (end >= j.size() || j[end] != '"')) return false;
        if (end < j.size() && (j[end] == '.' || j[end] == 'e' || j[end] == 'E')) return false;
        return absl::SimpleAtoi(j.substr(digits, end - digits), value);
      }
      expect_key = false;
      continue;
    }
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    expect_key = depth == 1 && (c == '{' || c == ',');
    ++i;
  }
  return false;
}

}  // namespace shard_internal
}  // namespace flowloader
