// optional_memory.cc: ShrinkOptionalMemory, a search over the seek index's size.
#include "runtime/internal/optional_memory.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stages/reader/schemes.h"

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

// LargestFitting is the largest v in [lo, hi] for which fits_at(v) is OK, given that
// fits_at(lo) is, by halving the interval (about log2(hi - lo) plans).
int64_t LargestFitting(int64_t lo, int64_t hi, const std::function<bool(int64_t)>& fits_at) {
  ++hi;  // hi is now the smallest value known (or assumed) not to fit.
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits_at(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// kMostSampleRoomMb bounds the search for the sample room: 32 MiB for each of the most
// workers a graph may have (GraphOptions::kMaxWorkers 256); the plan caps the room at
// what its workers need, so any larger value plans the same.
constexpr int64_t kMostSampleRoomMb = 32 * 256;

// CutSampleRoom is the last resort under memory_limit_mb: `cut` (options with the seek
// index off and one batch buffer, which still do not fit) with the workers' sample room
// as large as fits, down to none (a worker then holds, for one sample, what the plan gives
// it and no more; larger samples are skipped as decode_memory / op_memory). `given`, the
// refusal, when not even without a room the plan fits.
absl::StatusOr<PipelineOptions> CutSampleRoom(const PipelineOptions& original,
                                              absl::StatusOr<PipelineOptions> cut,
                                              const FitsFn& fits, const absl::Status& given,
                                              std::string* note) {
  if (!cut.ok() || cut->memory_limit_mb <= 0) return given;
  // An auto prefetch stays auto: it starts at the fewest buffers and grows within budget.
  if (original.prefetch_batches == PipelineOptions::kAuto) {
    cut->prefetch_batches = PipelineOptions::kAuto;
  }
  const auto fits_room = [&](int64_t mb) {
    PipelineOptions o = *cut;
    o.sample_room_mb = mb;
    return fits(o).ok();
  };
  if (!fits_room(0)) return given;
  const int64_t most = cut->sample_room_mb >= 0 ? cut->sample_room_mb : kMostSampleRoomMb;
  const int64_t mb = LargestFitting(0, most, fits_room);
  PipelineOptions out = *std::move(cut);
  out.sample_room_mb = mb;
  if (note != nullptr) {
    std::string cuts;
    if (original.prefetch_batches > 1) {
      cuts = absl::StrCat("prefetch_batches cut from ", original.prefetch_batches, " to 1, ");
    }
    if (original.http_cache_mb > 0 && IsRemotePath(original.data)) {
      absl::StrAppend(&cuts, "HTTP block cache off, ");
    }
    if (SeekIndexMb(original) > 0) absl::StrAppend(&cuts, "decode seek index off, ");
    *note = absl::StrCat(
        cuts, "the workers' sample room (32 MiB a worker less its planned decode memory) cut "
        "to ", mb, " MiB to fit the memory budget: a sample that needs more than a worker's "
        "share is skipped (decode_memory, op_memory); raise memory_limit_mb or lower "
        "num_workers");
  }
  return out;
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
  // The HTTP block cache (whole remote shards kept as blocks) is optional too: cut with
  // the seek index (a limit of 256 MiB refused a 142 MB shard's cache outright).
  int64_t http_mb = 0;
  const auto with = [&](int64_t mb, int prefetch) -> absl::StatusOr<PipelineOptions> {
    absl::StatusOr<PipelineOptions> o =
        seek_mb > 0 ? WithSeekIndexMb(options, mb) : absl::StatusOr<PipelineOptions>(options);
    if (o.ok()) {
      o->prefetch_batches = prefetch;
      o->http_cache_mb = std::min(http_mb, options.http_cache_mb);
    }
    return o;
  };
  const auto fits_with = [&](int64_t mb, int prefetch) {
    absl::StatusOr<PipelineOptions> o = with(mb, prefetch);
    return o.ok() && fits(*o).ok();
  };
  // Without the seek index first, then with fewer batch buffers (a prefetch_batches set
  // above 1; auto starts at the fewest and grows only within the budget): if even one
  // buffer without the seek index does not fit, the refusal stands.
  int prefetch = options.prefetch_batches;
  if (!fits_with(0, prefetch)) {
    if (prefetch <= 1 || !fits_with(0, 1)) {
      return CutSampleRoom(options, with(0, 1), fits, given, note);
    }
    prefetch = static_cast<int>(LargestFitting(
        1, prefetch - 1, [&](int64_t p) { return fits_with(0, static_cast<int>(p)); }));
  }
  // The largest HTTP block cache that fits with those buffers, then the largest seek
  // index beside it. (All of either may fit once the buffers are fewer.)
  const bool cut_prefetch = prefetch != options.prefetch_batches;
  if (options.http_cache_mb > 0) {
    http_mb = options.http_cache_mb;
    if (!fits_with(0, prefetch)) {
      http_mb = LargestFitting(0, options.http_cache_mb - 1, [&](int64_t m) {
        http_mb = m;
        return fits_with(0, prefetch);
      });
    }
  }
  const int64_t mb = seek_mb > 0 ? LargestFitting(0, seek_mb,
                                                  [&](int64_t m) { return fits_with(m, prefetch); })
                                 : 0;
  absl::StatusOr<PipelineOptions> best = with(mb, prefetch);
  if (!best.ok()) return given;
  if (note != nullptr) {
    std::vector<std::string> cuts;
    if (cut_prefetch) {
      cuts.push_back(absl::StrCat("prefetch_batches cut from ", options.prefetch_batches, " to ",
                                  prefetch));
    }
    if (http_mb < options.http_cache_mb && IsRemotePath(options.data)) {
      cuts.push_back(absl::StrCat("HTTP block cache cut to ", http_mb, " MiB (http_cache_mb ",
                                  options.http_cache_mb, ")"));
    }
    if (seek_mb > 0 && mb < seek_mb) {
      cuts.push_back(mb > 0 ? absl::StrCat("decode seek index cut to ", mb, " MiB (seek_index_mb ",
                                           seek_mb, ")")
                            : absl::StrCat("decode seek index off (seek_index_mb ", seek_mb, ")"));
    }
    *note = absl::StrCat(absl::StrJoin(cuts, ", "), " to fit the memory budget");
  }
  return best;
}

}  // namespace pipeline_internal
}  // namespace flowloader
