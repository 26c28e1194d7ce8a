// label_png.cc: PNG label maps to class indices (label_png.h), with libpng: no palette
// expansion, sub-byte samples unpacked (png_set_packing keeps their values).
#include "stages/decode/label_png.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "png.h"
#include "stages/core/sample_error.h"

namespace flowloader::decode {
namespace {

// Source is the bytes libpng reads from; `message` the first error libpng reported.
struct Source {
  absl::string_view bytes;
  size_t at = 0;
  char message[200] = {};
};

void ReadBytes(png_structp png, png_bytep out, png_size_t count) {
  Source* s = static_cast<Source*>(png_get_io_ptr(png));
  if (count > s->bytes.size() - s->at) png_error(png, "the file ends early");
  std::memcpy(out, s->bytes.data() + s->at, count);
  s->at += count;
}

void OnError(png_structp png, png_const_charp message) {
  Source* s = static_cast<Source*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof(s->message), "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

// Decode is the setjmp frame: only trivially destructible locals live in it.
bool Decode(Source* s, int64_t max_pixels, int* width, int* height,
            std::vector<uint8_t>* labels, absl::string_view* refusal) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, OnError, OnWarning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(s->message, sizeof(s->message), "out of memory");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, s, ReadBytes);
  png_read_info(png, info);
  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0;
  png_get_IHDR(png, info, &w, &h, &depth, &color, nullptr, nullptr, nullptr);
  if (color != PNG_COLOR_TYPE_PALETTE && color != PNG_COLOR_TYPE_GRAY) {
    *refusal = reason::kUnsupported;
    std::snprintf(s->message, sizeof(s->message),
                  "the label map is a colour or alpha PNG (colour type %d): a label map holds "
                  "one class index per pixel, as a palette or 8-bit grayscale PNG",
                  color);
  } else if (depth == 16) {
    *refusal = reason::kUnsupported;
    std::snprintf(s->message, sizeof(s->message),
                  "the label map has 16-bit samples: class indices must fit 8 bits");
  } else if (static_cast<int64_t>(w) * h > max_pixels) {
    *refusal = reason::kTooManyPixels;
    std::snprintf(s->message, sizeof(s->message), "the label map is %ux%u, over %lld pixels",
                  w, h, static_cast<long long>(max_pixels));
  }
  if (!refusal->empty()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (depth < 8) png_set_packing(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  *width = static_cast<int>(w);
  *height = static_cast<int>(h);
  labels->resize(static_cast<size_t>(w) * h);
  const int passes = png_set_interlace_handling(png);
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < h; ++y) {
      png_read_row(png, labels->data() + static_cast<size_t>(y) * w, nullptr);
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

absl::Status DecodeLabelPng(absl::string_view bytes, int64_t max_pixels, int* width,
                            int* height, std::vector<uint8_t>* labels) {
  if (bytes.size() < 8 || png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8)) {
    return SampleError(absl::StatusCode::kInvalidArgument, reason::kUnknownFormat,
                       "the label map is not a PNG file");
  }
  Source source;
  source.bytes = bytes;
  absl::string_view refusal;
  if (!Decode(&source, max_pixels, width, height, labels, &refusal)) {
    return SampleError(absl::StatusCode::kInvalidArgument,
                       refusal.empty() ? reason::kCorrupt : refusal,
                       absl::StrCat(refusal.empty() ? "damaged label map PNG: " : "",
                                    source.message));
  }
  return absl::OkStatus();
}

}  // namespace flowloader::decode
