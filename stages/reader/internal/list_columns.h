// list_columns.h: a list file's `#columns: path label NAME...` header (dataset.h).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace flowloader {
namespace reader_internal {

inline constexpr char kColumnsHeader[] = "#columns:";

// IsColumnName: letters, digits and _, with dots only between them (a tar member's
// extension such as `seg.txt` is a column name too), not starting with a digit. One rule
// for list-file headers and the `columns` option, so a name means the same in both.
bool IsColumnName(absl::string_view name);

// FirstBadColumnName is the first of `names` that is not a column name or repeats an
// earlier one or one of `taken`; nullptr when every name is good.
const std::string* FirstBadColumnName(const std::vector<std::string>& names,
                                      std::set<std::string> taken);

// ParseColumnsHeader reads `line` (starting with kColumnsHeader): whitespace-separated
// names, the first two `path` and `label`, then at least one extra column, each a name of
// letters, digits and _ not starting with a digit, all distinct. Sets *names to the extra
// columns. Errors name path:line_number and the offending name.
absl::Status ParseColumnsHeader(const std::string& path, int line_number, absl::string_view line,
                                std::vector<std::string>* names);

}  // namespace reader_internal
}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_
