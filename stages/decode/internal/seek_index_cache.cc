// seek_index_cache.cc: see seek_index_cache.h.
#include "stages/decode/internal/seek_index_cache.h"

namespace flowloader::decode::internal {

size_t SeekIndexCache::Cost(const SeekIndex& index) {
  // The points plus the map slot and vector header, roughly.
  return index.points.size() * sizeof(SeekPoint) + sizeof(SeekIndex) + 16;
}

void SeekIndexCache::Load(uint64_t key, int mcus_per_row, int mcu_rows, int step,
                          SeekIndex* index) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(key);
  if (it != files_.end() && it->second.mcus_per_row == mcus_per_row &&
      it->second.mcu_rows == mcu_rows && it->second.step == step) {
    *index = it->second;  // Reuses index's storage.
    index->grew = false;
    return;
  }
  index->Reset(mcus_per_row, mcu_rows, step);
}

void SeekIndexCache::Save(uint64_t key, const SeekIndex& index) {
  if (!index.grew) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(key);
  if (it == files_.end()) {
    const size_t cost = Cost(index);
    if (bytes_ + cost > budget_) return;
    bytes_ += cost;
    files_.emplace(key, index);
    return;
  }
  SeekIndex& known = it->second;
  if (known.points.size() != index.points.size() || known.step != index.step) return;
  for (size_t i = 0; i < known.points.size(); ++i) {
    if (known.points[i].bit == SeekPoint::kUnknown) known.points[i] = index.points[i];
  }
}

size_t SeekIndexCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t SeekIndexCache::files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.size();
}

}  // namespace flowloader::decode::internal
