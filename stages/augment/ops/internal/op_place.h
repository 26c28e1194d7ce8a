// op_place.h: a refusal of one op of a list, placed ("op N (name): ...") and said once.
//
// Thread-safety: pure function.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_PLACE_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_PLACE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace flowloader::augment::internal {

// OpPlace is `message` about op `index` (0-based) of a list named `name`, as one line
// "op N (NAME): MESSAGE", NAME cut to 200 characters. The op is named once: a message
// that starts with it ("NAME: ARG must be ...", "NAME has no argument ...") loses that
// copy, and an unknown op's message ("unknown op 'NAME' ...", which quotes the name
// itself) is "op N: unknown op ..." (a 1 MB name was printed twice).
std::string OpPlace(size_t index, absl::string_view name, absl::string_view message);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_OP_PLACE_H_
