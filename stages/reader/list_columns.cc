// list_columns.cc: list files with extra per-sample columns (dataset.h), and the header
// that names them.
#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stages/reader/dataset.h"
#include "stages/reader/internal/list_columns.h"

namespace flowloader {
namespace reader_internal {

bool IsColumnName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  if (name.front() == '.' || name.back() == '.' || absl::StrContains(name, "..")) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

absl::Status ParseColumnsHeader(const std::string& path, int line_number, absl::string_view line,
                                std::vector<std::string>* names) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(absl::StripPrefix(line, kColumnsHeader), absl::ByAnyChar(" \t"),
                     absl::SkipEmpty());
  const std::string where = absl::StrCat(path, ":", line_number, ": ");
  if (words.size() < 3 || words[0] != "path" || words[1] != "label") {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "a #columns: header names path, label, then the extra columns "
               "(#columns: path label caption), got \"", line.substr(0, 200), "\""));
  }
  std::vector<std::string> extra(words.begin() + 2, words.end());
  if (const std::string* bad = FirstBadColumnName(extra, {"path", "label"}); bad != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "column name '", bad->substr(0, 40),
        "' is not letters, digits and _ (dots only between them, not starting with a "
               "digit), or is repeated"));
  }
  *names = std::move(extra);
  return absl::OkStatus();
}

const std::string* FirstBadColumnName(const std::vector<std::string>& names,
                                      std::set<std::string> taken) {
  for (const std::string& name : names) {
    if (!IsColumnName(name) || !taken.insert(name).second) return &name;
  }
  return nullptr;
}

}  // namespace reader_internal

absl::Status CheckColumnNames(const std::vector<std::string>& names) {
  if (const std::string* bad = reader_internal::FirstBadColumnName(names, {}); bad != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "has '", bad->substr(0, 40), "', not a column name (letters, digits and _, dots "
        "only between them, not starting with a digit) or a repeated one"));
  }
  return absl::OkStatus();
}

absl::Status Dataset::SelectColumns(const std::string& path,
                                    const std::vector<std::string>& wanted,
                                    bool absent_is_empty) {
  // Where each wanted column is in the header (npos: absent). Alone, an unknown name is a
  // typo, never "": in a mixture another source may have it.
  std::vector<size_t> from;
  for (const std::string& name : wanted) {
    auto it = std::find(column_names_.begin(), column_names_.end(), name);
    if (it == column_names_.end() && absent_is_empty) {
      from.push_back(std::string::npos);
      continue;
    }
    if (it == column_names_.end()) {
      return absl::InvalidArgumentError(
          column_names_.empty()
              ? absl::StrCat(path, ": the columns option names '", name.substr(0, 40),
                             "', but this data has no columns (a list file's #columns: "
                             "header or tar shards' members give them)")
              : absl::StrCat(path, ": the columns option names '", name.substr(0, 40),
                             "', which its #columns: header (",
                             absl::StrJoin(column_names_, " "), ") does not have"));
    }
    from.push_back(static_cast<size_t>(it - column_names_.begin()));
  }
  std::string text;
  std::vector<uint64_t> ends;
  for (int64_t i = 0; i < size(); ++i) {
    for (size_t c : from) {
      if (c != std::string::npos) {
        const absl::string_view value = column(i, c);
        text.append(value.data(), value.size());
      }
      ends.push_back(text.size());
    }
  }
  column_names_ = wanted;
  column_text_ = std::move(text);
  column_ends_ = std::move(ends);
  return absl::OkStatus();
}

absl::Status Dataset::AddColumnsLine(const std::string& path, int line_number,
                                     absl::string_view line) {
  const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
  int64_t label = 0;
  if (fields.size() != column_names_.size() + 2 || fields[0].empty() ||
      !absl::SimpleAtoi(fields[1], &label) || label < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", line_number, ": expected ", column_names_.size() + 2,
        " tab-separated fields (path, label >= 0, ", absl::StrJoin(column_names_, ", "),
        ") as the #columns: header says, got \"", line.substr(0, 200), "\""));
  }
  samples_.push_back(SampleSource{std::string(fields[0]), label});
  for (size_t c = 0; c < column_names_.size(); ++c) {
    column_text_.append(fields[c + 2].data(), fields[c + 2].size());
    column_ends_.push_back(column_text_.size());
  }
  return absl::OkStatus();
}

}  // namespace flowloader
