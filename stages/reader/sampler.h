// sampler.h: which dataset indices each epoch visits, in which order, on which rank.
//
// Sequential or shuffled (a permutation drawn from SampleRng(seed, epoch), so each epoch
// has a different order and every run with the same seed the same one), then sharded like
// torch.utils.data.DistributedSampler: the epoch's order is padded by wrapping around (or,
// with drop_remainder, truncated) to a multiple of world_size, and rank r takes positions
// r, r + world_size, ... so every rank gets the same number of samples.
//
// With `mixture` (weighted sources, mixture_sampler.h) or `epoch_samples`, the epoch's
// order is a MixtureSchedule's instead, sharded the same way.
//
// With `repeated_augment` k > 1, torchvision's/DeiT's RASampler: the epoch's order with
// every index repeated k times in a row, padded by wrapping to a multiple of world_size,
// rank r taking positions r, r + world_size, ..., and each rank's epoch cut to
// ⌊⌊n/256⌋·256 / world_size⌋ samples (n the epoch's order's length): an epoch sees about
// 1/k of the data, each sample k times, its copies on different ranks when world_size
// > 1. Differences from RASampler: the shuffle is this sampler's (SampleRng), not
// torch.randperm seeded with seed + epoch, and even_shards does not apply (RASampler
// always pads; the cut drops the padding anyway). Each copy is told apart by RngKey, so
// its random crop and flip differ.
//
// Thread-safety: immutable after Create.
#ifndef FLOWLOADER_STAGES_READER_SAMPLER_H_
#define FLOWLOADER_STAGES_READER_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/mixture_sampler.h"

namespace flowloader {

struct SamplerOptions {
  // Shuffle the order every epoch. Default false (dataset order).
  bool shuffle = false;
  // Seed of the shuffle; the epoch number is mixed in. Any value.
  uint64_t seed = 0;
  // This process's rank in [0, world_size). Default 0.
  int rank = 0;
  // Number of ranks sharing the dataset; >= 1. Default 1.
  int world_size = 1;
  // Drop the tail that does not divide by world_size instead of padding it by wrapping
  // around. Default false (pad, as DistributedSampler does).
  bool drop_remainder = false;
  // Weighted sources whose sizes add up to the dataset's (Dataset::OpenSources' layout);
  // empty = one source, the whole dataset.
  std::vector<MixtureComponent> mixture;
  // Positions per epoch before sharding; 0 = the dataset's size. Any other value, or a
  // mixture, draws the epoch from a MixtureSchedule.
  int64_t epoch_samples = 0;
  // Copies of each sample in a row (RASampler, timm's --aug-repeats); >= 1. Default 1
  // (off).
  int repeated_augment = 1;
};

class Sampler {
 public:
  // Create validates the options against a dataset of `dataset_size` samples.
  static absl::StatusOr<std::unique_ptr<Sampler>> Create(int64_t dataset_size,
                                                         const SamplerOptions& options);

  // EpochIndices returns this rank's dataset indices for `epoch`, in visiting order.
  std::vector<int64_t> EpochIndices(int64_t epoch) const;
  // samples_per_rank is EpochIndices(e).size() for every epoch e.
  int64_t samples_per_rank() const { return per_rank_; }
  // order_bytes is the memory an epoch's order takes at its peak: building it (8 B a
  // position, 36 B for a mixture's draws, source order and merge; none with one rank,
  // whose indices are the order itself) plus the rank's indices that the graph holds
  // while the next epoch's are built (2 × 8 B a sample). Counted in
  // the memory plan (`sampler_order`), so a huge epoch_samples is refused up front.
  int64_t order_bytes() const;
  // kMaxEpochSamples bounds epoch_samples (2^40, ~36 TiB of order): above it the order's
  // size does not fit the arithmetic that plans it, and no machine holds it anyway.
  static constexpr int64_t kMaxEpochSamples = int64_t{1} << 40;

  // RngKey is the key of the random draws of the sample at this rank's `position` in an
  // epoch, whose dataset index is `index`: the index itself (as always), or with
  // repeated_augment the copy's position in the epoch's repeated order before sharding,
  // so that every copy gets its own crop and flip, the same for any world_size.
  uint64_t RngKey(int64_t position, int64_t index) const;
  // Copy is which copy (0..k-1) of its sample `position` is; 0 without repeats.
  int Copy(int64_t position) const;
  int repeated_augment() const { return options_.repeated_augment; }

 private:
  Sampler(int64_t epoch_size, const SamplerOptions& options, int64_t per_rank,
          std::unique_ptr<MixtureSchedule> mixture)
      : epoch_size_(epoch_size),
        options_(options),
        per_rank_(per_rank),
        mixture_(std::move(mixture)) {}
  // EpochOrder is the epoch's order before sharding (all ranks').
  std::vector<int64_t> EpochOrder(int64_t epoch) const;
  // IsRanksOrder is true when this rank's indices are the whole epoch's order as it is
  // (one rank, no repeated augmentation, no mixture): EpochIndices returns it uncopied.
  bool IsRanksOrder() const;

  const int64_t epoch_size_;  // Positions per epoch before sharding.
  const SamplerOptions options_;
  const int64_t per_rank_;
  const std::unique_ptr<MixtureSchedule> mixture_;  // nullptr: the plain order.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_SAMPLER_H_
