// optional_memory.cc: ShrinkOptionalMemory, a search over the seek index's size.
#include "runtime/internal/optional_memory.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowloader {
namespace pipeline_internal {
namespace {

constexpr char kDecode[] = "decode";
constexpr char kSeekIndexMb[] = "seek_index_mb";
// The decode stage's default (graph/builtin_stages.cc DecodeSchema).
constexpr int64_t kDefaultSeekIndexMb = 256;

absl::StatusOr<std::vector<StageSpec>> StagesOf(const PipelineOptions& options) {
  if (!options.stages.empty()) return options.stages;
  return DefaultStages(options);
}

}  // namespace

int64_t SeekIndexMb(const PipelineOptions& options) {
  absl::StatusOr<std::vector<StageSpec>> stages = StagesOf(options);
  if (!stages.ok()) return -1;
  int64_t mb = -1;
  for (const StageSpec& s : *stages) {
    if (s.type != kDecode) continue;
    auto it = s.args.find(kSeekIndexMb);
    int64_t v = kDefaultSeekIndexMb;
    if (it != s.args.end() && !absl::SimpleAtoi(it->second, &v)) v = 0;
    mb = std::max(mb, v);
  }
  return mb;
}

absl::StatusOr<PipelineOptions> WithSeekIndexMb(const PipelineOptions& options, int64_t mb) {
  absl::StatusOr<std::vector<StageSpec>> stages = StagesOf(options);
  if (!stages.ok()) return stages.status();
  PipelineOptions out = options;
  out.stages = *std::move(stages);
  for (StageSpec& s : out.stages) {
    if (s.type == kDecode) s.args[kSeekIndexMb] = absl::StrCat(mb);
  }
  return out;
}

absl::StatusOr<PipelineOptions> ShrinkOptionalMemory(const PipelineOptions& options,
                                                     const FitsFn& fits, std::string* note) {
  const absl::Status given = fits(options);
  if (given.ok() || given.code() != absl::StatusCode::kResourceExhausted) {
    if (!given.ok()) return given;
    return options;
  }
  const int64_t seek_mb = SeekIndexMb(options);
  if (seek_mb <= 0) return given;
  // Without the seek index first: if even that does not fit, the refusal stands.
  absl::StatusOr<PipelineOptions> off = WithSeekIndexMb(options, 0);
  if (!off.ok() || !fits(*off).ok()) return given;
  // The largest size that fits, by halving the interval (at most ~log2(seek_mb) plans).
  int64_t lo = 0, hi = seek_mb;  // lo fits, hi does not.
  PipelineOptions best = *std::move(off);
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    absl::StatusOr<PipelineOptions> o = WithSeekIndexMb(options, mid);
    if (!o.ok()) break;
    if (fits(*o).ok()) {
      lo = mid;
      best = *std::move(o);
    } else {
      hi = mid;
    }
  }
  if (note != nullptr) {
    *note = lo > 0 ? absl::StrCat("decode seek index cut to ", lo, " MiB (seek_index_mb ", seek_mb,
                                  ") to fit the memory budget")
                   : absl::StrCat("decode seek index off (seek_index_mb ", seek_mb,
                                  ") to fit the memory budget");
  }
  return best;
}

}  // namespace pipeline_internal
}  // namespace flowloader
