// fuzz_body.cc: RunOne (see fuzz_body.h).
#include "tests/fuzz/fuzz_body.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"

namespace flowloader::fuzz {
namespace {

// kAugmentStream is the stream the pipeline's decode/augment stages draw from
// (graph/builtin_stages.cc), so a seed here plans what the pipeline would plan.
constexpr uint64_t kAugmentStream = 1;

[[noreturn]] void Die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_body: contract broken: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, detail)            \
  do {                                      \
    if (!(cond)) Die(#cond, (detail));      \
  } while (0)

std::string Describe(const absl::Status& s) { return s.ToString(); }

std::string Describe(const decode::DecodedImage& d) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "image %dx%dx%d (%zu bytes) covered (%g,%g %gx%g) scale %g,%g",
                d.image.width, d.image.height, d.image.channels, d.image.pixels.size(),
                d.covered.x, d.covered.y, d.covered.w, d.covered.h, d.scale_x, d.scale_y);
  return buf;
}

// A failed decode must say why with one of the decoder's documented reasons.
void CheckErrorReason(const absl::Status& s, bool invalid_argument_allowed) {
  const std::string r = ErrorReason(s);
  const bool known = r == reason::kEmptyFile || r == reason::kUnknownFormat ||
                     r == reason::kTruncated || r == reason::kCorrupt ||
                     r == reason::kTooManyPixels || r == reason::kDecodeMemory ||
                     r == reason::kUnsupported;
  if (known) return;
  if (invalid_argument_allowed && s.code() == absl::StatusCode::kInvalidArgument) return;
  Die("decode error carries a documented reason", Describe(s));
}

// The image a successful decode returns is well formed and consistent with `covered`.
void CheckDecoded(const decode::DecodedImage& d, const decode::ImageInfo& info) {
  const Image& img = d.image;
  if (d.format == decode::PixelFormat::kYcc) {
    // decoder.h: a 1-channel Y plane, then Cb and Cr planes that cover it.
    const decode::ChromaPlanes& c = d.chroma;
    FUZZ_CHECK(img.channels == 1 && img.width > 0 && img.height > 0, Describe(d));
    FUZZ_CHECK((c.step_x == 1 || c.step_x == 2) && (c.step_y == 1 || c.step_y == 2) &&
                   c.phase_y >= 0 && c.phase_y < c.step_y &&
                   c.width == (img.width + c.step_x - 1) / c.step_x &&
                   c.height == (img.height + c.phase_y + c.step_y - 1) / c.step_y,
               Describe(d));
    FUZZ_CHECK(img.pixels.size() == img.stride() * static_cast<size_t>(img.height) +
                                        2 * static_cast<size_t>(c.width) * c.height,
               Describe(d));
  } else {
    FUZZ_CHECK(img.channels == 3 && img.width > 0 && img.height > 0, Describe(d));
    FUZZ_CHECK(img.pixels.size() == img.stride() * static_cast<size_t>(img.height),
               Describe(d));
  }
  FUZZ_CHECK(d.scale_x > 0 && d.scale_y > 0 && d.scale_x <= 1 && d.scale_y <= 1, Describe(d));
  FUZZ_CHECK(d.covered.x >= 0 && d.covered.y >= 0 && d.covered.w > 0 && d.covered.h > 0 &&
                 d.covered.x + d.covered.w <= info.width + 1e-9 &&
                 d.covered.y + d.covered.h <= info.height + 1e-9,
             Describe(d));
  // decoder.h: image.width is ceil(covered.w * scale_x), likewise the height.
  FUZZ_CHECK(std::fabs(img.width - std::ceil(d.covered.w * d.scale_x - 1e-9)) < 1e-6 &&
                 std::fabs(img.height - std::ceil(d.covered.h * d.scale_y - 1e-9)) < 1e-6,
             Describe(d));
}

// `covered` contains the request's region once clamped to the image (decoder.h).
void CheckCovers(const decode::DecodedImage& d, const decode::ImageInfo& info,
                 const RectF& region) {
  const double x0 = std::max(0.0, region.x);
  const double y0 = std::max(0.0, region.y);
  const double x1 = std::min<double>(info.width, region.x + region.w);
  const double y1 = std::min<double>(info.height, region.y + region.h);
  constexpr double kEps = 1e-6;
  FUZZ_CHECK(d.covered.x <= x0 + kEps && d.covered.y <= y0 + kEps &&
                 d.covered.x + d.covered.w >= x1 - kEps &&
                 d.covered.y + d.covered.h >= y1 - kEps,
             Describe(d));
}

void CheckFinite(const std::vector<uint8_t>& out, bool is_float) {
  if (!is_float) return;
  const size_t n = out.size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, out.data() + i * sizeof(float), sizeof(float));
    FUZZ_CHECK(std::isfinite(v), "normalized output element " + std::to_string(i));
  }
}

augment::TransformOptions TransformOptionsFor(uint8_t bits, augment::Mode mode) {
  augment::TransformOptions o;
  o.mode = mode;
  o.layout = (bits & 4) != 0 ? augment::Layout::kUint8HWC : augment::Layout::kFloatCHW;
  o.image_size = kImageSizes[(bits >> 3) & 7];
  switch (bits >> 6) {
    case 1:  // Extreme RandomResizedCrop parameters: slivers and tiny crops.
      o.scale_min = 1e-4;
      o.scale_max = 1.0;
      o.ratio_min = 1.0 / 64;
      o.ratio_max = 64.0;
      break;
    case 2:  // The whole image, aspect ratio forced to 1 (the fallback path).
      o.scale_min = o.scale_max = 1.0;
      o.ratio_min = o.ratio_max = 1.0;
      break;
    case 3:
      o.flip_p = 1.0;
      break;
    default:
      break;
  }
  return o;
}

// Hostile is a request no planner would make: regions partly or wholly off the image,
// empty, or non-finite, and odd targets. Decode must refuse or honour it, never crash.
decode::RegionRequest Hostile(const decode::ImageInfo& info, SampleRng& rng) {
  const double w = info.width;
  const double h = info.height;
  decode::RegionRequest r;
  r.region = RectF{rng.Uniform(-w, 2 * w), rng.Uniform(-h, 2 * h), rng.Uniform(-w, 3 * w),
                   rng.Uniform(-h, 3 * h)};
  switch (rng.UniformInt(0, 8)) {
    case 0:
      r.region.w = std::nan("");
      break;
    case 1:
      r.region.x = -INFINITY;
      break;
    case 2:
      r.region = RectF{0, 0, w, h};
      break;
    case 3:
      r.region = RectF{w - 0.25, h - 0.25, 0.25, 0.25};  // A sliver at the far corner.
      break;
    default:
      break;
  }
  r.target_width = static_cast<int>(rng.UniformInt(-2, 4096));
  r.target_height = static_cast<int>(rng.UniformInt(-2, 4096));
  r.accept_ycc = rng.Bernoulli(0.5);
  return r;
}

}  // namespace

std::string WithHeader(uint8_t options, uint64_t seed, const std::string& image) {
  std::string out(kHeaderBytes, '\0');
  out[0] = static_cast<char>(options);
  for (size_t i = 1; i < kHeaderBytes; ++i) out[i] = static_cast<char>(seed >> (8 * (i - 1)));
  return out + image;
}

void RunOne(const uint8_t* data, size_t size) {
  uint8_t bits = 0;
  uint64_t seed = 0;
  if (size >= kHeaderBytes) {
    bits = data[0];
    for (size_t i = 1; i < kHeaderBytes; ++i) seed |= static_cast<uint64_t>(data[i]) << (8 * (i - 1));
    data += kHeaderBytes;
    size -= kHeaderBytes;
  }
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);

  // The production limits decide what ReadInfo accepts (the bomb check).
  static const decode::Decoder* const production = decode::Decoder::Create({})->release();
  const absl::StatusOr<decode::ImageInfo> header = production->ReadInfo(bytes);
  if (header.ok()) {
    FUZZ_CHECK(header->format != decode::Format::kUnknown && header->width > 0 &&
                   header->height > 0 && header->channels >= 1 && header->channels <= 4 &&
                   int64_t{header->width} * header->height <=
                       production->options().max_pixels,
               "ReadInfo returned a bad header");
  } else {
    CheckErrorReason(header.status(), /*invalid_argument_allowed=*/false);
  }

  decode::DecoderOptions dopt;
  dopt.max_pixels = kFuzzMaxPixels;
  dopt.fast_idct = (bits & 1) != 0;
  dopt.dct_scaling = (bits & 2) == 0;
  const std::unique_ptr<decode::Decoder> decoder = *decode::Decoder::Create(dopt);
  const absl::StatusOr<decode::ImageInfo> info = decoder->ReadInfo(bytes);
  // Differential: flowloader's Huffman decoder (and its seek index, warm after the first
  // region decode below) against libjpeg-turbo's own; where both succeed, same pixels.
  decode::DecoderOptions reference_options = dopt;
  reference_options.fast_huffman = false;
  const std::unique_ptr<decode::Decoder> reference =
      *decode::Decoder::Create(reference_options);
  // Known difference: "FF FF ... 00" inside entropy-coded data (fill bytes where the
  // standard allows none) is one 0xFF byte to libjpeg's slow path and to ours, but
  // libjpeg-turbo 2.1's fast path first decodes that MCU as if a marker came and then
  // redoes it slowly without re-zeroing its blocks, so stray coefficients survive.
  // (tests/fuzz/regressions/crash-ff-fill-bytes-in-scan: ours equals libjpeg's decode
  // of the same file with the extra FFs removed.)
  const bool libjpeg_fast_path_quirk = bytes.find("\xFF\xFF") != absl::string_view::npos;
  const auto check_same_as_libjpeg = [&](const decode::RegionRequest* request,
                                         const decode::DecodedImage& ours, const char* what) {
    if (libjpeg_fast_path_quirk) return;
    decode::DecodedImage theirs;
    if (!reference->Decode(bytes, decode::ImageInfo{}, request, &theirs).ok()) return;
    FUZZ_CHECK(ours.image.width == theirs.image.width &&
                   ours.image.height == theirs.image.height &&
                   ours.image.pixels == theirs.image.pixels,
               std::string(what) + ": pixels differ from libjpeg-turbo's Huffman decoder");
  };

  // Full decode, with a default-constructed info (the codecs re-read the header).
  decode::DecodedImage full;
  const absl::Status full_status = decoder->Decode(bytes, decode::ImageInfo{}, nullptr, &full);
  if (full_status.ok()) {
    check_same_as_libjpeg(nullptr, full, "full decode");
    FUZZ_CHECK(info.ok(), "full decode succeeded where ReadInfo failed: " +
                              Describe(info.status()));
    CheckDecoded(full, *info);
    FUZZ_CHECK(full.image.width == info->width && full.image.height == info->height &&
                   full.covered.x == 0 && full.covered.y == 0 &&
                   full.covered.w == info->width && full.covered.h == info->height &&
                   full.scale_x == 1 && full.scale_y == 1,
               "full decode differs from the header: " + Describe(full));
  } else {
    CheckErrorReason(full_status, /*invalid_argument_allowed=*/false);
  }
  if (!info.ok()) {
    CheckErrorReason(info.status(), /*invalid_argument_allowed=*/false);
    return;
  }

  const augment::Mode modes[2] = {augment::Mode::kTrain, augment::Mode::kEval};
  std::vector<uint8_t> first_output;
  std::unique_ptr<augment::Transform> first_transform;
  augment::CropPlan first_plan;
  decode::DecodedImage first_decoded;
  for (int m = 0; m < 2; ++m) {
    std::unique_ptr<augment::Transform> transform =
        *augment::Transform::Create(TransformOptionsFor(bits, modes[m]));
    const bool is_float = transform->options().layout == augment::Layout::kFloatCHW;
    SampleRng rng(seed, /*epoch=*/m, /*index=*/0, kAugmentStream);
    augment::CropPlan plan = transform->Plan(info->width, info->height, rng);
    // Both decoded formats, whichever this CPU's planner would ask for.
    plan.decode_request.accept_ycc = ((seed >> m) & 1) != 0;

    // The decode stage: only what the plan needs.
    decode::DecodedImage decoded;
    const absl::Status s = decoder->Decode(bytes, *info, &plan.decode_request, &decoded);
    std::vector<uint8_t> out(transform->OutputBytes());
    if (s.ok()) {
      check_same_as_libjpeg(&plan.decode_request, decoded, "region decode");
      CheckDecoded(decoded, *info);
      CheckCovers(decoded, *info, plan.decode_request.region);
      // The augment stage: Apply must accept what the decoder made for its own plan.
      const absl::Status a = transform->Apply(decoded, plan, out.data());
      FUZZ_CHECK(a.ok(), "Apply refused the decode of its own plan: " + Describe(a) + " / " +
                             Describe(decoded));
      CheckFinite(out, is_float);
      if (m == 0) {
        first_output = out;
        first_plan = plan;
        first_decoded = decoded;
      }
    } else {
      // A planner's request is never empty for a valid header.
      CheckErrorReason(s, /*invalid_argument_allowed=*/false);
    }

    // The augment stage's no-plan path: plan on a full decode.
    if (full_status.ok()) {
      SampleRng rng2(seed, m, 1, kAugmentStream);
      decode::DecodedImage whole = full;
      whole.covered = RectF{0, 0, static_cast<double>(whole.image.width),
                            static_cast<double>(whole.image.height)};
      const augment::CropPlan p = transform->Plan(whole.image.width, whole.image.height, rng2);
      const absl::Status a = transform->Apply(whole, p, out.data());
      FUZZ_CHECK(a.ok(), "Apply refused a plan on the full decode: " + Describe(a));
      CheckFinite(out, is_float);
    }
    if (m == 0) first_transform = std::move(transform);
  }

  // A request no planner makes.
  SampleRng hostile_rng(seed, 7, 7, 99);
  const decode::RegionRequest hostile = Hostile(*info, hostile_rng);
  decode::DecodedImage odd;
  const absl::Status hs = decoder->Decode(bytes, *info, &hostile, &odd);
  if (hs.ok()) {
    check_same_as_libjpeg(&hostile, odd, "hostile-request decode");
    CheckDecoded(odd, *info);
    CheckCovers(odd, *info, hostile.region);
  } else {
    CheckErrorReason(hs, /*invalid_argument_allowed=*/true);
  }

  // Apply's per-thread tap tables are cached by geometry: the same call again, after
  // other geometries ran, must give the same bytes.
  if (!first_output.empty()) {
    std::vector<uint8_t> again(first_output.size());
    FUZZ_CHECK(first_transform->Apply(first_decoded, first_plan, again.data()).ok(), "re-Apply");
    FUZZ_CHECK(again == first_output, "Apply is not deterministic across cached geometries");
  }
}

}  // namespace flowloader::fuzz
