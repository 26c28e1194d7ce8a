// mixture_sampler.h: the epoch order of a weighted mixture of sources.
//
// An epoch of `epoch_samples` positions (default: the sum of the sources' sizes) holds an
// exact number of draws from each source: its weight's share, rounded by largest remainder,
// so every source is within one sample of its weight over any epoch. Which source fills
// each position is a shuffle of those draws keyed by (seed, epoch), or, unshuffled, the
// draws spread evenly (source i's j-th draw at (j + 1/2) / count_i of the epoch).
//
// Each source cycles through its own passes: its d-th draw ever (counting every epoch
// before, each of which drew count_i) is element d % size_i of its pass d / size_i, a
// permutation keyed by (seed, pass, source), so every sample is drawn once per pass and a
// small source repeats only after all of it was seen. A single source whose epoch is its
// size makes the same order as the plain Sampler (pass == epoch, the same key).
//
// Indices are global: source i's samples are [offset_i, offset_i + size_i), as
// Dataset::OpenSources lays them out.
//
// Thread-safety: immutable after Create.
#ifndef FLOWLOADER_STAGES_READER_MIXTURE_SAMPLER_H_
#define FLOWLOADER_STAGES_READER_MIXTURE_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace flowloader {

// MixtureComponent is one source of a mixture: how many samples it has and its weight.
struct MixtureComponent {
  int64_t size = 0;     // >= 1.
  double weight = 1.0;  // > 0; weights are relative.
};

struct MixtureOptions {
  std::vector<MixtureComponent> sources;
  // Positions per epoch (before sharding by rank); 0 = the sum of the sources' sizes.
  int64_t epoch_samples = 0;
  bool shuffle = true;
  uint64_t seed = 0;
};

class MixtureSchedule {
 public:
  // Create checks the options: at least one source, sizes >= 1, weights > 0 and finite,
  // epoch_samples >= 0. Errors name the source by its position.
  static absl::StatusOr<MixtureSchedule> Create(const MixtureOptions& options);

  // EpochOrder returns the epoch's global dataset indices, epoch_samples() of them.
  std::vector<int64_t> EpochOrder(int64_t epoch) const;

  int64_t epoch_samples() const { return epoch_samples_; }
  // draws_per_epoch is how many positions of every epoch source `i` fills.
  const std::vector<int64_t>& draws_per_epoch() const { return counts_; }

 private:
  MixtureSchedule() = default;
  // SourceOrder is the epoch's sequence of source numbers, counts_[i] of source i.
  std::vector<int32_t> SourceOrder(int64_t epoch) const;
  // AppendDraws appends source i's draws [first, first + count) as global indices.
  void AppendDraws(int32_t i, int64_t first, int64_t count, std::vector<int64_t>* out) const;

  std::vector<MixtureComponent> sources_;
  std::vector<int64_t> offsets_;  // Global index of each source's first sample.
  std::vector<int64_t> counts_;   // Draws per epoch.
  int64_t epoch_samples_ = 0;
  bool shuffle_ = true;
  uint64_t seed_ = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_MIXTURE_SAMPLER_H_
