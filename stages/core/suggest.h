// suggest.h: the "did you mean" part of an unknown-name message, shared by the spec
// parser (keys, stage types) and the op registry (op and argument names).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_CORE_SUGGEST_H_
#define FLOWLOADER_STAGES_CORE_SUGGEST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace flowloader {

// EditDistance is the Levenshtein distance of two short names.
size_t EditDistance(absl::string_view a, absl::string_view b);

// Suggestion is the parenthesis that ends an unknown-name message: "(did you mean 'x'?)"
// when `name` is a likely typo of a known name, else "(known: a, b, c)", a long list cut
// to about 160 characters and "... N more)".
std::string Suggestion(absl::string_view name, const std::vector<std::string>& known);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_SUGGEST_H_
