// list_columns.h: a list file's `#columns: path label NAME...` header (dataset.h).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace flowloader {
namespace reader_internal {

inline constexpr char kColumnsHeader[] = "#columns:";

// ParseColumnsHeader reads `line` (starting with kColumnsHeader): whitespace-separated
// names, the first two `path` and `label`, then at least one extra column, each a name of
// letters, digits and _ not starting with a digit, all distinct. Sets *names to the extra
// columns. Errors name path:line_number and the offending name.
absl::Status ParseColumnsHeader(const std::string& path, int line_number, absl::string_view line,
                                std::vector<std::string>* names);

}  // namespace reader_internal
}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_LIST_COLUMNS_H_
