// tar_index_file.cc: writing and parsing a shard's index (see tar_index_file.h).
#include "stages/reader/tar_index_file.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace flowloader {
namespace {

constexpr absl::string_view kMagic = "flowloader-tar-index 1";
constexpr int64_t kTarBlock = 512;

// Lines splits `text` into lines; the last one (after the final newline) is dropped.
std::vector<absl::string_view> Lines(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

absl::Status Bad(size_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line + 1, ": ", what));
}

// Field reads `line` as "NAME VALUE" with VALUE an integer >= 0.
absl::Status Field(const std::vector<absl::string_view>& lines, size_t i,
                   absl::string_view name, int64_t* value) {
  if (i >= lines.size()) return Bad(i, absl::StrCat("missing (expected \"", name, " N\")"));
  std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(lines[i], ' ');
  if (kv.first != name || !absl::SimpleAtoi(kv.second, value) || *value < 0) {
    return Bad(i, absl::StrCat("expected \"", name, " N\" with N >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ParseMember(absl::string_view line, IndexedMember* m) {
  const std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
  if (f.size() != 3 && f.size() != 4) return absl::InvalidArgumentError("not 3 or 4 fields");
  if (!absl::SimpleAtoi(f[0], &m->offset) || !absl::SimpleAtoi(f[1], &m->size) ||
      m->size < 0) {
    return absl::InvalidArgumentError("bad offset or size");
  }
  std::string error;
  if (!absl::CUnescape(f[2], &m->name, &error) || m->name.empty()) {
    return absl::InvalidArgumentError("bad name");
  }
  m->has_payload = f.size() == 4;
  if (m->has_payload && (!absl::CUnescape(f[3], &m->payload, &error) ||
                         static_cast<int64_t>(m->payload.size()) != m->size)) {
    return absl::InvalidArgumentError("the payload is not `size` bytes");
  }
  return absl::OkStatus();
}

}  // namespace

std::string TarIndexFileName(const std::string& shard) {
  const size_t query = shard.find('?');
  if (query == std::string::npos) return shard + ".idx";
  return absl::StrCat(shard.substr(0, query), ".idx", shard.substr(query));
}

std::string FormatTarIndexFile(const TarIndexFile& index) {
  std::string out = absl::StrCat(kMagic, "\nbytes ", index.bytes, "\nend ", index.end,
                                 "\ntail ", index.tail, "\nmembers ", index.members.size(),
                                 "\n");
  for (const IndexedMember& m : index.members) {
    absl::StrAppend(&out, m.offset, "\t", m.size, "\t", absl::CEscape(m.name));
    if (m.has_payload) absl::StrAppend(&out, "\t", absl::CEscape(m.payload));
    out += '\n';
  }
  out += "done\n";
  return out;
}

absl::StatusOr<TarIndexFile> ParseTarIndexFile(absl::string_view text) {
  const std::vector<absl::string_view> lines = Lines(text);
  if (lines.empty() || lines[0] != kMagic) {
    return Bad(0, absl::StrCat("not a tar index (expected \"", kMagic, "\")"));
  }
  TarIndexFile index;
  int64_t count = 0;
  for (auto [i, name, value] : {std::make_tuple(1, "bytes", &index.bytes),
                                std::make_tuple(2, "end", &index.end),
                                std::make_tuple(3, "tail", &index.tail),
                                std::make_tuple(4, "members", &count)}) {
    if (absl::Status s = Field(lines, i, name, value); !s.ok()) return s;
  }
  // The header lines, `count` members and "done": a shorter file was cut short.
  constexpr size_t kFirst = 5;
  if (count < 1 || lines.size() != kFirst + static_cast<size_t>(count) + 1 ||
      lines.back() != "done") {
    return Bad(lines.size() - 1, absl::StrCat("expected ", count, " member lines (>= 1) and "
                                              "\"done\": the index is cut short or edited"));
  }
  if (index.end + 2 * kTarBlock > index.bytes || index.tail >= index.end) {
    return Bad(1, "bytes, end and tail do not describe a tar archive");
  }
  index.members.resize(static_cast<size_t>(count));
  int64_t data_end = 0;  // Members are in archive order, each after a header.
  for (size_t k = 0; k < index.members.size(); ++k) {
    IndexedMember& m = index.members[k];
    if (absl::Status s = ParseMember(lines[kFirst + k], &m); !s.ok()) {
      return Bad(kFirst + k, s.message());
    }
    if (m.offset < data_end + kTarBlock || m.offset % kTarBlock != 0 ||
        m.size > index.end - m.offset) {
      return Bad(kFirst + k, absl::StrCat("member at byte ", m.offset, " (", m.size,
                                          " bytes) is out of order or past the end"));
    }
    data_end = m.offset + m.size;
  }
  if (index.tail >= index.members.back().offset) {
    return Bad(3, "tail is not before the last member's data");
  }
  return index;
}

}  // namespace flowloader
