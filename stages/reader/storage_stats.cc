// storage_stats.cc: StorageStats (see storage_stats.h).
#include "stages/reader/storage_stats.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"

namespace flowloader {

int64_t StorageSchemeStats::TotalErrors() const {
  int64_t total = 0;
  for (const auto& [code, n] : errors) total += n;
  return total;
}

double StorageSchemeStats::LatencyQuantile(double q) const {
  uint64_t count = 0;
  for (uint64_t n : buckets) count += n;
  if (count == 0) return 0;
  const double rank = q * static_cast<double>(count);
  double below = 0;  // Requests in the buckets before i.
  for (size_t i = 0; i < buckets.size(); ++i) {
    const double in_bucket = static_cast<double>(buckets[i]);
    if (below + in_bucket >= rank && in_bucket > 0) {
      if (i == kBounds.size()) return kBounds.back();  // +Inf: its lower bound.
      const double lower = i == 0 ? 0.0 : kBounds[i - 1];
      return lower + (kBounds[i] - lower) * (rank - below) / in_bucket;
    }
    below += in_bucket;
  }
  return kBounds.back();
}

void StorageStats::Record(absl::string_view scheme, int64_t nanos, int64_t bytes,
                          absl::string_view error_code, bool retry) {
  const double seconds = static_cast<double>(std::max<int64_t>(nanos, 0)) * 1e-9;
  const size_t bucket =
      std::lower_bound(StorageSchemeStats::kBounds.begin(), StorageSchemeStats::kBounds.end(),
                       seconds) -
      StorageSchemeStats::kBounds.begin();
  std::lock_guard<std::mutex> lock(mu_);
  StorageSchemeStats& s = schemes_[std::string(scheme)];
  if (s.scheme.empty()) s.scheme = std::string(scheme);
  ++s.requests;
  if (retry) ++s.retries;
  ++s.buckets[bucket];
  s.latency_sum_seconds += seconds;
  if (error_code.empty()) {
    s.bytes += bytes;
    return;
  }
  auto it = s.errors.find(std::string(error_code));
  if (it == s.errors.end() && s.errors.size() >= static_cast<size_t>(kMaxErrorCodes)) {
    it = s.errors.emplace("other", 0).first;
  } else if (it == s.errors.end()) {
    it = s.errors.emplace(std::string(error_code), 0).first;
  }
  ++it->second;
}

std::vector<StorageSchemeStats> StorageStats::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StorageSchemeStats> out;
  for (const auto& [scheme, s] : schemes_) out.push_back(s);
  return out;
}

StorageSchemeStats StorageStats::Total() const {
  StorageSchemeStats total;
  total.scheme = "all";
  for (const StorageSchemeStats& s : Read()) {
    total.requests += s.requests;
    total.bytes += s.bytes;
    total.retries += s.retries;
    for (const auto& [code, n] : s.errors) total.errors[code] += n;
    for (size_t i = 0; i < s.buckets.size(); ++i) total.buckets[i] += s.buckets[i];
    total.latency_sum_seconds += s.latency_sum_seconds;
  }
  return total;
}

std::string StorageStats::SchemeLabel(absl::string_view url) {
  const size_t colon = url.find("://");
  if (colon == absl::string_view::npos) return "other";
  // Only registered schemes reach an HttpEnv (schemes.h); the check keeps a label short
  // and in the label alphabet whatever the caller passes.
  const std::string scheme = absl::AsciiStrToLower(url.substr(0, colon));
  const bool plain = !scheme.empty() && scheme.size() <= 16 &&
                     std::all_of(scheme.begin(), scheme.end(), [](char c) {
                       return absl::ascii_isalnum(static_cast<unsigned char>(c));
                     });
  return plain ? scheme : "other";
}

void StorageStats::AttachReadAhead(std::function<ReadAheadFigures()> read,
                                   std::function<void(int)> set_floor) const {
  std::lock_guard<std::mutex> lock(mu_);
  read_ahead_source_ = std::move(read);
  read_ahead_floor_ = std::move(set_floor);
}

void StorageStats::DetachReadAhead() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (read_ahead_source_) read_ahead_ = read_ahead_source_();
  read_ahead_source_ = nullptr;
  read_ahead_floor_ = nullptr;
}

bool StorageStats::SetReadAheadFloor(int floor) const {
  // Under mu_, as read_ahead(): the read-ahead cannot detach (and be destroyed) meanwhile.
  std::lock_guard<std::mutex> lock(mu_);
  if (!read_ahead_floor_) return false;
  read_ahead_floor_(floor);
  return true;
}

ReadAheadFigures StorageStats::read_ahead() const {
  std::lock_guard<std::mutex> lock(mu_);
  return read_ahead_source_ ? read_ahead_source_() : read_ahead_;
}

}  // namespace flowloader
