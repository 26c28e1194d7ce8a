// copy_paste.h: Simple Copy-Paste (Ghiasi et al. 2021) as torchvision's detection
// references implement it: `_copy_paste` and `SimpleCopyPaste` in
// references/detection/transforms.py (pytorch/vision, tag v0.14.0; unchanged in v0.15).
//
// SimpleCopyPaste pairs image i of a batch with image i - 1 (the list rolled by one) and
// pastes onto it a random subset of the other's instances:
// - selection: torch.unique(torch.randint(0, n, (n,))), sorted distinct indices (nothing
//   happens when the paste image has no instance);
// - the paste mask is the union of the selected masks; with `blending` torchvision runs
//   F.gaussian_blur(kernel 5 × 5, sigma 2) on that bool mask, whose result is cast back to
//   bool: so "blending" is a 5 × 5 dilation (reflect padding = the window clipped to the
//   image), and pixels are copied, never mixed. flowloader computes that dilation;
// - image = image · ¬alpha + paste · alpha;
// - the image's own masks lose the alpha pixels; instances left with no pixel are dropped,
//   the others' boxes recomputed from their masks (ops.masks_to_boxes: inclusive maxima);
// - the selected instances are appended with their boxes, labels and iscrowd unchanged;
//   area becomes every mask's pixel count; then every box whose x2 <= x1 or y2 <= y1 is
//   dropped with its fields.
// torchvision resizes the paste image when sizes differ; a batch's rows share one size.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_DETECTION_COPY_PASTE_H_
#define FLOWLOADER_STAGES_DETECTION_COPY_PASTE_H_

#include <cstdint>
#include <vector>

#include "stages/core/rng.h"
#include "stages/detection/batch_image.h"
#include "stages/detection/targets.h"

namespace flowloader::detection {

struct CopyPasteOptions {
  double p = 1.0;         // Probability a row gets a paste (torchvision: always).
  bool blending = true;   // Dilate the paste mask 5 × 5 (torchvision's blur of a bool mask).
};

// DrawSelection is torch.unique(torch.randint(0, n, (n,))): the distinct values of n
// uniform draws in [0, n), ascending; empty for n == 0.
std::vector<int64_t> DrawSelection(int64_t n, SampleRng& rng);

// PasteMask writes the union of paste's masks at `selection` (canvas-sized, 0/1), dilated
// 5 × 5 when `blending`, into *alpha.
void PasteMask(const Targets& paste, const std::vector<int64_t>& selection, bool blending,
               std::vector<uint8_t>* alpha);

// CopyPaste pastes paste's instances at `selection` (and their pixels, from paste_image)
// onto `image` and *target, in place. Both carry masks and share image's size; boxes
// xyxy. `alpha` is scratch. A no-op for an empty selection.
void CopyPaste(const std::vector<int64_t>& selection, bool blending,
               const BatchImage& paste_image, const Targets& paste, const BatchImage& image,
               Targets* target, std::vector<uint8_t>* alpha);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_COPY_PASTE_H_
