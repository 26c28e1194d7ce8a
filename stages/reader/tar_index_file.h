// tar_index_file.h: the index `flowloader pack` writes beside each tar shard
// (`train-000000.tar.idx`), so that opening the shard costs one small read instead of a
// walk over every header (over HTTP / S3, practically every byte of the shard).
//
// Like DALI's webdataset `index_paths` (one index per tar) and webshart's per-shard JSON
// index, and unlike wids' shard-set descriptor (sizes and sample counts only, headers
// still scanned), the index holds every member: name, data offset and size, and the
// bytes of small non-image members (labels, .json), which opening reads as columns.
// One index per shard keeps brace patterns, list files and shard subsets working
// unchanged. Text, one member a line, so it can be read and diffed:
//
//   flowloader-tar-index 1
//   bytes 16724992          the shard's size
//   end 16723968            where the headers end (the end-of-archive blocks start)
//   tail 16723456           where the last member's first header record starts
//   members 6000
//   1536<TAB>55018<TAB>000000000.jpg
//   57344<TAB>1<TAB>000000000.cls<TAB>0          a payload after a fourth field
//   ...
//   done
//
// Names and payloads are C-escaped (absl::CEscape: \t, \n, \\, \ooo), so any byte can
// appear in them. A reader checks the index against its shard before trusting it
// (LoadTarIndexFile in shard_index_load.h): the shard's bytes from `tail` to its end
// must be exactly one tar member, the index's last, followed by the end of the archive
// at `bytes`.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_READER_TAR_INDEX_FILE_H_
#define FLOWLOADER_STAGES_READER_TAR_INDEX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace flowloader {

struct IndexedMember {
  std::string name;
  int64_t offset = 0;  // Of the data.
  int64_t size = 0;
  bool has_payload = false;
  std::string payload;  // The data, when has_payload.
};

struct TarIndexFile {
  int64_t bytes = 0;  // The shard's size.
  int64_t end = 0;    // Where the end-of-archive blocks start (TarIndex::indexed_bytes).
  int64_t tail = 0;   // Where the last member's first header record starts.
  std::vector<IndexedMember> members;
};

// kIndexPayloadBytes: members up to this size that are not images keep their bytes in
// the index (TarIndexOptions::inline_max_bytes' default, what labels use).
inline constexpr int64_t kIndexPayloadBytes = 4096;

// TarIndexFileName is the index's path beside `shard` (before a URL's query).
std::string TarIndexFileName(const std::string& shard);

// FormatTarIndexFile writes `index` in the format above.
std::string FormatTarIndexFile(const TarIndexFile& index);

// ParseTarIndexFile reads what FormatTarIndexFile wrote; InvalidArgument naming the line
// and what is wrong for anything else (another format, a truncated or edited file,
// members out of order or past the shard's end).
absl::StatusOr<TarIndexFile> ParseTarIndexFile(absl::string_view text);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_TAR_INDEX_FILE_H_
