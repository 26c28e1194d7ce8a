// geometry_args.h: argument checks the geometry ops share (fill, degree ranges, flags),
// with torchvision 0.14's value forms and ranges; each refusal is ArgError's one line
// naming the op, the argument and the value.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_ARGS_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_ARGS_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

// ReadFill reads a fill colour for PIL RGB images: a number (every band) or [r, g, b],
// each truncated to an integer as functional_pil._parse_fill does, and in [0, 255].
absl::Status ReadFill(const std::string& op, const OpArgs& args, const std::string& arg,
                      std::array<uint8_t, 3>* fill);

// ReadDegrees reads transforms._setup_angle's form: a number d >= 0 gives [-d, d], or
// [min, max]; min <= max, since torch's uniform_(min, max) refuses the reverse.
absl::StatusOr<std::pair<double, double>> ReadDegrees(const std::string& op,
                                                      const OpArgs& args,
                                                      const std::string& arg);

// ReadBool reads true or false (1 or 0).
absl::Status ReadBool(const std::string& op, const OpArgs& args, const std::string& arg,
                      bool* out);

// CheckAntialias checks resize's and random_resized_crop's antialias: null, true or false
// (torchvision 0.14's Optional[bool]; a PIL image is antialiased whatever it is, so the
// value changes nothing, but a list or a string is a mistake to name, not to ignore).
absl::Status CheckAntialias(const std::string& op, const OpArgs& args);

// RequireNull refuses any value but null (an argument accepted for torchvision's
// signature whose other values flowloader does not implement), saying why.
absl::Status RequireNull(const std::string& op, const OpArgs& args, const std::string& arg,
                         const std::string& why);

// ReadCenter reads a rotation's or affine's centre: null (the image centre; *has false)
// or [x, y] in pixels, any finite numbers (torchvision's center=, origin top-left).
absl::Status ReadCenter(const std::string& op, const OpArgs& args, bool* has,
                        std::array<double, 2>* center);

// ReadResizeFilter reads a resize's interpolation: what ReadInterpolation takes into
// `interpolation`, or box, hamming or lanczos (Pillow's other resize filters) into
// `other` (set only then).
absl::Status ReadResizeFilter(const std::string& op, const OpArgs& args, const std::string& arg,
                              Interpolation* interpolation, bool* has_other, PillowFilter* other);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_GEOMETRY_ARGS_H_
