// shard_index_load.cc: a shard's members from its index file (see shard_index_load.h).
#include "stages/reader/shard_index_load.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/sample_error.h"
#include "stages/reader/tar_index_file.h"

namespace flowloader {
namespace {

// An index holds ~60 bytes a member: 256 MiB is millions of members, more than a shard
// has; a larger file is not an index.
constexpr int64_t kMaxIndexBytes = int64_t{256} << 20;

LoadedIndex Unusable(IndexOutcome outcome, std::string why) {
  LoadedIndex out;
  out.outcome = outcome;
  out.why = std::move(why);
  return out;
}

// CheckTail is OK when `tail` (the shard's bytes from index.tail to its end, asked one
// byte past `bytes`) is the index's last member and then the end of the archive exactly
// at index.bytes; else what differs.
absl::Status CheckTail(const TarIndexFile& index, const std::string& tail) {
  const int64_t want = index.bytes - index.tail;
  if (static_cast<int64_t>(tail.size()) != want) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the shard does not end at byte ", index.bytes, " as its index says (",
        static_cast<int64_t>(tail.size()) > want ? "it is longer" : "it is shorter", ")"));
  }
  const TarIndex found = IndexTar(
      [&tail](int64_t offset, int64_t length, std::string* out) {
        out->assign(tail, static_cast<size_t>(std::min<int64_t>(offset, tail.size())),
                    static_cast<size_t>(length));
        return absl::OkStatus();
      },
      "tail");
  const IndexedMember& last = index.members.back();
  if (!found.damage.ok() || found.members.size() != 1 || found.members[0].name != last.name ||
      found.members[0].size != last.size || found.members[0].offset + index.tail != last.offset ||
      found.indexed_bytes + index.tail != index.end) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the shard's last member is not ", last.name, " (", last.size, " bytes at byte ",
        last.offset, ") as its index says"));
  }
  return absl::OkStatus();
}

}  // namespace

const char* IndexOutcomeName(IndexOutcome outcome) {
  switch (outcome) {
    case IndexOutcome::kUsed:
      return "used";
    case IndexOutcome::kMissing:
      return "missing";
    case IndexOutcome::kStale:
      return "stale";
    case IndexOutcome::kDamaged:
      return "damaged";
  }
  return "?";
}

LoadedIndex LoadTarIndexFile(Env* env, RandomAccessFile* shard, const std::string& location,
                             const TarIndexOptions& options) {
  const std::string path = TarIndexFileName(location);
  std::string text;
  if (!env->ReadFile(path, kMaxIndexBytes, &text).ok()) {
    return Unusable(IndexOutcome::kMissing, "");  // Absent or unreadable: the scan decides.
  }
  absl::StatusOr<TarIndexFile> file = ParseTarIndexFile(text);
  if (!file.ok()) return Unusable(IndexOutcome::kDamaged, std::string(file.status().message()));
  const TarIndexFile& index = *file;
  if (static_cast<int64_t>(index.members.size()) > options.max_members) {
    return Unusable(IndexOutcome::kDamaged,
                    absl::StrCat(index.members.size(), " members, over max_members"));
  }
  std::string tail;
  if (!shard->Read(index.tail, index.bytes - index.tail + 1, &tail).ok()) {
    return Unusable(IndexOutcome::kMissing, "");  // The scan reports the shard's error.
  }
  if (absl::Status s = CheckTail(index, tail); !s.ok()) {
    return Unusable(IndexOutcome::kStale, std::string(s.message()));
  }
  LoadedIndex out;
  out.outcome = IndexOutcome::kUsed;
  out.index.indexed_bytes = index.end;
  out.index.members.reserve(index.members.size());
  for (const IndexedMember& m : index.members) {
    // A name the scan would skip (over max_name_bytes): the scan's verdict, not ours.
    if (static_cast<int64_t>(m.name.size()) >= options.max_name_bytes) {
      return Unusable(IndexOutcome::kMissing, "");
    }
    TarMember member;
    member.name = m.name;
    member.offset = m.offset;
    member.size = m.size;
    if (options.want_payload != nullptr && m.size <= options.inline_max_bytes &&
        options.want_payload(m.name)) {
      if (m.has_payload) {
        member.inline_payload = m.payload;
      } else if (!shard->Read(m.offset, m.size, &member.inline_payload).ok() ||
                 static_cast<int64_t>(member.inline_payload.size()) != m.size) {
        return Unusable(IndexOutcome::kMissing, "");  // The scan reports the shard's error.
      }
    }
    out.index.members.push_back(std::move(member));
  }
  return out;
}

}  // namespace flowloader
