// numpy_pad.cc: see numpy_pad.h.
#include "stages/augment/ops/internal/numpy_pad.h"

#include <algorithm>
#include <cmath>

namespace flowloader::augment::internal {

void NumpyPad(int n, int before, int after, PadMode mode, std::vector<int>* map) {
  if (before < 0 || after < 0) {
    // F.pad crops a negative side first, then pads the rest (functional_pil.pad).
    const int skip = std::max(-before, 0);
    const int kept = n - skip - std::max(-after, 0);
    if (kept <= 0) {  // Nothing of the image is left: all fill (PIL's expand pastes none).
      map->assign(std::max(n + before + after, 0), -1);
      return;
    }
    NumpyPad(kept, std::max(before, 0), std::max(after, 0), mode, map);
    for (int& i : *map) {
      if (i >= 0) i += skip;
    }
    return;
  }
  std::vector<int>& p = *map;
  const int total = n + before + after;
  p.resize(total);
  for (int c = 0; c < total; ++c) {
    const int i = c - before;
    if (i >= 0 && i < n) {
      p[c] = i;
    } else if (mode == PadMode::kConstant) {
      p[c] = -1;
    } else {
      p[c] = i < 0 ? 0 : n - 1;  // Edge; also np.pad's reflection of a single value.
    }
  }
  if (n == 1 || mode == PadMode::kConstant || mode == PadMode::kEdge) return;
  // numpy.lib.arraypad._set_reflect_both, repeated until both pads are filled: each round
  // reflects at most the valid length so far (one less without the edge, for reflect).
  const bool include_edge = mode == PadMode::kSymmetric;
  const int edge_offset = include_edge ? 1 : 0;
  int left = before, right = after;
  while (left > 0 || right > 0) {
    const int old_length = total - right - left - (include_edge ? 0 : 1);
    if (left > 0) {
      const int chunk = std::min(old_length, left);
      const int start = left - edge_offset + chunk;  // Read start, start - 1, ..., down.
      for (int k = 0; k < chunk; ++k) p[left - chunk + k] = p[start - k];
      left -= chunk;
    }
    if (right > 0) {
      const int chunk = std::min(old_length, right);
      const int start = total - right + edge_offset - 2;
      for (int k = 0; k < chunk; ++k) p[total - right + k] = p[start - k];
      right -= chunk;
    }
  }
}

void GatherThroughMaps(const Image& src, const std::vector<int>& map_x,
                       const std::vector<int>& map_y, const std::array<uint8_t, 3>& fill,
                       Image* dst) {
  const int width = static_cast<int>(map_x.size());
  const int height = static_cast<int>(map_y.size());
  dst->Resize(width, height, 3);
  for (int oy = 0; oy < height; ++oy) {
    uint8_t* out = dst->Row(oy);
    const int sy = map_y[oy];
    const uint8_t* in = sy >= 0 ? src.pixels.data() + static_cast<size_t>(sy) * src.stride()
                                : nullptr;
    for (int ox = 0; ox < width; ++ox, out += 3) {
      const int sx = map_x[ox];
      const uint8_t* px = in != nullptr && sx >= 0 ? in + 3 * sx : fill.data();
      out[0] = px[0];
      out[1] = px[1];
      out[2] = px[2];
    }
  }
}

absl::Status ReadPadding(const std::string& op, const OpArgs& args, const std::string& arg,
                         Padding* pad) {
  const OpValue& v = args.Get(arg);
  if (v.is_none) return absl::OkStatus();
  // Short: a 1 MB value's refusal, cut, still fits a line of 400 characters.
  const char* what = "null, an integer, [left/right, top/bottom] or [left, top, right, bottom] "
                     "in [-16384, 16384]";
  for (double n : v.numbers) {
    if (!(n >= -16384 && n <= 16384 && n == std::floor(n))) return ArgError(op, arg, what, v);
  }
  const std::vector<double>& n = v.numbers;
  if (v.IsNumber() || (v.is_list && n.size() == 1)) {
    *pad = {static_cast<int>(n[0]), static_cast<int>(n[0]), static_cast<int>(n[0]),
            static_cast<int>(n[0])};
  } else if (v.is_list && n.size() == 2) {
    *pad = {static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[0]),
            static_cast<int>(n[1])};
  } else if (v.is_list && n.size() == 4) {
    *pad = {static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2]),
            static_cast<int>(n[3])};
  } else {
    return ArgError(op, arg, what, v);
  }
  return absl::OkStatus();
}

absl::Status ReadPadMode(const std::string& op, const OpArgs& args, const std::string& arg,
                         PadMode* mode) {
  const std::string& m = args.Word(arg);
  if (m == "constant") {
    *mode = PadMode::kConstant;
  } else if (m == "edge") {
    *mode = PadMode::kEdge;
  } else if (m == "reflect") {
    *mode = PadMode::kReflect;
  } else if (m == "symmetric") {
    *mode = PadMode::kSymmetric;
  } else {
    return ArgError(op, arg, "constant, edge, reflect or symmetric", args.Get(arg));
  }
  return absl::OkStatus();
}

}  // namespace flowloader::augment::internal
