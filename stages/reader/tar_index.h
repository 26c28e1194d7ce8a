// tar_index.h: the member table of a tar archive, from its headers alone.
//
// A tar shard is indexed once (when the dataset is opened) so that any member can then be
// read with one positioned read: the index holds each regular file's name, data offset
// and size. Only the 512-byte headers are read (plus, on request, the payload of small
// members the caller names, e.g. `.cls` labels, which sit in the block after their
// header). Understood: POSIX ustar (name + prefix), GNU tar (`././@LongLink` 'L' long
// names, 'K' long link names, base-256 sizes) and pax ('x' records `path` and `size`;
// 'g' global headers ignored); directories, links, devices and FIFOs are skipped, as
// webdataset's reader skips every member that is not a regular file.
//
// A damaged archive is indexed up to the damage: the members before it are kept and
// `damage` says what went wrong and where (reason truncated for an archive cut short,
// corrupt for a bad header checksum or size field, unknown_format when not even the first
// header is a tar header, empty_file for a zero-byte file). Indexing never reads past
// what the headers declare and stops at `max_members`, so hostile input costs bounded
// time and memory.
//
// Thread-safety: IndexTar is a pure function of what `read` returns; call it from any
// thread with a reader that is safe there.
#ifndef FLOWLOADER_STAGES_READER_TAR_INDEX_H_
#define FLOWLOADER_STAGES_READER_TAR_INDEX_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace flowloader {

struct TarMember {
  std::string name;     // Full path inside the archive ("train/000123.jpg").
  int64_t offset = 0;   // Of the member's data, from the start of the archive.
  int64_t size = 0;     // Data bytes.
  std::string inline_payload;  // The data, when the caller asked for it (see options).
};

struct TarIndex {
  std::vector<TarMember> members;  // Regular files, in archive order.
  // Members left out, each with its reason and what was wrong (a name longer than
  // max_name_bytes); indexing went on after each.
  std::vector<absl::Status> skipped;
  // OK, or why indexing stopped before the end of the archive (with a reason tag).
  absl::Status damage;
  // Bytes the headers account for up to the end (or the damage).
  int64_t indexed_bytes = 0;
  // Where the last member's first header record starts (its GNU long-name or pax record
  // when it has one): TarIndexFile::tail, for an index written from a scan.
  int64_t last_member_record = 0;
};

// TarRangeReader replaces *out with up to `length` bytes at `offset`; fewer only at the
// end of the archive (none past it). An error aborts indexing and becomes `damage`.
using TarRangeReader = std::function<absl::Status(int64_t offset, int64_t length,
                                                  std::string* out)>;

struct TarIndexOptions {
  // Read this many bytes at a time and serve headers from them, so that an archive of
  // small members costs one read per window instead of one per header (HTTP); 0 reads
  // each header alone (local files, where the page cache reads ahead). >= 0. Windows are
  // aligned: each starts at a multiple of this size (a remote shard's windows are then
  // its block-cache blocks); a read crossing a window's end is passed on as it is.
  int64_t read_ahead_bytes = 0;
  // Keep the payload of members for which this returns true and whose size is at most
  // inline_max_bytes (labels); nullptr keeps none.
  std::function<bool(const std::string& name)> want_payload;
  int64_t inline_max_bytes = 4096;
  // Stop (damage corrupt) past this many members: a guard against hostile headers.
  int64_t max_members = int64_t{1} << 24;
  // Longest GNU long-name or pax record read. A longer one (valid for tar, useless as a
  // sample key) is not read: the member it names goes to `skipped` (reason unsupported)
  // and indexing continues with the next one.
  int64_t max_name_bytes = 65536;
};

// IndexTar reads the headers of the archive `what` (a path or URL, named in errors).
TarIndex IndexTar(const TarRangeReader& read, const std::string& what,
                  const TarIndexOptions& options = {});

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_TAR_INDEX_H_
