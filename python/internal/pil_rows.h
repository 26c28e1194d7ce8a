// pil_rows.h: a PIL image's own pixels moved through gather maps, for the eager path
// (eager.h). Pillow keeps an RGB image as rows of 4 bytes a pixel (R G B and a padding
// byte, 255) and an L image as rows of 1, reached through its row pointers
// (Image.core.unsafe_ptrs' `image`). An eager call reads them into the ops' working RGB
// image, and writes a new PIL image from it; ops that only move pixels
// (augment::Op::Gather: flips, crops, pads) fold into those two passes as Maps, and a
// list of only such ops is one pass from the source rows to the new image's rows, as
// PIL's own transpose and crop are. Point ops (augment::Op::PointTables) fold into the
// same pass as tables (MapRows), as PIL's point() is one pass.
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_PYTHON_INTERNAL_PIL_ROWS_H_
#define FLOWLOADER_PYTHON_INTERNAL_PIL_ROWS_H_

#include <cstdint>
#include <cstring>

#include "stages/augment/ops/op.h"
#include "stages/core/image.h"

namespace flowloader::python_internal::pil_rows {

// Maps is a composition of gathers: output pixel (x, y) is source pixel
// (g.x_src[x], g.y_src[y]), or g.fill where either is -1 (`filled`: some index is -1).
struct Maps {
  augment::GatherMaps g;
  bool filled = false;
};

// BoxMaps is the box (left, top, width, height) of the source.
Maps BoxMaps(int left, int top, int width, int height);

// Then makes `acc` the gather `next` after it (acc's output is next's input). Returns
// false, `acc` unchanged, where both fill with different colours (then `next` is run as
// an op).
bool Then(Maps& acc, const augment::GatherMaps& next);

// WholeThen is BoxMaps of a whole width × height image, Then `next`, in place: next's
// own maps, those outside the image made -1 (the fill).
Maps WholeThen(augment::GatherMaps&& next, int width, int height);

// ReadRows writes `dst` (RGB; L rows as three equal channels) from PIL rows through `m`.
void ReadRows(const uint8_t* const* rows, bool rgb, const Maps& m, Image* dst);

// WriteRows writes PIL rows (RGB, or L from channel 0) from the RGB `src` through `m`.
void WriteRows(const Image& src, const Maps& m, bool rgb, uint8_t* const* rows);

// CopyRows writes PIL rows from PIL rows of the same mode through `m`.
void CopyRows(const uint8_t* const* src, bool rgb, const Maps& m, uint8_t* const* dst);

// Luts are a table per channel (augment::Op::PointTables).
using Luts = uint8_t[3][256];

// CountValues adds to `h` the counts of each channel's values in the PIL rows through
// `m` (L rows: the one channel's counts in all three), which must not fill.
void CountValues(const uint8_t* const* rows, bool rgb, const Maps& m, uint32_t (&h)[3][256]);

// Extremes writes each channel's lowest and highest value in the PIL rows through `m`
// (L: the one channel's, in all three) and returns true, where m reads each row forward
// or reversed without filling; else false.
bool Extremes(const uint8_t* const* rows, bool rgb, const Maps& m, int (&lo)[3], int (&hi)[3]);

// MapRows writes PIL rows from PIL rows of the same mode through `m` and then the
// tables (L: luts[0]): CopyRows and a pass of the point ops in one.
void MapRows(const uint8_t* const* src, bool rgb, const Maps& m, const Luts& luts,
             uint8_t* const* dst);

}  // namespace flowloader::python_internal::pil_rows

#endif  // FLOWLOADER_PYTHON_INTERNAL_PIL_ROWS_H_
