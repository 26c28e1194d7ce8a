// linspace.h: torch.linspace in float32, as the float kernels' sampling grids build it
// (grid.cc's affine and perspective grids, elastic_grid.cc's identity grid).
//
// Thread-safety: a pure function.
#ifndef FLOWLOADER_STAGES_AUGMENT_FLOAT_LINSPACE_H_
#define FLOWLOADER_STAGES_AUGMENT_FLOAT_LINSPACE_H_

#include <vector>

namespace flowloader::augment::floats {

// Linspace is torch.linspace(start, end, steps) in float32 (ATen's CPU kernel: the first
// half stepped from start, the second from end).
inline std::vector<float> Linspace(double start, double end, int steps) {
  std::vector<float> v(steps);
  const float s = static_cast<float>(start), e = static_cast<float>(end);
  if (steps == 1) {
    v[0] = s;
    return v;
  }
  const float step = (e - s) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  for (int i = 0; i < steps; ++i) {
    v[i] = i < halfway ? s + step * static_cast<float>(i)
                       : e - step * static_cast<float>(steps - i - 1);
  }
  return v;
}

}  // namespace flowloader::augment::floats

#endif  // FLOWLOADER_STAGES_AUGMENT_FLOAT_LINSPACE_H_
