// env_util.cc: see env_util.h.
#include "stages/reader/env_util.h"

#include <memory>

#include "absl/status/statusor.h"

namespace flowloader {

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

absl::Status WriteWholeFile(Env* env, const std::string& path, const std::string& text) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Append(text); !s.ok()) return s;
  return (*file)->Close();
}

}  // namespace flowloader
