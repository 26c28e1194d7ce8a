#include "stages/core/log.h"

#include <atomic>
#include <cstdio>

#include "absl/synchronization/mutex.h"

namespace flowloader {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
absl::Mutex mu(absl::kConstInit);
LogSink* sink ABSL_GUARDED_BY(mu) = nullptr;

}  // namespace

void Log(LogLevel level, absl::string_view message) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  absl::MutexLock lock(&mu);
  if (sink != nullptr) {
    (*sink)(level, message);
    return;
  }
  static constexpr char kLetters[] = {'I', 'W', 'E'};
  std::fprintf(stderr, "flowloader: %c %.*s\n", kLetters[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

void SetMinLogLevel(LogLevel level) { min_level.store(static_cast<int>(level)); }

LogSink SetLogSink(LogSink new_sink) {
  absl::MutexLock lock(&mu);
  LogSink previous = sink != nullptr ? *sink : LogSink();
  delete sink;
  sink = new_sink ? new LogSink(std::move(new_sink)) : nullptr;
  return previous;
}

}  // namespace flowloader
