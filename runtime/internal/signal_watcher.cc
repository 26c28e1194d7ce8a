// signal_watcher.cc: see signal_watcher.h.
#include "runtime/internal/signal_watcher.h"

#include <pthread.h>

#include <utility>

namespace flowloader::internal {
namespace {

sigset_t WatchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // Our own wake-up at the end.
  return set;
}

}  // namespace

void SignalWatcher::BlockInThisThread() {
  const sigset_t set = WatchedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(std::shared_ptr<std::atomic<bool>> cancel)
    : cancel_(std::move(cancel)) {
  BlockInThisThread();
  thread_ = std::thread([this] {
    const sigset_t set = WatchedSignals();
    int signo = 0;
    while (sigwait(&set, &signo) == 0) {
      if (signo == SIGUSR1 && done_.load()) return;
      if (signo == SIGINT || signo == SIGTERM) {
        received_.store(signo);
        cancel_->store(true);
        std::lock_guard<std::mutex> lock(mu_);
        if (action_) action_();
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_.store(true);
  pthread_kill(thread_.native_handle(), SIGUSR1);
  thread_.join();
}

void SignalWatcher::OnSignal(std::function<void()> action) {
  std::lock_guard<std::mutex> lock(mu_);
  action_ = std::move(action);
  if (received_.load() != 0 && action_) action_();
}

}  // namespace flowloader::internal
