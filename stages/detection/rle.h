// rle.h: COCO's run-length encoded masks and polygon rasterisation, as the COCO API
// defines them (cocoapi's maskApi.c): the masks a COCO annotation's `segmentation` means.
//
// An RLE is a list of run lengths over the mask's pixels in column-major order (x outer,
// y inner: pixel (x, y) is element x·h + y), starting with a run of zeros (possibly
// empty), alternating zeros and ones; the runs sum to h·w. COCO's JSON holds it either as
// that list (`{"counts": [..], "size": [h, w]}`, "uncompressed") or as a string
// (`"counts": "..."`): each run minus the run two before it (from the fourth run on),
// written 5 bits a character, least significant first, +48, bit 0x20 = more characters
// follow, bit 0x10 of the last = negative (sign-extended).
// A polygon [x1, y1, x2, y2, ...] is rasterised as the COCO API does: its boundary traced
// at 5× resolution, then a pixel is inside where its centre lies below a boundary crossing
// of its column (maskApi.c rleFrPoly). This is not PIL's ImageDraw.polygon, which also
// fills the pixels its outline touches: the two differ on boundary pixels only (tested in
// detection_parity_test.py, which says by how much).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_DETECTION_RLE_H_
#define FLOWLOADER_STAGES_DETECTION_RLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowloader::detection {

// Rle is one mask of height h and width w as its run lengths.
struct Rle {
  int h = 0;
  int w = 0;
  std::vector<uint32_t> counts;
};

// RleFromString decodes COCO's compressed string form. InvalidArgument on a character
// outside the alphabet, a string that ends inside a number, or a negative run.
absl::StatusOr<Rle> RleFromString(const std::string& text, int h, int w);
// RleToString encodes COCO's compressed string form (cocoapi's rleToString).
std::string RleToString(const Rle& rle);

// RleFromPolygon rasterises polygon `xy` (x1, y1, x2, y2, ...; at least 3 points) on an
// h × w canvas exactly as cocoapi's rleFrPoly.
Rle RleFromPolygon(const std::vector<double>& xy, int h, int w);

// RleFromMask encodes a row-major h × w 0/1 mask (any non-zero byte is 1).
Rle RleFromMask(const uint8_t* mask, int h, int w);

// CheckRle: the runs must sum to exactly h·w (COCO's definition); otherwise
// InvalidArgument "RLE counts sum to S, the mask has H×W = N pixels".
absl::Status CheckRle(const Rle& rle);

// DecodeRle ORs the mask into `mask`, a row-major h × w plane (so several parts of one
// annotation merge, as COCO's merge does). The RLE must pass CheckRle.
void DecodeRleInto(const Rle& rle, uint8_t* mask);

// DecodeRleIntoWindow ORs the part of the mask inside the window of width × height
// pixels at (x, y) of the canvas into `window` (row-major, width × height): what
// DecodeRleInto writes there. Pixels outside the window are left out.
void DecodeRleIntoWindow(const Rle& rle, int x, int y, int width, int height,
                         uint8_t* window);

// RleArea is the number of pixels set (COCO's area of a mask).
int64_t RleArea(const Rle& rle);

// RleBox is the mask's tight box [x, y, w, h] (cocoapi's rleToBbox); all 0 when empty.
void RleBox(const Rle& rle, double box[4]);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_RLE_H_
