// options_check.cc: CheckPipelineOptions (see options_check.h).
#include "runtime/internal/options_check.h"

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

}  // namespace

absl::Status CheckPipelineOptions(const PipelineOptions& options) {
  if (options.name.empty()) return absl::InvalidArgumentError("pipeline name is empty");
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
