// png_codec.cc: libpng glue for ReadPngInfo and DecodePng.
//
// libpng reports errors through our error function, which longjmps back to RunJob's
// setjmp; that frame and PngJob hold only trivially destructible objects, so nothing is
// skipped. Status objects are built by the callers after RunJob returns.
//
// Every colour type ends as 8-bit RGB the way PIL's convert('RGB') does: palette and
// gray are expanded, alpha (and tRNS) is dropped, not composited. 16-bit samples keep
// their high byte (PIL does this for RGB; for 16-bit gray it clips I;16 to 255, which no
// one wants for training, so we differ there).
//
// Thread-safety: no shared state.
#include "stages/decode/internal/png_codec.h"

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "png.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"

namespace flowloader::decode::internal {
namespace {

struct PngJob {
  PngJob(absl::string_view bytes, const DecoderOptions* opts, DecodedImage* dst)
      : data(reinterpret_cast<const uint8_t*>(bytes.data())),
        size(bytes.size()),
        options(opts),
        out(dst) {}

  const uint8_t* data;
  size_t size;
  const DecoderOptions* options;
  DecodedImage* out;  // Null: read the header only.
  size_t pos = 0;
  bool truncated = false;  // The reader ran out of bytes.
  ImageInfo info;
  absl::string_view reason;
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

bool RunJob(PngJob* job) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, job, ErrorFn, WarningFn);
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

  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if ((color & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(width) * 3) {
    job->reason = reason::kUnsupported;
    std::snprintf(job->message, sizeof(job->message),
                  "PNG: colour type %d, depth %d did not convert to RGB", color, depth);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }

  DecodedImage* out = job->out;
  out->format = PixelFormat::kRgb;
  out->image.Resize(static_cast<int>(width), static_cast<int>(height), 3);
  // With interlace handling, every pass visits every row and fills in its pixels.
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < height; ++y) {
      png_read_row(png, out->image.Row(static_cast<int>(y)), nullptr);
    }
  }
  // Chunks after the last IDAT are not read: nothing there changes the pixels.
  png_destroy_read_struct(&png, &info, nullptr);
  out->covered = RectF{0, 0, static_cast<double>(width), static_cast<double>(height)};
  out->scale_x = out->scale_y = 1.0;
  return true;
}

absl::Status JobError(const PngJob& job) {
  return DecodeError(job.reason, absl::StrCat("PNG: ", job.message));
}

}  // namespace

absl::StatusOr<ImageInfo> ReadPngInfo(absl::string_view bytes,
                                      const DecoderOptions& options) {
  PngJob job(bytes, &options, nullptr);
  if (!RunJob(&job)) return JobError(job);
  return job.info;
}

absl::Status DecodePng(absl::string_view bytes, const DecoderOptions& options,
                       DecodedImage* out) {
  PngJob job(bytes, &options, out);
  if (!RunJob(&job)) return JobError(job);
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
