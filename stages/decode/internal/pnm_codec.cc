// pnm_codec.cc: ReadPnmInfo and DecodePnm (see more_codecs.h): PBM, PGM and PPM, binary
// (P4, P5, P6) and plain-text (P1, P2, P3).
//
// Hand-written because a Netpbm file is a text header of at most four tokens and then
// raw or decimal samples; the parser below reads tokens of at most 10 characters (as
// PIL does) and checks every read against the file's size. Pixels match PIL's
// PpmImagePlugin: samples scaled to 8 bits as round(v / maxval * 255), half to even
// (Python's round), a PBM 1 is black. For 16-bit PGM (maxval > 255) PIL makes an "I"
// image whose convert('RGB') clips almost everything to white; we scale it like PPM.
//
// Binary rows are read in place; plain-text rows are parsed one at a time. A decode holds
// one RGB row besides its output.
//
// Thread-safety: no shared state.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/region_rows.h"

namespace flowloader::decode::internal {
namespace {

constexpr size_t kMaxTokenChars = 10;  // PIL's limit; 65535 and any real size fit.

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Cursor walks the file's bytes; every read is bounded by its end.
struct Cursor {
  absl::string_view bytes;
  size_t pos = 0;
  bool at_end() const { return pos >= bytes.size(); }
};

// ReadNumber reads one decimal token, skipping whitespace and '#' comments before it.
// Returns false with `truncated` set when the file ends first.
bool ReadNumber(Cursor* c, uint32_t* value, bool* truncated) {
  while (!c->at_end()) {
    const char ch = c->bytes[c->pos];
    if (IsSpace(ch)) {
      ++c->pos;
    } else if (ch == '#') {
      while (!c->at_end() && c->bytes[c->pos] != '\n' && c->bytes[c->pos] != '\r') ++c->pos;
    } else {
      break;
    }
  }
  *truncated = c->at_end();
  uint64_t v = 0;
  size_t digits = 0;
  while (!c->at_end() && c->bytes[c->pos] >= '0' && c->bytes[c->pos] <= '9') {
    if (++digits > kMaxTokenChars) return false;
    v = v * 10 + static_cast<uint64_t>(c->bytes[c->pos] - '0');
    ++c->pos;
  }
  if (digits == 0) return false;
  if (!c->at_end() && !IsSpace(c->bytes[c->pos]) && c->bytes[c->pos] != '#') return false;
  if (v > UINT32_MAX) return false;
  *value = static_cast<uint32_t>(v);
  return true;
}

struct PnmHeader {
  char kind = 0;  // '1'..'6'.
  int width = 0;
  int height = 0;
  uint32_t maxval = 1;
  int channels = 1;  // 3 for PPM.
  size_t data_start = 0;
  bool plain() const { return kind <= '3'; }
  bool bitmap() const { return kind == '1' || kind == '4'; }
};

absl::Status HeaderError(bool truncated, const char* what) {
  return DecodeError(truncated ? reason::kTruncated : reason::kCorrupt,
                     absl::StrCat("PNM: ", what));
}

absl::Status ParseHeader(absl::string_view bytes, const DecoderOptions& options, PnmHeader* h) {
  if (bytes.size() < 2) return HeaderError(true, "file ends inside its magic number");
  h->kind = bytes[1];
  h->channels = (h->kind == '3' || h->kind == '6') ? 3 : 1;
  Cursor c{bytes, 2};
  if (!c.at_end() && !IsSpace(bytes[2]) && bytes[2] != '#') {
    return HeaderError(false, "no whitespace after the magic number");
  }
  uint32_t width = 0, height = 0;
  bool truncated = false;
  if (!ReadNumber(&c, &width, &truncated) || !ReadNumber(&c, &height, &truncated)) {
    return HeaderError(truncated, "bad width or height");
  }
  if (!h->bitmap()) {
    if (!ReadNumber(&c, &h->maxval, &truncated)) return HeaderError(truncated, "bad maxval");
    if (h->maxval == 0 || h->maxval > 65535) {
      return DecodeError(reason::kCorrupt,
                         absl::StrFormat("PNM: maxval %d is not in 1..65535", h->maxval));
    }
  }
  char message[160];
  const absl::string_view problem = SizeProblem(width, height, options, message, sizeof(message));
  if (!problem.empty()) return DecodeError(problem, absl::StrCat("PNM: ", message));
  h->width = static_cast<int>(width);
  h->height = static_cast<int>(height);
  // Exactly one whitespace byte separates the header from binary samples.
  h->data_start = c.pos + 1;
  return absl::OkStatus();
}

// Scale maps a sample to 8 bits as PIL does: round(v / maxval * 255), half to even.
uint8_t Scale(uint32_t v, uint32_t maxval) {
  if (maxval == 255) return static_cast<uint8_t>(v);
  const uint64_t num = uint64_t{v} * 255;
  uint64_t q = num / maxval;
  const uint64_t twice_r = 2 * (num % maxval);
  if (twice_r > maxval || (twice_r == maxval && (q & 1) != 0)) ++q;
  return static_cast<uint8_t>(q > 255 ? 255 : q);
}

// BinaryRowBytes is the size of one stored row of a P4/P5/P6 file.
size_t BinaryRowBytes(const PnmHeader& h) {
  if (h.bitmap()) return (static_cast<size_t>(h.width) + 7) / 8;
  return static_cast<size_t>(h.width) * h.channels * (h.maxval > 255 ? 2 : 1);
}

void BinaryRow(const PnmHeader& h, const uint8_t* src, uint8_t* rgb) {
  const size_t samples = static_cast<size_t>(h.width) * h.channels;
  if (h.kind == '6' && h.maxval == 255) {  // The common case: the row is already RGB.
    std::memcpy(rgb, src, samples);
    return;
  }
  size_t i = 0;
  for (size_t s = 0; s < samples; ++s) {
    uint8_t v;
    if (h.bitmap()) {
      v = ((src[s / 8] >> (7 - s % 8)) & 1) != 0 ? 0 : 255;
    } else if (h.maxval > 255) {
      v = Scale((uint32_t{src[2 * s]} << 8) | src[2 * s + 1], h.maxval);
    } else {
      v = Scale(src[s], h.maxval);
    }
    if (h.channels == 3) {
      rgb[i++] = v;
    } else {
      rgb[i] = rgb[i + 1] = rgb[i + 2] = v;
      i += 3;
    }
  }
}

// PlainRow parses one row of a P1/P2/P3 file. In P1 each sample is one '0' or '1'
// character, whitespace optional.
absl::Status PlainRow(const PnmHeader& h, Cursor* c, uint8_t* rgb) {
  const size_t samples = static_cast<size_t>(h.width) * h.channels;
  size_t i = 0;
  for (size_t s = 0; s < samples; ++s) {
    uint8_t v = 0;
    if (h.bitmap()) {
      while (!c->at_end() && IsSpace(c->bytes[c->pos])) ++c->pos;
      if (c->at_end()) return HeaderError(true, "file ends inside its samples");
      const char ch = c->bytes[c->pos++];
      if (ch != '0' && ch != '1') return HeaderError(false, "a PBM sample is not 0 or 1");
      v = ch == '1' ? 0 : 255;
    } else {
      uint32_t value = 0;
      bool truncated = false;
      if (!ReadNumber(c, &value, &truncated)) {
        return HeaderError(truncated,
                           truncated ? "file ends inside its samples" : "a sample is not a number");
      }
      if (value > h.maxval) return HeaderError(false, "a sample is larger than maxval");
      v = Scale(value, h.maxval);
    }
    if (h.channels == 3) {
      rgb[i++] = v;
    } else {
      rgb[i] = rgb[i + 1] = rgb[i + 2] = v;
      i += 3;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageInfo> ReadPnmInfo(absl::string_view bytes, const DecoderOptions& options) {
  PnmHeader h;
  if (absl::Status s = ParseHeader(bytes, options, &h); !s.ok()) return s;
  return ImageInfo{Format::kPnm, h.width, h.height, h.channels};
}

absl::Status DecodePnm(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out) {
  PnmHeader h;
  if (absl::Status s = ParseHeader(bytes, options, &h); !s.ok()) return s;
  const size_t row_bytes = BinaryRowBytes(h);
  if (!h.plain()) {
    const size_t need = row_bytes * static_cast<size_t>(h.height);
    if (h.data_start > bytes.size() || need > bytes.size() - h.data_start) {
      return DecodeError(reason::kTruncated,
                         absl::StrFormat("PNM: %d bytes of samples expected, file has %d", need,
                                         bytes.size() - std::min(bytes.size(), h.data_start)));
    }
  }
  RowSink sink;
  if (absl::Status s = sink.Start(options, request, h.width, h.height, false, out); !s.ok()) {
    return s;
  }
  std::vector<uint8_t> rgb(3 * static_cast<size_t>(h.width));
  Cursor c{bytes, h.data_start - 1};  // Plain samples may follow any whitespace.
  for (int y = 0; y < h.height; ++y) {
    if (h.plain()) {
      if (absl::Status s = PlainRow(h, &c, rgb.data()); !s.ok()) return s;
    } else {
      BinaryRow(h,
                reinterpret_cast<const uint8_t*>(bytes.data()) + h.data_start +
                    row_bytes * static_cast<size_t>(y),
                rgb.data());
    }
    sink.Put(y, rgb.data());
  }
  sink.Finish();
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
