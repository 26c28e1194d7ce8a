// mosaic.h: YOLO's mosaic: four images of a batch on one canvas, with their boxes and
// instance masks, as YOLOv5's LoadImagesAndLabels.load_mosaic places them
// (ultralytics/yolov5 utils/dataloaders.py, load_mosaic; ultralytics' Mosaic._mosaic4 is
// the same placement) followed by its random_perspective's border crop.
//
// YOLOv5 on an s × s image size: a 2s × 2s canvas filled with 114; a centre (xc, yc),
// each int(uniform(s // 2, 2s - s // 2)) (mosaic_border = -s // 2); the image itself and
// three random others (random.choices, with replacement), shuffled, placed top-left,
// top-right, bottom-left, bottom-right of the centre, each clipped to the canvas; boxes
// shifted with their image and clipped to the canvas. random_perspective then crops the
// canvas' centre s × s window (border = mosaic_border) and keeps the boxes box_candidates
// accepts: width and height > wh_thr (2 px), visible area / area on the canvas > area_thr
// (0.1; YOLOv5 takes 0.01 when it warps segments), aspect ratio < ar_thr (100).
//
// Here the images are a batch's rows (all H × W, the batch's size) and the partners are
// rows of the same batch; the output is the H × W window at (W // 2, H // 2) of the 2W × 2H
// canvas (random_perspective with degrees, translate, scale, shear and perspective 0:
// its warp is then that integer shift). Instance masks move as their image (shifted,
// cropped, zero elsewhere), and are dropped with their box. Boxes stay the clipped boxes
// (as torchvision v2's crop), not recomputed from the masks; area and iscrowd are carried.
// Keypoints move as ultralytics' pose mosaic moves them (YOLOv5 has none): shifted with
// their tile, clipped to the canvas, shifted by the crop, and marked unlabelled (v = 0)
// where they leave the canvas or the window (mosaic.cc, MoveKeypoints).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_DETECTION_MOSAIC_H_
#define FLOWLOADER_STAGES_DETECTION_MOSAIC_H_

#include <array>
#include <cstdint>

#include "stages/core/rng.h"
#include "stages/detection/batch_image.h"
#include "stages/detection/targets.h"

namespace flowloader::detection {

struct MosaicOptions {
  double p = 1.0;           // Probability a row becomes a mosaic.
  double center_lo = 0.5;   // The centre is drawn in [lo, hi) × the side, on a canvas of
  double center_hi = 1.5;   // 2 × the side; 0 <= lo <= hi <= 2 (YOLOv5: 0.5, 1.5).
  float fill = 114;         // The canvas' value where no image lands (tensor units).
  double min_size = 2;      // box_candidates' wh_thr: width and height must exceed it.
  double area_ratio = 0.1;  // area_thr: visible area / area on the canvas must exceed it.
  double max_aspect_ratio = 100;  // ar_thr: max(w / h, h / w) must be below it.
};

// MosaicDraw is one output row's draw: the centre on the 2W × 2H canvas and the batch rows
// of the four tiles (top-left, top-right, bottom-left, bottom-right).
struct MosaicDraw {
  bool applied = false;
  int xc = 0, yc = 0;
  std::array<int64_t, 4> tiles = {0, 0, 0, 0};
};

// DrawMosaic draws row `row`'s mosaic among `rows` rows of height × width images: p's coin,
// then yc and xc (YOLOv5's order), three partners, then the four shuffled.
MosaicDraw DrawMosaic(const MosaicOptions& options, int64_t row, int64_t rows, int height,
                      int width, SampleRng& rng);

// TilePlacement is where tile i lands: canvas rectangle [x1a, x2a) × [y1a, y2a), taken from
// the image's rectangle of the same size at (x1b, y1b).
struct TilePlacement {
  int x1a = 0, y1a = 0, x2a = 0, y2a = 0;
  int x1b = 0, y1b = 0;
};

// PlaceTile is load_mosaic's placement of tile i (0..3) of a w × h image around (xc, yc)
// on a 2w × 2h canvas.
TilePlacement PlaceTile(int i, int xc, int yc, int w, int h);

// Mosaic writes the mosaic of tiles[0..3] (images and xyxy targets, all out's size) into
// `out` and *out_targets (xyxy, out's canvas; image_id left to the caller). `out` must
// not be one of the tiles.
void Mosaic(const MosaicDraw& draw, const MosaicOptions& options,
            const std::array<const BatchImage*, 4>& tiles,
            const std::array<const Targets*, 4>& tile_targets, const BatchImage& out,
            Targets* out_targets);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_MOSAIC_H_
