#include "stages/reader/sampler.h"

#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/rng.h"

namespace flowloader {
namespace {
// Separates the shuffle's draws from the per-sample augmentation draws of the same key.
constexpr uint64_t kShuffleStream = 0x5348554646ULL;  // "SHUFF"

// CreateMixture makes the schedule of `options.mixture` (or of the whole dataset as one
// source, for epoch_samples alone), whose sizes must add up to the dataset's.
absl::StatusOr<std::unique_ptr<MixtureSchedule>> CreateMixture(int64_t dataset_size,
                                                               const SamplerOptions& options) {
  MixtureOptions m;
  m.sources = options.mixture;
  if (m.sources.empty()) m.sources.push_back(MixtureComponent{dataset_size, 1.0});
  m.epoch_samples = options.epoch_samples;
  m.shuffle = options.shuffle;
  m.seed = options.seed;
  int64_t total = 0;
  for (const MixtureComponent& c : m.sources) total += c.size;
  if (total != dataset_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the mixture's sources hold ", total, " samples, the dataset ", dataset_size));
  }
  absl::StatusOr<MixtureSchedule> schedule = MixtureSchedule::Create(m);
  if (!schedule.ok()) return schedule.status();
  return std::make_unique<MixtureSchedule>(std::move(*schedule));
}

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
  if (options.epoch_samples > kMaxEpochSamples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epoch_samples ", options.epoch_samples, " is over the limit of ", kMaxEpochSamples,
        " (2^40; an epoch's order is held in memory, 8-36 B a sample): lower epoch_samples"));
  }
  std::unique_ptr<MixtureSchedule> mixture;
  int64_t epoch_size = dataset_size;
  if (!options.mixture.empty() || options.epoch_samples != 0) {
    absl::StatusOr<std::unique_ptr<MixtureSchedule>> m = CreateMixture(dataset_size, options);
    if (!m.ok()) return m.status();
    mixture = std::move(*m);
    epoch_size = mixture->epoch_samples();
  }
  const int64_t ws = options.world_size;
  int64_t per_rank = options.drop_remainder ? epoch_size / ws : (epoch_size + ws - 1) / ws;
  if (options.repeated_augment < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "repeated_augment must be >= 1 (1 = off), got ", options.repeated_augment));
  }
  if (options.repeated_augment > 1) {
    // RASampler's cut: num_selected_samples = floor(len // 256 * 256 / num_replicas).
    per_rank = epoch_size / 256 * 256 / ws;
    if (per_rank == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "repeated_augment ", options.repeated_augment, " keeps floor(", epoch_size,
          " // 256 * 256 / ", ws, ") = 0 samples a rank (RASampler's cut): it needs an "
          "epoch of at least ", 256, " samples"));
    }
  }
  if (per_rank == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an epoch has ", epoch_size, " samples, fewer than world_size ", ws));
  }
  return std::unique_ptr<Sampler>(
      new Sampler(epoch_size, options, per_rank, std::move(mixture)));
}

int64_t Sampler::order_bytes() const {
  // The held order and the next epoch's being built; a rank's own indices are a copy
  // of part of the built order, except when the order is the rank's (IsRanksOrder).
  const int64_t held_and_next = 2 * per_rank_ * int64_t{8};
  if (IsRanksOrder()) return held_and_next;
  const int64_t build = mixture_ != nullptr ? 36 : 8;
  return epoch_size_ * build + held_and_next;
}

bool Sampler::IsRanksOrder() const {
  return mixture_ == nullptr && options_.world_size == 1 && options_.repeated_augment <= 1 &&
         per_rank_ == epoch_size_;
}

std::vector<int64_t> Sampler::EpochOrder(int64_t epoch) const {
  if (mixture_ != nullptr) return mixture_->EpochOrder(epoch);
  std::vector<int64_t> order(static_cast<size_t>(epoch_size_));
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    // Fisher-Yates with a counter-based RNG keyed by (seed, epoch): same on every rank,
    // so the shards below stay disjoint.
    SampleRng rng(options_.seed, static_cast<uint64_t>(epoch), 0, kShuffleStream);
    for (int64_t i = epoch_size_ - 1; i > 0; --i) {
      std::swap(order[i], order[rng.UniformInt(0, i + 1)]);
    }
  }
  return order;
}

uint64_t Sampler::RngKey(int64_t position, int64_t index) const {
  if (options_.repeated_augment <= 1) return static_cast<uint64_t>(index);
  return static_cast<uint64_t>(position * options_.world_size + options_.rank);
}

int Sampler::Copy(int64_t position) const {
  const int64_t k = options_.repeated_augment;
  if (k <= 1) return 0;
  const int64_t global = position * options_.world_size + options_.rank;
  return static_cast<int>(global % (epoch_size_ * k) % k);
}

std::vector<int64_t> Sampler::EpochIndices(int64_t epoch) const {
  if (IsRanksOrder()) return EpochOrder(epoch);  // One rank: no copy of it (8 B a sample).
  const std::vector<int64_t> order = EpochOrder(epoch);
  const int64_t ws = options_.world_size;
  if (options_.repeated_augment > 1) {
    // RASampler: order repeated k times in a row, padded by wrapping (positions past
    // n·k take the repeated order from its start), rank r every ws-th from r, cut.
    const int64_t k = options_.repeated_augment;
    const int64_t repeated = epoch_size_ * k;
    std::vector<int64_t> mine;
    mine.reserve(static_cast<size_t>(per_rank_));
    for (int64_t m = 0; m < per_rank_; ++m) {
      const int64_t global = (m * ws + options_.rank) % repeated;
      mine.push_back(order[static_cast<size_t>(global / k)]);
    }
    return mine;
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t k = 0; k < per_rank_; ++k) {
    const int64_t position = k * ws + options_.rank;  // May wrap past the end (padding).
    mine.push_back(order[static_cast<size_t>(position % epoch_size_)]);
  }
  return mine;
}

}  // namespace flowloader
