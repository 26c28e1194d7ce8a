#include "absl/base/thread_annotations.h"
#include "stages/core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "stages/core/one_line.h"


namespace flowloader {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
std::mutex mu;  // std::mutex: ThreadSanitizer sees pthread locks, not absl's futexes.
LogSink* sink ABSL_GUARDED_BY(mu) = nullptr;

}  // namespace

void Log(LogLevel level, absl::string_view logged) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  // One bounded line (a value it quotes, such as a megabyte-long file name, cut past any
  // real path's length: kMaxLoggedValueChars), and a URL written with user:password@ (an
  // endpoint, a data path) never shows its password.
  std::string cut;
  absl::string_view message = logged;
  if (logged.size() > kMaxLoggedValueChars ||
      logged.find_first_of("@\n\r") != absl::string_view::npos) {
    cut = OneLine(logged, kMaxLoggedValueChars, kMaxLoggedLineChars);
    message = cut;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (sink != nullptr) {
    (*sink)(level, message);
    return;
  }
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  std::fprintf(stderr, "flowloader: %c %.*s\n", kLetters[static_cast<int>(level) + 1],
               static_cast<int>(message.size()), message.data());
}

void SetMinLogLevel(LogLevel level) { min_level.store(static_cast<int>(level)); }

LogSink SetLogSink(LogSink new_sink) {
  std::lock_guard<std::mutex> lock(mu);
  LogSink previous = sink != nullptr ? *sink : LogSink();
  delete sink;
  sink = new_sink ? new LogSink(std::move(new_sink)) : nullptr;
  return previous;
}

}  // namespace flowloader
