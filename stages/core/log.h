// log.h: one-line log messages to stderr ("flowloader: W skipped cats/1.jpg: ...").
//
// Abseil's logging is not in Debian's LTS 20220623, so this is the smallest thing that
// works: a level, a mutex so lines never interleave, and a sink tests can replace.
//
// Thread-safety: all functions are thread-safe.
#ifndef FLOWLOADER_STAGES_CORE_LOG_H_
#define FLOWLOADER_STAGES_CORE_LOG_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace flowloader {

// kDebug: details a user asks for (`flowloader run --verbose`), dropped by default.
enum class LogLevel { kDebug = -1, kInfo = 0, kWarning = 1, kError = 2 };

// Log writes `message` as one line if `level` is at or above the minimum level.
void Log(LogLevel level, absl::string_view message);
inline void LogDebug(absl::string_view m) { Log(LogLevel::kDebug, m); }
inline void LogInfo(absl::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(absl::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(absl::string_view m) { Log(LogLevel::kError, m); }

// SetMinLogLevel drops messages below `level`. Default kInfo.
void SetMinLogLevel(LogLevel level);

// SetLogSink replaces where lines go (nullptr restores stderr). Returns the previous sink.
using LogSink = std::function<void(LogLevel, absl::string_view)>;
LogSink SetLogSink(LogSink sink);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_LOG_H_
