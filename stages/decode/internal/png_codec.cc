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
// Region decode (KeptBox, internal/region_rows.h, shared with the other row-decoded
// formats): rows come one at a time from png_read_row into a one-row buffer and only the
// region's pixels are kept. Interlace handling stays off, so an
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
#include "stages/decode/internal/region_rows.h"

namespace flowloader::decode::internal {
namespace {

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

// ReadAllRows reads every row of every pass (rows below the box too: see DecodePng) into
// `row` and hands each to the writer (region_rows.h), which for an Adam7 file takes rows
// in any order.
void ReadAllRows(png_structp png, const RegionWriter& w, png_uint_32 width,
                 png_uint_32 height, uint8_t* row) {
  const int passes = w.any_order ? 7 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const Pass p = PassGeometry(pass, w.any_order, width, height);
    if (p.rows == 0 || p.cols == 0) continue;  // libpng skips empty passes too.
    const RowSpan span{p.first_col, p.col_step, p.cols};
    for (int j = 0; j < p.rows; ++j) {
      png_read_row(png, row, nullptr);
      const int y = p.first_row + j * p.row_step;
      KeepRow(w, span, y, row);
      FinishRow(w, y);
    }
  }
  FinishOutput(w);
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
  if (!PlanKeptBox(*job->options, job->request, static_cast<int>(width),
                   static_cast<int>(height), &box, job->message, sizeof(job->message))) {
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
