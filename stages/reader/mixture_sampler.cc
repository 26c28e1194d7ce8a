#include "stages/reader/mixture_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/rng.h"

namespace flowloader {
namespace {

// The plain Sampler's shuffle stream: a one-source mixture makes the same passes.
constexpr uint64_t kShuffleStream = 0x5348554646ULL;  // "SHUFF"
// Separates the choice of source per position from the passes' shuffles.
constexpr uint64_t kMixStream = 0x4D49585455ULL;  // "MIXTU"

// Permutation is 0..n-1, shuffled by Fisher-Yates from `rng` when `shuffle` (exactly the
// plain Sampler's draws, so its order is reproduced for one source).
std::vector<int64_t> Permutation(int64_t n, bool shuffle, SampleRng rng) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) {
    for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.UniformInt(0, i + 1)]);
  }
  return order;
}

// ApportionDraws splits `total` positions by weight, largest remainder first (ties to
// the earlier source), so each count is within one of its exact share.
std::vector<int64_t> ApportionDraws(const std::vector<MixtureComponent>& sources,
                                    int64_t total) {
  double weight_sum = 0;
  for (const MixtureComponent& s : sources) weight_sum += s.weight;
  // Weights whose sum overflows (two of 1e308) are shares of the largest instead: an
  // infinite sum made every share NaN and the loop below ran for 2^63 steps. Finite sums
  // keep the division as it was (the same counts, so the same checksums).
  double scale = 1;
  if (!std::isfinite(weight_sum)) {
    for (const MixtureComponent& s : sources) scale = std::max(scale, s.weight);
    weight_sum = 0;
    for (const MixtureComponent& s : sources) weight_sum += s.weight / scale;
  }
  std::vector<int64_t> counts(sources.size());
  std::vector<std::pair<double, size_t>> remainders;
  int64_t assigned = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    double exact = static_cast<double>(total) * (sources[i].weight / scale) / weight_sum;
    // total × a weight near 1e308 overflows even where the sum does not (1e308 beside
    // 1e-308): the share first then (an infinite exact looped for 2^63 steps below).
    if (!std::isfinite(exact)) {
      exact = static_cast<double>(total) * ((sources[i].weight / scale) / weight_sum);
    }
    counts[i] = static_cast<int64_t>(std::floor(exact));
    assigned += counts[i];
    remainders.emplace_back(-(exact - std::floor(exact)), i);
  }
  std::sort(remainders.begin(), remainders.end());
  for (size_t k = 0; assigned < total; ++k, ++assigned) {
    ++counts[remainders[k % remainders.size()].second];
  }
  return counts;
}

}  // namespace

absl::StatusOr<MixtureSchedule> MixtureSchedule::Create(const MixtureOptions& options) {
  if (options.sources.empty()) return absl::InvalidArgumentError("a mixture needs a source");
  if (options.epoch_samples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("epoch_samples must be >= 0 (0 = the sum of the sources' sizes), got ",
                     options.epoch_samples));
  }
  MixtureSchedule schedule;
  int64_t total_size = 0;
  for (size_t i = 0; i < options.sources.size(); ++i) {
    const MixtureComponent& s = options.sources[i];
    if (s.size < 1) {
      return absl::InvalidArgumentError(absl::StrCat("source ", i, " has no sample"));
    }
    if (!(s.weight > 0) || !std::isfinite(s.weight)) {
      return absl::InvalidArgumentError(
          absl::StrCat("source ", i, ": weight must be a number > 0, got ", s.weight));
    }
    schedule.offsets_.push_back(total_size);
    total_size += s.size;
  }
  schedule.sources_ = options.sources;
  schedule.epoch_samples_ = options.epoch_samples > 0 ? options.epoch_samples : total_size;
  schedule.counts_ = ApportionDraws(options.sources, schedule.epoch_samples_);
  schedule.shuffle_ = options.shuffle;
  schedule.seed_ = options.seed;
  return schedule;
}

std::vector<int32_t> MixtureSchedule::SourceOrder(int64_t epoch) const {
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(epoch_samples_));
  if (shuffle_) {
    for (size_t i = 0; i < counts_.size(); ++i) {
      order.insert(order.end(), static_cast<size_t>(counts_[i]), static_cast<int32_t>(i));
    }
    SampleRng rng(seed_, static_cast<uint64_t>(epoch), 0, kMixStream);
    for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
      std::swap(order[i], order[rng.UniformInt(0, i + 1)]);
    }
    return order;
  }
  // Unshuffled: each source's draws evenly spread, merged by their times in the epoch.
  std::vector<std::pair<double, int32_t>> times;
  times.reserve(static_cast<size_t>(epoch_samples_));
  for (size_t i = 0; i < counts_.size(); ++i) {
    for (int64_t j = 0; j < counts_[i]; ++j) {
      times.emplace_back((static_cast<double>(j) + 0.5) / static_cast<double>(counts_[i]),
                         static_cast<int32_t>(i));
    }
  }
  std::sort(times.begin(), times.end());
  for (const auto& t : times) order.push_back(t.second);
  return order;
}

void MixtureSchedule::AppendDraws(int32_t i, int64_t first, int64_t count,
                                  std::vector<int64_t>* out) const {
  const int64_t size = sources_[static_cast<size_t>(i)].size;
  const int64_t offset = offsets_[static_cast<size_t>(i)];
  int64_t pass = -1;
  std::vector<int64_t> permutation;
  for (int64_t d = first; d < first + count; ++d) {
    if (d / size != pass) {
      pass = d / size;
      permutation = Permutation(
          size, shuffle_,
          SampleRng(seed_, static_cast<uint64_t>(pass), static_cast<uint64_t>(i),
                    kShuffleStream));
    }
    out->push_back(offset + permutation[static_cast<size_t>(d % size)]);
  }
}

std::vector<int64_t> MixtureSchedule::EpochOrder(int64_t epoch) const {
  // Each source's draws of this epoch, in its pass order, then dealt to the positions.
  std::vector<std::vector<int64_t>> draws(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) {
    draws[i].reserve(static_cast<size_t>(counts_[i]));
    AppendDraws(static_cast<int32_t>(i), epoch * counts_[i], counts_[i], &draws[i]);
  }
  std::vector<size_t> next(sources_.size(), 0);
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(epoch_samples_));
  for (int32_t source : SourceOrder(epoch)) {
    order.push_back(draws[static_cast<size_t>(source)][next[static_cast<size_t>(source)]++]);
  }
  return order;
}

}  // namespace flowloader
