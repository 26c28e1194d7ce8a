#include "tests/fuzz/tar_fuzz_body.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "stages/core/sample_error.h"
#include "stages/reader/internal/shard_names.h"
#include "stages/reader/tar_index.h"

namespace flowloader::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "tar index contract broken: %s\n", what);
  std::abort();
}

TarIndex Index(absl::string_view archive, int64_t read_ahead) {
  TarIndexOptions o;
  o.read_ahead_bytes = read_ahead;
  o.want_payload = [](const std::string&) { return true; };
  o.inline_max_bytes = 4096;
  o.max_members = 100000;
  return IndexTar(
      [archive](int64_t offset, int64_t length, std::string* out) {
        if (offset < 0 || length < 0) return absl::InvalidArgumentError("negative range");
        const auto size = static_cast<int64_t>(archive.size());
        const int64_t begin = std::min(offset, size);
        const absl::string_view range = archive.substr(
            static_cast<size_t>(begin), static_cast<size_t>(std::min(length, size - begin)));
        out->assign(range.data(), range.size());
        return absl::OkStatus();
      },
      "fuzz.tar", o);
}

}  // namespace

void RunTarIndexOne(const uint8_t* data, size_t size) {
  const absl::string_view archive(reinterpret_cast<const char*>(data), size);
  const TarIndex plain = Index(archive, 0);
  const TarIndex windowed = Index(archive, 1536);
  Check(plain.members.size() == windowed.members.size(), "windows change the member count");
  Check(ErrorReason(plain.damage) == ErrorReason(windowed.damage), "windows change the damage");
  Check(plain.damage.ok() || !ErrorReason(plain.damage).empty(), "damage without a reason");
  int64_t previous_end = 0;
  for (size_t i = 0; i < plain.members.size(); ++i) {
    const TarMember& m = plain.members[i];
    Check(m.name == windowed.members[i].name && m.offset == windowed.members[i].offset &&
              m.size == windowed.members[i].size,
          "windows change a member");
    Check(m.offset >= 512 && m.offset % 512 == 0, "data offset not after a header, aligned");
    Check(m.size >= 0 && m.offset + m.size <= static_cast<int64_t>(size),
          "a member's data runs past the archive");
    Check(m.offset >= previous_end, "members overlap or go backwards");
    previous_end = m.offset + m.size;
    if (m.size <= 4096) {  // Every payload this small was asked for.
      Check(m.inline_payload == archive.substr(static_cast<size_t>(m.offset),
                                               static_cast<size_t>(m.size)),
            "an inline payload differs from the bytes at its offset");
    }
    std::string key, extension;
    if (shard_internal::SplitKey(m.name, &key, &extension)) {
      Check(key.size() + 1 + extension.size() == m.name.size(), "SplitKey loses characters");
    }
    int64_t label = 0;
    (void)shard_internal::JsonIntField(m.inline_payload, "label", &label);
  }
}

}  // namespace flowloader::fuzz
