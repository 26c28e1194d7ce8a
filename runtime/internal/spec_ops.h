// spec_ops.h: a stage item's `ops:` list (a view's op list) read from a spec into the op
// list text the transforms stage takes (stages/augment/ops/view_program.h).
//
//   ops:
//     - random_resized_crop: {size: 224, scale: [0.4, 1.0], interpolation: bicubic}
//     - random_horizontal_flip            # an op without arguments: its name alone
//     - color_jitter: {brightness: 0.4, contrast: 0.4, saturation: 0.2, hue: 0.1, p: 0.8}
//     - normalize: {}
//
// Every op and argument is checked here with the op registry's own checks, and the
// whole list with the view program's, so a mistake is one line located at the op or the
// argument it is about.
//
// Thread-safety: a pure function of its arguments.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_SPEC_OPS_H_
#define FLOWLOADER_RUNTIME_INTERNAL_SPEC_OPS_H_

#include <string>

#include "absl/status/status.h"
#include "runtime/internal/spec_reader.h"

namespace flowloader {
namespace spec_internal {

// ParseOps reads field `ops` into *text (the op list's text).
absl::Status ParseOps(const SpecReader& r, const Field& ops, std::string* text);

}  // namespace spec_internal
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_SPEC_OPS_H_
