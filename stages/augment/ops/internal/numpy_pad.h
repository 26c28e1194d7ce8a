// numpy_pad.h: F.pad's padding as the geometry ops share it (random_crop, pad): the
// padding argument's forms, the mode names, and np.pad's index pattern, which
// functional_pil.pad uses for edge/reflect/symmetric (including the iterated
// reflections of a pad wider than the image).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_NUMPY_PAD_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_NUMPY_PAD_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment::internal {

enum class PadMode { kConstant, kEdge, kReflect, kSymmetric };

// Padding is pixels added on each side.
struct Padding {
  int left = 0, top = 0, right = 0, bottom = 0;
};

// NumpyPad sets map[c] for c in [0, n + before + after) to the index in [0, n) that
// np.pad(range(n), (before, after), mode) puts there, or -1 for the constant fill. A
// negative before/after crops that side first (F.pad); all -1 when nothing is left.
void NumpyPad(int n, int before, int after, PadMode mode, std::vector<int>* map);

// GatherThroughMaps writes dst (map_x.size() × map_y.size(), RGB) with pixel
// (map_x[x], map_y[y]) of src, or `fill` where either index is -1: the pixel pass of
// every padding op, whatever made the maps.
void GatherThroughMaps(const Image& src, const std::vector<int>& map_x,
                       const std::vector<int>& map_y, const std::array<uint8_t, 3>& fill,
                       Image* dst);

// ReadPadding reads argument `arg`: null (none), an integer (every side),
// [left/right, top/bottom] or [left, top, right, bottom], each in [-16384, 16384] (a
// negative pad crops that side first, as F.pad; NumpyPad maps it so).
absl::Status ReadPadding(const std::string& op, const OpArgs& args, const std::string& arg,
                         Padding* pad);

// ReadPadMode reads constant, edge, reflect or symmetric.
absl::Status ReadPadMode(const std::string& op, const OpArgs& args, const std::string& arg,
                         PadMode* mode);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_INTERNAL_NUMPY_PAD_H_
