// gif_codec.cc: ReadGifInfo and DecodeGif (see more_codecs.h): the first frame, through
// giflib.
//
// The image is the first frame as PIL shows it: the canvas is the logical screen,
// grown to hold the frame when the frame reaches past it (PIL does the same); pixels
// outside the frame are the frame's transparent index if its Graphic Control Extension
// names one, else index 0; indices map through the frame's local colour table, else the
// global one, else they are gray levels (PIL's "L" mode). An index past the colour table
// reads as gray level `index`, as in PIL. Later frames are never read.
//
// Rows come from DGifGetLine one at a time (giflib's fixed-size LZW state, never
// DGifSlurp's whole-file buffers). An interlaced frame's rows come in its four passes'
// order and go to the RowSink in any order, which keeps sums for the output only.
//
// Thread-safety: no shared state; giflib keeps its state in the GifFileType.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gif_lib.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/region_rows.h"

namespace flowloader::decode::internal {
namespace {

constexpr int kGraphicControlExtension = 0xF9;

// GifInput is giflib's reader over the caller's bytes.
struct GifInput {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  bool ran_out = false;
};

int ReadFn(GifFileType* gif, GifByteType* dst, int length) {
  auto* in = static_cast<GifInput*>(gif->UserData);
  const size_t want = length > 0 ? static_cast<size_t>(length) : 0;
  const size_t n = std::min(want, in->size - in->pos);
  std::memcpy(dst, in->data + in->pos, n);
  in->pos += n;
  if (n < want) in->ran_out = true;
  return static_cast<int>(n);
}

// GifFile opens giflib on bytes and closes it on destruction.
class GifFile {
 public:
  explicit GifFile(absl::string_view bytes) {
    input_.data = reinterpret_cast<const uint8_t*>(bytes.data());
    input_.size = bytes.size();
    gif_ = DGifOpen(&input_, ReadFn, &error_);
  }
  ~GifFile() {
    int ignored = 0;
    if (gif_ != nullptr) DGifCloseFile(gif_, &ignored);
  }
  GifFile(const GifFile&) = delete;
  GifFile& operator=(const GifFile&) = delete;

  GifFileType* get() const { return gif_; }
  // Error is the status for the last failed giflib call.
  absl::Status Error() const {
    const int code = gif_ != nullptr ? gif_->Error : error_;
    const char* text = GifErrorString(code);
    return DecodeError(input_.ran_out ? reason::kTruncated : reason::kCorrupt,
                       absl::StrCat("GIF: ", text != nullptr ? text : "decode error",
                                    input_.ran_out ? " (file ends early)" : ""));
  }

 private:
  GifInput input_;
  int error_ = 0;
  GifFileType* gif_ = nullptr;
};

// FirstFrame is the first image descriptor and what applies to it.
struct FirstFrame {
  int canvas_width = 0, canvas_height = 0;
  int left = 0, top = 0, width = 0, height = 0;
  bool interlaced = false;
  int transparent = -1;                    // Index, or -1.
  const ColorMapObject* colors = nullptr;  // Null: gray levels.
};

// SkipExtension reads one extension, keeping a Graphic Control Extension's transparent
// index.
bool SkipExtension(GifFileType* gif, FirstFrame* frame) {
  int code = 0;
  GifByteType* block = nullptr;
  if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return false;
  if (code == kGraphicControlExtension && block != nullptr && block[0] >= 4) {
    frame->transparent = (block[1] & 1) != 0 ? block[4] : -1;
  }
  while (block != nullptr) {
    if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return false;
  }
  return true;
}

absl::Status FindFirstFrame(const GifFile& file, const DecoderOptions& options, FirstFrame* frame) {
  GifFileType* gif = file.get();
  if (gif == nullptr) return file.Error();
  while (true) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) return file.Error();
    if (type == EXTENSION_RECORD_TYPE) {
      if (!SkipExtension(gif, frame)) return file.Error();
      continue;
    }
    if (type == TERMINATE_RECORD_TYPE) {
      return DecodeError(reason::kCorrupt, "GIF: the file has no image");
    }
    if (type != IMAGE_DESC_RECORD_TYPE) {
      return DecodeError(reason::kCorrupt, "GIF: unknown record type");
    }
    if (DGifGetImageDesc(gif) == GIF_ERROR) return file.Error();
    const GifImageDesc& d = gif->Image;
    frame->left = d.Left;
    frame->top = d.Top;
    frame->width = d.Width;
    frame->height = d.Height;
    frame->interlaced = d.Interlace;
    frame->colors = d.ColorMap != nullptr ? d.ColorMap : gif->SColorMap;
    const int64_t w = std::max<int64_t>(gif->SWidth, int64_t{d.Left} + d.Width);
    const int64_t h = std::max<int64_t>(gif->SHeight, int64_t{d.Top} + d.Height);
    char message[160];
    const absl::string_view problem = SizeProblem(w, h, options, message, sizeof(message));
    if (!problem.empty()) return DecodeError(problem, absl::StrCat("GIF: ", message));
    frame->canvas_width = static_cast<int>(w);
    frame->canvas_height = static_cast<int>(h);
    return absl::OkStatus();
  }
}

// Lookup writes the RGB of palette index `index`.
void Lookup(const FirstFrame& f, int index, uint8_t* rgb) {
  if (f.colors == nullptr) {
    rgb[0] = rgb[1] = rgb[2] = static_cast<uint8_t>(index);
    return;
  }
  if (index >= f.colors->ColorCount) {  // PIL's palette starts as a gray ramp.
    rgb[0] = rgb[1] = rgb[2] = static_cast<uint8_t>(index);
    return;
  }
  const GifColorType& c = f.colors->Colors[index];
  rgb[0] = c.Red;
  rgb[1] = c.Green;
  rgb[2] = c.Blue;
}

// FrameRows reads the frame's rows (pass order when interlaced) and puts each canvas
// row, background around the frame's pixels.
absl::Status FrameRows(const GifFile& file, const FirstFrame& f,
                       const std::vector<uint8_t>& background, RowSink* sink) {
  std::vector<GifPixelType> line(static_cast<size_t>(f.width));
  std::vector<uint8_t> rgb = background;
  static constexpr int kPassStart[4] = {0, 4, 2, 1};
  static constexpr int kPassStep[4] = {8, 8, 4, 2};
  const int passes = f.interlaced ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const int start = f.interlaced ? kPassStart[pass] : 0;
    const int step = f.interlaced ? kPassStep[pass] : 1;
    for (int j = start; j < f.height; j += step) {
      if (DGifGetLine(file.get(), line.data(), f.width) == GIF_ERROR) return file.Error();
      uint8_t* dst = rgb.data() + 3 * static_cast<size_t>(f.left);
      for (int x = 0; x < f.width; ++x, dst += 3) Lookup(f, line[x], dst);
      sink->Put(f.top + j, rgb.data());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageInfo> ReadGifInfo(absl::string_view bytes, const DecoderOptions& options) {
  GifFile file(bytes);
  FirstFrame frame;
  if (absl::Status s = FindFirstFrame(file, options, &frame); !s.ok()) return s;
  return ImageInfo{Format::kGif, frame.canvas_width, frame.canvas_height,
                   frame.transparent >= 0 ? 4 : 3};
}

absl::Status DecodeGif(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out) {
  GifFile file(bytes);
  FirstFrame f;
  if (absl::Status s = FindFirstFrame(file, options, &f); !s.ok()) return s;
  // Rows above and below the frame are background; an interlaced frame's rows reach the
  // sink out of order.
  const bool any_order = f.interlaced;
  RowSink sink;
  if (absl::Status s =
          sink.Start(options, request, f.canvas_width, f.canvas_height, any_order, out);
      !s.ok()) {
    return s;
  }
  std::vector<uint8_t> background(3 * static_cast<size_t>(f.canvas_width));
  uint8_t fill[3];
  Lookup(f, f.transparent >= 0 ? f.transparent : 0, fill);
  for (size_t i = 0; i < background.size(); i += 3) std::memcpy(&background[i], fill, 3);
  for (int y = 0; y < f.top; ++y) sink.Put(y, background.data());
  if (f.width > 0) {
    if (absl::Status s = FrameRows(file, f, background, &sink); !s.ok()) return s;
  } else {
    for (int y = f.top; y < f.top + f.height; ++y) sink.Put(y, background.data());
  }
  for (int y = f.top + f.height; y < f.canvas_height; ++y) sink.Put(y, background.data());
  sink.Finish();
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
