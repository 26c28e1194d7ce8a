// options_check.cc: CheckPipelineOptions (see options_check.h).
#include "runtime/internal/options_check.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/transform.h"
#include "stages/reader/http_env.h"

namespace flowloader {
namespace {

// CheckDataChoice refuses more than one of data, sources and dataset.
absl::Status CheckDataChoice(const PipelineOptions& options) {
  if (options.dataset != nullptr) {
    if (!options.data.empty() || !options.sources.empty()) {
      return absl::InvalidArgumentError("a dataset is given: data and sources must be empty");
    }
    return absl::OkStatus();
  }
  if (!options.sources.empty() && !options.data.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data ('", options.data, "') and sources are both set: give one of them"));
  }
  return absl::OkStatus();
}

// CheckPath refuses a path holding a NUL byte (a spec's "dir\0x", a Python str): the
// system calls read it only up to the NUL, so it named another file and its messages
// were cut there ("flowloader: /data").
absl::Status CheckPath(const std::string& key, const std::string& path) {
  if (path.find('\0') == std::string::npos) return absl::OkStatus();
  std::string shown;
  for (char c : path.substr(0, 200)) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
  if (path.size() > 200) absl::StrAppend(&shown, "... (", path.size(), " bytes)");
  return absl::InvalidArgumentError(absl::StrCat(
      key, " holds a NUL byte, which no path can: '", shown, "' (remove it)"));
}

absl::Status CheckPaths(const PipelineOptions& options) {
  const std::pair<const char*, const std::string*> paths[] = {
      {"data", &options.data},           {"annotations", &options.annotations},
      {"categories", &options.categories}, {"label_maps", &options.label_maps},
      {"cache_dir", &options.cache_dir}, {"http_ca_file", &options.http.ca_file}};
  for (const auto& [key, path] : paths) {
    if (absl::Status s = CheckPath(key, *path); !s.ok()) return s;
  }
  for (const WeightedSource& source : options.sources) {
    if (absl::Status s = CheckPath(absl::StrCat("source '", source.name, "' data"), source.data);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPipelineOptions(const PipelineOptions& options) {
  if (options.name.empty()) return absl::InvalidArgumentError("pipeline name is empty");
  if (absl::Status s = CheckPaths(options); !s.ok()) return s;
  // Checked whatever the data, so a typo is refused here, not on the first https shard.
  if (absl::Status s = CheckCaFile(options.http.ca_file); !s.ok()) return s;
  if (absl::Status s = CheckDataChoice(options); !s.ok()) return s;
  if (options.even_shards != "pad" && options.even_shards != "trim") {
    return absl::InvalidArgumentError(
        absl::StrCat("even_shards must be pad or trim, got '", options.even_shards, "'"));
  }
  if (options.stages.empty()) {
    absl::StatusOr<augment::Mode> mode = augment::ParseMode(options.transform, "transform");
    if (!mode.ok()) return mode.status();
  }
  return absl::OkStatus();
}

}  // namespace flowloader
