// copy_paste.cc: torchvision's _copy_paste on a batch's rows (see copy_paste.h).
#include "stages/detection/copy_paste.h"

#include <algorithm>
#include <cstring>

namespace flowloader::detection {
namespace {

// Dilate5 is the 5 × 5 dilation of a 0/1 mask, the window clipped at the edges: where
// torchvision's reflect-padded 5 × 5 gaussian of the bool mask is nonzero. Separable: a
// row pass then a column pass of "any within 2".
void Dilate5(int w, int h, std::vector<uint8_t>* mask) {
  std::vector<uint8_t> rows(mask->size());
  const uint8_t* m = mask->data();
  for (int y = 0; y < h; ++y) {
    const uint8_t* in = m + static_cast<size_t>(y) * w;
    uint8_t* out = rows.data() + static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) {
      uint8_t v = 0;
      for (int dx = std::max(0, x - 2); dx <= std::min(w - 1, x + 2); ++dx) v |= in[dx];
      out[x] = v;
    }
  }
  for (int y = 0; y < h; ++y) {
    uint8_t* out = mask->data() + static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) {
      uint8_t v = 0;
      for (int dy = std::max(0, y - 2); dy <= std::min(h - 1, y + 2); ++dy) {
        v |= rows[static_cast<size_t>(dy) * w + x];
      }
      out[x] = v;
    }
  }
}

// MaskBox is ops.masks_to_boxes for one plane: [min x, min y, max x, max y] of its set
// pixels (maxima inclusive); false for an empty plane.
bool MaskBox(const uint8_t* plane, int w, int h, float* box) {
  int x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = plane + static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) {
      if (row[x] == 0) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = y;
    }
  }
  if (x1 < 0) return false;
  box[0] = static_cast<float>(x0), box[1] = static_cast<float>(y0);
  box[2] = static_cast<float>(x1), box[3] = static_cast<float>(y1);
  return true;
}

}  // namespace

std::vector<int64_t> DrawSelection(int64_t n, SampleRng& rng) {
  std::vector<bool> drawn(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) drawn[static_cast<size_t>(rng.UniformInt(0, n))] = true;
  std::vector<int64_t> selection;
  for (int64_t i = 0; i < n; ++i) {
    if (drawn[static_cast<size_t>(i)]) selection.push_back(i);
  }
  return selection;
}

void PasteMask(const Targets& paste, const std::vector<int64_t>& selection, bool blending,
               std::vector<uint8_t>* alpha) {
  const size_t plane = paste.mask_plane();
  alpha->assign(plane, 0);
  for (int64_t k : selection) {
    const uint8_t* m = &paste.masks[static_cast<size_t>(k) * plane];
    for (size_t i = 0; i < plane; ++i) (*alpha)[i] |= static_cast<uint8_t>(m[i] != 0);
  }
  if (blending) Dilate5(paste.canvas_width, paste.canvas_height, alpha);
}

void CopyPaste(const std::vector<int64_t>& selection, bool blending,
               const BatchImage& paste_image, const Targets& paste, const BatchImage& image,
               Targets* t, std::vector<uint8_t>* alpha) {
  if (selection.empty()) return;
  const int w = t->canvas_width, h = t->canvas_height;
  const size_t plane = t->mask_plane();
  PasteMask(paste, selection, blending, alpha);
  SelectPixels(paste_image, alpha->data(), image);
  // The image's own instances: occluded, dropped when empty, boxes from their masks.
  std::vector<bool> keep(static_cast<size_t>(t->size()), false);
  for (int64_t k = 0; k < t->size(); ++k) {
    uint8_t* m = &t->masks[static_cast<size_t>(k) * plane];
    for (size_t i = 0; i < plane; ++i) m[i] = (*alpha)[i] ? 0 : m[i];
    keep[static_cast<size_t>(k)] = MaskBox(m, w, h, &t->boxes[4 * static_cast<size_t>(k)]);
  }
  t->iscrowd.resize(t->labels.size(), 0);
  t->area.resize(t->labels.size(), 0.0f);
  t->Keep(keep);
  // The pasted instances, as they were.
  for (int64_t k : selection) {
    const size_t ks = static_cast<size_t>(k);
    t->boxes.insert(t->boxes.end(), &paste.boxes[4 * ks], &paste.boxes[4 * ks] + 4);
    t->labels.push_back(paste.labels[ks]);
    t->iscrowd.push_back(ks < paste.iscrowd.size() ? paste.iscrowd[ks] : 0);
    t->area.push_back(0.0f);
    t->masks.insert(t->masks.end(), &paste.masks[ks * plane], &paste.masks[ks * plane] + plane);
  }
  // area = masks.sum((-1, -2)) in float32; then the degenerate boxes go.
  std::vector<bool> valid(static_cast<size_t>(t->size()));
  for (int64_t k = 0; k < t->size(); ++k) {
    const uint8_t* m = &t->masks[static_cast<size_t>(k) * plane];
    int64_t sum = 0;
    for (size_t i = 0; i < plane; ++i) sum += m[i];
    t->area[static_cast<size_t>(k)] = static_cast<float>(sum);
    const float* b = &t->boxes[4 * static_cast<size_t>(k)];
    valid[static_cast<size_t>(k)] = !(b[2] <= b[0] || b[3] <= b[1]);  // As torch's <=.
  }
  t->Keep(valid);
}

}  // namespace flowloader::detection
