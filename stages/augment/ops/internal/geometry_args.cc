// geometry_args.cc: the shared argument checks of the geometry ops.
#include "stages/augment/ops/internal/geometry_args.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace flowloader::augment::internal {

absl::Status ReadFill(const std::string& op, const OpArgs& args, const std::string& arg,
                      std::array<uint8_t, 3>* fill) {
  const OpValue& v = args.Get(arg);
  if (v.is_none) {  // torchvision's fill=None: black, as its classes and _parse_fill make it.
    *fill = {0, 0, 0};
    return absl::OkStatus();
  }
  const bool one = v.IsNumber() || (v.is_list && v.numbers.size() == 1);
  // _parse_fill truncates each to an int and PIL clamps it to [0, 255]; PIL refuses one
  // outside a C int ("signed integer is greater than maximum").
  const char* what = "a number or [r, g, b], each an int (clamped to [0, 255], as PIL does)";
  if (!(one || (v.is_list && v.numbers.size() == 3))) return ArgError(op, arg, what, v);
  for (int c = 0; c < 3; ++c) {
    const double x = std::trunc(v.numbers[one ? 0 : c]);
    if (!(x >= -2147483648.0 && x <= 2147483647.0)) return ArgError(op, arg, what, v);
    (*fill)[c] = static_cast<uint8_t>(std::clamp(x, 0.0, 255.0));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<double, double>> ReadDegrees(const std::string& op,
                                                      const OpArgs& args,
                                                      const std::string& arg) {
  const OpValue& v = args.Get(arg);
  if (v.IsNumber()) {
    if (!(v.numbers[0] >= 0)) return ArgError(op, arg, "a number >= 0 or [min, max]", v);
    return std::make_pair(-v.numbers[0], v.numbers[0]);
  }
  if (v.is_list && v.numbers.size() == 2 && v.numbers[0] <= v.numbers[1]) {
    return std::make_pair(v.numbers[0], v.numbers[1]);
  }
  return ArgError(op, arg, "a number >= 0 or [min, max] with min <= max", v);
}

absl::Status ReadBool(const std::string& op, const OpArgs& args, const std::string& arg,
                      bool* out) {
  const OpValue& v = args.Get(arg);
  if (!v.IsNumber() || (v.numbers[0] != 0 && v.numbers[0] != 1)) {
    return ArgError(op, arg, "true or false", v);
  }
  *out = v.numbers[0] != 0;
  return absl::OkStatus();
}

absl::Status CheckAntialias(const std::string& op, const OpArgs& args) {
  const OpValue& v = args.Get("antialias");
  if (v.is_none) return absl::OkStatus();
  bool unused = false;
  if (!ReadBool(op, args, "antialias", &unused).ok()) {
    return ArgError(op, "antialias", "null, true or false", v);
  }
  return absl::OkStatus();
}

absl::Status RequireNull(const std::string& op, const OpArgs& args, const std::string& arg,
                         const std::string& why) {
  const OpValue& v = args.Get(arg);
  if (!v.is_none) return ArgError(op, arg, absl::StrCat("null (", why, ")"), v);
  return absl::OkStatus();
}

absl::Status ReadCenter(const std::string& op, const OpArgs& args, bool* has,
                        std::array<double, 2>* center) {
  const OpValue& v = args.Get("center");
  *has = !v.is_none;
  if (!*has) return absl::OkStatus();
  if (!(v.is_list && v.numbers.size() == 2 && std::isfinite(v.numbers[0]) &&
        std::isfinite(v.numbers[1]))) {
    return ArgError(op, "center", "null or [x, y] in pixels (finite numbers)", v);
  }
  *center = {v.numbers[0], v.numbers[1]};
  return absl::OkStatus();
}

absl::Status ReadResizeFilter(const std::string& op, const OpArgs& args, const std::string& arg,
                              Interpolation* interpolation, bool* has_other, PillowFilter* other) {
  const std::string& word = args.Word(arg);
  *has_other = word == "box" || word == "hamming" || word == "lanczos";
  if (!*has_other) {
    if (ReadInterpolation(op, args, arg, interpolation).ok()) return absl::OkStatus();
    return ArgError(op, arg, "bilinear, bicubic, nearest, box, hamming or lanczos",
                    args.Get(arg));
  }
  *interpolation = Interpolation::kBilinear;  // Unused: `other` is the filter.
  *other = word == "box" ? PillowFilter::kBox
           : word == "hamming" ? PillowFilter::kHamming : PillowFilter::kLanczos;
  return absl::OkStatus();
}

}  // namespace flowloader::augment::internal
