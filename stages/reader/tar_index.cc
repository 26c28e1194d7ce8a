#include "stages/reader/tar_index.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "stages/core/sample_error.h"

namespace flowloader {
namespace {

constexpr int64_t kBlock = 512;

int64_t RoundUpToBlock(int64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// Field returns a NUL-terminated header field as text (without the NUL).
absl::string_view Field(const char* header, int offset, int width) {
  const char* begin = header + offset;
  const void* nul = std::memchr(begin, '\0', static_cast<size_t>(width));
  const size_t n = nul == nullptr ? static_cast<size_t>(width)
                                  : static_cast<size_t>(static_cast<const char*>(nul) - begin);
  return absl::string_view(begin, n);
}

// ParseOctal reads a numeric field: octal digits between optional spaces and NULs.
bool ParseOctal(const char* field, int width, int64_t* value) {
  int i = 0;
  while (i < width && (field[i] == ' ' || field[i] == '\0')) ++i;
  if (i == width) {
    *value = 0;  // An all-blank field: old tars write 0 this way.
    return true;
  }
  int64_t v = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (int64_t{1} << 56)) return false;
    v = v * 8 + (field[i] - '0');
  }
  for (; i < width; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return false;
  }
  *value = v;
  return true;
}

// ParseSize reads the size field: octal, or GNU base-256 (high bit of the first byte set)
// for members of 8 GiB and more.
bool ParseSize(const char* header, int64_t* size) {
  const char* field = header + 124;
  const unsigned char first = static_cast<unsigned char>(field[0]);
  if ((first & 0x80) == 0) return ParseOctal(field, 12, size);
  if (first != 0x80) return false;  // Negative, or more than 88 bits.
  int64_t v = 0;
  for (int i = 1; i < 12; ++i) {
    if (v > (int64_t{1} << 54)) return false;
    v = (v << 8) | static_cast<unsigned char>(field[i]);
  }
  *size = v;
  return true;
}

// ChecksumMatches compares the stored checksum with the header's byte sum (the checksum
// field counted as spaces), unsigned as POSIX says or signed as some old tars wrote it.
bool ChecksumMatches(const char* header) {
  int64_t stored = 0;
  if (!ParseOctal(header + 148, 8, &stored)) return false;
  int64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (int i = 0; i < kBlock; ++i) {
    const bool in_field = i >= 148 && i < 156;
    unsigned_sum += in_field ? ' ' : static_cast<unsigned char>(header[i]);
    signed_sum += in_field ? ' ' : static_cast<signed char>(header[i]);
  }
  return stored == unsigned_sum || stored == signed_sum;
}

bool IsZeroBlock(const char* header) {
  for (int i = 0; i < kBlock; ++i) {
    if (header[i] != '\0') return false;
  }
  return true;
}

// ParsePax applies a pax extended header's `path` and `size` records ("LEN key=value\n").
bool ParsePax(absl::string_view records, std::string* path, int64_t* size) {
  while (!records.empty()) {
    const size_t space = records.find(' ');
    int64_t length = 0;
    if (space == absl::string_view::npos ||
        !absl::SimpleAtoi(records.substr(0, space), &length) ||
        length <= static_cast<int64_t>(space) + 1 ||
        length > static_cast<int64_t>(records.size())) {
      return false;
    }
    absl::string_view record = records.substr(space + 1, static_cast<size_t>(length) - space - 1);
    records.remove_prefix(static_cast<size_t>(length));
    if (record.empty() || record.back() != '\n') return false;
    record.remove_suffix(1);
    const size_t eq = record.find('=');
    if (eq == absl::string_view::npos) return false;
    const absl::string_view key = record.substr(0, eq);
    const absl::string_view value = record.substr(eq + 1);
    if (key == "path") {
      *path = std::string(value);
    } else if (key == "size") {
      if (!absl::SimpleAtoi(value, size) || *size < 0) return false;
    }
  }
  return true;
}

// WindowReader serves reads from one window of the archive, refilled on a miss. Windows
// are aligned (they start at multiples of their size), so that a remote shard's windows
// are the block cache's blocks (window_prefetch.h); a read that does not fit inside the
// window around its offset goes to the archive as it is.
class WindowReader {
 public:
  WindowReader(const TarRangeReader& read, int64_t window) : read_(read), window_(window) {}

  // Read replaces *out with up to `length` bytes at `offset` (fewer at the end).
  absl::Status Read(int64_t offset, int64_t length, std::string* out) {
    if (offset >= begin_ && offset + length <= begin_ + static_cast<int64_t>(data_.size())) {
      out->assign(data_, static_cast<size_t>(offset - begin_), static_cast<size_t>(length));
      return absl::OkStatus();
    }
    const int64_t begin = offset / window_ * window_;
    if (offset + length > begin + window_) return read_(offset, length, out);
    begin_ = begin;
    if (absl::Status s = read_(begin, window_, &data_); !s.ok()) {
      data_.clear();
      return s;
    }
    const int64_t skip = std::min<int64_t>(offset - begin, static_cast<int64_t>(data_.size()));
    const int64_t have = std::min<int64_t>(length, static_cast<int64_t>(data_.size()) - skip);
    out->assign(data_, static_cast<size_t>(skip), static_cast<size_t>(have));
    return absl::OkStatus();
  }

 private:
  const TarRangeReader& read_;
  const int64_t window_;
  int64_t begin_ = 0;
  std::string data_;
};

absl::Status Damage(absl::string_view reason, const std::string& what, int64_t offset,
                    absl::string_view problem) {
  const absl::StatusCode code = reason == reason::kTruncated ? absl::StatusCode::kDataLoss
                                                             : absl::StatusCode::kInvalidArgument;
  return SampleError(code, reason, absl::StrCat(what, ": ", problem, " at byte ", offset));
}

// Indexer walks the headers; one object per archive.
class Indexer {
 public:
  Indexer(const TarRangeReader& read, const std::string& what, const TarIndexOptions& options)
      : reader_(read, std::max<int64_t>(options.read_ahead_bytes, kBlock)),
        what_(what),
        options_(options) {}

  TarIndex Run() {
    absl::Status status = Walk();
    if (!status.ok()) index_.damage = status;
    index_.indexed_bytes = offset_;
    return std::move(index_);
  }

 private:
  absl::Status Walk() {
    std::string header;
    while (true) {
      if (absl::Status s = reader_.Read(offset_, kBlock, &header); !s.ok()) return s;
      if (header.empty()) return EndOfData();
      if (static_cast<int64_t>(header.size()) < kBlock) {
        return offset_ == 0 ? Damage(reason::kUnknownFormat, what_, 0,
                                     absl::StrCat("not a tar archive (", header.size(),
                                                  " bytes, less than one tar header)"))
                            : Damage(reason::kTruncated, what_, offset_, "a header cut short");
      }
      if (IsZeroBlock(header.data())) return absl::OkStatus();  // End-of-archive marker.
      if (!ChecksumMatches(header.data())) {
        return offset_ == 0 ? Damage(reason::kUnknownFormat, what_, 0,
                                     "not a tar archive (no valid tar header)")
                            : Damage(reason::kCorrupt, what_, offset_, "bad header checksum");
      }
      if (absl::Status s = Member(header.data()); !s.ok()) return s;
    }
  }

  // EndOfData handles the archive ending without its end-of-archive blocks, which every
  // tar writer puts there: it was cut short. If the cut is inside the last member's data,
  // that member is dropped; if it falls between members, those before it are whole (but
  // some after it may be lost, so it still counts as truncated).
  absl::Status EndOfData() {
    if (offset_ == 0) return Damage(reason::kEmptyFile, what_, 0, "an empty file");
    if (last_data_end_ > 0) {
      std::string last_byte;
      if (absl::Status s = reader_.Read(last_data_end_ - 1, 1, &last_byte); !s.ok()) return s;
      if (last_byte.empty()) {
        if (last_is_member_) index_.members.pop_back();
        return SampleError(absl::StatusCode::kDataLoss, reason::kTruncated,
                           absl::StrCat(what_, ": the archive is cut short inside a member's "
                                        "data (which runs to byte ", last_data_end_, ")"));
      }
    }
    return Damage(reason::kTruncated, what_, offset_,
                  "the archive ends without its end-of-archive blocks (cut short)");
  }

  absl::Status Member(const char* header) {
    if (first_record_ < 0) first_record_ = offset_;
    int64_t size = 0;
    if (!ParseSize(header, &size)) {
      return Damage(reason::kCorrupt, what_, offset_, "bad size field");
    }
    const char type = header[156];
    const int64_t data_offset = offset_ + kBlock;
    if (pax_size_ >= 0 && (type == '0' || type == '\0' || type == '7')) size = pax_size_;
    last_is_member_ = false;
    switch (type) {
      case 'L':  // GNU long name: the payload is the next member's name.
      case 'x': {  // pax extended header: records for the next member.
        std::string payload;
        if (size > options_.max_name_bytes) {
          // Not read: the member it describes is skipped, the archive read on.
          long_record_bytes_ = size;
          long_record_type_ = type;
          break;
        }
        if (absl::Status s = reader_.Read(data_offset, size, &payload); !s.ok()) return s;
        if (static_cast<int64_t>(payload.size()) < size) {
          return Damage(reason::kTruncated, what_, data_offset, "an extended header cut short");
        }
        if (type == 'L') {
          long_name_ = payload.substr(0, payload.find('\0'));
        } else if (!ParsePax(payload, &long_name_, &pax_size_)) {
          return Damage(reason::kCorrupt, what_, offset_, "malformed pax records");
        }
        break;
      }
      case '0':
      case '\0':
      case '7':
        if (absl::Status s = AddFile(header, data_offset, size); !s.ok()) return s;
        break;
      case 'K':  // GNU long link name, and pax globals: nothing a member's data needs.
      case 'g':
        break;
      default:  // Directories, links, devices, FIFOs: not samples (webdataset skips them).
        ResetPending();
        break;
    }
    offset_ = data_offset + RoundUpToBlock(size);
    if (size > 0) last_data_end_ = data_offset + size;
    return absl::OkStatus();
  }

  absl::Status AddFile(const char* header, int64_t data_offset, int64_t size) {
    const int64_t first_record = first_record_;
    if (static_cast<int64_t>(index_.members.size()) >= options_.max_members) {
      return Damage(reason::kCorrupt, what_, offset_,
                    absl::StrCat("more than ", options_.max_members, " members"));
    }
    if (long_record_bytes_ > 0) {
      index_.skipped.push_back(SampleError(
          absl::StatusCode::kInvalidArgument, reason::kUnsupported,
          absl::StrCat(what_, ": the member at byte ", offset_, " has a ", long_record_bytes_,
                       "-byte ", long_record_type_ == 'L' ? "GNU long name" : "pax header",
                       ", over the ", options_.max_name_bytes,
                       " bytes read for a name: skipped")));
      ResetPending();
      return absl::OkStatus();
    }
    TarMember m;
    m.name = long_name_.empty() ? HeaderName(header) : long_name_;
    m.offset = data_offset;
    m.size = size;
    ResetPending();
    if (options_.want_payload != nullptr && size <= options_.inline_max_bytes &&
        options_.want_payload(m.name)) {
      if (absl::Status s = reader_.Read(data_offset, size, &m.inline_payload); !s.ok()) return s;
      if (static_cast<int64_t>(m.inline_payload.size()) < size) {
        return Damage(reason::kTruncated, what_, data_offset,
                      "the archive ends inside a member's data");
      }
    }
    index_.members.push_back(std::move(m));
    index_.last_member_record = first_record;
    last_is_member_ = true;
    return absl::OkStatus();
  }

  // HeaderName joins ustar's prefix and name (GNU tar uses the prefix bytes otherwise).
  static std::string HeaderName(const char* header) {
    const std::string name(Field(header, 0, 100));
    const bool posix_ustar = std::memcmp(header + 257, "ustar\0", 6) == 0;
    const absl::string_view prefix = Field(header, 345, 155);
    if (!posix_ustar || prefix.empty()) return name;
    return absl::StrCat(prefix, "/", name);
  }

  void ResetPending() {
    first_record_ = -1;
    long_name_.clear();
    pax_size_ = -1;
    long_record_bytes_ = 0;
  }

  WindowReader reader_;
  const std::string& what_;
  const TarIndexOptions& options_;
  TarIndex index_;
  int64_t offset_ = 0;
  int64_t last_data_end_ = 0;  // End of the last payload seen (to detect a cut archive).
  bool last_is_member_ = false;
  std::string long_name_;  // From a preceding 'L' or pax header.
  int64_t pax_size_ = -1;
  int64_t long_record_bytes_ = 0;  // A pending 'L' or 'x' record too long to read.
  int64_t first_record_ = -1;  // The pending member's first header record (-1: none yet).
  char long_record_type_ = 0;
};

}  // namespace

TarIndex IndexTar(const TarRangeReader& read, const std::string& what,
                  const TarIndexOptions& options) {
  return Indexer(read, what, options).Run();
}

}  // namespace flowloader
