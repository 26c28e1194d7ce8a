#include "stages/reader/tar_writer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"

namespace flowloader {
namespace {

constexpr int64_t kBlock = 512;
constexpr size_t kNameField = 100;

void PutOctal(char* field, int width, int64_t value) {
  // width-1 octal digits and a NUL, as GNU tar writes them.
  const std::string digits = absl::StrFormat("%0*o", width - 1, value);
  std::memcpy(field, digits.data(), static_cast<size_t>(width - 1));
  field[width - 1] = '\0';
}

}  // namespace

absl::StatusOr<std::unique_ptr<TarWriter>> TarWriter::Create(const std::string& path) {
  return Create(Env::Default(), path);
}

absl::StatusOr<std::unique_ptr<TarWriter>> TarWriter::Create(Env* env, const std::string& path) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  return std::unique_ptr<TarWriter>(new TarWriter(std::move(*file)));
}

absl::Status TarWriter::Write(absl::string_view data) {
  if (file_ == nullptr) return absl::FailedPreconditionError("tar writer: already closed");
  if (absl::Status s = file_->Append(data); !s.ok()) return s;
  bytes_ += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::Status TarWriter::Pad(int64_t size) {
  const int64_t rest = (kBlock - size % kBlock) % kBlock;
  return Write(std::string(static_cast<size_t>(rest), '\0'));
}

absl::Status TarWriter::WriteHeader(absl::string_view name, int64_t size, char type) {
  char h[kBlock];
  std::memset(h, 0, sizeof(h));
  std::memcpy(h, name.data(), std::min(name.size(), kNameField));
  PutOctal(h + 100, 8, 0644);
  PutOctal(h + 108, 8, 0);
  PutOctal(h + 116, 8, 0);
  PutOctal(h + 124, 12, size);
  PutOctal(h + 136, 12, 0);
  h[156] = type;
  std::memcpy(h + 257, "ustar", 6);  // POSIX magic "ustar\0", version "00".
  std::memcpy(h + 263, "00", 2);
  std::memset(h + 148, ' ', 8);
  int64_t sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  PutOctal(h + 148, 7, sum);  // Six digits, NUL, then the space already there.
  return Write(absl::string_view(h, sizeof(h)));
}

absl::Status TarWriter::Add(absl::string_view name, absl::string_view data) {
  const int64_t first_record = bytes_;
  if (name.size() > kNameField) {
    // GNU long name: a member named ././@LongLink whose data is the name plus a NUL.
    const std::string long_name = absl::StrCat(name, std::string(1, '\0'));
    const auto size = static_cast<int64_t>(long_name.size());
    if (absl::Status s = WriteHeader("././@LongLink", size, 'L'); !s.ok()) return s;
    if (absl::Status s = Write(long_name); !s.ok()) return s;
    if (absl::Status s = Pad(size); !s.ok()) return s;
  }
  const auto size = static_cast<int64_t>(data.size());
  if (absl::Status s = WriteHeader(name, size, '0'); !s.ok()) return s;
  IndexedMember m;
  m.name = std::string(name);
  m.offset = bytes_;
  m.size = size;
  m.has_payload = size <= kIndexPayloadBytes && !HasImageExtension(m.name);
  if (m.has_payload) m.payload = std::string(data);
  if (absl::Status s = Write(data); !s.ok()) return s;
  index_.tail = first_record;
  index_.members.push_back(std::move(m));
  return Pad(size);
}

absl::Status TarWriter::Close() {
  index_.end = bytes_;
  if (absl::Status s = Write(std::string(2 * kBlock, '\0')); !s.ok()) return s;
  index_.bytes = bytes_;
  std::unique_ptr<WritableFile> file = std::move(file_);
  return file->Close();
}

absl::Status TarWriter::Abort() {
  if (file_ == nullptr) return absl::OkStatus();
  std::unique_ptr<WritableFile> file = std::move(file_);
  return file->Abort();
}

}  // namespace flowloader
