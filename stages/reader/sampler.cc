#include "stages/reader/sampler.h"

#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/rng.h"

namespace flowloader {
namespace {
// Separates the shuffle's draws from the per-sample augmentation draws of the same key.
constexpr uint64_t kShuffleStream = 0x5348554646ULL;  // "SHUFF"
}  // namespace

absl::StatusOr<std::unique_ptr<Sampler>> Sampler::Create(int64_t dataset_size,
                                                         const SamplerOptions& options) {
  if (dataset_size <= 0) return absl::InvalidArgumentError("the dataset is empty");
  if (options.world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size must be >= 1, got ", options.world_size));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank must be in [0, ", options.world_size, "), got ", options.rank));
  }
  const int64_t ws = options.world_size;
  const int64_t per_rank =
      options.drop_remainder ? dataset_size / ws : (dataset_size + ws - 1) / ws;
  if (per_rank == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the dataset has ", dataset_size, " samples, fewer than world_size ", ws));
  }
  return std::unique_ptr<Sampler>(new Sampler(dataset_size, options, per_rank));
}

std::vector<int64_t> Sampler::EpochIndices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    // Fisher-Yates with a counter-based RNG keyed by (seed, epoch): same on every rank,
    // so the shards below stay disjoint.
    SampleRng rng(options_.seed, static_cast<uint64_t>(epoch), 0, kShuffleStream);
    for (int64_t i = dataset_size_ - 1; i > 0; --i) {
      std::swap(order[i], order[rng.UniformInt(0, i + 1)]);
    }
  }
  const int64_t ws = options_.world_size;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t k = 0; k < per_rank_; ++k) {
    const int64_t position = k * ws + options_.rank;  // May wrap past the end (padding).
    mine.push_back(order[static_cast<size_t>(position % dataset_size_)]);
  }
  return mine;
}

}  // namespace flowloader
