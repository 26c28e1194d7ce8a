// region_rows.h: keeping the planned crop of an image decoded row by row, for every
// codec that hands over rows (PNG, TIFF, GIF, BMP, PPM/PGM).
//
// A codec decodes one row of the file's width at a time and passes it here; only the
// requested region's pixels are kept, averaged over power-of-two blocks where the
// request's target size allows (like JPEG's DCT scaling), so what a decode holds is its
// output (under 2 × target + 2 per side with a target, the region without one) plus the
// codec's one row. Rows may come in order (every format's usual case: block rows are
// averaged as soon as they are complete, one block row of sums is held) or in any order
// (Adam7 PNG passes, interlaced GIF: sums for the whole output are held, still
// output-sized).
//
// The functions are plain C++ on trivially destructible values on purpose: PNG calls
// them between libpng calls that may longjmp.
//
// Thread-safety: free functions; each decode owns its writer and buffers.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_REGION_ROWS_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_REGION_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "stages/core/image.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// kMaxBoxShift bounds a block side at 2^12 so that a block's sum, at most
// 255 × 2^(12 + 12) per channel, fits a uint32_t.
inline constexpr int kMaxBoxShift = 12;

// BoxShift is the largest s (up to kMaxBoxShift) with extent / 2^s >= target: at least
// `target` decoded pixels remain, and fewer than twice that unless the cap binds.
int BoxShift(double extent, int target);


// KeptBox is the part of the image a decode keeps: original pixels [x0, x1) × [y0, y1),
// averaged over blocks of 2^shift_x × 2^shift_y pixels anchored at (x0, y0). x1 and y1
// lie a whole number of blocks past x0 and y0, or at the image edge, so only blocks on
// the image's right and bottom edges are partial.
struct KeptBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int shift_x = 0, shift_y = 0;

  int out_width() const { return ((x1 - x0) + (1 << shift_x) - 1) >> shift_x; }
  int out_height() const { return ((y1 - y0) + (1 << shift_y) - 1) >> shift_y; }
  bool averaged() const { return shift_x > 0 || shift_y > 0; }
};

// PlanKeptBox sets `box` for a width × height image from `request` (everything at full
// scale when it is null; blocks only with options.png_box_scaling). It returns false for
// a request that is not finite or empty once clamped to the image, with the reason in
// `message` (the caller reports InvalidArgument, as for JPEG).
bool PlanKeptBox(const DecoderOptions& options, const RegionRequest* request, int width, int height,
                 KeptBox* box, char* message, size_t capacity);

// RowSpan says which image pixels a decoded row holds: its pixel i is image column
// first_col + i * col_step (an Adam7 pass has col_step > 1; every other row is 1).
struct RowSpan {
  int first_col = 0;
  int col_step = 1;
  int cols = 0;
};

// RegionWriter puts the kept pixels of decoded rows into the output image: copied at
// full scale, else summed per block and averaged once a block row is complete (rows in
// order: one block row of sums at a time) or at the end (any order: sums for the whole
// output).
struct RegionWriter {
  KeptBox box;
  bool any_order = false;
  Image* image = nullptr;
  uint32_t* sums = nullptr;  // Null at full scale.
};

// StartOutput sizes `out` for the box: capacity for all of it, bytes only as rows are
// written (except at full scale in any order, where any row may come first), so a file
// whose data fails early costs the rows it decoded, not its header size. `sums` is the
// caller's, kept alive until FinishOutput.
RegionWriter StartOutput(const KeptBox& box, bool any_order, DecodedImage* out,
                         std::vector<uint32_t>* sums);

// KeepRow takes what the box needs of image row `y`, decoded as 8-bit RGB `rgb` (the
// pixels `span` describes).
void KeepRow(const RegionWriter& w, const RowSpan& span, int y, const uint8_t* rgb);

// FinishRow averages the block row that image row `y` completes, if it does (rows in
// order only; a no-op otherwise), and clears the sums for the next one.
void FinishRow(const RegionWriter& w, int y);

// FinishOutput averages every block (rows in any order only; a no-op otherwise).
void FinishOutput(const RegionWriter& w);

// RowSink is the whole protocol for a codec whose rows are full-width RGB: Start, then
// Put each row (in order unless any_order), then Finish.
class RowSink {
 public:
  // Start plans the box for a width × height image; InvalidArgument for a bad request.
  absl::Status Start(const DecoderOptions& options, const RegionRequest* request, int width,
                     int height, bool any_order, DecodedImage* out);
  // Put keeps image row `y` (width RGB pixels).
  void Put(int y, const uint8_t* rgb);
  void Finish() { FinishOutput(writer_); }
  // Bytes of our own scratch (block sums), for memory accounting in tests.
  size_t scratch_bytes() const { return sums_.capacity() * sizeof(uint32_t); }

 private:
  std::vector<uint32_t> sums_;
  RegionWriter writer_;
  RowSpan span_;
};

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_REGION_ROWS_H_
