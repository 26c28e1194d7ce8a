// webp_codec.cc: ReadWebpInfo and DecodeWebp (see more_codecs.h), through libwebp.
//
// PIL decodes WebP with the same libwebp (its WebPAnimDecoder, default options: fancy
// upsampling), so a full decode here is PIL's pixels. Alpha is dropped as
// convert('RGB') drops it (libwebp's MODE_RGB gives the stored colour, not a blend).
// Animated files are refused as unsupported: their first frame needs libwebpdemux.
//
// A region decode asks libwebp to crop to the kept box (region_rows.h's KeptBox, so
// PNG and WebP plan alike; padded so that the region's pixels equal a full decode's,
// its origin even as libwebp requires) and, where the box would be averaged, to rescale the crop to
// the box's output size with its own area-averaging rescaler; `scale_x` is then that
// size over the crop's (near 1/2^i, not exactly). libwebp writes straight into the
// output buffer.
//
// libwebp stops decoding at the crop's bottom row, so acceptance could depend on the
// crop; WebPDecode first checks the RIFF and VP8/VP8L chunk sizes against the bytes it
// has, so a cut-off file is refused (truncated) whatever the crop.
//
// Thread-safety: no shared state; each call owns its decoder config.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/region_rows.h"
#include "webp/decode.h"

namespace flowloader::decode::internal {
namespace {

absl::Status StatusError(VP8StatusCode code, const char* during) {
  switch (code) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
    case VP8_STATUS_SUSPENDED:
      return DecodeError(reason::kTruncated, absl::StrCat("WebP: file ends early (", during, ")"));
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return DecodeError(reason::kUnsupported,
                         absl::StrCat("WebP: unsupported feature (", during, ")"));
    case VP8_STATUS_OUT_OF_MEMORY:
      return DecodeError(reason::kStageError, absl::StrCat("WebP: out of memory (", during, ")"));
    default:
      return DecodeError(reason::kCorrupt,
                         absl::StrFormat("WebP: bitstream error %d (%s)", code, during));
  }
}

absl::Status ReadFeatures(absl::string_view bytes, const DecoderOptions& options,
                          WebPBitstreamFeatures* features) {
  const VP8StatusCode code =
      WebPGetFeatures(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), features);
  if (code != VP8_STATUS_OK) return StatusError(code, "header");
  if (features->has_animation) {
    return DecodeError(reason::kUnsupported, "WebP: animated files are not supported");
  }
  char message[160];
  const absl::string_view problem =
      SizeProblem(features->width, features->height, options, message, sizeof(message));
  if (!problem.empty()) return DecodeError(problem, absl::StrCat("WebP: ", message));
  // A lossless (VP8L) file is decoded through an ARGB image of the whole file, 4 B a
  // pixel, whatever the crop or target size.
  if (features->format == 2) {
    const int64_t need = int64_t{features->width} * features->height * 4;
    const absl::string_view over = MemoryProblem(need, "lossless WebP", features->width,
                                                 features->height, options, message,
                                                 sizeof(message));
    if (!over.empty()) return DecodeError(over, absl::StrCat("WebP: ", message));
  }
  return absl::OkStatus();
}

// kUpsamplingMargin is how far past a crop's edge libwebp's fancy upsampling differs
// from a full decode: it interpolates chroma from the neighbouring chroma row and column
// (2 luma pixels away), which a crop does not have at its own edges.
constexpr double kUpsamplingMargin = 2;

// PaddedEvenRegion grows the region by kUpsamplingMargin on each side and moves its
// top-left corner down to even coordinates, because libwebp snaps a crop's origin to
// even values (chroma is stored at half resolution) and we must report the box it
// really decodes. Pixels inside the requested region then equal a full decode's.
RegionRequest PaddedEvenRegion(const RegionRequest& request) {
  RegionRequest r = request;
  const RectF& g = request.region;
  if (!(std::isfinite(g.x) && std::isfinite(g.y) && std::isfinite(g.w) && std::isfinite(g.h))) {
    return r;  // PlanKeptBox refuses it.
  }
  r.region.x = 2 * std::floor(std::max(0.0, g.x - kUpsamplingMargin) / 2);
  r.region.y = 2 * std::floor(std::max(0.0, g.y - kUpsamplingMargin) / 2);
  r.region.w = g.x + g.w + kUpsamplingMargin - r.region.x;
  r.region.h = g.y + g.h + kUpsamplingMargin - r.region.y;
  return r;
}

// SetCrop asks libwebp for `box`: cropped when it is not the whole image, rescaled to
// its output size when it is averaged.
void SetCrop(const KeptBox& box, int width, int height, WebPDecoderOptions* o) {
  const int w = box.x1 - box.x0;
  const int h = box.y1 - box.y0;
  if (w != width || h != height) {
    o->use_cropping = 1;
    o->crop_left = box.x0;
    o->crop_top = box.y0;
    o->crop_width = w;
    o->crop_height = h;
  }
  if (box.averaged()) {
    o->use_scaling = 1;
    o->scaled_width = box.out_width();
    o->scaled_height = box.out_height();
  }
}

}  // namespace

absl::StatusOr<ImageInfo> ReadWebpInfo(absl::string_view bytes, const DecoderOptions& options) {
  WebPBitstreamFeatures f;
  if (absl::Status s = ReadFeatures(bytes, options, &f); !s.ok()) return s;
  return ImageInfo{Format::kWebp, f.width, f.height, f.has_alpha ? 4 : 3};
}

absl::Status DecodeWebp(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, DecodedImage* out) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) {
    return DecodeError(reason::kStageError, "WebP: libwebp version mismatch");
  }
  if (absl::Status s = ReadFeatures(bytes, options, &config.input); !s.ok()) return s;
  const int width = config.input.width;
  const int height = config.input.height;
  KeptBox box;
  char message[128] = "";
  RegionRequest padded;
  if (request != nullptr) padded = PaddedEvenRegion(*request);
  if (!PlanKeptBox(options, request != nullptr ? &padded : nullptr, width, height, &box, message,
                   sizeof(message))) {
    return absl::InvalidArgumentError(message);
  }
  SetCrop(box, width, height, &config.options);

  Image& image = out->image;
  image.Resize(box.out_width(), box.out_height(), 3);
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(image.stride());
  config.output.u.RGBA.size = image.pixels.size();
  const VP8StatusCode code =
      WebPDecode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // Frees nothing of ours (external memory).
  if (code != VP8_STATUS_OK) return StatusError(code, "pixels");

  const double covered_w = box.x1 - box.x0;
  const double covered_h = box.y1 - box.y0;
  out->format = PixelFormat::kRgb;
  out->covered =
      RectF{static_cast<double>(box.x0), static_cast<double>(box.y0), covered_w, covered_h};
  out->scale_x = image.width / covered_w;
  out->scale_y = image.height / covered_h;
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
