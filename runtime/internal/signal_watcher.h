// signal_watcher.h: SIGINT/SIGTERM for the CLI's long commands (run, pack), handled on a
// dedicated thread (sigwait), so no work happens in a signal handler.
//
// A signal sets `cancel` (HttpOptions::cancel: it ends remote reads and uploads under way)
// and calls the action given to OnSignal (run: Pipeline::Stop). BlockInThisThread must run
// before any other thread starts, so every thread inherits the mask and the signals reach
// only sigwait.
//
// Thread-safety: OnSignal and received may be called from any thread.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_SIGNAL_WATCHER_H_
#define FLOWLOADER_RUNTIME_INTERNAL_SIGNAL_WATCHER_H_

#include <signal.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"

namespace flowloader::internal {

class SignalWatcher {
 public:
  // Blocks the signals in this thread (see BlockInThisThread) and starts watching.
  explicit SignalWatcher(std::shared_ptr<std::atomic<bool>> cancel);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // received is the signal that came (SIGINT or SIGTERM), or 0.
  int received() const { return received_.load(); }
  // OnSignal makes a signal call `action` (which must stay valid while the watcher lives),
  // at once if one came already.
  void OnSignal(std::function<void()> action);

  static void BlockInThisThread();

 private:
  const std::shared_ptr<std::atomic<bool>> cancel_;
  std::mutex mu_;
  std::function<void()> action_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> done_{false};
  std::atomic<int> received_{0};
  std::thread thread_;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_RUNTIME_INTERNAL_SIGNAL_WATCHER_H_
