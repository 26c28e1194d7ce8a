#include <mutex>

#include "stages/reader/fault_env.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace flowloader {

void FaultEnv::Inject(const std::string& path_substring, const Fault& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_[path_substring] = Rule{fault, 0};
}

int FaultEnv::Attempts(const std::string& path_substring) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rules_.find(path_substring);
  return it == rules_.end() ? 0 : it->second.attempts;
}

bool FaultEnv::Apply(const std::string& path, Fault* fault, bool* fail) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [substring, rule] : rules_) {
    if (path.find(substring) == std::string::npos) continue;
    *fault = rule.fault;
    *fail = fault->error_number != 0 && (fault->failures < 0 || rule.attempts < fault->failures);
    ++rule.attempts;
    return true;
  }
  return false;
}

absl::Status FaultEnv::ReadRange(const std::string& path, int64_t offset, int64_t length,
                                 std::string* contents) {
  Fault fault;
  bool fail = false;
  if (!Apply(path, &fault, &fail)) return base()->ReadRange(path, offset, length, contents);
  if (fault.delay > absl::ZeroDuration()) absl::SleepFor(fault.delay);
  if (fail) return StatusFromErrno(fault.error_number, path);
  if (fault.truncate_to >= 0) {
    length = std::max<int64_t>(0, std::min(length, fault.truncate_to - offset));
  }
  return base()->ReadRange(path, offset, length, contents);
}

absl::Status FaultEnv::ReadFile(const std::string& path, int64_t max_bytes,
                                std::string* contents) {
  Fault fault;
  bool fail = false;
  const bool matched = Apply(path, &fault, &fail);
  if (!matched) return base()->ReadFile(path, max_bytes, contents);
  if (fault.delay > absl::ZeroDuration()) absl::SleepFor(fault.delay);
  if (fail) return StatusFromErrno(fault.error_number, path);
  absl::Status status = base()->ReadFile(path, max_bytes, contents);
  if (status.ok() && fault.truncate_to >= 0 &&
      static_cast<int64_t>(contents->size()) > fault.truncate_to) {
    contents->resize(static_cast<size_t>(fault.truncate_to));
  }
  return status;
}

}  // namespace flowloader
