// png_codec.cc: libpng glue for ReadPngInfo and DecodePng.
//
// libpng reports errors through our error function, which longjmps back to RunJob's
// setjmp; that frame, the helpers it calls and PngJob hold only trivially destructible
// objects, so nothing is skipped. The row and sum buffers are DecodePng's, above the
// jump. Status objects are built by the callers after RunJob returns.
//
// Every colour type ends as 8-bit RGB the way PIL's convert('RGB') does: palette and
// gray are expanded, alpha (and tRNS) is dropped, not composited. 16-bit samples keep
// their high byte (PIL does this for RGB; for 16-bit gray it clips I;16 to 255, which no
// one wants for training, so we differ there).
//
// Region decode (KeptBox): rows come one at a time from png_read_row into a one-row
// buffer and only the region's pixels are kept. Interlace handling stays off, so an
// Adam7 file's rows come pass by pass at their pass's width and each pixel is placed by
// hand: no full-size de-interlacing buffer. With a target size, pixels are averaged over
// 2^i × 2^j blocks (the largest that keep at least the target's size, like JPEG's DCT
// scaling), so the output stays under twice the target per side whatever the crop.
//
// Memory: libpng allocates through CountingMalloc, so a test can bound it (PngMemory).
// Ancillary chunks except tRNS are discarded unread: a text or ICC chunk can inflate to
// libpng's 8 MB chunk limit, up to 1000 chunks per file, and none of them changes the
// pixels (no gamma or colour management is applied, as PIL's convert('RGB') applies none).
//
// Thread-safety: no shared state.
#include "stages/decode/internal/png_codec.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "png.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"

namespace flowloader::decode::internal {
namespace {

// kMaxBoxShift bounds a block side at 2^12 so that a block's sum, at most
// 255 × 2^(12 + 12) per channel, fits a uint32_t.
constexpr int kMaxBoxShift = 12;

struct PngJob {
  const uint8_t* data;
  size_t size;
  const DecoderOptions* options;
  const RegionRequest* request;  // Null: decode everything at full scale.
  DecodedImage* out;             // Null: read the header only.
  std::vector<uint8_t>* row;     // One decoded row (DecodePng's).
  std::vector<uint32_t>* sums;   // Block sums while averaging (DecodePng's).
  size_t pos = 0;
  bool truncated = false;  // The reader ran out of bytes.
  size_t libpng_bytes = 0;
  size_t libpng_peak_bytes = 0;
  ImageInfo info;
  absl::string_view reason;  // A reason:: constant; empty means a bad RegionRequest.
  char message[256] = "";
};

void ReadFn(png_structp png, png_bytep dst, size_t length) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (length > job->size - job->pos) {
    job->truncated = true;
    png_error(png, "file ends early");
  }
  std::memcpy(dst, job->data + job->pos, length);
  job->pos += length;
}

void ErrorFn(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  job->reason = job->truncated ? reason::kTruncated : reason::kCorrupt;
  std::snprintf(job->message, sizeof(job->message), "%s", msg);
  png_longjmp(png, 1);
}

void WarningFn(png_structp /*png*/, png_const_charp /*msg*/) {}  // Keep stderr clean.

// Each block libpng allocates carries its size in a header this long, which keeps the
// payload as aligned as malloc's.
constexpr size_t kBlockHeader = alignof(std::max_align_t);

png_voidp CountingMalloc(png_structp png, png_alloc_size_t size) {
  if (size > SIZE_MAX - kBlockHeader) return nullptr;  // libpng reports out of memory.
  auto* block = static_cast<unsigned char*>(std::malloc(size + kBlockHeader));
  if (block == nullptr) return nullptr;
  std::memcpy(block, &size, sizeof(size));
  auto* job = static_cast<PngJob*>(png_get_mem_ptr(png));
  job->libpng_bytes += size;
  job->libpng_peak_bytes = std::max(job->libpng_peak_bytes, job->libpng_bytes);
  return block + kBlockHeader;
}

void CountingFree(png_structp png, png_voidp ptr) {
  if (ptr == nullptr) return;
  unsigned char* block = static_cast<unsigned char*>(ptr) - kBlockHeader;
  png_alloc_size_t size = 0;
  std::memcpy(&size, block, sizeof(size));
  static_cast<PngJob*>(png_get_mem_ptr(png))->libpng_bytes -= size;
  std::free(block);
}

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

// BoxShift is the largest s (up to kMaxBoxShift) with extent / 2^s >= target: at least
// `target` decoded pixels remain, and fewer than twice that unless the cap binds.
int BoxShift(double extent, int target) {
  int s = 0;
  while (s < kMaxBoxShift && extent / static_cast<double>(2 << s) >= target) ++s;
  return s;
}

// BlocksEnd is where whole blocks of 2^shift starting at `begin` first reach `end`,
// clamped to `limit` (the image edge).
int BlocksEnd(int begin, int end, int shift, int limit) {
  const int64_t blocks = ((int64_t{end} - begin) + (int64_t{1} << shift) - 1) >> shift;
  return static_cast<int>(std::min<int64_t>(limit, begin + (blocks << shift)));
}

// PlanKeptBox sets `box` from the job's request (everything at full scale without one).
// It returns false for a request that is not finite or empty once clamped to the image,
// leaving the job's reason empty (InvalidArgument, as for JPEG).
bool PlanKeptBox(PngJob* job, int width, int height, KeptBox* box) {
  *box = KeptBox{0, 0, width, height, 0, 0};
  const RegionRequest* r = job->request;
  if (r == nullptr) return true;
  const RectF& g = r->region;
  if (!(std::isfinite(g.x) && std::isfinite(g.y) && std::isfinite(g.w) &&
        std::isfinite(g.h))) {
    std::snprintf(job->message, sizeof(job->message), "region request is not finite");
    return false;
  }
  const double rx0 = std::max(0.0, g.x);
  const double ry0 = std::max(0.0, g.y);
  const double rx1 = std::min<double>(width, g.x + g.w);
  const double ry1 = std::min<double>(height, g.y + g.h);
  if (!(rx1 > rx0 && ry1 > ry0)) {
    std::snprintf(job->message, sizeof(job->message),
                  "region request is empty after clamping to the image");
    return false;
  }
  if (job->options->png_box_scaling && r->target_width > 0 && r->target_height > 0) {
    box->shift_x = BoxShift(rx1 - rx0, r->target_width);
    box->shift_y = BoxShift(ry1 - ry0, r->target_height);
  }
  box->x0 = static_cast<int>(std::floor(rx0));
  box->y0 = static_cast<int>(std::floor(ry0));
  box->x1 = BlocksEnd(box->x0, static_cast<int>(std::ceil(rx1)), box->shift_x, width);
  box->y1 = BlocksEnd(box->y0, static_cast<int>(std::ceil(ry1)), box->shift_y, height);
  return true;
}

// Pass is one Adam7 pass (the whole image when not interlaced): its pixel (i, j) is
// image pixel (first_col + i * col_step, first_row + j * row_step).
struct Pass {
  int first_row, row_step, first_col, col_step, rows, cols;
};

Pass PassGeometry(int pass, bool interlaced, png_uint_32 width, png_uint_32 height) {
  if (!interlaced) return Pass{0, 1, 0, 1, static_cast<int>(height), static_cast<int>(width)};
  return Pass{PNG_PASS_START_ROW(pass), 1 << PNG_PASS_ROW_SHIFT(pass),
              PNG_PASS_START_COL(pass), 1 << PNG_PASS_COL_SHIFT(pass),
              static_cast<int>(PNG_PASS_ROWS(height, pass)),
              static_cast<int>(PNG_PASS_COLS(width, pass))};
}

// FirstPassColumnAt is the index of the first pixel of `p` at image column >= x.
int FirstPassColumnAt(const Pass& p, int x) {
  if (x <= p.first_col) return 0;
  return std::min(p.cols, (x - p.first_col + p.col_step - 1) / p.col_step);
}

// GrowToRows makes the first `rows` rows of `image` addressable. Its buffer's capacity
// is reserved up front; growing it row by row touches only the pages decoded so far.
void GrowToRows(Image* image, int rows) {
  const size_t need = image->stride() * static_cast<size_t>(rows);
  if (image->pixels.size() < need) image->pixels.resize(need);
}

// RegionWriter puts the kept pixels of decoded rows into the output image: copied at
// full scale, else summed per block and averaged once a block row is complete (one
// block row of sums at a time) or, for Adam7 files, whose passes revisit every block,
// at the end (sums for the whole output).
struct RegionWriter {
  KeptBox box;
  bool interlaced;
  Image* image;
  uint32_t* sums;  // Null at full scale.
};

// StartOutput sizes `out` for the box: capacity for all of it, bytes only as rows are
// written, except at full scale for Adam7, whose first pass already reaches the last
// rows. A file whose data fails early so costs the rows it decoded, not its header size.
RegionWriter StartOutput(const KeptBox& box, bool interlaced, DecodedImage* out,
                         std::vector<uint32_t>* sums) {
  Image& image = out->image;
  image.width = box.out_width();
  image.height = box.out_height();
  image.channels = 3;
  const size_t total = image.stride() * static_cast<size_t>(image.height);
  image.pixels.clear();  // Nothing to copy if reserve reallocates.
  image.pixels.reserve(total);
  if (interlaced && !box.averaged()) image.pixels.resize(total);
  const size_t sum_rows = interlaced ? static_cast<size_t>(image.height) : 1;
  sums->assign(box.averaged() ? image.stride() * sum_rows : 0, 0);
  out->format = PixelFormat::kRgb;
  out->covered = RectF{static_cast<double>(box.x0), static_cast<double>(box.y0),
                       static_cast<double>(box.x1 - box.x0),
                       static_cast<double>(box.y1 - box.y0)};
  out->scale_x = 1.0 / (1 << box.shift_x);
  out->scale_y = 1.0 / (1 << box.shift_y);
  return RegionWriter{box, interlaced, &image, box.averaged() ? sums->data() : nullptr};
}

// KeepRow takes what the box needs of image row `y`, decoded as `rgb` (pass `p`'s pixels).
void KeepRow(const RegionWriter& w, const Pass& p, int y, const uint8_t* rgb) {
  const KeptBox& b = w.box;
  if (y < b.y0 || y >= b.y1) return;
  const int begin = FirstPassColumnAt(p, b.x0);
  const int end = FirstPassColumnAt(p, b.x1);
  if (begin >= end) return;
  const uint8_t* src = rgb + 3 * static_cast<size_t>(begin);
  const int x_begin = p.first_col + begin * p.col_step - b.x0;  // Box column of `begin`.
  if (w.sums == nullptr) {
    GrowToRows(w.image, y - b.y0 + 1);
    uint8_t* dst = w.image->Row(y - b.y0) + 3 * static_cast<size_t>(x_begin);
    if (p.col_step == 1) {
      std::memcpy(dst, src, 3 * static_cast<size_t>(end - begin));
      return;
    }
    for (int i = begin; i < end; ++i, src += 3, dst += 3 * p.col_step) {
      std::memcpy(dst, src, 3);
    }
    return;
  }
  const size_t block_row = w.interlaced ? static_cast<size_t>((y - b.y0) >> b.shift_y) : 0;
  uint32_t* row_sums = w.sums + block_row * w.image->stride();
  for (int i = begin, x = x_begin; i < end; ++i, x += p.col_step, src += 3) {
    uint32_t* s = row_sums + 3 * static_cast<size_t>(x >> b.shift_x);
    s[0] += src[0];
    s[1] += src[1];
    s[2] += src[2];
  }
}

// AverageBlockRow writes output row `oy` from its blocks' sums: each block's mean,
// rounded to nearest, over the pixels it has (fewer on the image's right/bottom edge).
void AverageBlockRow(const KeptBox& b, int oy, const uint32_t* sums, Image* image) {
  GrowToRows(image, oy + 1);
  const int rows = std::min(1 << b.shift_y, b.y1 - (b.y0 + (oy << b.shift_y)));
  uint8_t* dst = image->Row(oy);
  for (int ox = 0; ox < image->width; ++ox, sums += 3, dst += 3) {
    const int cols = std::min(1 << b.shift_x, b.x1 - (b.x0 + (ox << b.shift_x)));
    const uint32_t n = static_cast<uint32_t>(rows) * static_cast<uint32_t>(cols);
    for (int c = 0; c < 3; ++c) dst[c] = static_cast<uint8_t>((sums[c] + n / 2) / n);
  }
}

// FinishBlockRow averages the block row that image row `y` completes, if it does (non-
// interlaced files, whose rows come in order), and clears the sums for the next one.
void FinishBlockRow(const RegionWriter& w, int y) {
  const KeptBox& b = w.box;
  if (y < b.y0 || y >= b.y1) return;
  const int r = y - b.y0;
  if (((r + 1) & ((1 << b.shift_y) - 1)) != 0 && y + 1 != b.y1) return;
  AverageBlockRow(b, r >> b.shift_y, w.sums, w.image);
  std::fill(w.sums, w.sums + w.image->stride(), 0u);
}

// ReadAllRows reads every row of every pass (rows below the box too: see DecodePng) into
// `row` and hands each to the writer.
void ReadAllRows(png_structp png, const RegionWriter& w, png_uint_32 width,
                 png_uint_32 height, uint8_t* row) {
  const int passes = w.interlaced ? 7 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const Pass p = PassGeometry(pass, w.interlaced, width, height);
    if (p.rows == 0 || p.cols == 0) continue;  // libpng skips empty passes too.
    for (int j = 0; j < p.rows; ++j) {
      png_read_row(png, row, nullptr);
      const int y = p.first_row + j * p.row_step;
      KeepRow(w, p, y, row);
      if (w.sums != nullptr && !w.interlaced) FinishBlockRow(w, y);
    }
  }
  if (w.sums != nullptr && w.interlaced) {
    for (int oy = 0; oy < w.image->height; ++oy) {
      AverageBlockRow(w.box, oy, w.sums + static_cast<size_t>(oy) * w.image->stride(),
                      w.image);
    }
  }
}

// SetRgbTransforms asks libpng for 8-bit RGB rows whatever the colour type.
void SetRgbTransforms(png_structp png, int color, int depth) {
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if ((color & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_strip_alpha(png);
}

bool RunJob(PngJob* job) {
  png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, job, ErrorFn, WarningFn,
                                             job, CountingMalloc, CountingFree);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    job->reason = reason::kStageError;
    std::snprintf(job->message, sizeof(job->message), "out of memory");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, job, ReadFn);
  // libpng's own limit (1e6 per side) would fail with a generic error; ours names it.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_read_info(png, info);

  png_uint_32 width = 0, height = 0;
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, nullptr, nullptr);
  job->reason = SizeProblem(width, height, *job->options, job->message,
                            sizeof(job->message));
  if (!job->reason.empty()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (job->out == nullptr) {
    const bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    job->info.format = Format::kPng;
    job->info.width = static_cast<int>(width);
    job->info.height = static_cast<int>(height);
    job->info.channels = color == PNG_COLOR_TYPE_PALETTE ? (trns ? 4 : 3)
                                                         : png_get_channels(png, info);
    png_destroy_read_struct(&png, &info, nullptr);
    return true;
  }

  KeptBox box;
  if (!PlanKeptBox(job, static_cast<int>(width), static_cast<int>(height), &box)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  SetRgbTransforms(png, color, depth);
  png_read_update_info(png, info);
  const size_t row_bytes = static_cast<size_t>(width) * 3;
  if (png_get_rowbytes(png, info) != row_bytes) {
    job->reason = reason::kUnsupported;
    std::snprintf(job->message, sizeof(job->message),
                  "PNG: colour type %d, depth %d did not convert to RGB", color, depth);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  // libpng writes a full row's bytes even for an Adam7 pass's shorter rows.
  job->row->resize(row_bytes);
  const RegionWriter writer =
      StartOutput(box, interlace != PNG_INTERLACE_NONE, job->out, job->sums);
  ReadAllRows(png, writer, width, height, job->row->data());
  // Chunks after the last IDAT are not read: nothing there changes the pixels.
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

absl::Status JobError(const PngJob& job) {
  if (job.reason.empty()) return absl::InvalidArgumentError(job.message);
  return DecodeError(job.reason, absl::StrCat("PNG: ", job.message));
}

}  // namespace

absl::StatusOr<ImageInfo> ReadPngInfo(absl::string_view bytes,
                                      const DecoderOptions& options) {
  PngJob job{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &options,
             nullptr, nullptr, nullptr, nullptr};
  if (!RunJob(&job)) return JobError(job);
  return job.info;
}

absl::Status DecodePng(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out, PngMemory* memory) {
  std::vector<uint8_t> row;
  std::vector<uint32_t> sums;
  PngJob job{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &options,
             request, out, &row, &sums};
  const bool ok = RunJob(&job);
  if (memory != nullptr) {
    memory->libpng_peak_bytes = job.libpng_peak_bytes;
    memory->scratch_bytes = row.capacity() + sums.capacity() * sizeof(uint32_t);
  }
  if (!ok) return JobError(job);
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
